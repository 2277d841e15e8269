"""OpenAPI paths of the search API."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    from quire.openapi import FILTER, LOCALE, NAME64_PATTERN, OBJECT, OBJECTS, SUCCESS, op, param

    name = param("name", "path", "string", "Index name", pattern=NAME64_PATTERN)

    def tagged(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="searchmod", **kw)

    def p(key: str, kind: str, text: str, **constraints: Any) -> dict[str, Any]:
        return param(key, "query", kind, text, **constraints)

    return {
        "/api/searchmod/search/{index}": {"get": tagged(
            "Search an index: {hits: [{_id, _score, ...fields}], total, query, limit, offset}",
            [param("index", "path", "string", "Index name", pattern=NAME64_PATTERN),
             p("q", "string", "The query: all words required, the last one also as a prefix, \"quoted phrases\""),
             p("limit", "int", "Hits to answer (default 50)", maximum=1000),
             p("offset", "int", "Hits to skip (default 0)", maximum=1_000_000),
             p("fields", "string", "Stored fields to answer, comma-separated (default all)"),
             LOCALE, FILTER,
             p("highlight", "string", "1: add _formatted with the matches in <mark>")],
            (400, 401, 403, 404), schema={
                "type": "object", "required": ["hits", "total", "limit", "offset"],
                "properties": {"hits": OBJECTS, "total": {"type": "integer", "minimum": 0},
                               "limit": {"type": "integer"}, "offset": {"type": "integer"}}})},
        "/api/searchmod/indexes": {"get": tagged("List indexes with their document counts", [], (401, 403),
                                                 schema=OBJECTS)},
        "/api/searchmod/indexes/{name}": {
            "get": tagged("One index with its document count and last build time", [name], (401, 403, 404),
                          schema=OBJECT),
            "put": tagged("Create or change an index {label, model, fields, filter, locales, weights} and build it",
                          [name], (400, 401, 403, 413), body=True, schema=OBJECT),
            "delete": tagged("Delete an index", [name], (401, 403, 404), ok='{"success": true}', schema=SUCCESS),
        },
        "/api/searchmod/indexes/{name}/rebuild": {
            "post": tagged("Rebuild an index from its content", [name], (401, 403, 404), schema=OBJECT),
        },
    }
