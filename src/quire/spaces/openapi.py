"""OpenAPI paths of spaces and their aliases (merged by quire.openapi.document)."""

from __future__ import annotations

from typing import Any

from quire.openapi import op, param

SPACE: dict[str, Any] = {
    "type": "object", "required": ["name", "label", "api"],
    "properties": {"name": {"type": "string"}, "label": {"type": "string"}, "created": {"type": "number"},
                   "api": {"type": "string", "description": "its API's path: /<name>/api"},
                   "origin": {"type": ["string", "null"], "description": "the space it was forked from"}},
}
ALIAS: dict[str, Any] = {
    "type": "object", "required": ["name", "space", "api"],
    "properties": {"name": {"type": "string"}, "space": {"type": "string", "description": "the space it serves"},
                   "previous": {"type": ["string", "null"], "description": "the one it served before: a rollback"},
                   "switched": {"type": "number"}, "api": {"type": "string"}},
}
NAME = param("name", "path", "string", "The space's (or alias's) name", required=True)
OK = {"type": "object", "properties": {"success": {"type": "boolean"}}}


def paths() -> dict[str, Any]:
    def manage(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="system", **kw)

    return {
        "/api/system/spaces": {
            "get": manage("The site's spaces", [], (403,), schema={"type": "array", "items": SPACE}),
            "post": manage("Create a space, served at /<name>/api/...", [], (403, 409), schema=SPACE, body={
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "label": {"type": "string"}}}),
        },
        "/api/system/spaces/{name}": {
            "get": manage("One space", [NAME], (403, 404), schema=SPACE),
            "delete": manage("Remove a space and everything in it", [NAME], (403, 404, 409), schema=OK),
        },
        "/api/system/aliases": {
            "get": manage("The aliases and the space each serves", [], (403,), schema={"type": "array", "items": ALIAS}),
        },
        "/api/system/aliases/{name}": {
            "put": manage("Point an alias at a space, or switch it (pointing it back is the rollback)", [NAME],
                          (403, 409), schema=ALIAS,
                          body={"type": "object", "required": ["space"], "properties": {"space": {"type": "string"}}}),
            "delete": manage("Remove an alias", [NAME], (403, 404), schema=OK),
        },
    }
