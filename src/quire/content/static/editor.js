// The item editor's widgets: rich text and code editors writing into the
// form's inputs, repeaters (add, remove, move by buttons or by dragging),
// link and asset pickers with upload in place, locale tabs on narrow
// screens, and a guard against leaving with unsaved changes. The form is a
// plain form: everything here only fills in its inputs (see formdata.py).
// The buttons that only work through this script (data-scripted) come
// disabled and are enabled here, once they work: before this script runs
// (or without scripts) a click on them would do nothing.
(function () {
  "use strict";
  // a space's studio is served under the space's name (base.html: data-base)
  var BASE = document.documentElement.getAttribute("data-base") || "";
  var form = document.querySelector("form[data-editor]");
  if (!form) return;
  var dirty = form.hasAttribute("data-dirty-start");
  var counter = 0;
  var tokenMeta = document.querySelector('meta[name="csrf-token"]');

  function markDirty() { dirty = true; }
  form.addEventListener("input", function (e) { if (!e.target.closest(".picker")) markDirty(); });
  form.addEventListener("change", function (e) { if (!e.target.closest(".picker") && !e.target.matches("[data-upload]")) markDirty(); });
  form.addEventListener("submit", function () { dirty = false; });
  window.addEventListener("beforeunload", function (e) {
    if (!dirty) return undefined;
    e.preventDefault();
    e.returnValue = "";
    return "";
  });
  // "Reload (discard my changes)" says so already
  document.querySelectorAll("a[data-discard]").forEach(function (link) {
    link.addEventListener("click", function () { dirty = false; });
  });
  // a delete form posts elsewhere on purpose: no question about the edits
  document.querySelectorAll("form:not([data-editor])").forEach(function (other) {
    other.addEventListener("submit", function () { dirty = false; });
  });

  // -- editors -----------------------------------------------------------
  function setUp(root) {
    root.querySelectorAll("button[data-scripted]").forEach(function (button) { button.disabled = false; });
    if (!window.QuireEditors) return;
    root.querySelectorAll("[data-rich]").forEach(function (host) {
      if (host.hasAttribute("data-ready")) return;
      host.setAttribute("data-ready", "");
      var input = document.getElementById(host.getAttribute("data-rich"));
      window.QuireEditors.richText(host, {
        html: input.value,
        label: host.getAttribute("data-label") || "Rich text",
        onChange: function (html) { input.value = html; markDirty(); }
      });
      if (host.closest("fieldset[disabled]")) {
        // a role that may only read: the text shown, not editable
        var area = host.querySelector("[contenteditable]");
        if (area) area.setAttribute("contenteditable", "false");
      }
    });
    root.querySelectorAll("textarea[data-code]").forEach(function (area) {
      if (area.hasAttribute("data-ready") || area.disabled || area.closest("fieldset[disabled]")) return;
      area.setAttribute("data-ready", "");
      var host = document.createElement("div");
      host.className = "code-host";
      area.parentNode.insertBefore(host, area.nextSibling);
      area.hidden = true;
      window.QuireEditors.code(host, {
        doc: area.value,
        language: area.getAttribute("data-code"),
        label: area.getAttribute("data-label") || "Code",
        onChange: function (text) { area.value = text; markDirty(); }
      });
    });
    root.querySelectorAll("[data-entries]").forEach(function (list) {
      if (list.hasAttribute("data-ready") || !window.Sortable || !list.closest(".repeater").querySelector("[data-add]")) return;
      list.setAttribute("data-ready", "");
      window.Sortable.create(list, { handle: ".handle", animation: 120, onEnd: markDirty });
    });
    root.querySelectorAll("input[data-datetime]").forEach(showLocalTime);
  }

  // -- repeaters ---------------------------------------------------------
  function addEntry(repeater) {
    var blank = repeater.querySelector(":scope > template[data-blank]");
    var key = "n" + Date.now().toString(36) + (counter++);
    var html = blank.innerHTML.split(repeater.getAttribute("data-placeholder")).join(key);
    var list = repeater.querySelector(":scope > [data-entries]");
    var holder = document.createElement("ol");
    holder.innerHTML = html;
    var entry = holder.firstElementChild;
    list.appendChild(entry);
    if (window.htmx) window.htmx.process(entry);
    setUp(entry);
    markDirty();
    var first = entry.querySelector(".entry-body input:not([type=hidden]), .entry-body textarea, .entry-body select, .entry-body [contenteditable]");
    if (first) first.focus();
  }

  form.addEventListener("click", function (e) {
    var button = e.target.closest("button");
    if (!button || !form.contains(button)) return;
    var entry = button.closest(".entry");
    if (button.hasAttribute("data-add")) {
      addEntry(button.closest("[data-repeater]"));
    } else if (button.hasAttribute("data-remove") && entry) {
      var next = entry.nextElementSibling || entry.previousElementSibling;
      var addButton = entry.closest("[data-repeater]").querySelector(":scope > [data-add]");
      entry.remove();
      markDirty();
      (next ? next.querySelector("[data-remove]") : addButton).focus();
    } else if (button.hasAttribute("data-up") && entry && entry.previousElementSibling) {
      entry.parentNode.insertBefore(entry, entry.previousElementSibling);
      markDirty();
      button.focus();
    } else if (button.hasAttribute("data-down") && entry && entry.nextElementSibling) {
      entry.parentNode.insertBefore(entry.nextElementSibling, entry);
      markDirty();
      button.focus();
    } else if (button.hasAttribute("data-pick-open")) {
      togglePicker(button);
    } else if (button.hasAttribute("data-pick-close")) {
      closePicker(button.closest("dialog"));
    } else if (button.hasAttribute("data-pick")) {
      pick(button);
    } else if (button.hasAttribute("data-ref-clear")) {
      choose(button.closest("[data-ref]"), "", "", false);
    } else if (button.hasAttribute("data-locale-tab")) {
      showLocale(button);
    }
  });

  // -- pickers -----------------------------------------------------------
  // A picker is a modal dialog that fits the screen (editor.css), with
  // its search first; closing it (a choice, Close, Escape) gives the focus
  // back to "Choose…".
  function togglePicker(button) {
    var picker = document.getElementById(button.getAttribute("aria-controls"));
    if (picker.open) {
      closePicker(picker);
      return;
    }
    picker.showModal();
    button.setAttribute("aria-expanded", "true");
    var search = picker.querySelector("input[type=search]");
    search.focus();
    search.dispatchEvent(new Event("search"));
  }

  function closePicker(picker) {
    if (picker.open) picker.close();
  }

  // ("close" does not bubble: caught on its way down, for the pickers of
  // repeater rows added later too)
  form.addEventListener("close", function (e) {
    var picker = e.target;
    if (!picker.matches || !picker.matches("dialog.picker")) return;
    var opener = picker.closest("[data-ref]").querySelector("[data-pick-open]");
    opener.setAttribute("aria-expanded", "false");
    opener.focus();
  }, true);
  // a click on the backdrop (outside the dialog's box) closes it too
  form.addEventListener("click", function (e) {
    var picker = e.target;
    if (!picker.matches || !picker.matches("dialog.picker")) return;
    var box = picker.getBoundingClientRect();
    if (e.clientX < box.left || e.clientX > box.right || e.clientY < box.top || e.clientY > box.bottom) {
      closePicker(picker);
    }
  });

  function choose(widget, id, label, image) {
    var input = document.getElementById(widget.getAttribute("data-ref"));
    input.value = id;
    var shown = widget.querySelector("[data-ref-label]");
    shown.textContent = label || (widget.querySelector("[data-thumb]") ? "No asset chosen" : "No item linked");
    var open = widget.querySelector("[data-ref-open]");
    if (open) open.hidden = true;
    var thumb = widget.querySelector("[data-thumb]");
    if (thumb) {
      if (id && image) thumb.src = BASE + "/studio/assets/thumb/" + id;
      thumb.hidden = !(id && image);
    }
    // nothing to remove once removed: the focus goes on to "Choose…"
    var clear = widget.querySelector("[data-ref-clear]");
    if (clear) {
      if (!id && document.activeElement === clear) widget.querySelector("[data-pick-open]").focus();
      clear.hidden = !id;
    }
    markDirty();
  }

  function pick(button) {
    var widget = document.querySelector('[data-ref="' + button.getAttribute("data-pick") + '"]');
    if (!widget) return;
    choose(widget, button.getAttribute("data-pick-id"), button.getAttribute("data-pick-label"),
           button.hasAttribute("data-pick-image") && button.getAttribute("data-pick-image") === "1");
    closePicker(widget.querySelector(".picker"));
  }

  form.addEventListener("keydown", function (e) {
    if ((e.key === "ArrowRight" || e.key === "ArrowLeft") && e.target.matches("[data-locale-tab]")) {
      // the tabs pattern: arrows move between a field's locales
      var tabs = Array.prototype.slice.call(e.target.parentNode.querySelectorAll("[data-locale-tab]"));
      var at = tabs.indexOf(e.target) + (e.key === "ArrowRight" ? 1 : -1);
      var next = tabs[(at + tabs.length) % tabs.length];
      next.focus();
      showLocale(next);
      e.preventDefault();
    } else if (e.key === "Enter" && e.target.matches(".picker input[type=search]")) {
      e.preventDefault(); // searching, not saving
    }
  });

  // -- upload in place ---------------------------------------------------
  // A file the library holds already is offered instead of a second copy:
  // the editor chooses "Use the one in the library" or "Upload it again".
  function uploadFile(widget, file, again) {
    var message = widget.querySelector("[data-upload-error]");
    message.textContent = "Uploading…";
    var body = new FormData();
    body.append("file", file);
    fetch(BASE + "/studio/assets/upload" + (again ? "?again=1" : ""), {
      method: "POST", body: body, credentials: "same-origin",
      headers: { "X-CSRF-Token": tokenMeta ? tokenMeta.getAttribute("content") : "" }
    }).then(function (response) {
      return response.json().then(function (answer) { return { ok: response.ok, answer: answer }; });
    }).then(function (result) {
      if (!result.ok) {
        message.textContent = "Not uploaded: " + (result.answer.error || "refused");
        return;
      }
      if (result.answer.duplicate) {
        offerDuplicate(widget, file, result.answer.duplicate);
        return;
      }
      message.textContent = "";
      choose(widget, result.answer._id, result.answer.title, result.answer.image);
    }).catch(function () {
      message.textContent = "The upload did not reach the server; try again.";
    });
  }

  function offerDuplicate(widget, file, same) {
    var message = widget.querySelector("[data-upload-error]");
    message.textContent = "";
    var box = document.createElement("span");
    box.className = "duplicate";
    box.appendChild(document.createTextNode("The library has this file already, as “" + same.title + "”. "));
    var use = document.createElement("button");
    use.type = "button";
    use.className = "secondary";
    use.textContent = "Use the one in the library";
    var again = document.createElement("button");
    again.type = "button";
    again.className = "secondary";
    again.textContent = "Upload it again";
    box.appendChild(use);
    box.appendChild(document.createTextNode(" "));
    box.appendChild(again);
    message.appendChild(box);
    use.addEventListener("click", function () {
      message.textContent = "";
      choose(widget, same._id, same.title, same.image);
      widget.querySelector("[data-pick-open]").focus();
    });
    again.addEventListener("click", function () { uploadFile(widget, file, true); });
    use.focus();
  }

  form.addEventListener("change", function (e) {
    var input = e.target;
    if (!input.matches || !input.matches("input[data-upload]") || !input.files.length) return;
    var file = input.files[0];
    input.value = "";
    uploadFile(input.closest("[data-ref]"), file, false);
  });

  // -- locales on narrow screens ------------------------------------------
  // a translator works locale by locale: choosing one shows it in every
  // localized field of the form, not only in the field whose tab was used
  function showLocale(tab) {
    var code = tab.getAttribute("data-locale-tab");
    form.querySelectorAll("[data-locales]").forEach(function (box) {
      var has = false;
      box.querySelectorAll("[data-locale-tab]").forEach(function (t) {
        if (t.getAttribute("data-locale-tab") === code) has = true;
      });
      if (!has) return;
      box.querySelectorAll("[data-locale-tab]").forEach(function (t) {
        t.setAttribute("aria-selected", t.getAttribute("data-locale-tab") === code ? "true" : "false");
      });
      box.querySelectorAll("[data-locale]").forEach(function (col) {
        col.classList.toggle("active", col.getAttribute("data-locale") === code);
      });
    });
  }

  // -- times (a field type's own script, as the colour's, comes from
  // /studio/static/field-types.js) ---------------------------------------
  form.addEventListener("input", function (e) {
    if (e.target.matches("input[data-datetime]")) showLocalTime(e.target);
  });

  // A datetime is stored as ISO text (UTC with Z, or with an offset); the
  // editor says which time that is in the user's time zone.
  function showLocalTime(input) {
    var out = input.parentNode.querySelector("[data-local-time-for]");
    if (!out) return;
    var value = input.value.trim();
    var when = value ? new Date(value) : null;
    var shown = window.QuireAdmin ? window.QuireAdmin.formatTime(when || new Date(NaN)) : "";
    out.textContent = when && !isNaN(when.getTime()) ? "= " + shown + " your time" : "";
  }

  setUp(document);

  // -- conditional fields (content/conditions.py) --------------------------
  // A field with `showWhen` shows only while its rule holds for the values
  // in the form; one with `requiredWhen` is marked required only then. The
  // server applies the same rules (json-logic) when the item is saved; a
  // hidden field keeps its value.
  var conditional = form.querySelectorAll(".field[data-show-when], .field[data-required-when]");
  var formValues = function () {
    var values = {};
    form.querySelectorAll("input[name^='f.'], select[name^='f.'], textarea[name^='f.']").forEach(function (input) {
      var key = input.name.slice(2);
      if (!/^[A-Za-z][A-Za-z0-9_]*$/.test(key)) return;  // a top-level field (sets and lists are not read)
      if (input.type === "checkbox") {
        values[key] = input.checked;  // (after the hidden "off" input of the same name)
      } else if (input.type === "number") {
        values[key] = input.value === "" ? null : Number(input.value);
      } else {
        values[key] = input.value === "" ? null : input.value;
      }
    });
    return values;
  };
  var holds = function (rule, values) {
    try { return window.jsonLogic.truthy(window.jsonLogic.apply(rule, values)); } catch (err) { return false; }
  };
  var applyConditions = function () {
    if (!conditional.length || !window.jsonLogic) return;
    var values = formValues();
    conditional.forEach(function (box) {
      var shown = !box.hasAttribute("data-show-when") || holds(JSON.parse(box.getAttribute("data-show-when")), values);
      box.hidden = !shown;
      if (box.hasAttribute("data-required-when")) {
        var must = holds(JSON.parse(box.getAttribute("data-required-when")), values);
        box.querySelectorAll(".req").forEach(function (mark) { mark.hidden = !must; });
      }
    });
  };
  if (conditional.length) {
    form.addEventListener("input", applyConditions);
    form.addEventListener("change", applyConditions);
    applyConditions();
  }

  // -- presence and the edit lock (ui/presence.py) ------------------------
  // The editor says it is open (and again every heartbeat), shows who
  // holds the lock and who else is here, offers "Take over editing", and
  // asks again when the session's event stream says something changed.
  var presence = document.getElementById("presence");
  if (presence) {
    var resource = presence.getAttribute("data-resource");
    var openedAt = parseFloat(presence.getAttribute("data-now")) || 0;
    var text = presence.querySelector(".presence-text");
    var take = presence.querySelector("[data-take-over]");
    var notice = document.getElementById("presence-notice");
    var beat = null;
    var token = tokenMeta ? tokenMeta.getAttribute("content") : "";
    var body = function (action) {
      var data = new URLSearchParams();
      data.set("csrf", token);
      data.set("resource", resource);
      data.set("action", action);
      return data;
    };
    var show = function (state) {
      if (!state || state.left) return;
      var lines = [];
      if (state.holder && !state.holder.mine) {
        lines.push(state.holder.name + " is editing this item. Saving may conflict with their changes.");
      } else if (state.others.length) {
        lines.push("You are editing; also here: " + state.others.join(", ") + ".");
      }
      if (state.holder && !state.holder.mine && state.others.length > 1) {
        lines.push("Also here: " + state.others.filter(function (n) { return n !== state.holder.name; }).join(", ") + ".");
      }
      text.textContent = lines.join(" ");
      presence.hidden = !lines.length;
      take.hidden = !(state.holder && !state.holder.mine) || !form.querySelector("[data-save]");
      presence.classList.toggle("locked", !!(state.holder && !state.holder.mine));
      if (state.heartbeat && !beat) beat = window.setInterval(function () { send("join"); }, state.heartbeat * 1000);
    };
    var send = function (action) {
      return fetch(BASE + "/studio/presence", {method: "POST", body: body(action), credentials: "same-origin",
                                         headers: {"X-CSRF-Token": token}})
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(show)
        .catch(function () {});
    };
    take.addEventListener("click", function () {
      notice.hidden = true;
      send("take");
    });
    document.addEventListener("quire:event", function (e) {
      var event = e.detail;
      if (event.type !== "presence" || !event.data || event.data.resource !== resource) return;
      if (event.data.at < openedAt) return;  // from before this page (a stream replays its session's events)
      if (event.data.notice) {
        notice.textContent = event.data.notice + " Your changes are still in the form; saving checks for a conflict.";
        notice.hidden = false;
      }
      send("join");
    });
    window.addEventListener("pagehide", function () {
      if (navigator.sendBeacon) navigator.sendBeacon(BASE + "/studio/presence", body("leave"));
    });
    send("join");
  }

  // -- live preview (content/screens/live.py) ----------------------------
  // Beside the editor, the site's preview page gets the item as the form
  // holds it while the editor types (to that page's origin only). A page
  // that says it listens ("quire:preview-ready") is marked live; any other
  // keeps showing the saved draft.
  var frame = document.querySelector(".preview-pane iframe");
  if (frame) {
    var frameOrigin = new URL(frame.src, window.location.href).origin;
    var liveUrl = form.getAttribute("action").replace(/\/$/, "") + "/live";
    var modeText = document.querySelector(".preview-pane .preview-mode");
    var listening = false;
    var pending = null;
    var sendLive = function () {
      if (!listening) return;
      var data = new URLSearchParams();
      new FormData(form).forEach(function (value, key) { if (typeof value === "string") data.append(key, value); });
      fetch(liveUrl, {method: "POST", body: data, credentials: "same-origin",
                      headers: {"X-CSRF-Token": tokenMeta ? tokenMeta.getAttribute("content") : ""}})
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (message) { if (message && frame.contentWindow) frame.contentWindow.postMessage(message, frameOrigin); })
        .catch(function () {});
    };
    var soon = function () {
      window.clearTimeout(pending);
      pending = window.setTimeout(sendLive, 300);
    };
    form.addEventListener("input", soon);
    form.addEventListener("change", soon);
    var live = function () {
      listening = true;
      if (modeText) modeText.textContent = "Live: the page follows your changes as you type (they are not saved).";
      sendLive();
    };
    // (preview-ready.js, in the head, heard the page if it spoke first)
    document.addEventListener("quire:preview-ready", function (e) {
      if (e.detail.origin === frameOrigin && e.detail.source === frame.contentWindow) live();
    });
    if (window.quirePreviewReady === frameOrigin) live();
    // a page loaded (again) after this script ran is asked whether it listens
    frame.addEventListener("load", function () {
      frame.contentWindow.postMessage({type: "quire:preview-hello"}, frameOrigin);
    });
  }

  // A new item: the first field takes the focus, so that typing starts
  // there (not on a page with a problem to read first, nor a saved one).
  if (form.hasAttribute("data-new") && !document.querySelector(".form-errors, #flash")) {
    var firstField = form.querySelector(".editor-main .field input:not([type=hidden]):not([disabled]), " +
      ".editor-main .field textarea:not([disabled]), .editor-main .field select:not([disabled]), " +
      ".editor-main .field [contenteditable=true]");
    if (firstField && firstField.offsetParent !== null) firstField.focus();
  }
})();
