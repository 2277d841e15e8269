"""OpenAPI paths of the change feed (merged by quire.openapi.document)."""

from __future__ import annotations

from typing import Any

from quire.openapi import op, param

CHANGE: dict[str, Any] = {
    "type": "object",
    "required": ["seq", "event", "change", "model", "id", "who", "at"],
    "properties": {
        "seq": {"type": "integer", "description": "the change's number (the SSE event's id)"},
        "event": {"type": "string", "description": "the write's event, e.g. content.item.saved"},
        "change": {"enum": ["save", "remove"], "description": "what a reader should do with its copy"},
        "model": {"type": "string"}, "id": {"type": "string"},
        "item": {"type": "object", "description": "save: the item as the REST API answers it now"},
        "who": {"type": "object", "properties": {"kind": {"type": "string"}, "id": {"type": ["string", "null"]}}},
        "at": {"type": "number", "description": "Unix time of the write"},
    },
}


def paths() -> dict[str, Any]:
    params = [
        param("models", "query", "string", "Comma-separated model names (every model the key may read without)"),
        param("filter", "query", "json", "A MongoDB filter, as on the item lists"),
        param("fields", "query", "json", "A projection of the items, as on the item lists (`_id` always stays)"),
        param("locale", "query", "string", "The locale of the items' values"),
        param("populate", "query", "integer", "Depth of linked items to include"),
        param("since", "query", "string", "Pull: the `next` of the previous page, 0 from the oldest change kept. "
              "Stream: where to start when no Last-Event-ID is sent"),
        param("limit", "query", "integer", "Pull: changes read at most (1 to 1000, 100 by default)"),
    ]
    pulled = op("The changes since a token, as JSON ({data, next}); with Accept: text/event-stream, a stream of "
                "Server-Sent Events (id = seq, data = a change; `event: resync` when the position is lost)",
                params, (400, 401, 403, 404, 410, 429),
                schema={"type": "object", "required": ["data", "next"],
                        "properties": {"data": {"type": "array", "items": CHANGE}, "next": {"type": "string"}}})
    return {"/api/content/changes": {"get": pulled}}
