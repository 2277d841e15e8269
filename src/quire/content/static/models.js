// The model builder's field rows: the options of the chosen type, removing
// a field, and the order of fields by drag and drop (Sortable, by the
// handle) or by keyboard (the ↑ ↓ buttons, or Alt+ArrowUp/Down anywhere in
// a row), each move announced. The order is the order of the rows in the
// document (the form posts them in that order), so moving a row is all it
// takes. Without this script the same buttons post the form and the server
// answers the page rearranged.
(function () {
  "use strict";
  var form = document.querySelector("form.model-form");
  if (!form) return;
  var announcer = document.getElementById("announce");

  function announce(text) {
    // cleared first so that the same words twice are read twice
    announcer.textContent = "";
    window.setTimeout(function () { announcer.textContent = text; }, 30);
  }

  function rowOf(el) { return el.closest ? el.closest("li.field-row") : null; }

  function nameOf(row) {
    var input = row.querySelector(":scope > .row-body .name-input");
    return (input && input.value) || "new field";
  }

  function siblingsOf(row) {
    return Array.prototype.filter.call(row.parentElement.children, function (el) {
      return el.matches("li.field-row");
    });
  }

  function move(row, step) {
    var rows = siblingsOf(row);
    var at = rows.indexOf(row);
    var to = at + step;
    if (to < 0 || to >= rows.length) {
      announce(nameOf(row) + " is already " + (step < 0 ? "first" : "last"));
      return;
    }
    if (step < 0) row.parentElement.insertBefore(row, rows[to]);
    else row.parentElement.insertBefore(row, rows[to].nextSibling);
    announce(nameOf(row) + " moved to position " + (to + 1) + " of " + rows.length);
    changed();
  }

  // how a default is typed: as it is for plain types, else as JSON (the
  // page lists each type's facts from the server's registry of types)
  var facts = document.getElementById("field-types");
  var TYPES = facts ? JSON.parse(facts.textContent) : {};

  function showDefaultHint(row) {
    var select = row.querySelector(":scope > .row-body .type-select");
    var multiple = row.querySelector(":scope > .row-body .flags input[name$='-multiple']");
    var hint = row.querySelector(":scope > .row-body .default-hint");
    if (!select || !hint) return;
    var kind = TYPES[select.value] || {};
    var plain = kind.plain && !(multiple && multiple.checked);
    hint.textContent = (plain ? "as typed" : "JSON, e.g. " + (kind.example || "{}")) + "; empty for none";
  }

  // the options that belong to the chosen type
  function showTypeOptions(row) {
    var select = row.querySelector(":scope > .row-body .type-select");
    if (!select) return;
    row.querySelectorAll(":scope > .row-body > .type-opts").forEach(function (box) {
      box.hidden = box.getAttribute("data-types").split(" ").indexOf(select.value) < 0;
    });
    var code = row.querySelector(":scope > .row-head .row-type");
    if (code) code.textContent = select.value;
  }

  // The label a field gets when none is typed, as the server makes it
  // (model_form.human_label): "publishedAt" and "published_at" read
  // "Published at".
  function humanLabel(name) {
    var words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/_/g, " ").split(/\s+/).filter(Boolean);
    var text = words.map(function (w) { return (w.length > 1 && w === w.toUpperCase()) ? w : w.toLowerCase(); }).join(" ");
    return text ? text.charAt(0).toUpperCase() + text.slice(1) : name;
  }

  function showTitle(row) {
    var label = row.querySelector(":scope > .row-body .label-input");
    var title = row.querySelector(":scope > .row-head .row-name");
    var input = row.querySelector(":scope > .row-body .name-input");
    var made = input && input.value ? humanLabel(input.value) : "";
    if (label) label.placeholder = made || "Made from the name";
    if (title) title.textContent = (label && label.value) || made || "New field";
    var name = nameOf(row);
    var up = row.querySelector(":scope > .row-head .move-up");
    var down = row.querySelector(":scope > .row-head .move-down");
    if (up) up.setAttribute("aria-label", "Move " + name + " up");
    if (down) down.setAttribute("aria-label", "Move " + name + " down");
  }

  form.addEventListener("click", function (e) {
    var button = e.target.closest("button.move-up, button.move-down");
    if (!button) return;
    e.preventDefault();
    move(rowOf(button), button.classList.contains("move-up") ? -1 : 1);
    button.focus();
  });

  form.addEventListener("keydown", function (e) {
    if (!e.altKey || (e.key !== "ArrowUp" && e.key !== "ArrowDown")) return;
    var row = rowOf(e.target);
    if (!row) return;
    e.preventDefault();
    var focused = document.activeElement;
    move(row, e.key === "ArrowUp" ? -1 : 1);
    if (focused && focused !== document.body) focused.focus();
  });

  form.addEventListener("change", function (e) {
    var row = rowOf(e.target);
    if (!row) return;
    if (e.target.classList.contains("type-select")) showTypeOptions(row);
    if (e.target.classList.contains("type-select") || /-multiple$/.test(e.target.name)) showDefaultHint(row);
    if (e.target.classList.contains("remove-box")) {
      row.classList.toggle("is-removed", e.target.checked);
      announce(e.target.checked ? nameOf(row) + " will be removed when you save" : nameOf(row) + " is kept");
    }
    changed();
  });

  form.addEventListener("input", function (e) {
    var row = rowOf(e.target);
    if (row && (e.target.classList.contains("name-input") || e.target.classList.contains("label-input"))) showTitle(row);
  });

  function sortable(list) {
    if (!window.Sortable || list.getAttribute("data-sortable")) return;
    list.setAttribute("data-sortable", "1");
    window.Sortable.create(list, {
      handle: ".handle", draggable: "li.field-row", animation: 120,
      // rows stay in their own list: the key input names the list
      group: list.getAttribute("data-list"),
      onEnd: function (evt) {
        if (evt.oldIndex === evt.newIndex) return;
        var row = evt.item;
        announce(nameOf(row) + " moved to position " + (evt.newIndex + 1) + " of " + siblingsOf(row).length);
        changed();
      }
    });
  }

  function setUp(root) {
    root.querySelectorAll("ol.field-list").forEach(sortable);
    root.querySelectorAll("li.field-row").forEach(function (row) {
      var box = row.querySelector(":scope > .row-head .remove-box");
      if (box && box.checked) row.classList.add("is-removed");
    });
  }

  setUp(document);

  document.body.addEventListener("htmx:afterSwap", function (e) {
    var target = e.detail.target;
    setUp(target);
    var fresh = target.querySelectorAll("li.field-row[data-fresh]");
    var row = fresh[fresh.length - 1];
    if (!row) return;
    fresh.forEach(function (el) { el.removeAttribute("data-fresh"); });
    var name = row.querySelector(".name-input");
    if (name) name.focus();
    announce("New field added at position " + siblingsOf(row).length);
    changed();
  });

  // a page with changes not yet saved says so beside the save button
  var unsaved = document.getElementById("unsaved");
  function changed() { if (unsaved) unsaved.hidden = false; }
  form.addEventListener("input", changed);
})();
