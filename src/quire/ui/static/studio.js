// What every studio page shares: htmx requests carry the session's CSRF
// token, answers that explain a refusal (400, 403, 404, 409) are shown in
// place rather than dropped, and times in swapped parts show in the
// user's time zone like the rest of the page.
(function () {
  "use strict";
  var token = document.querySelector('meta[name="csrf-token"]');

  document.body.addEventListener("htmx:configRequest", function (e) {
    if (token) e.detail.headers["X-CSRF-Token"] = token.getAttribute("content");
  });

  document.body.addEventListener("htmx:beforeSwap", function (e) {
    var status = e.detail.xhr.status;
    if (status === 400 || status === 403 || status === 404 || status === 409) {
      e.detail.shouldSwap = true;
      e.detail.isError = false;
    } else if (status === 401) {
      window.location.assign("/auth/login?next=" + encodeURIComponent(window.location.pathname + window.location.search));
    }
  });

  document.body.addEventListener("htmx:afterSwap", function (e) {
    // a swap restoring history names no target: the whole page then
    if (window.QuireAdmin) window.QuireAdmin.formatTimes(e.detail.target || document);
  });

  document.body.addEventListener("htmx:sendError", function () {
    var notice = document.getElementById("notice");
    if (!notice) return;
    notice.textContent = "The server could not be reached; your changes are still on this page.";
    notice.hidden = false;
  });
})();
