"""OpenAPI paths of the search API."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    from quire.openapi import FILTER, LOCALE, op, param

    name = param("name", "path", "string", "Index name")

    def tagged(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="searchmod", **kw)

    def p(key: str, kind: str, text: str) -> dict[str, Any]:
        return param(key, "query", kind, text)

    return {
        "/api/searchmod/search/{index}": {"get": tagged(
            "Search an index: {hits: [{_id, _score, ...fields}], total, query, limit, offset}",
            [param("index", "path", "string", "Index name"),
             p("q", "string", "The query: all words required, the last one also as a prefix, \"quoted phrases\""),
             p("limit", "int", "Hits to answer (default 50, at most 1000)"),
             p("offset", "int", "Hits to skip (default 0)"),
             p("fields", "string", "Stored fields to answer, comma-separated (default all)"),
             LOCALE, FILTER,
             p("highlight", "string", "1: add _formatted with the matches in <mark>")],
            (400, 401, 403, 404))},
        "/api/searchmod/indexes": {"get": tagged("List indexes with their document counts", [], (401, 403))},
        "/api/searchmod/indexes/{name}": {
            "get": tagged("One index with its document count and last build time", [name], (401, 403, 404)),
            "put": tagged("Create or change an index {label, model, fields, filter, locales, weights} and build it",
                          [name], (400, 401, 403, 413), body=True),
            "delete": tagged("Delete an index", [name], (401, 403, 404), ok='{"success": true}'),
        },
        "/api/searchmod/indexes/{name}/rebuild": {
            "post": tagged("Rebuild an index from its content", [name], (401, 403, 404)),
        },
    }
