// The assets manager: uploads of many files (one request per file, with a
// progress bar and the server's answer per file), moving assets by dropping
// them on a folder, and the focal point set by clicking on the picture.
(function () {
  "use strict";
  // a space's studio is served under the space's name (base.html: data-base)
  var BASE = document.documentElement.getAttribute("data-base") || "";
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  // -- uploads ---------------------------------------------------------------
  var zone = document.getElementById("upload-zone");
  var form = document.getElementById("upload-form");
  var list = document.getElementById("upload-list");
  var input = document.getElementById("upload-files");
  var running = 0;
  var stored = 0;

  function refreshResults() {
    var results = document.getElementById("assets-results");
    if (results && window.htmx) {
      window.htmx.ajax("GET", window.location.pathname + window.location.search,
                       { target: "#assets-results", swap: "outerHTML" });
    }
  }

  function uploadOne(file, again, reuse) {
    var row = reuse || document.createElement("li");
    row.textContent = "";
    row.className = "upload-row";
    var name = document.createElement("span");
    name.className = "upload-name";
    name.textContent = file.name;
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", "Upload of " + file.name);
    var status = document.createElement("span");
    status.className = "upload-status";
    status.textContent = "Waiting…";
    row.appendChild(name);
    row.appendChild(bar);
    row.appendChild(status);
    if (!reuse) list.appendChild(row);
    var data = new FormData();
    data.append("file", file, file.name);
    var keepAll = document.getElementById("upload-again");
    if (again || (keepAll && keepAll.checked)) data.append("duplicates", "keep");
    if (zone.dataset.folder) { data.append("folder", zone.dataset.folder); }
    var xhr = new XMLHttpRequest();
    xhr.open("POST", BASE + "/studio/assets");
    xhr.setRequestHeader("X-CSRF-Token", csrf);
    xhr.setRequestHeader("Accept", "application/json");
    xhr.upload.addEventListener("progress", function (event) {
      if (event.lengthComputable) {
        bar.value = Math.round(event.loaded * 100 / event.total);
        status.textContent = bar.value + "%";
      }
    });
    running += 1;
    xhr.addEventListener("loadend", function () {
      var answer = null;
      try { answer = JSON.parse(xhr.responseText); } catch (e) { answer = null; }
      if (xhr.status === 200 && answer && answer.stored && answer.stored.length) {
        bar.value = 100;
        row.classList.add("done");
        status.textContent = "";
        var link = document.createElement("a");
        link.href = BASE + "/studio/assets/" + answer.stored[0]._id;
        link.textContent = "Stored";
        status.appendChild(link);
        stored += 1;
      } else if (xhr.status === 200 && answer && answer.duplicates && answer.duplicates.length) {
        // the library has this file: stored again only if the user says so
        var same = answer.duplicates[0];
        bar.remove();
        row.classList.add("duplicate");
        status.textContent = "Already in the library as ";
        var existing = document.createElement("a");
        existing.href = BASE + "/studio/assets/" + same._id;
        existing.textContent = same.title;
        status.appendChild(existing);
        status.appendChild(document.createTextNode(": not uploaded. "));
        var again = document.createElement("button");
        again.type = "button";
        again.className = "secondary";
        again.textContent = "Upload it again";
        again.setAttribute("aria-label", "Upload " + file.name + " again");
        again.addEventListener("click", function () { uploadOne(file, true, row); });
        status.appendChild(again);
      } else {
        row.classList.add("refused");
        status.textContent = "Refused: " + ((answer && answer.error) ||
          (xhr.status ? "the server answered " + xhr.status : "the upload did not reach the server"));
      }
      running -= 1;
      if (running === 0 && stored) { stored = 0; refreshResults(); }
    });
    xhr.send(data);
  }

  function uploadAll(files) {
    for (var i = 0; i < files.length; i += 1) { uploadOne(files[i]); }
  }

  function hasFiles(event) {
    var types = event.dataTransfer && event.dataTransfer.types;
    return !!types && Array.prototype.indexOf.call(types, "Files") >= 0;
  }

  if (zone && form && input) {
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (input.files && input.files.length) { uploadAll(input.files); input.value = ""; }
    });
    input.addEventListener("change", function () {
      if (input.files && input.files.length) { uploadAll(input.files); input.value = ""; }
    });
    zone.addEventListener("dragover", function (event) {
      if (hasFiles(event)) { event.preventDefault(); zone.classList.add("dragging"); }
    });
    zone.addEventListener("dragleave", function () { zone.classList.remove("dragging"); });
    zone.addEventListener("drop", function (event) {
      if (!hasFiles(event)) { return; }
      event.preventDefault();
      zone.classList.remove("dragging");
      uploadAll(event.dataTransfer.files);
    });
  }

  // -- moving assets onto folders ------------------------------------------------
  var moveForm = document.getElementById("move");
  var ASSET = "application/x-quire-asset";

  function postMove(ids, folder) {
    var target = document.createElement("form");
    target.method = "post";
    target.action = BASE + "/studio/assets/move";
    target.hidden = true;
    var fields = [["csrf", csrf], ["folder", folder],
                  ["back", window.location.pathname + window.location.search]];
    ids.forEach(function (id) { fields.push(["ids", id]); });
    fields.forEach(function (pair) {
      var field = document.createElement("input");
      field.type = "hidden";
      field.name = pair[0];
      field.value = pair[1];
      target.appendChild(field);
    });
    document.body.appendChild(target);
    target.submit();
  }

  if (moveForm) {
    document.addEventListener("dragstart", function (event) {
      var item = event.target.closest && event.target.closest("[data-id][draggable]");
      if (!item) { return; }
      var ids = [item.dataset.id];
      var checked = document.querySelectorAll('input[name="ids"][form="move"]:checked');
      if (checked.length && Array.prototype.some.call(checked, function (c) { return c.value === item.dataset.id; })) {
        ids = Array.prototype.map.call(checked, function (c) { return c.value; });
      }
      event.dataTransfer.setData(ASSET, ids.join(","));
      event.dataTransfer.effectAllowed = "move";
    });
    document.querySelectorAll(".drop-target").forEach(function (link) {
      link.addEventListener("dragover", function (event) {
        if (Array.prototype.indexOf.call(event.dataTransfer.types, ASSET) >= 0) {
          event.preventDefault();
          link.classList.add("drop-over");
        }
      });
      link.addEventListener("dragleave", function () { link.classList.remove("drop-over"); });
      link.addEventListener("drop", function (event) {
        var ids = event.dataTransfer.getData(ASSET);
        if (!ids) { return; }
        event.preventDefault();
        link.classList.remove("drop-over");
        postMove(ids.split(","), link.dataset.folder || "");
      });
    });
  }

  // -- the focal point -----------------------------------------------------------
  var image = document.getElementById("focal-image");
  var mark = document.getElementById("focal-mark");
  var fx = document.getElementById("fp_x");
  var fy = document.getElementById("fp_y");
  var clear = document.getElementById("focal-clear");

  function showMark() {
    var x = parseFloat(fx.value);
    var y = parseFloat(fy.value);
    if (isNaN(x) || isNaN(y) || x < 0 || x > 1 || y < 0 || y > 1) { mark.hidden = true; return; }
    mark.hidden = false;
    mark.style.left = (x * 100) + "%";
    mark.style.top = (y * 100) + "%";
  }

  if (image && mark && fx && fy && !fx.disabled) {
    image.classList.add("focal-settable");
    image.addEventListener("click", function (event) {
      var box = image.getBoundingClientRect();
      var x = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
      var y = Math.min(1, Math.max(0, (event.clientY - box.top) / box.height));
      fx.value = x.toFixed(4);
      fy.value = y.toFixed(4);
      showMark();
    });
    fx.addEventListener("input", showMark);
    fy.addEventListener("input", showMark);
    if (clear) {
      // it comes hidden: without this script it would do nothing
      clear.addEventListener("click", function () { fx.value = ""; fy.value = ""; showMark(); });
      clear.hidden = false;
    }
  }
}());
