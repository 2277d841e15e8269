// Pages and menus: drag and drop (Sortable) with the keyboard's buttons as
// the other way. The page tree posts each drop (the page's new parent and
// position); the server answers the tree as stored, or, when the move
// changes routes, the tree as it was with the route changes to confirm.
// Layout components and menu links are reordered in the form itself (a
// menu link's depth field follows where it was dropped); saving stores them.
(function () {
  "use strict";
  var token = document.querySelector('meta[name="csrf-token"]');

  function showProblem(text) {
    var notice = document.getElementById("notice");
    if (!notice) { window.alert(text); return; }
    notice.textContent = text;
    notice.hidden = false;
  }

  function replaceTree(html) {
    var tree = document.getElementById("tree");
    var holder = document.createElement("div");
    holder.innerHTML = html;
    var fresh = holder.querySelector("#tree");
    if (tree && fresh) tree.replaceWith(fresh);
    setUpTree();
    var confirm = document.getElementById("confirm-move");
    if (confirm) confirm.focus();
  }

  function dropped(evt) {
    if (evt.from === evt.to && evt.oldIndex === evt.newIndex) return;
    var tree = document.getElementById("tree");
    var body = new URLSearchParams();
    body.set("id", evt.item.getAttribute("data-id"));
    body.set("parent", evt.to.getAttribute("data-parent") || "");
    body.set("position", String(evt.newIndex));
    fetch(tree.getAttribute("data-move"), {
      method: "POST", body: body, credentials: "same-origin",
      headers: {"X-CSRF-Token": token ? token.getAttribute("content") : "", "HX-Request": "true"}
    }).then(function (response) {
      return response.text().then(function (html) {
        if (response.ok || response.status === 400 || response.status === 409) replaceTree(html);
        else window.location.reload();
      });
    }, function () {
      showProblem("The server could not be reached; the page was not moved.");
      window.location.reload();
    });
  }

  function setUpTree() {
    var tree = document.querySelector("#tree.movable");
    if (!tree || !window.Sortable) return;
    tree.querySelectorAll("ul.tree-list").forEach(function (list) {
      if (list.getAttribute("data-sortable")) return;
      list.setAttribute("data-sortable", "1");
      window.Sortable.create(list, {
        group: "pages", handle: ".tree-handle", animation: 150, fallbackOnBody: true, forceFallback: true,
        swapThreshold: 0.65, emptyInsertThreshold: 8, onEnd: dropped
      });
    });
  }

  // after a keyboard move, focus returns to the same button of the moved page
  var lastMove = null;
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    if (!form.classList || !form.classList.contains("tree-moves")) return;
    var cfg = e.detail.requestConfig;
    var submitter = cfg && cfg.triggeringEvent && cfg.triggeringEvent.submitter;
    lastMove = {id: form.querySelector('input[name="id"]').value, dir: submitter ? submitter.value : null};
  });
  document.body.addEventListener("htmx:afterSwap", function () {
    setUpTree();
    var confirm = document.getElementById("confirm-move");
    if (confirm) { confirm.focus(); lastMove = null; return; }
    if (!lastMove) return;
    var node = document.querySelector('.tree-node[data-id="' + lastMove.id + '"]');
    if (node) {
      var row = node.querySelector(".tree-row");
      var button = row.querySelector('button[value="' + lastMove.dir + '"]:not([disabled])') ||
        row.querySelector("button:not([disabled])") || row.querySelector("a");
      if (button) button.focus();
    }
    lastMove = null;
  });

  function setUpComponents() {
    var list = document.getElementById("components");
    if (!list || !window.Sortable) return;
    window.Sortable.create(list, {handle: ".tree-handle", animation: 150, forceFallback: true});
  }

  function depths() {
    document.querySelectorAll("#menu-tree li.menu-link").forEach(function (li) {
      var depth = 0;
      var up = li.parentElement;
      while (up && up.id !== "menu-tree") {
        if (up.classList.contains("menu-link")) depth += 1;
        up = up.parentElement;
      }
      var input = li.querySelector(":scope > .link-row > .link-depth");
      if (input) input.value = String(depth);
    });
  }

  function setUpMenu() {
    var tree = document.getElementById("menu-tree");
    if (!tree || !window.Sortable) return;
    tree.querySelectorAll("ol.menu-links").forEach(function (list) {
      window.Sortable.create(list, {
        group: "links", handle: ".tree-handle", animation: 150, fallbackOnBody: true, forceFallback: true,
        swapThreshold: 0.65, emptyInsertThreshold: 10, onEnd: depths
      });
    });
  }

  setUpTree();
  setUpComponents();
  setUpMenu();
})();
