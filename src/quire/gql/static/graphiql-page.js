// Mounts GraphiQL (vendor/graphiql.js) on the playground's host element,
// sending queries with the session's CSRF token.
(function () {
  var host = document.getElementById("graphiql");
  if (!host || !window.QuireGraphiQL) return;
  host.textContent = "";
  window.QuireGraphiQL.mount(host, {
    url: host.getAttribute("data-url"),
    headers: { "x-csrf-token": host.getAttribute("data-csrf") },
    query: host.getAttribute("data-query"),
  });
})();
