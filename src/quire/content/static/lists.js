// Content lists: "select all" for the batch actions, and the tree's drag
// and drop (Sortable, nested lists; each drop posts the item's new parent
// and position, the server answers the tree as stored). The keyboard
// buttons of the tree are htmx forms; after one, focus returns to the
// same button of the moved item so that it can be moved again at once.
(function () {
  "use strict";
  var token = document.querySelector('meta[name="csrf-token"]');

  // The batch actions show once an item is selected (without scripts they
  // are always there).
  function showBatch() {
    var batch = document.getElementById("batch");
    if (!batch) return;
    batch.hidden = !document.querySelector('input[name="ids"][form="batch"]:checked');
  }

  document.addEventListener("change", function (e) {
    var box = e.target;
    if (box.id === "limit" && box.form) {
      box.form.requestSubmit();
      return;
    }
    if (box.classList && box.classList.contains("condition-field")) {
      fitCondition(box.closest(".condition"));
      return;
    }
    if (box.classList && box.classList.contains("select-all")) {
      document.querySelectorAll('input[name="ids"][form="batch"]').forEach(function (row) {
        row.checked = box.checked;
      });
    }
    if (box.name === "ids" || (box.classList && box.classList.contains("select-all"))) showBatch();
  });

  // -- the visual filter: operators and the value's input follow the field
  function kinds() {
    var set = document.querySelector("fieldset.conditions");
    try { return JSON.parse(set.getAttribute("data-kinds")); } catch (err) { return {}; }
  }

  function fitCondition(row) {
    var field = row.querySelector(".condition-field");
    var op = row.querySelector(".condition-op");
    var value = row.querySelector(".condition-value");
    var chosen = field.options[field.selectedIndex];
    var kind = chosen && chosen.getAttribute("data-kind");
    var ops = kind ? kinds()[kind] || [] : [];
    if (!ops.length) return;
    var keep = op.value;
    op.textContent = "";
    ops.forEach(function (each) {
      var option = document.createElement("option");
      option.value = each[0];
      option.textContent = each[1];
      if (each[0] === keep) option.selected = true;
      op.appendChild(option);
    });
    value.type = (kind === "date" || kind === "stamp") ? "date" : "text";
    if (kind === "number") value.setAttribute("inputmode", "decimal");
    else value.removeAttribute("inputmode");
    fitValue(row);
  }

  // an operator without a value (is empty, is yes) hides the value's box
  function fitValue(row) {
    var op = row.querySelector(".condition-op");
    var value = row.querySelector(".condition-value");
    var ops = kinds();
    var takes = true;
    Object.keys(ops).forEach(function (kind) {
      ops[kind].forEach(function (each) { if (each[0] === op.value && !each[2]) takes = false; });
    });
    value.hidden = !takes;
    if (!takes) value.value = "";
  }

  document.addEventListener("change", function (e) {
    if (e.target.classList && e.target.classList.contains("condition-op")) fitValue(e.target.closest(".condition"));
  });

  document.addEventListener("click", function (e) {
    var button = e.target.closest && e.target.closest("button");
    if (!button) return;
    var set = document.querySelector("fieldset.conditions");
    if (button.classList.contains("add-condition") && set) {
      var rows = set.querySelectorAll(".condition");
      var last = rows[rows.length - 1];
      var empty = last && !last.querySelector(".condition-field").value;
      if (empty) {
        last.querySelector(".condition-field").focus();
        return;
      }
      var row = last.cloneNode(true);
      var n = rows.length + 1;
      row.querySelectorAll("[id]").forEach(function (el) { el.id = el.id.replace(/-\d+$/, "-" + n); });
      row.querySelectorAll("label[for]").forEach(function (el) {
        el.setAttribute("for", el.getAttribute("for").replace(/-\d+$/, "-" + n));
        el.textContent = el.textContent.replace(/\d+$/, String(n));
      });
      row.querySelectorAll(".field-error, datalist").forEach(function (el) { el.remove(); });
      row.querySelector(".condition-field").value = "";
      var value = row.querySelector(".condition-value");
      value.value = "";
      value.hidden = false;
      value.removeAttribute("list");
      value.removeAttribute("aria-invalid");
      value.removeAttribute("aria-describedby");
      row.querySelector(".remove-condition").setAttribute("aria-label", "Remove condition " + n);
      set.appendChild(row);
      row.querySelector(".condition-field").focus();
    } else if (button.classList.contains("remove-condition")) {
      var form = button.form;
      var gone = button.closest(".condition");
      var wasSet = gone.querySelector(".condition-field").value;
      gone.remove();
      var add = document.querySelector(".add-condition");
      if (add) add.focus();
      if (wasSet && form) form.requestSubmit();
    }
  });

  // The empty row of the filter (and any row without a field) stays out
  // of the list's address.
  document.body.addEventListener("htmx:configRequest", function (e) {
    var data = e.detail.formData;
    if (!data || !data.has("w")) return;
    var names = data.getAll("w"), ops = data.getAll("o"), values = data.getAll("v");
    ["w", "o", "v"].forEach(function (key) { data.delete(key); });
    names.forEach(function (name, i) {
      if (!name) return;
      data.append("w", name);
      data.append("o", ops[i] || "");
      data.append("v", values[i] || "");
    });
  });

  // -- the focus stays on the control used: a column's sort link, a page
  // link, the search box or a condition, also after the part of the page
  // that holds it was swapped for the new one
  var focusKey = null;
  var panelOpen = null;
  document.body.addEventListener("htmx:beforeRequest", function () {
    var active = document.activeElement;
    focusKey = null;
    if (active && active !== document.body) {
      focusKey = active.getAttribute("data-focus") ? "[data-focus=\"" + active.getAttribute("data-focus") + "\"]"
        : active.id ? "#" + CSS.escape(active.id) : null;
    }
    var panel = document.getElementById("filter-panel");
    panelOpen = panel ? panel.open : null;
  });

  document.body.addEventListener("htmx:afterSettle", function () {
    // an outerHTML swap's target is the element it replaced: format the new one
    var results = document.getElementById("list-results") || document.getElementById("tree");
    if (results && window.QuireAdmin) window.QuireAdmin.formatTimes(results);
    var panel = document.getElementById("filter-panel");
    if (panel && panelOpen !== null && panelOpen) panel.open = true;
    showBatch();
    if (!focusKey) return;
    var target = document.querySelector(focusKey);
    if (!target && /data-focus="(prev|next)"/.test(focusKey)) {
      // the last page has no "next": the other page link, else the count
      target = document.querySelector('[data-focus="prev"], [data-focus="next"]') ||
        document.getElementById("list-total");
    }
    if (target && document.activeElement !== target) target.focus();
    focusKey = null;
  });

  showBatch();
  document.querySelectorAll("fieldset.conditions .condition").forEach(function (row) {
    if (row.querySelector(".condition-field").value) fitValue(row);
  });

  // The batch and columns forms return to the list as it is now shown,
  // also after htmx changed its sort, search or page.
  document.body.addEventListener("htmx:pushedIntoHistory", function () {
    document.querySelectorAll('input[name="back"]').forEach(function (input) {
      input.value = window.location.pathname + window.location.search;
    });
    // "Save this view" keeps the list as it is now shown
    document.querySelectorAll("input[data-view-query]").forEach(function (input) {
      var now = new URLSearchParams(window.location.search);
      var kept = new URLSearchParams();
      now.forEach(function (value, key) {
        if (["sort", "filter", "limit", "cols"].indexOf(key) >= 0 && value !== "") kept.append(key, value);
      });
      var ops = now.getAll("o"), values = now.getAll("v");
      now.getAll("w").forEach(function (name, i) {
        if (!name) return;
        kept.append("w", name);
        kept.append("o", ops[i] || "");
        kept.append("v", values[i] || "");
      });
      input.value = kept.toString();
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
