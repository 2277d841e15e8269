// GraphiQL, the GraphQL playground, behind one small global:
//
//   QuireGraphiQL.mount(host, {url, headers})
//
// renders GraphiQL into `host`, sending every query to `url` (POST, JSON)
// with `headers` (the studio passes its CSRF token; the session cookie
// goes along by itself). The studio's page only ever talks to this API.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { GraphiQL } from 'graphiql';
import 'graphiql/style.css';

function fetcher(url, headers) {
  return async (params) => {
    const response = await fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
      body: JSON.stringify(params),
    });
    return response.json();
  };
}

window.QuireGraphiQL = {
  mount(host, { url, headers = {}, query } = {}) {
    const root = createRoot(host);
    root.render(React.createElement(GraphiQL, { fetcher: fetcher(url, headers), defaultQuery: query }));
    return { destroy: () => root.unmount() };
  },
};
