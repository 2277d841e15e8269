// Translations: the import form uploads through XMLHttpRequest so that a
// large file shows its upload progress, then "Reading the file…" while the
// server checks and stores it (all or nothing); a refusal is shown next to
// the form with the server's reason (the line or key at fault).
(function () {
  "use strict";
  // With this script a cell saves when it is left (htmx, on change): its
  // Save button, for browsers without JavaScript, is hidden and out of the
  // tab order, so Tab goes from one translation to the next.
  document.documentElement.classList.add("l10n-live");

  // A cell grows with its text, so that a long string is read whole (not
  // cut to the first line); also the cells htmx swaps in after a save.
  function grow(area) {
    area.style.height = "auto";
    area.style.height = (area.scrollHeight + area.offsetHeight - area.clientHeight) + "px";
  }
  function growAll(root) {
    root.querySelectorAll(".l10n-cell textarea").forEach(grow);
  }
  document.addEventListener("input", function (e) {
    if (e.target.matches && e.target.matches(".l10n-cell textarea")) grow(e.target);
  });
  document.body.addEventListener("htmx:afterSwap", function (e) { growAll(e.target.parentNode || document); });
  window.addEventListener("resize", function () { growAll(document); });
  growAll(document);

  var form = document.getElementById("l10n-import");
  if (form && window.XMLHttpRequest && window.FormData) {
    var box = form.querySelector(".import-progress");
    var bar = form.querySelector("progress");
    var stage = form.querySelector(".import-stage");
    var error = form.querySelector(".import-error");
    var button = form.querySelector('button[type="submit"]');

    form.addEventListener("submit", function (e) {
      e.preventDefault();
      var data = new FormData(form);
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("action"));
      xhr.setRequestHeader("Accept", "application/json");
      error.hidden = true;
      error.textContent = "";
      box.hidden = false;
      bar.value = 0;
      bar.removeAttribute("aria-busy");
      stage.textContent = "Uploading…";
      button.disabled = true;
      xhr.upload.addEventListener("progress", function (ev) {
        if (ev.lengthComputable) {
          bar.value = Math.round(ev.loaded * 100 / ev.total);
          stage.textContent = "Uploading… " + bar.value + " %";
        }
      });
      xhr.upload.addEventListener("load", function () {
        bar.value = 100;
        bar.setAttribute("aria-busy", "true");
        stage.textContent = "Reading the file on the server…";
      });
      xhr.addEventListener("load", function () {
        var answer = null;
        try { answer = JSON.parse(xhr.responseText); } catch (ignored) { answer = null; }
        if (xhr.status === 200 && answer && answer.url) {
          stage.textContent = "Imported.";
          window.location.assign(answer.url);
          return;
        }
        if (xhr.status === 401) {
          window.location.assign("/auth/login?next=" + encodeURIComponent(window.location.pathname));
          return;
        }
        fail(answer && answer.error ? answer.error : "The import failed (status " + xhr.status + ").");
      });
      xhr.addEventListener("error", function () {
        fail("The server could not be reached; nothing was imported.");
      });
      xhr.send(data);
    });

    var fail = function (message) {
      box.hidden = true;
      button.disabled = false;
      error.textContent = "Nothing was imported: " + message;
      error.hidden = false;
    };
  }

  // Forms outside the grid (a new key) return to the grid as now shown,
  // also after htmx changed its search, filter or page.
  document.body.addEventListener("htmx:pushedIntoHistory", function () {
    document.querySelectorAll('input[name="back"]').forEach(function (input) {
      input.value = window.location.pathname + window.location.search;
    });
  });

})();
