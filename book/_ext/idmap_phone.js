/* idmap book: plotly figures laid out again for a phone (issue 30: at 390 px figures stack, no text overlaps).
 * Loaded on pages with plotly figures (see idmap_site.py); does nothing on a screen 600 px wide or more, so the
 * desktop layout (idmap_book/page/figure_style.py) is untouched. On a phone, once a figure is drawn and visible:
 * 0. side margins shrink to what ticks need (plotly's default 80 px each would halve a phone's plot);
 * 1. panels side by side (make_subplots with 2-3 columns) stack into one column, each panel the full width,
 *    their subplot titles moved along; notes under the plot keep their distance from it in px;
 * 2. the title wraps into lines that fit (plotly never wraps text), the <sup> subtitle too, left-aligned under
 *    the toolbar; long notes (captions) wrap the same way, a row label inside a plot (the forest's) to its width;
 * 3. x axes get fewer ticks;
 * 4. then a plot squeezed by a legend that wrapped into rows gets its height back (at least PLOT_PX),
 * 5. and the top margin grows (and the figure with it) until the title clears everything under it.
 * window.idmapPhone.pending() is how many visible figures are still to be laid out (the browser tests wait on it).
 */
(function () {
  "use strict";
  var PHONE_PX = 600;
  if (!window.matchMedia || !window.matchMedia("(max-width: " + (PHONE_PX - 0.02) + "px)").matches) { return; }
  var PANEL_PX = 240, GAP_PX = 112;  // a stacked panel's plot height; between panels: its ticks, axis title, next title
  var PLOT_PX = 220;  // the least height of a figure's plot area on a phone
  var SIDE_PX = { l: 60, r: 20 };  // side margins at most: the y ticks and axis title left, a last x tick right
  var CHAR_EM = 0.56;  // an average character of plotly's sans-serif, in em (a safe side: wider than most)
  var busy = 0;

  function plain(s) { return s.replace(/<[^>]*>/g, ""); }

  function wrapWords(text, chars) {
    var lines = [], line = "";
    text.split(" ").forEach(function (w) {
      if (line && plain(line + " " + w).length > chars) { lines.push(line); line = w; } else { line = line ? line + " " + w : w; }
    });
    if (line) { lines.push(line); }
    return lines;
  }

  // Wrap plotly text (lines split by <br>, a <sup> subtitle possibly over several lines) at `px` wide for a font
  // of `size` px; a <sup> line is set at 70 % of it, so it holds more characters. " <br>" is a soft break (where
  // figure_style.caption wrapped a line for a wider screen): the words run on, and wrap again here.
  function wrapText(text, size, px) {
    var out = [], inSup = false;
    String(text).replace(/ <br>/gi, " ").split(/<br\s*\/?>/i).forEach(function (seg) {
      var sup = inSup || /^\s*<sup>/i.test(seg);
      var closes = /<\/sup>\s*$/i.test(seg);
      var body = seg.replace(/^\s*<sup>/i, "").replace(/<\/sup>\s*$/i, "");
      var chars = Math.max(12, Math.floor(px / (CHAR_EM * size * (sup ? 0.7 : 1))));
      wrapWords(body, chars).forEach(function (l) { out.push(sup ? "<sup>" + l + "</sup>" : l); });
      inSup = sup && !closes;
    });
    return out.join("<br>");
  }

  function near(a, b) { return Math.abs(a - b) < 0.02; }

  // Panels side by side -> one column. Returns relayout updates (or {} when the figure has one column).
  function stacked(gd, update) {
    var L = gd._fullLayout, panels = [];
    Object.keys(L).forEach(function (k) {
      var m = /^xaxis(\d*)$/.exec(k);
      if (!m || !L[k].anchor || L[k].anchor === "free") { return; }
      var yk = "yaxis" + L[k].anchor.slice(1);
      if (!L[yk]) { return; }
      panels.push({ x: k, y: yk, xd: L[k].domain.slice(), yd: L[yk].domain.slice() });
    });
    var lefts = [];
    panels.forEach(function (p) { if (!lefts.some(function (l) { return near(l, p.xd[0]); })) { lefts.push(p.xd[0]); } });
    if (lefts.length < 2) { return false; }
    panels.sort(function (a, b) { return (b.yd[1] - a.yd[1]) || (a.xd[0] - b.xd[0]); });
    var n = panels.length, total = n * PANEL_PX + (n - 1) * GAP_PX;
    var oldPlot = L._size.h, m = L.margin;
    panels.forEach(function (p, i) {
      var top = 1 - i * (PANEL_PX + GAP_PX) / total;
      p.top = top;
      update[p.x + ".domain"] = [0, 1];
      update[p.y + ".domain"] = [Math.max(0, top - PANEL_PX / total), top];
    });
    var anns = (gd.layout.annotations || []).map(function (a) {
      var b = Object.assign({}, a);
      if ((a.xref || "x") !== "paper" || (a.yref || "y") !== "paper") { return b; }
      var p = panels.filter(function (q) { return near((q.xd[0] + q.xd[1]) / 2, a.x) && near(q.yd[1], a.y); })[0];
      if (p) { b.x = 0.5; b.y = p.top; b.yshift = 6; b.subplotTitle = true; }  // a subplot title, clear of the ticks
      else if (a.y < 0) { b.y = a.y * oldPlot / total; }  // a note under the plot: the same px below it
      return b;
    });
    update.annotations = anns;
    update.height = m.t + m.b + total;
    return true;
  }

  function layOut(gd) {
    var L = gd._fullLayout, width = L.width, update = {};
    stacked(gd, update);
    // plotly's default side margins (80 px each) would leave a phone's plot half the screen
    if (L.margin.l > SIDE_PX.l) { update["margin.l"] = SIDE_PX.l; }
    if (L.margin.r > SIDE_PX.r) { update["margin.r"] = SIDE_PX.r; }
    var title = gd.layout.title && (typeof gd.layout.title === "string" ? gd.layout.title : gd.layout.title.text);
    if (title) {
      update["title.text"] = wrapText(title, L.title.font.size, width - 24);
      update["title.x"] = 0; update["title.xanchor"] = "left"; update["title.xref"] = "container";
      update["title.pad.l"] = 8; update["title.y"] = 1; update["title.yanchor"] = "top";
      // under the toolbar; a figure that sets a larger pad (the explorer's, under the toolbar at any width) keeps it
      update["title.yref"] = "container"; update["title.pad.t"] = Math.max(30, (L.title.pad && L.title.pad.t) || 0);
    }
    var anns = update.annotations || (gd.layout.annotations || []).map(function (a) { return Object.assign({}, a); });
    // Long notes wrap; a note under the plot grows downwards (its top kept) and the bottom margin with it,
    // pushing the notes under it down as far.
    var changed = false, below = [];
    anns.forEach(function (a, i) {
      var full = L.annotations[i] || {}, size = (full.font && full.font.size) || 13;
      // a row label written inside a plot from its left edge (the forest plot's) may take the plot's width
      var inside = /^x\d* domain$/.test(full.xref || "") && full.x === 0 && full.xanchor === "left";
      var room = a.subplotTitle ? width - 60 : inside ? L._size.w - 4 : width * 0.8;
      var wrapped = a.text ? wrapText(a.text, size, room) : a.text;
      delete a.subplotTitle;
      if (wrapped === a.text) { return; }
      var extra = (wrapped.split("<br>").length - String(a.text).split(/<br\s*\/?>/i).length) * size * 1.3;
      a.text = wrapped; changed = true;
      var under = full.yref === "paper" && (full.y < 0 || (full.y === 0 && (full.yshift || 0) < 0));
      if (under && extra > 0) { below.push([a, full, extra]); }
    });
    var pushed = 0;
    below.sort(function (p, q) { return (q[1].y - p[1].y) || ((q[1].yshift || 0) - (p[1].yshift || 0)); });
    below.forEach(function (e) {
      var a = e[0], full = e[1], size = full.font.size, anchor = full._yanchor || full.yanchor;
      var shift = (full.yshift || 0) - pushed;
      if (anchor !== "top") { shift += (a.text.split("<br>").length * size * 1.3) - e[2]; a.yanchor = "top"; }
      a.yshift = shift; pushed += e[2];
    });
    if (pushed) {
      update["margin.b"] = L.margin.b + Math.ceil(pushed);
      update.height = (update.height || L.height) + Math.ceil(pushed);
    }
    if (changed || update.annotations) { update.annotations = anns; }
    Object.keys(L).forEach(function (k) {
      if (/^xaxis\d*$/.test(k) && L[k].tickmode === "auto" && L[k].type !== "category") { update[k + ".nticks"] = 5; }
    });
    return grow(gd, update);
  }

  // Relayout; a new height goes to the div too (its style holds the height the figure was drawn at), and to the
  // wrapper plotly's HTML puts round it with the same fixed height (else the figure runs over the text under it).
  function grow(gd, update) {
    if (update.height) {
      var px = update.height + "px", wrap = gd.parentNode;
      gd.style.height = px;
      if (wrap && wrap.style && wrap.style.height) { wrap.style.height = px; }
    }
    return Plotly.relayout(gd, update);
  }

  // Grow the top margin until the title's box clears every other text and the plot area.
  function clearTitle(gd, tries) {
    var t = gd.querySelector(".infolayer .gtitle");
    if (!t || tries <= 0) { return Promise.resolve(); }
    var f = gd.getBoundingClientRect(), tb = t.getBoundingClientRect(), L = gd._fullLayout;
    var lowest = f.top + L._size.t;
    gd.querySelectorAll(".infolayer text, .legend text, .annotation text").forEach(function (e) {
      if (e === t || !(e.textContent || "").trim()) { return; }
      var b = e.getBoundingClientRect();
      if (b.height && b.top < lowest && b.bottom > tb.top) { lowest = b.top; }
    });
    var need = Math.ceil(tb.bottom + 6 - lowest);
    if (need <= 0) { return Promise.resolve(); }
    return grow(gd, { "margin.t": L.margin.t + need, height: L.height + need })
      .then(function () { return clearTitle(gd, tries - 1); });
  }

  // A plot squeezed by what grew around it (a legend wrapped into rows at the foot pushes plotly's bottom margin
  // up) gets its height back: the figure grows until the plot area is PLOT_PX tall at least.
  function roomForPlot(gd) {
    var need = Math.ceil(PLOT_PX - gd._fullLayout._size.h);
    return need > 0 ? grow(gd, { height: gd._fullLayout.height + need }) : Promise.resolve();
  }

  // Shown: a figure in a closed fold keeps its box in Chromium (the fold's content is only content-visibility:
  // hidden), but its texts are not measured there; it is laid out when the fold opens (the toggle listener).
  function visible(gd) {
    var r = gd.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && !gd.closest("details:not([open])");
  }

  function candidates() {
    return Array.prototype.filter.call(document.querySelectorAll(".plotly-graph-div"), function (gd) {
      return gd._fullLayout && gd._fullLayout._size && !gd.dataset.idmapPhone && visible(gd);
    });
  }

  function sweep() {
    if (!window.Plotly) { return; }
    candidates().forEach(function (gd) {
      gd.dataset.idmapPhone = "busy"; busy += 1;
      Promise.resolve().then(function () { return Plotly.Plots.resize(gd); })
        .then(function () { return layOut(gd); })
        .then(function () { return roomForPlot(gd); })
        .then(function () { return clearTitle(gd, 3); })
        .catch(function (err) { console.warn("idmap phone layout of a figure failed:", err); })
        .then(function () { gd.dataset.idmapPhone = "done"; busy -= 1; });
    });
  }

  window.idmapPhone = { pending: function () { return busy + candidates().length; }, sweep: sweep };
  document.addEventListener("toggle", function () { setTimeout(sweep, 50); }, true);  // a figure in a fold
  var ticks = 0, timer = setInterval(function () { sweep(); if (++ticks > 120) { clearInterval(timer); } }, 250);
})();
