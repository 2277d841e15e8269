// The layout field's editor (content/types/layout.py): its value, a list
// of components as JSON in a hidden input, shown as blocks. Each block has
// its fields, a preview, and buttons to move it up or down and to remove
// it; sections hold blocks and grids hold columns of blocks, each with its
// own "Add a block" menu. Every change writes the JSON back to the input
// (the form saves it as it is; the server checks it, component by
// component). Everything is built with DOM methods: no HTML from values.
(function () {
  "use strict";
  // a space's studio is served under the space's name (base.html: data-base)
  var BASE = document.documentElement.getAttribute("data-base") || "";
  var counter = 0;
  var uids = new WeakMap();  // a block's place in the page (not saved with it)

  function uid(item) {
    if (!uids.has(item)) uids.set(item, "b" + (counter++));
    return uids.get(item);
  }

  function el(tag, attrs, text) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function setUp(box) {
    if (box.getAttribute("data-ready")) return;
    box.setAttribute("data-ready", "1");
    var input = document.getElementById(box.getAttribute("data-layout"));
    var root = box.querySelector("[data-layout-root]");
    var defs = [];
    try { defs = JSON.parse(box.getAttribute("data-components")) || []; } catch (err) { defs = []; }
    var byName = {};
    defs.forEach(function (d) { byName[d.name] = d; });
    var value = [];
    try { value = input.value ? JSON.parse(input.value) : []; } catch (err) { return; }  // kept as typed
    if (!Array.isArray(value)) return;
    var note = box.querySelector("[data-layout-noscript]");
    if (note) note.hidden = true;

    function save() {
      input.value = JSON.stringify(value);
      input.dispatchEvent(new Event("input", {bubbles: true}));
    }

    // (`focus`: selectors tried in turn, the first element found takes the focus)
    function render(focus) {
      root.textContent = "";
      root.appendChild(list(value, "Blocks"));
      (focus || []).some(function (selector) {
        var target = root.querySelector(selector);
        if (target) target.focus();
        return !!target;
      });
    }

    function list(items, where) {
      var holder = el("div", {"class": "layout-list"});
      var ol = el("ol", {"class": "layout-items", "aria-label": where});
      items.forEach(function (item, index) { ol.appendChild(block(items, item, index)); });
      holder.appendChild(ol);
      holder.appendChild(adder(items, where));
      return holder;
    }

    function adder(items, where) {
      var wrap = el("div", {"class": "layout-add"});
      var id = "layout-add-" + (counter++);
      var label = el("label", {"for": id, "class": "visually-hidden"}, "Block to add to " + where);
      var select = el("select", {id: id});
      defs.forEach(function (d) { select.appendChild(el("option", {value: d.name}, d.label || d.name)); });
      var button = el("button", {type: "button", "class": "secondary"}, "Add a block");
      button.addEventListener("click", function () {
        var d = byName[select.value];
        var made = {component: d.name, data: {}};
        if (d.holds === "children") made.children = [];
        if (d.holds === "columns") made.columns = [{components: []}, {components: []}];
        items.push(made);
        save();
        var at = '[data-block="' + uid(made) + '"] ';
        render([at + ".layout-fields input:not(.qe-input), " + at + ".layout-fields textarea, " + at +
                ".layout-fields select, " + at + ".layout-fields [contenteditable]",
                at + "button:not([disabled])"]);
      });
      wrap.appendChild(label);
      wrap.appendChild(select);
      wrap.appendChild(button);
      return wrap;
    }

    function block(items, item, index) {
      var d = byName[item.component] || {name: item.component, label: item.component, fields: []};
      var li = el("li", {"class": "layout-block", "data-block": uid(item)});
      var head = el("div", {"class": "layout-block-head"});
      var title = (d.label || d.name) + (item.label ? ": " + item.label : "");
      head.appendChild(el("strong", {}, title));
      var tools = el("span", {"class": "layout-tools"});
      [["↑", "Move up", -1], ["↓", "Move down", 1]].forEach(function (spec) {
        var move = el("button", {type: "button", "class": "secondary icon", "aria-label": spec[1] + ": " + title}, spec[0]);
        var to = index + spec[2];
        move.disabled = to < 0 || to >= items.length;
        move.addEventListener("click", function () {
          items.splice(to, 0, items.splice(index, 1)[0]);
          save();
          // the focus stays on the same button of the moved block (or the other one at an end)
          var at = '[data-block="' + uid(item) + '"] > .layout-block-head .layout-tools ';
          render([at + 'button[aria-label^="' + spec[1] + '"]:not([disabled])', at + "button:not([disabled])"]);
        });
        tools.appendChild(move);
      });
      var preview = el("button", {type: "button", "class": "secondary", "aria-expanded": "false"}, "Preview");
      var remove = el("button", {type: "button", "class": "secondary", "aria-label": "Remove: " + title}, "Remove");
      remove.addEventListener("click", function () {
        items.splice(index, 1);
        save();
        render([".layout-add select"]);
      });
      tools.appendChild(preview);
      tools.appendChild(remove);
      head.appendChild(tools);
      li.appendChild(head);
      var shown = el("div", {"class": "layout-preview", hidden: ""});
      preview.addEventListener("click", function () {
        var open = shown.hidden;
        shown.hidden = !open;
        preview.setAttribute("aria-expanded", open ? "true" : "false");
        if (open) { shown.textContent = ""; shown.appendChild(look(item, d)); }
      });
      li.appendChild(shown);
      var body = el("div", {"class": "layout-fields"});
      item.data = item.data && typeof item.data === "object" ? item.data : {};
      (d.fields || []).forEach(function (f) { body.appendChild(fieldInput(item, f, title)); });
      li.appendChild(body);
      if (d.holds === "children") {
        item.children = Array.isArray(item.children) ? item.children : [];
        li.appendChild(list(item.children, title));
      }
      if (d.holds === "columns") {
        item.columns = Array.isArray(item.columns) ? item.columns : [];
        var cols = el("div", {"class": "layout-columns"});
        item.columns.forEach(function (column, n) {
          column.components = Array.isArray(column.components) ? column.components : [];
          var col = el("div", {"class": "layout-column"});
          col.appendChild(el("p", {"class": "hint"}, "Column " + (n + 1)));
          col.appendChild(list(column.components, title + ", column " + (n + 1)));
          cols.appendChild(col);
        });
        var more = el("button", {type: "button", "class": "secondary"}, "Add a column");
        more.addEventListener("click", function () { item.columns.push({components: []}); save(); render(); });
        li.appendChild(cols);
        li.appendChild(more);
      }
      return li;
    }

    // a component's field as an input; lists, sets and the like as JSON
    function fieldInput(item, f, title) {
      var id = "layout-f-" + (counter++);
      var wrap = el("div", {"class": "layout-field-input"});
      var caption = el("label", {"for": id}, (f.label || f.name) + (f.required ? " *" : ""));
      caption.appendChild(el("span", {"class": "visually-hidden"}, " of " + title));  // which block's field
      var current = item.data[f.name];
      var control;
      var kind = f.type;
      if (kind === "wysiwyg" && window.QuireEditors) {
        // rich text as the item's own rich text fields are edited (the editor names itself)
        wrap.appendChild(el("p", {"class": "layout-rich-label", "aria-hidden": "true"}, (f.label || f.name) + (f.required ? " *" : "")));
        var host = el("div", {"class": "rich-host"});
        wrap.appendChild(host);
        window.QuireEditors.richText(host, {
          html: typeof current === "string" ? current : "",
          label: (f.label || f.name) + " of " + title,
          onChange: function (html) {
            if (html) item.data[f.name] = html; else delete item.data[f.name];
            save();
          }
        });
        return wrap;
      }
      var options = ((f.opts || {}).options || []);
      if (kind === "boolean") {
        control = el("input", {type: "checkbox", id: id});
        control.checked = current === true;
      } else if (kind === "select" && options.length) {
        control = el("select", {id: id});
        control.appendChild(el("option", {value: ""}, "—"));
        options.forEach(function (o) {
          var v = typeof o === "object" && o !== null ? o.value : o;
          var option = el("option", {value: String(v)}, typeof o === "object" && o !== null && o.label ? o.label : String(v));
          if (String(current) === String(v)) option.selected = true;
          control.appendChild(option);
        });
      } else if (["longtext", "wysiwyg", "markdown", "code"].indexOf(kind) >= 0) {
        control = el("textarea", {id: id, rows: "3"});
        control.value = typeof current === "string" ? current : "";
      } else if (["text", "number", "color", "date", "datetime", "time"].indexOf(kind) >= 0 && !f.multiple) {
        control = el("input", {id: id, type: kind === "number" ? "number" : kind === "date" ? "date" : "text"});
        control.value = current === undefined || current === null ? "" : String(current);
      } else if ((kind === "asset" || kind === "contentItemLink") && !f.multiple) {
        control = el("input", {id: id, type: "text", placeholder: kind === "asset" ? "the asset's id" : "the item's id"});
        control.value = current && typeof current === "object" ? (current._id || "") : (current || "");
      } else {
        control = el("textarea", {id: id, rows: "2", "class": "mono", placeholder: "JSON"});
        control.value = current === undefined ? "" : JSON.stringify(current);
      }
      control.addEventListener(control.tagName === "SELECT" || control.type === "checkbox" ? "change" : "input", function () {
        var v;
        if (control.type === "checkbox") v = control.checked;
        else if (control.tagName === "TEXTAREA" && control.classList.contains("mono")) {
          try { v = control.value ? JSON.parse(control.value) : null; } catch (err) { return; }  // until it is JSON
        } else if (kind === "number") v = control.value === "" ? null : Number(control.value);
        else if (kind === "asset" || kind === "contentItemLink") v = control.value ? {_id: control.value.trim()} : null;
        else v = control.value;
        if (v === null || v === "") delete item.data[f.name]; else item.data[f.name] = v;
        save();
      });
      wrap.appendChild(caption);
      wrap.appendChild(control);
      return wrap;
    }

    // a component as a page might show it: text only, no markup run
    function look(item, d) {
      var data = item.data || {};
      var out = el("div", {"class": "layout-look"});
      if (item.component === "heading") {
        var level = Math.min(6, Math.max(1, parseInt(data.level, 10) || 2));
        out.appendChild(el("h" + Math.min(6, level + 2), {}, data.text || ""));
      } else if (item.component === "richtext" || item.component === "html") {
        var holder = document.createElement("div");
        holder.textContent = String(data.html || "").replace(/<[^>]*>/g, " ").replace(/\s+/g, " ").trim();
        out.appendChild(holder);
      } else if (item.component === "image") {
        var id = data.image && data.image._id;
        if (id) out.appendChild(el("img", {src: BASE + "/studio/assets/thumb/" + encodeURIComponent(id), alt: data.caption || "", width: "120"}));
        if (data.caption) out.appendChild(el("p", {}, data.caption));
      } else if (item.component === "button" || item.component === "link") {
        out.appendChild(el("span", {"class": item.component === "button" ? "button" : ""}, data.caption || data.url || ""));
      } else {
        (d.fields || []).forEach(function (f) {
          if (data[f.name] === undefined || data[f.name] === null) return;
          var value = data[f.name];
          out.appendChild(el("p", {}, (f.label || f.name) + ": " + (typeof value === "object" ? JSON.stringify(value) : String(value))));
        });
        var inner = (item.children || []).length + (item.columns || []).reduce(function (n, c) { return n + (c.components || []).length; }, 0);
        if (inner) out.appendChild(el("p", {"class": "hint"}, inner + " block" + (inner === 1 ? "" : "s") + " inside"));
      }
      if (!out.childNodes.length) out.appendChild(el("p", {"class": "hint"}, "(empty)"));
      return out;
    }

    render();
  }

  function setUpAll(root) {
    root.querySelectorAll(".layout-field[data-layout]").forEach(setUp);
  }
  document.addEventListener("htmx:afterSwap", function (e) { setUpAll(e.target); });
  setUpAll(document);
})();
