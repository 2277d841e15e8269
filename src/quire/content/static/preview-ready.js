// Loaded in the head of an editor with the preview beside it, before the
// frame: the site's page may say it follows unsaved edits before the
// editor's own script has run; this keeps its word for editor.js.
(function () {
  "use strict";
  window.addEventListener("message", function (e) {
    if (!e.data || e.data.type !== "quire:preview-ready") return;
    window.quirePreviewReady = e.origin;
    document.dispatchEvent(new CustomEvent("quire:preview-ready", {detail: {origin: e.origin, source: e.source}}));
  });
})();
