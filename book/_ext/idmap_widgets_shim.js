/* idmap book: make the offline ipywidgets html-manager (1.0.6) work beside MathJax 3.
 * Loaded only on pages with widgets, before require.js (see idmap_site.py).
 * 1. require.js config: html-manager derives its public path (fonts) from its module id, so map that
 *    id to the copy served by this site instead of the page's own folder.
 * 2. html-manager typesets widget labels through the MathJax 2 API (MathJax.Hub.Queue); give every
 *    object assigned to window.MathJax a small non-enumerable Hub that forwards to MathJax 3.
 */
(function () {
  "use strict";
  var src = document.currentScript && document.currentScript.src;
  var base = src ? src.slice(0, src.lastIndexOf("/") + 1) : "_static/vendor/";
  window.require = {
    paths: { "@jupyter-widgets/html-manager/dist": base + "html-manager/dist" }
  };

  // Widgets may render before MathJax 3 has loaded (it is deferred): keep their elements until then.
  var pending = [];
  function typeset(elements) {
    var mj = window.MathJax;
    mj.startup.promise.then(function () {
      return mj.typesetPromise(elements.length ? elements : undefined);
    }).catch(function (err) { console.warn("MathJax typeset of a widget failed:", err); });
  }
  function ready() {
    var mj = window.MathJax;
    return !!(mj && mj.startup && mj.startup.promise && mj.typesetPromise);
  }
  var hub = {
    Queue: function (job) {
      var el = Array.isArray(job) ? job[2] : undefined;
      if (ready()) { typeset(el ? [el] : []); } else if (el) { pending.push(el); }
    }
  };
  function flush() {
    if (pending.length && ready()) { typeset(pending.splice(0)); }
  }
  document.addEventListener("DOMContentLoaded", flush);
  window.addEventListener("load", flush);
  function addHub(obj) {
    if (obj && typeof obj === "object" && !obj.Hub) {
      Object.defineProperty(obj, "Hub", { value: hub, enumerable: false, configurable: true });
    }
    return obj;
  }
  var current = addHub(window.MathJax);
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    enumerable: true,
    get: function () { return current; },
    set: function (value) { current = addHub(value); }
  });
})();
