"""OpenAPI paths of the management API and of the document itself."""

from __future__ import annotations

from typing import Any

from quire.openapi import (
    ID_PATTERN,
    MANAGE,
    MODEL_PATTERN,
    OBJECT,
    OBJECTS,
    ROLE_PATTERN,
    SUCCESS,
    op,
    param,
)

PUT_MODEL = (
    "The body is the whole definition (name, label, type, fields, meta, indexes). Two more keys say how "
    "stored items follow the change and are never stored: `renames` ({\"old\": \"new\"}) renames fields in "
    "every item (per-locale values too), in declared indexes and in search indexes, in one transaction; the "
    "definition may carry each renamed field under either name. `dropValues` (true) removes the values of "
    "fields this definition drops from the items (by default they stay). A change that stored values do not "
    "fit (type, multiple, options) is refused with 400: `count` items are in the way, `items` lists the first "
    "100 ids, and nothing changes."
)
MODEL_CHANGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "fields": {"type": "array", "items": OBJECT},
        "renames": {"type": "object", "additionalProperties": {"type": "string"},
                    "description": "old field name -> new field name"},
        "dropValues": {"type": "boolean", "description": "remove the values of dropped fields from the items"},
    },
}
COMPONENT_PATTERN = "^[a-z][a-z0-9_-]{0,63}$"
COMPONENT: dict[str, Any] = {
    "type": "object", "required": ["fields"],
    "properties": {
        "label": {"type": "string"}, "group": {"type": "string", "description": "default: Shared"},
        "fields": {"type": "array", "items": OBJECT, "minItems": 1, "maxItems": 50,
                   "description": "the block's fields, as a model's are (no layout field)"},
    },
}
USAGE: dict[str, Any] = {
    "type": "object", "required": ["fields", "total"],
    "properties": {
        "fields": {"type": "object", "additionalProperties": {"type": "integer"},
                   "description": "per field, the items holding a non-empty value (any locale)"},
        "total": {"type": "integer", "description": "all items of the model"},
    },
}


def paths() -> dict[str, Any]:
    def system(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="system", **kw)

    role = param("name", "path", "string", "Role name", pattern=ROLE_PATTERN)
    model_name = param("name", "path", "string", "Model name", pattern=MODEL_PATTERN)
    component = param("name", "path", "string", "Component name", pattern=COMPONENT_PATTERN)
    return {
        "/api/system/models": {"get": system("List model definitions", [], (403,), schema=OBJECTS)},
        "/api/system/models/{name}": {
            "get": system("Get a model definition", [model_name], (403, 404), schema=OBJECT),
            "put": {**system("Create or replace a model definition", [model_name], (*MANAGE, 412),
                             body=MODEL_CHANGE, schema=OBJECT), "description": PUT_MODEL},
            "delete": system("Delete a model and all its items", [model_name], (403, 404), schema=SUCCESS),
        },
        "/metrics": {"get": system("Prometheus metrics in its text format: requests by route and status, their "
                                   "latency, open change streams, jobs by kind and state, the search queue "
                                   "(a key with system/metrics, or none with [server] metrics_open)",
                                   [], (403,), schema={"type": "string"}, media="text/plain")},
        "/api/system/components": {"get": system("List the shared blocks (layout components every layout field "
                                                 "offers)", [], (403,), schema=OBJECTS)},
        "/api/system/components/{name}": {
            "get": system("Get a shared block", [component], (403, 404), schema=OBJECT),
            "put": {**system("Create or change a shared block; every model with a layout field is saved again "
                             "with it", [component], (*MANAGE, 412), body=COMPONENT, schema=OBJECT),
                    "description": "A model whose layout field has a component of its own by that name refuses "
                                   "(400) and nothing changes."},
            "delete": system("Remove a shared block that no stored item uses (409 naming where it is used)",
                             [component], (403, 404, 409), schema=SUCCESS),
        },
        "/api/system/models/{name}/usage": {
            "get": system("How many items hold a value, per field", [model_name], (403, 404), schema=USAGE),
        },
        "/api/system/models/{name}/indexes": {
            "get": system("The indexes of a model's items: built-in, declared and automatic, with size",
                          [model_name], (403, 404), schema=OBJECTS),
        },
        "/api/system/roles": {"get": system("List roles", [], (403,), schema=OBJECTS)},
        "/api/system/roles/{name}": {
            "get": system("Get a role", [role], (403, 404), schema=OBJECT),
            "put": system("Create or replace a role's permissions {permissions: {name: bool}}", [role], MANAGE,
                          body=True, schema=OBJECT),
            "delete": system("Delete a role", [role], (400, 403, 404), schema=SUCCESS),
        },
        "/api/system/keys": {
            "get": system("List API keys (never the keys themselves)", [], (403,), schema=OBJECTS),
            "post": system("Create an API key {name, role}; the answer is the only time the key is shown",
                           [], MANAGE, body=True, schema=OBJECT),
        },
        "/api/system/keys/{id}": {
            "patch": system("Whether assistants (MCP) may publish with the key {mcp_publish: bool}; admins only",
                            [param("id", "path", "string", "Key id", pattern=ID_PATTERN)], (400, 403, 404),
                            body={"type": "object", "required": ["mcp_publish"],
                                  "properties": {"mcp_publish": {"type": "boolean"}}}, schema=OBJECT),
            "delete": system("Revoke an API key", [param("id", "path", "string", "Key id", pattern=ID_PATTERN)],
                             (403, 404), schema=SUCCESS),
        },
        "/api/system/locales": {
            "get": system("List locales (default first)", [], (403,), schema=OBJECTS),
            "put": system("Replace the list of locales [{i18n, name}]", [], MANAGE,
                          body={"type": "array", "items": OBJECT}, schema=OBJECTS),
        },
        "/api/system/schema": {
            "get": system("The site's schema snapshot: models, locales, roles, page settings, search indexes, "
                          "forms, webhooks (no ids, times or secrets)", [], (403,), schema=OBJECT),
        },
        "/api/system/schema/diff": {
            "post": {**system("The plan that makes the site's schema the snapshot sent", [], (403,),
                              body=OBJECT, schema=OBJECT),
                     "description": "Each change (add, change, remove) with the documents it touches, what it "
                                    "loses and what cannot be made, and `base`, the hash of the site's snapshot "
                                    "the plan was made against. Parts the snapshot leaves out stay as they are."},
        },
        "/api/system/schema/apply": {
            "post": {**system("Apply a plan of /api/system/schema/diff", [
                param("allowDataLoss", "query", "string", "1: make changes that lose data", enum=["1", "true"])],
                (403, 412), body=OBJECT, schema=OBJECT),
                "description": "412 when the site's schema changed since the plan was made (diff again); 400 "
                               "when a change loses data without allowDataLoss=1, or cannot be made. All "
                               "changes in one transaction."},
        },
        "/api/openapi.json": {
            "get": system("This document", [], (), security=False, schema=OBJECT),
        },
    }
