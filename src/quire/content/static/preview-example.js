// An example site page for the studio's live preview (docs/studio.md,
// "Live preview"): the saved draft first, read with the preview token the
// address carries, then every unsaved version the editor posts. A real site
// does the same in its own page: check the message's origin (the studio's),
// then render the item it holds.
(function () {
  "use strict";
  var params = new URLSearchParams(window.location.search);
  var studio = window.location.origin;  // here the studio serves the page; a site names the CMS's origin
  var mode = document.getElementById("mode");

  function render(item, live) {
    document.getElementById("title").textContent = item.title || item.name || item._id || "";
    var body = document.getElementById("body");
    body.textContent = "";
    var text = typeof item.body === "string" ? item.body : (typeof item.content === "string" ? item.content : "");
    // a rich text shown as its text: a real site renders its HTML with its own sanitiser
    var holder = document.createElement("p");
    holder.textContent = text.replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
    body.appendChild(holder);
    var list = document.getElementById("fields");
    list.textContent = "";
    Object.keys(item).forEach(function (key) {
      if (key.charAt(0) === "_" || key === "title" || key === "body") return;
      var value = item[key];
      if (value === null || typeof value === "object") return;
      var dt = document.createElement("dt");
      dt.textContent = key;
      var dd = document.createElement("dd");
      dd.textContent = String(value);
      list.appendChild(dt);
      list.appendChild(dd);
    });
    mode.innerHTML = "";
    var strong = document.createElement("strong");
    strong.textContent = live ? "Live" : "Saved draft";
    mode.appendChild(strong);
    mode.appendChild(document.createTextNode(live ? ": the editor's unsaved changes, as typed" : ": what was last saved"));
  }

  var model = params.get("model"), id = params.get("id"), token = params.get("token");
  if (model && token) {
    var base = document.documentElement.getAttribute("data-base") || "";  // a space's page: its API
    var path = base + "/api/content/item/" + encodeURIComponent(model) + (id ? "/" + encodeURIComponent(id) : "");
    fetch(path + "?preview=" + encodeURIComponent(token), {credentials: "omit"})
      .then(function (answer) { return answer.ok ? answer.json() : null; })
      .then(function (item) { if (item) render(item, false); else mode.textContent = "The preview link has expired."; })
      .catch(function () { mode.textContent = "The CMS could not be reached."; });
  } else {
    mode.textContent = "This page shows an item when the studio opens it as a preview.";
  }

  // tell the editor this page follows unsaved edits: now, and whenever it
  // asks (it may have started after this page)
  function ready() {
    if (window.parent !== window) window.parent.postMessage({type: "quire:preview-ready"}, studio);
  }
  window.addEventListener("message", function (event) {
    if (event.origin !== studio || !event.data) return;
    if (event.data.type === "quire:preview-hello") {
      ready();
      return;
    }
    if (event.data.type !== "quire:preview") return;
    if (event.data.model !== model || (id && event.data.id !== id)) return;
    render(event.data.item, true);
  });
  ready();
})();
