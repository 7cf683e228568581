/* idmap book: every plotly slider usable from the keyboard (WCAG 2.1.1). Plotly draws its sliders in SVG, which
 * takes no focus; under each figure with a slider this puts one focusable line (role "slider", its value in words)
 * that steps the figure's slider with the arrow keys, Home and End, exactly as a click on that step would, and
 * follows the slider when the mouse moves it. Loaded on pages with plotly figures (see idmap_site.py).
 */
(function () {
  "use strict";
  var KEYS = { ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1 };

  function label(slider, i) {  // a step's value where it says more than its label (the explorer's rows)
    var prefix = ((slider.currentvalue && slider.currentvalue.prefix) || "").trim(), step = slider.steps[i];
    var v = step.value && step.value !== step.label ? step.value : step.label;
    return (prefix + " " + v).trim();
  }

  function show(gd, box) {
    var s = gd.layout.sliders[0], i = s.active || 0;
    box.setAttribute("aria-valuenow", String(i));
    box.setAttribute("aria-valuetext", label(s, i));
    box.querySelector(".idmap-keys-now").textContent = label(s, i);
  }

  function go(gd, box, i) {
    var s = gd.layout.sliders[0], n = s.steps.length;
    i = Math.max(0, Math.min(n - 1, i));
    if (i === (s.active || 0)) { return; }
    var step = s.steps[i], layout = Object.assign({}, step.args[1] || {}, { "sliders[0].active": i });
    if (step.method === "update") {
      window.Plotly.update(gd, step.args[0] || {}, layout).then(function () { show(gd, box); });
    } else {
      window.Plotly.Plots.executeAPICommand(gd, step.method, step.args);
      window.Plotly.relayout(gd, { "sliders[0].active": i }).then(function () { show(gd, box); });
    }
  }

  function attach(gd) {
    if (gd.dataset.idmapKeys || !gd.layout || !gd.layout.sliders || !gd.layout.sliders.length) { return; }
    gd.dataset.idmapKeys = "1";
    var s = gd.layout.sliders[0], box = document.createElement("div");
    box.className = "idmap-keys";
    box.tabIndex = 0;
    box.setAttribute("role", "slider");
    box.setAttribute("aria-label", ((s.currentvalue && s.currentvalue.prefix) || "the figure's slider").replace(/\s*[:=]?\s*$/, ""));
    box.setAttribute("aria-valuemin", "0");
    box.setAttribute("aria-valuemax", String(s.steps.length - 1));
    box.innerHTML = "Slider: <span class=\"idmap-keys-now\"></span> <span class=\"idmap-keys-how\">" +
      "(focus here, then ← → to step)</span>";
    box.addEventListener("keydown", function (e) {
      var a = gd.layout.sliders[0].active || 0, n = gd.layout.sliders[0].steps.length;
      var to = e.key in KEYS ? a + KEYS[e.key] : e.key === "Home" ? 0 : e.key === "End" ? n - 1 : null;
      if (to === null) { return; }
      e.preventDefault();
      go(gd, box, to);
    });
    gd.on("plotly_sliderchange", function () { show(gd, box); });
    gd.parentNode.insertBefore(box, gd.nextSibling);
    show(gd, box);
  }

  function scan() {
    document.querySelectorAll(".plotly-graph-div").forEach(function (gd) {
      if (gd._fullLayout) { attach(gd); } else if (gd.on) { gd.on("plotly_afterplot", function () { attach(gd); }); }
    });
  }

  window.idmapKeys = { scan: scan };
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", scan); } else { scan(); }
  window.addEventListener("load", scan);
  new MutationObserver(scan).observe(document.documentElement, { childList: true, subtree: true });
})();
