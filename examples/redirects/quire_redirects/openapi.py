"""The OpenAPI paths of `/api/redirects`."""

from __future__ import annotations

from typing import Any

from quire.content.types.color import COLOR_TYPE
from quire.openapi import op, param
from quire_redirects.fieldtype import URL_PATH
from quire_redirects.service import STATUSES

FIELDS: dict[str, Any] = {
    "from": dict(URL_PATH.schema), "to": {"type": "string"}, "status": {"type": "integer", "enum": list(STATUSES)},
    "note": {"type": "string"}, "enabled": {"type": "boolean"},
    "color": {**COLOR_TYPE.schema, "description": "A colour to tell groups of rules apart (`#rrggbb`), or empty"}}
RULE = {"type": "object", "properties": {"_id": {"type": "string"}, **FIELDS, "_created": {"type": "integer"},
                                         "_modified": {"type": "integer"}}}
BODY = {"type": "object", "required": ["from", "to"], "properties": FIELDS}


def paths() -> dict[str, Any]:
    rule_id = param("id", "path", "string", "The rule's id")
    return {
        "/api/redirects": {
            "get": op("Redirect rules, by path", [], (400, 403), tag="redirects",
                      schema={"type": "object", "properties": {"data": {"type": "array", "items": RULE}}}),
            "post": op("Add a redirect rule (redirects/manage)", [], (403, 409), body=BODY, tag="redirects",
                       schema=RULE),
        },
        "/api/redirects/resolve": {
            "get": op("Where a path is redirected (enabled rules)",
                      [param("path", "query", "string", "A path of the site, such as /old-page", required=True)],
                      (400, 403, 404), tag="redirects",
                      schema={"type": "object", "properties": {"from": {"type": "string"}, "to": {"type": "string"},
                                                               "status": {"type": "integer"}}}),
        },
        "/api/redirects/{id}": {
            "get": op("One redirect rule", [rule_id], (400, 403, 404), tag="redirects", schema=RULE),
            "put": op("Change a redirect rule (redirects/manage): the fields sent", [rule_id], (403, 404, 409),
                      body=BODY, tag="redirects", schema=RULE),
            "delete": op("Delete a redirect rule (redirects/manage)", [rule_id], (400, 403, 404), tag="redirects",
                         schema={"type": "object", "properties": {"success": {"const": True}}}),
        },
    }
