// The admin pages' one script: dates in local time, the focus on the
// message of the last save, and the session's event stream. When the
// identity provider ends the session (back-channel logout), the server
// pushes {type: "logout"}; the page says so and goes to the login page 1.5
// seconds later.
(function () {
  "use strict";
  var LOGOUT_DELAY_MS = 1500;

  // Times in the user's time zone (their settings' choice, else the
  // browser's: the server reads it from this cookie to take times typed
  // in it), named next to each time; also for parts of a page swapped in
  // later (the studio calls this again).
  var browserZone = "";
  try { browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || ""; } catch (err) { browserZone = ""; }
  if (browserZone && document.cookie.indexOf("quire_tz=" + encodeURIComponent(browserZone)) === -1) {
    document.cookie = "quire_tz=" + encodeURIComponent(browserZone) + "; path=/; max-age=31536000; samesite=lax" +
      (location.protocol === "https:" ? "; secure" : "");
  }
  var zone = document.body.getAttribute("data-tz") || browserZone || "UTC";

  function formatTime(date) {
    try {
      return date.toLocaleString(undefined, {timeZone: zone, timeZoneName: "short"});
    } catch (err) {
      return date.toLocaleString(undefined, {timeZone: "UTC", timeZoneName: "short"});
    }
  }

  function formatTimes(root) {
    root.querySelectorAll("time[data-unix]").forEach(function (el) {
      var seconds = parseInt(el.getAttribute("data-unix"), 10);
      if (seconds > 0) {
        var date = new Date(seconds * 1000);
        el.textContent = formatTime(date);
        el.setAttribute("datetime", date.toISOString());
        el.setAttribute("title", zone);
      }
    });
  }
  window.QuireAdmin = { formatTimes: formatTimes, formatTime: formatTime, zone: zone };
  formatTimes(document);

  // The message of the last save takes the focus: a screen reader reads it,
  // and the next Tab continues from there instead of the top of the page.
  var flash = document.getElementById("flash");
  if (flash) {
    flash.setAttribute("tabindex", "-1");
    flash.focus();
  }

  // Phones: the sections open and close under the menu button; Escape
  // closes them and gives the focus back to the button.
  var menu = document.querySelector(".menu-button");
  var sections = document.getElementById("sections");
  if (menu && sections) {
    menu.hidden = false;
    document.body.classList.add("has-menu");
    var setOpen = function (open) {
      menu.setAttribute("aria-expanded", open ? "true" : "false");
      sections.classList.toggle("open", open);
    };
    menu.addEventListener("click", function () {
      var open = menu.getAttribute("aria-expanded") !== "true";
      setOpen(open);
      if (open) {
        var first = sections.querySelector("a");
        if (first) first.focus();
      }
    });
    sections.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && menu.getAttribute("aria-expanded") === "true") {
        setOpen(false);
        menu.focus();
      }
    });
  }

  // The space switcher (a <details>): closed by Escape (the focus back on
  // its button) and by a click anywhere else, as a menu is.
  var switcher = document.querySelector("details.spaces");
  if (switcher) {
    switcher.addEventListener("keydown", function (e) {
      if (e.key === "Escape" && switcher.open) {
        switcher.open = false;
        switcher.querySelector("summary").focus();
      }
    });
    document.addEventListener("click", function (e) {
      if (switcher.open && !switcher.contains(e.target)) switcher.open = false;
    });
  }

  var url = document.body.getAttribute("data-events");
  if (!url || !window.EventSource) return;
  var source = new EventSource(url);
  // A stream refused on reconnect (401: the session ended some other way,
  // by logout in another tab or an administrator) closes for good: reload,
  // and the server sends the page to the login form.
  source.onerror = function () {
    if (source.readyState === EventSource.CLOSED && !document.body.classList.contains("logged-out")) {
      window.location.reload();
    }
  };
  source.onmessage = function (e) {
    var event;
    try { event = JSON.parse(e.data); } catch (err) { return; }
    if (event.type !== "logout") {
      // other events are the page's to read (the editor's presence)
      document.dispatchEvent(new CustomEvent("quire:event", {detail: event}));
      return;
    }
    source.close();
    var notice = document.getElementById("notice");
    notice.textContent = (event.data && event.data.message) || "You have been logged out.";
    notice.hidden = false;
    document.body.classList.add("logged-out");
    window.setTimeout(function () { window.location.assign("/auth/login"); }, LOGOUT_DELAY_MS);
  };
})();
