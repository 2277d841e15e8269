// The API playground: Swagger UI over /api/openapi.json, sending every
// request with the API key pasted above (kept in this tab only).
(function () {
  "use strict";
  var STORE = "quire.playground.key";
  var input = document.getElementById("api-key");
  var state = document.getElementById("key-state");
  input.value = window.sessionStorage.getItem(STORE) || "";

  function shown() {
    state.textContent = input.value ? "Requests are sent with this key." : "No key: requests use the public role.";
  }
  shown();
  document.getElementById("key-form").addEventListener("submit", function (e) {
    e.preventDefault();
    window.sessionStorage.setItem(STORE, input.value.trim());
    shown();
  });

  var target = document.getElementById("swagger-ui");
  window.SwaggerUIBundle({
    url: target.getAttribute("data-spec"),
    domNode: target,
    deepLinking: true,
    tryItOutEnabled: true,
    persistAuthorization: false,
    requestInterceptor: function (request) {
      var key = input.value.trim();
      if (key) request.headers["api-key"] = key;
      return request;
    },
  });
})();
