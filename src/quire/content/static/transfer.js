// Importing a file of items: while the import runs (the form's post is
// under way), its progress is asked for twice a second and shown.
(function () {
  "use strict";
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.matches("form.import-run")) return;
    var box = form.querySelector(".import-progress");
    var bar = form.querySelector("progress");
    var stage = form.querySelector(".import-stage");
    var button = form.querySelector("button[type=submit]");
    if (button) button.disabled = true;  // one import at a time (the form is still sent)
    if (!box || !bar) return;
    box.hidden = false;
    stage.textContent = "Checking the rows…";
    var url = form.getAttribute("data-progress");
    var ask = function () {
      fetch(url, {credentials: "same-origin", headers: {"accept": "application/json"}})
        .then(function (answer) { return answer.ok ? answer.json() : null; })
        .then(function (progress) {
          if (progress && progress.total) {
            bar.max = progress.total;
            bar.value = progress.done;
            stage.textContent = progress.done.toLocaleString() + " of " + progress.total.toLocaleString() + " rows stored";
          }
        })
        .catch(function () {});
    };
    window.setInterval(ask, 500);
  });
})();
