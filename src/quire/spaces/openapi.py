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
TASK: dict[str, Any] = {
    "type": "object", "required": ["id", "kind", "space", "state"],
    "properties": {"id": {"type": "string"}, "kind": {"type": "string", "enum": ["spaces.fork", "spaces.merge"]},
                   "space": {"type": "string"}, "asked": {"type": "object"}, "by": {"type": "string"},
                   "state": {"type": "string", "enum": ["pending", "running", "done", "failed"]},
                   "step": {"type": "string"}, "created": {"type": "number"}, "ended": {"type": ["number", "null"]},
                   "error": {"type": ["string", "null"]}, "result": {"type": ["object", "null"]}},
}
DIFF: dict[str, Any] = {"type": "object", "properties": {
    "space": {"type": "string"}, "origin": {"type": "string"},
    "models": {"type": "array", "items": {"type": "object", "description": "a model's item ids: added, changed, "
                                          "removed, origin_added, origin_changed, origin_removed, conflicts"}}}}
PLAN: dict[str, Any] = {"type": "object", "properties": {
    "fork": {"type": "string"}, "origin": {"type": "string"}, "take": {"type": "string"},
    "models": {"type": "array", "items": {"type": "object", "description": "a model's add, change, remove and "
                                          "conflicts left (item ids)"}},
    "assets": {"type": "array", "items": {"type": "string"}}, "missing_models": {"type": "array"},
    "plan": {"type": "string", "description": "this plan's name: POST it to apply this plan and no other"},
    "writes": {"type": "integer"}}}
PERSON: dict[str, Any] = {"type": "object", "required": ["_id", "user", "role"], "properties": {
    "_id": {"type": "string"}, "user": {"type": "string"}, "name": {"type": ["string", "null"]},
    "role": {"type": "string", "description": "the user's role in the space"}, "active": {"type": "boolean"}}}
NAME = param("name", "path", "string", "The space's (or alias's) name", required=True)
USER = param("user", "path", "string", "The user's id", required=True)
OK = {"type": "object", "properties": {"success": {"type": "boolean"}}}


def paths() -> dict[str, Any]:
    def manage(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="system", **kw)

    def queued(operation: dict[str, Any]) -> dict[str, Any]:
        operation["responses"]["202"] = {"description": "Queued: its task (GET /api/system/spaces/tasks/{id})",
                                         "content": {"application/json": {"schema": TASK}}}
        return operation

    take = param("take", "query", "string", "Whose side of an item changed on both sides is kept: origin "
                 "(the default) or fork")
    return {
        "/api/system/spaces": {
            "get": manage("The site's spaces", [], (403,), schema={"type": "array", "items": SPACE}),
            "post": queued(manage("Create a space, served at /<name>/api/...; with `from`, a fork of that space, "
                                  "made by a job (202)", [], (403, 404, 409), schema=SPACE, body={
                                      "type": "object", "required": ["name"],
                                      "properties": {"name": {"type": "string"}, "label": {"type": "string"},
                                                     "from": {"type": "string"}}})),
        },
        "/api/system/spaces/tasks": {
            "get": manage("Forks and merges asked for, the newest first", [], (403,),
                          schema={"type": "array", "items": TASK}),
        },
        "/api/system/spaces/tasks/{id}": {
            "get": manage("One fork or merge: its state and step", [param("id", "path", "string", "The task's id",
                                                                          required=True)], (403, 404), schema=TASK),
        },
        "/api/system/spaces/{name}/diff": {
            "get": manage("A fork against its origin, item by item since the fork", [NAME], (400, 403, 404),
                          schema=DIFF),
        },
        "/api/system/spaces/{name}/keys": {
            "get": manage("A space's API keys (names and roles, never their text) and the roles a new one may take",
                          [NAME], (403, 404), schema={"type": "object", "properties": {
                              "keys": {"type": "array", "items": {"type": "object"}},
                              "roles": {"type": "array", "items": {"type": "string"}}}}),
            "post": manage("A new API key of a space: its text is answered once", [NAME], (403, 404),
                           schema={"type": "object", "properties": {"key": {"type": "string"}}},
                           body={"type": "object", "required": ["name", "role"], "properties": {
                               "name": {"type": "string"}, "role": {"type": "string"}}}),
        },
        "/api/system/spaces/{name}/merge": {
            "get": manage("What merging a fork into its origin would do, and the plan's name", [NAME, take],
                          (400, 403, 404), schema=PLAN),
            "post": queued(manage("Merge a fork into its origin by the plan named (as GET showed it), by a job "
                                  "(202)", [NAME], (403, 404), schema=TASK, body={
                                      "type": "object", "required": ["plan"],
                                      "properties": {"plan": {"type": "string"}, "take": {"type": "string"}}})),
        },
        "/api/system/spaces/{name}/people": {
            "get": manage("The main site's users with a role in the space (its admins have admin in every space)",
                          [NAME], (403, 404), schema={"type": "array", "items": PERSON}),
        },
        "/api/system/spaces/{name}/people/{user}": {
            "put": manage("Give a user of the main site a role in the space (one of the space's roles); null takes "
                          "it away", [NAME, USER], (400, 403, 404), schema={"type": "object"},
                          body={"type": "object", "required": ["role"],
                                "properties": {"role": {"type": ["string", "null"]}}}),
            "delete": manage("Take a user's role in the space away", [NAME, USER], (403, 404),
                             schema={"type": "object"}),
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
