// Content lists: "select all" for the batch actions, and the tree's drag
// and drop (Sortable, nested lists; each drop posts the item's new parent
// and position, the server answers the tree as stored). The keyboard
// buttons of the tree are htmx forms; after one, focus returns to the
// same button of the moved item so that it can be moved again at once.
(function () {
  "use strict";
  var token = document.querySelector('meta[name="csrf-token"]');

  document.addEventListener("change", function (e) {
    var box = e.target;
    if (!box.classList || !box.classList.contains("select-all")) return;
    document.querySelectorAll('input[name="ids"][form="batch"]').forEach(function (row) {
      row.checked = box.checked;
    });
  });

  // The filter's error comes with the table (an out-of-band swap): the
  // box is marked invalid while there is one.
  document.body.addEventListener("htmx:afterSettle", function () {
    // an outerHTML swap's target is the element it replaced: format the new one
    var results = document.getElementById("list-results") || document.getElementById("tree");
    if (results && window.QuireAdmin) window.QuireAdmin.formatTimes(results);
    var box = document.getElementById("filter");
    var error = document.getElementById("filter-error");
    if (!box || !error) return;
    if (error.textContent.trim()) box.setAttribute("aria-invalid", "true");
    else box.removeAttribute("aria-invalid");
  });

  // The batch and columns forms return to the list as it is now shown,
  // also after htmx changed its sort, search or page.
  document.body.addEventListener("htmx:pushedIntoHistory", function () {
    document.querySelectorAll('input[name="back"]').forEach(function (input) {
      input.value = window.location.pathname + window.location.search;
    });
  });

  var lastMove = null;
  document.body.addEventListener("htmx:beforeRequest", function (e) {
    var form = e.detail.elt;
    if (!form.classList || !form.classList.contains("tree-moves")) return;
    var submitter = e.detail.requestConfig && e.detail.requestConfig.triggeringEvent &&
      e.detail.requestConfig.triggeringEvent.submitter;
    lastMove = {id: form.querySelector('input[name="id"]').value, dir: submitter ? submitter.value : null};
  });

  document.body.addEventListener("htmx:afterSwap", function () {
    setUpTree();
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

  function showProblem(text) {
    var notice = document.getElementById("notice");
    if (!notice) return;
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
  }

  function moved(evt) {
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
        if (response.ok) {
          replaceTree(html);
        } else {
          var holder = document.createElement("div");
          holder.innerHTML = html;
          var message = holder.querySelector("main p");
          showProblem("Not moved: " + (message ? message.textContent : "the server refused (" + response.status + ")"));
          window.location.reload();
        }
      });
    }, function () {
      showProblem("The server could not be reached; the item was not moved.");
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
        group: "tree", handle: ".tree-handle", animation: 150, fallbackOnBody: true, forceFallback: true,
        swapThreshold: 0.65, emptyInsertThreshold: 8, onEnd: moved
      });
    });
  }

  setUpTree();
})();
