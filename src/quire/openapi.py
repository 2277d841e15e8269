"""`GET /api/openapi.json`: an OpenAPI 3.1 description of every endpoint,
its parameters and its errors. A test checks it lists every route."""

from __future__ import annotations

import functools
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire import __version__
from quire.asgi import route
from quire.http import raw_json_response

ERROR = {"$ref": "#/components/schemas/Error"}
JSON_PARAM_NOTE = " Strict JSON, relaxed JSON5 (`{title:'x'}`) or the bracket form (`name[key]=v`)."

# What the server enforces on names and ids (the services' own checks).
ID_PATTERN = "^[0-9a-f]{24}$"
MODEL_PATTERN = "^[A-Za-z][A-Za-z0-9_]*$"
ROLE_PATTERN = "^[a-zA-Z0-9_-]+$"
NAME64_PATTERN = "^[A-Za-z][A-Za-z0-9_-]{0,63}$"  # menus and search indexes
LOCALE_PATTERN = "^[a-zA-Z]{2,3}(?:[_-][a-zA-Z0-9]{2,8})*$"
# The largest limit and skip the store takes (SQLite counts in signed 64 bits).
MAX_INT = 2**63 - 1

OBJECT: dict[str, Any] = {"type": "object"}
OBJECTS: dict[str, Any] = {"type": "array", "items": OBJECT}
ITEM = {"$ref": "#/components/schemas/Item"}
SUCCESS = {"$ref": "#/components/schemas/Success"}
# The body of most writes: {"data": {...}}; without the object, 412.
DATA_BODY = {"type": "object", "required": ["data"], "properties": {"data": OBJECT}}
LIST = {"$ref": "#/components/schemas/List"}
NO_SECURITY: list[dict[str, list[str]]] = []
# A key in the api-key header, the api_key query parameter or as a bearer
# token; or none: the public role's permissions decide what is allowed.
KEY_SECURITY: list[dict[str, list[str]]] = [{"apiKey": []}, {"apiKeyQuery": []}, {"bearer": []}, {}]


def param(name: str, where: str, kind: str, description: str, required: bool = False,
          **constraints: Any) -> dict[str, Any]:
    """One parameter. `kind`: string, int (at least 0) or json (sent as a JSON
    text; `constraints` then describe the decoded value). Other `constraints`
    (pattern, maximum, enum, ...) go into the schema."""
    out: dict[str, Any] = {"name": name, "in": where, "required": required or where == "path",
                           "description": description}
    if kind == "json":
        out["description"] += JSON_PARAM_NOTE
        out["content"] = {"application/json": {"schema": constraints or {}}}
        return out
    schema: dict[str, Any] = {"type": "integer", "minimum": 0} if kind == "int" else {"type": "string"}
    schema.update(constraints)
    out["schema"] = schema
    return out


FILTER_SCHEMA: dict[str, Any] = {"type": "object"}
SORT_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": {"enum": [1, -1]}}
FIELDS_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": {"enum": [0, 1, True, False]}}

MODEL = param("model", "path", "string", "Model name", pattern=MODEL_PATTERN)
ITEM_ID = param("id", "path", "string", "Item id (24 hex characters)", pattern=ID_PATTERN)
LOCALE = param("locale", "query", "string", "Answer localized fields in this locale (fallback: default)")
FILTER = param("filter", "query", "json", "MongoDB-style filter; `field:locale` and `@link.field` extensions",
               **FILTER_SCHEMA)
SORT = param("sort", "query", "json", "Sort spec such as {\"_created\": -1}", **SORT_SCHEMA)
FIELDS = param("fields", "query", "json", "MongoDB projection such as {\"title\": 1}", **FIELDS_SCHEMA)
LIMIT = param("limit", "query", "int", "Maximum number of items", maximum=MAX_INT)
SKIP = param("skip", "query", "int", "Items to skip; with limit the answer is {data, meta: {total}}",
             maximum=MAX_INT)
POPULATE = param("populate", "query", "int", "Resolve linked items this many hops deep (at most 5; more counts as 5)")
NAME = param("name", "path", "string", "Name")
PERSONA = [
    param("persona", "query", "string", "Audience tags, comma-separated: variant containers answer the chosen "
          "variant's data (header X-Persona-Audience)"),
    param("tz_offset", "query", "string", "Client offset for schedules: minutes east of UTC or ±HH:MM "
          "(header X-Persona-TZ-Offset)"),
    param("persona_vars", "query", "json", "Variables for {{ placeholders }} (header X-Persona-Vars)",
          type="object"),
]


def error_responses(*codes: int) -> dict[str, Any]:
    text = {
        400: "Bad request: malformed parameter or body, validation failure",
        401: "Authentication failed: unknown key, or no key where one is needed",
        403: "Permission denied",
        404: "Not found",
        405: "Method not allowed",
        412: "Precondition failed",
        413: "Request body too large",
        409: "Conflict",
        415: "File type not allowed",
        429: "Too many requests (see Retry-After)",
        500: "Internal server error",
        503: "Busy; try again after Retry-After seconds",
    }
    return {
        str(c): {"description": text[c], "content": {"application/json": {"schema": ERROR}}}
        for c in codes
    }


def op(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], body: bool | dict[str, Any] = False,
        ok: str = "OK", tag: str = "content", security: bool = True,
        schema: dict[str, Any] | None = None, media: str = "application/json") -> dict[str, Any]:
    """One operation: its 200 answers `schema` as `media` (any JSON when not
    given); `errors` are the other statuses. Every operation that takes a key
    may answer 401 (an unknown key); one with a JSON body 400 and 413.
    `body`: True for any JSON object, or the body's schema."""
    codes = set(errors) | {500} | ({401} if security else set()) | ({400, 413} if body else set())
    operation: dict[str, Any] = {
        "summary": summary,
        "tags": [tag],
        "parameters": params,
        "responses": {"200": {"description": ok, "content": {media: {"schema": schema or {}}}},
                      **error_responses(*sorted(codes))},
        "security": KEY_SECURITY if security else NO_SECURITY,
    }
    if body:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": body if isinstance(body, dict) else OBJECT}},
        }
    return operation


ASSET_ID = param("id", "path", "string", "Asset id", pattern=ID_PATTERN)


def _upload_op() -> dict[str, Any]:
    operation = op("Upload one or more files (multipart parts named files); answers the created asset objects",
                   [], (400, 403, 413, 415), tag="assets", schema=OBJECTS)
    operation["requestBody"] = {"required": True, "content": {"multipart/form-data": {"schema": {
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
            "folder": {"type": "string"}, "title": {"type": "string"},
            "tags": {"type": "string", "description": "comma-separated, or a JSON array"},
        },
        "required": ["files"],
    }}}}
    return operation


def _image_op(preset_in_path: bool = False) -> dict[str, Any]:
    def p(name: str, kind: str, text: str, **constraints: Any) -> dict[str, Any]:
        return param(name, "query", kind, text, **constraints)

    preset = (param("preset", "path", "string", "Name of an image preset ([assets.presets]); "
                    "parameters given in the query win over the preset's") if preset_in_path else
              p("preset", "string", "Name of an image preset ([assets.presets]); parameters given "
                "in the query win over the preset's"))
    summary = "Generate or fetch a resized image" + (" with a named preset" if preset_in_path else "")
    operation = op(summary, [
        ASSET_ID,
        preset,
        p("m", "string", "Mode: thumbnail (default; crop to exactly w x h, focal point aware), bestFit, resize, "
          "fitToWidth, fitToHeight", enum=["thumbnail", "bestFit", "resize", "fitToWidth", "fitToHeight"]),
        p("w", "int", "Width (at most the configured maximum, default 4096); w or h is required", minimum=1),
        p("h", "int", "Height", minimum=1),
        p("q", "int", "Quality (default 80)", minimum=1, maximum=100),
        p("mime", "string", "auto (webp when accepted, else the source format), gif, jpeg, png, webp, bmp, avif",
          enum=["auto", "gif", "jpeg", "png", "webp", "bmp", "avif"]),
        p("re", "string", "1: answer 307 to the generated image", enum=["0", "1"]),
        p("t", "string", "Any text; only changes the cache key"),
        p("o", "string", "0 (default): the image's absolute URL as text/plain; 1: the image bytes",
          enum=["0", "1"]),
        p("b64", "string", "1: the image as a data: URI (text/plain); wins over o and re", enum=["0", "1"]),
    ], (400, 401, 403, 404, 429, 503), tag="assets",
        ok="URL as text/plain, or the image (o=1), or a data: URI (b64=1), or 307 (re=1)")
    operation["responses"]["200"]["content"] = {
        "text/plain": {"schema": {"type": "string", "format": "uri"}},
        "image/*": {"schema": {"type": "string", "format": "binary"}},
    }
    operation["responses"]["304"] = {"description": "Not modified (If-None-Match)"}
    operation["responses"]["307"] = {"description": "Redirect to the image (re=1), or to the original of a non-image"}
    return operation


def _file_op(summary: str, path_text: str) -> dict[str, Any]:
    operation = op(summary, [param("path", "path", "string", path_text)], (404,), tag="assets",
                   security=False, ok="The file")
    operation["responses"]["200"]["content"] = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
    operation["responses"]["304"] = {"description": "Not modified (If-None-Match)"}
    return operation


READ_ERRORS = (400, 401, 403, 404)
WRITE_ERRORS = (400, 401, 403, 404, 412, 413)
MANAGE = (400, 401, 403, 404, 413)


def document() -> dict[str, Any]:
    def system(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="system", **kw)

    role = param("name", "path", "string", "Role name", pattern=ROLE_PATTERN)
    model_name = param("name", "path", "string", "Model name", pattern=MODEL_PATTERN)
    paths: dict[str, Any] = {
        "/api/content/item/{model}": {
            "get": op("Get the item of a singleton, or the first item matching filter",
                      [MODEL, LOCALE, FILTER, SORT, FIELDS, POPULATE, *PERSONA], READ_ERRORS, schema=ITEM),
            "post": op("Create an item, or update one partially when data._id is given",
                       [MODEL], WRITE_ERRORS, body=DATA_BODY, ok="The whole stored item", schema=ITEM),
        },
        "/api/content/item/{model}/{id}": {
            "get": op("Get one published item by id", [MODEL, ITEM_ID, LOCALE, FIELDS, POPULATE, *PERSONA],
                      READ_ERRORS, schema=ITEM),
            "delete": op("Delete an item (a tree node with its subtree)", [MODEL, ITEM_ID],
                         (401, 403, 404, 405), ok='{"success": true}', schema=SUCCESS),
        },
        "/api/content/items/{model}": {
            "get": op("List published items: an array, or {data, meta: {total}} with limit and skip",
                      [MODEL, LOCALE, FILTER, SORT, FIELDS, LIMIT, SKIP, POPULATE, *PERSONA], READ_ERRORS,
                      schema=LIST),
        },
        "/api/content/items": {
            "get": op("Batch: several lists in one request, keyed by alias",
                      [param("models", "query", "json", "Object keyed by alias: {model?, filter, sort, fields, "
                             "limit, skip, populate, locale}", True, type="object"),
                       *PERSONA],
                      (400, 401, 412), schema=OBJECT),
        },
        "/api/content/tree/{model}": {
            "get": op("Items of a tree model, nested under _children",
                      [MODEL, param("parent", "query", "string", "Answer the subtree under this item"),
                       LOCALE, FILTER, FIELDS, POPULATE, *PERSONA], READ_ERRORS, schema=OBJECTS),
        },
        "/api/content/aggregate/{model}": {
            "get": op("Run a MongoDB aggregation pipeline over published items; answers the array of result documents",
                       [MODEL, LOCALE,
                        param("pipeline", "query", "string",
                              "JSON (or JSON5) array of stages: $match $project $addFields $set $group $sort $skip "
                              "$limit $unwind $count $lookup")],
                       (*READ_ERRORS, 412)),
        },
        "/api/system/healthcheck": {
            "get": system("Health check (no key needed)", [], (), security=False, ok='{"status": "ok"}',
                          schema={"type": "object", "required": ["status"],
                                  "properties": {"status": {"const": "ok"}}}),
        },
        "/api/system/models": {"get": system("List model definitions", [], (403,), schema=OBJECTS)},
        "/api/system/models/{name}": {
            "get": system("Get a model definition", [model_name], (403, 404), schema=OBJECT),
            "put": system("Create or replace a model definition", [model_name], MANAGE, body=True, schema=OBJECT),
            "delete": system("Delete a model and all its items", [model_name], (403, 404), schema=SUCCESS),
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
            "delete": system("Revoke an API key", [param("id", "path", "string", "Key id", pattern=ID_PATTERN)],
                             (403, 404), schema=SUCCESS),
        },
        "/api/system/locales": {
            "get": system("List locales (default first)", [], (403,), schema=OBJECTS),
            "put": system("Replace the list of locales [{i18n, name}]", [], MANAGE,
                          body={"type": "array", "items": OBJECT}, schema=OBJECTS),
        },
        "/api/assets": {
            "get": op("List assets: an array, or {data, meta: {total}} with limit and skip",
                      [FILTER, SORT, FIELDS, LIMIT, SKIP], (400, 403), tag="assets", schema=LIST),
            "post": _upload_op(),
        },
        "/api/assets/{id}": {
            "get": op("Get an asset object", [ASSET_ID], (403, 404), tag="assets", schema=ITEM),
            "post": op("Update an asset's title, description, tags, altText, folder or focal point fp",
                       [ASSET_ID], (400, 403, 404, 412, 413), body=DATA_BODY, tag="assets", schema=OBJECT),
            "delete": op("Delete an asset, its file and its generated images", [ASSET_ID],
                         (403, 404), tag="assets", ok='{"success": true}', schema=SUCCESS),
        },
        "/api/assets/folders": {
            "get": op("List folders (all, or the children of ?parent=)",
                      [param("parent", "query", "string", "Only the folders directly under this one")],
                      (403,), tag="assets", schema=OBJECTS),
            "post": op("Create a folder {data: {name, parent}}, or rename/move one with data._id",
                       [], (400, 403, 404, 412, 413), body=DATA_BODY, tag="assets", schema=OBJECT),
        },
        "/api/assets/folders/{id}": {
            "delete": op("Delete a folder and its subfolders; their assets move to the root",
                         [param("id", "path", "string", "Folder id", pattern=ID_PATTERN)], (403, 404),
                         tag="assets", ok='{"success": true, "moved": <assets moved to the root>}',
                         schema=SUCCESS),
        },
        "/api/assets/image/{id}": {"get": _image_op()},
        "/api/assets/image/{id}/{preset}": {"get": _image_op(preset_in_path=True)},
        "/storage/uploads/{path}": {
            "get": _file_op("An uploaded file (public, immutable, ETag/304)", "YYYY/MM/DD/name_unique.ext"),
        },
        "/storage/thumbs/{path}": {
            "get": _file_op("A generated image (public, immutable, ETag/304)", "<asset id>/<key>.<ext>"),
        },
        "/api/openapi.json": {
            "get": system("This document", [], (), security=False, schema=OBJECT),
        },
    }
    from quire.inbox import openapi as inbox_paths
    from quire.l10n import openapi as l10n_paths
    from quire.pages import openapi as pages_paths
    from quire.searchmod import openapi as search_paths
    from quire.sso import openapi as sso_paths

    paths.update(pages_paths.paths())
    paths.update(l10n_paths.paths())
    paths.update(inbox_paths.paths())
    paths.update(search_paths.paths())
    paths.update(sso_paths.paths())
    return {
        "openapi": "3.1.0",
        "info": {"title": "Quire API", "version": __version__,
                 "description": "Headless CMS API. Errors are always {\"error\": message}."},
        "paths": paths,
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error"],
                    "properties": {"error": {"type": "string"},
                                   "fields": {"type": "array", "items": {"type": "string"}}},
                },
                "Success": {"type": "object", "required": ["success"],
                            "properties": {"success": {"const": True}}},
                # a stored record: content item, page, asset, submission (`fields` may leave out _id)
                "Item": {"type": "object", "properties": {"_id": {"type": "string"}}},
                "List": {"oneOf": [{"type": "array", "items": ITEM}, {
                    "type": "object", "required": ["data", "meta"],
                    "properties": {"data": {"type": "array", "items": ITEM}, "meta": {
                        "type": "object", "required": ["total"],
                        "properties": {"total": {"type": "integer", "minimum": 0}}}},
                }]},
            },
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "api-key",
                           "description": "An API key; its role's permissions apply"},
                "apiKeyQuery": {"type": "apiKey", "in": "query", "name": "api_key",
                                "description": "The same key as a query parameter (it wins over the header)"},
                "bearer": {"type": "http", "scheme": "bearer",
                           "description": "The same key as Authorization: Bearer <key>"},
            },
        },
        # Without a key the public role's permissions apply; operations that
        # take no key at all say `security: []`.
        "security": KEY_SECURITY,
    }


@functools.cache
def _document_bytes() -> bytes:
    """The document never changes while the process runs: built and encoded
    once (about 100 KB; it is public, so this is also cheaper to be asked for)."""
    return orjson.dumps(document())


async def openapi_json(request: Request) -> Response:
    return raw_json_response(_document_bytes())


routes = [route("/api/openapi.json", get=openapi_json)]
