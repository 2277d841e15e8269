"""OpenAPI paths of webhooks."""

from __future__ import annotations

from typing import Any

from quire.openapi import ID_PATTERN, MANAGE, READ_ERRORS, op, param

HOOK_ID = param("id", "path", "string", "Webhook id (24 hex characters)", pattern=ID_PATTERN)
DELIVERY_ID = param("delivery", "path", "string", "A logged attempt's id", pattern=ID_PATTERN)
FIELDS: dict[str, Any] = {
    "name": {"type": "string", "maxLength": 100},
    "url": {"type": "string", "format": "uri", "maxLength": 2048, "description": "http:// or https://"},
    "events": {"type": "array", "items": {"type": "string"}, "maxItems": 50,
               "description": "event names (content.item.saved) or patterns (content.*, *)"},
    "models": {"type": "array", "items": {"type": "string"},
               "description": "only content events of these models (empty: all)"},
    "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    "enabled": {"type": "boolean"},
}
BODY = {"type": "object", "additionalProperties": False, "properties": FIELDS}
NEW_BODY = {**BODY, "required": ["name", "url", "events"]}
WEBHOOK = {"type": "object", "properties": {
    **FIELDS, "_id": {"type": "string"}, "failures": {"type": "integer"},
    "disabled_reason": {"type": ["string", "null"]}, "disabled_at": {"type": ["number", "null"]},
    "created": {"type": "number"}, "modified": {"type": "number"}, "rotated": {"type": ["number", "null"]},
    "last_delivery": {"type": ["object", "null"]}}}
WITH_SECRET = {"allOf": [WEBHOOK, {"type": "object", "required": ["secret"], "properties": {
    "secret": {"type": "string", "description": "whsec_...: shown in this answer only"}}}]}
ATTEMPT = {"type": "object", "properties": {
    "_id": {"type": "string"}, "msg": {"type": "string", "description": "the webhook-id header"},
    "event": {"type": "string"}, "job": {"type": "string"}, "attempt": {"type": "integer"},
    "status": {"type": ["integer", "null"]}, "ok": {"type": "boolean"}, "ms": {"type": "integer"},
    "error": {"type": ["string", "null"]}, "at": {"type": "number"}, "manual": {"type": "boolean"}}}
NEEDS = " (needs webhooks/manage)"


def paths() -> dict[str, Any]:
    return {
        "/api/webhooks": {
            "get": op("The webhooks" + NEEDS, [], READ_ERRORS, tag="webhooks",
                      schema={"type": "array", "items": WEBHOOK}),
            "post": op("Create a webhook; the answer holds its secret, shown this once" + NEEDS, [], MANAGE,
                       body=NEW_BODY, tag="webhooks", schema=WITH_SECRET)},
        "/api/webhooks/{id}": {
            "get": op("One webhook (never its secret)" + NEEDS, [HOOK_ID], READ_ERRORS, tag="webhooks",
                      schema=WEBHOOK),
            "put": op("Change the sent fields of a webhook" + NEEDS, [HOOK_ID], MANAGE, body=BODY, tag="webhooks",
                      schema=WEBHOOK),
            "delete": op("Delete a webhook and its delivery log" + NEEDS, [HOOK_ID], READ_ERRORS,
                         tag="webhooks", schema={"type": "object"})},
        "/api/webhooks/{id}/rotate": {
            "post": op("A new secret, shown this once; the old one signs beside it for 24 hours" + NEEDS,
                       [HOOK_ID], READ_ERRORS, tag="webhooks", schema=WITH_SECRET)},
        "/api/webhooks/{id}/enable": {
            "post": op("Enable a webhook (after it was disabled); its count of failures restarts" + NEEDS,
                       [HOOK_ID], READ_ERRORS, tag="webhooks", schema=WEBHOOK)},
        "/api/webhooks/{id}/deliveries": {
            "get": op("The delivery log: one entry per attempt, newest first" + NEEDS,
                      [HOOK_ID, param("limit", "query", "int", "At most this many (1-200, default 50)"),
                       param("skip", "query", "int", "Skip this many")], READ_ERRORS, tag="webhooks",
                      schema={"type": "object", "properties": {"data": {"type": "array", "items": ATTEMPT},
                                                               "total": {"type": "integer"}}})},
        "/api/webhooks/{id}/deliveries/{delivery}/redeliver": {
            "post": op("Send a logged message again (same webhook-id and body)" + NEEDS, [HOOK_ID, DELIVERY_ID],
                       READ_ERRORS, tag="webhooks", schema={"type": "object", "properties": {
                           "job": {"type": "string"}, "msg": {"type": "string"}, "event": {"type": "string"}}})},
    }
