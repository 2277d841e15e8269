"""`GET /api/openapi.json`: an OpenAPI 3.1 description of every endpoint,
its parameters and its errors. A test checks it lists every route."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire import __version__
from quire.asgi import route
from quire.http import json_response

ERROR = {"$ref": "#/components/schemas/Error"}
JSON_PARAM_NOTE = " Strict JSON, relaxed JSON5 (`{title:'x'}`) or the bracket form (`name[key]=v`)."


def param(name: str, where: str, kind: str, description: str, required: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": 0} if kind == "int" else {"type": "string"}
    if kind == "json":
        description += JSON_PARAM_NOTE
    return {"name": name, "in": where, "required": required or where == "path",
            "description": description, "schema": schema}


MODEL = param("model", "path", "string", "Model name")
ITEM_ID = param("id", "path", "string", "Item id (24 hex characters)")
LOCALE = param("locale", "query", "string", "Answer localized fields in this locale (fallback: default)")
FILTER = param("filter", "query", "json", "MongoDB-style filter; `field:locale` and `@link.field` extensions")
SORT = param("sort", "query", "json", "Sort spec such as {\"_created\": -1}")
FIELDS = param("fields", "query", "json", "MongoDB projection such as {\"title\": 1}")
LIMIT = param("limit", "query", "int", "Maximum number of items")
SKIP = param("skip", "query", "int", "Items to skip; with limit the answer is {data, meta: {total}}")
POPULATE = param("populate", "query", "int", "Resolve linked items this many hops deep (max 5)")
KEY_PARAM = param("api_key", "query", "string", "API key (alternative to the api-key header)")
NAME = param("name", "path", "string", "Name")
PERSONA = [
    param("persona", "query", "string", "Audience tags, comma-separated: variant containers answer the chosen "
          "variant's data (header X-Persona-Audience)"),
    param("tz_offset", "query", "string", "Client offset for schedules: minutes east of UTC or ±HH:MM "
          "(header X-Persona-TZ-Offset)"),
    param("persona_vars", "query", "json", "Variables for {{ placeholders }} (header X-Persona-Vars)"),
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
    }
    return {
        str(c): {"description": text[c], "content": {"application/json": {"schema": ERROR}}}
        for c in codes
    }


def op(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], body: bool = False,
        ok: str = "OK", tag: str = "content", security: bool = True) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "summary": summary,
        "tags": [tag],
        "parameters": params + ([KEY_PARAM] if security else []),
        "responses": {"200": {"description": ok, "content": {"application/json": {"schema": {}}}},
                      **error_responses(*errors, 500)},
    }
    if body:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object"}}},
        }
    if not security:
        operation["security"] = []
    return operation


ASSET_ID = param("id", "path", "string", "Asset id")


def _upload_op() -> dict[str, Any]:
    operation = op("Upload one or more files (multipart parts named files); answers the created asset objects",
             [], (400, 401, 403, 413, 415), tag="assets")
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


def _image_op() -> dict[str, Any]:
    def p(name: str, kind: str, text: str) -> dict[str, Any]:
        return param(name, "query", kind, text)

    operation = op("Generate or fetch a resized image", [
        ASSET_ID,
        p("m", "string", "Mode: thumbnail (default; crop to exactly w x h, focal point aware), bestFit, resize, fitToWidth, fitToHeight"),
        p("w", "int", "Width (at most the configured maximum, default 4096)"),
        p("h", "int", "Height"),
        p("q", "int", "Quality 1-100 (default 80)"),
        p("mime", "string", "auto (webp when accepted, else the source format), gif, jpeg, png, webp, bmp, avif"),
        p("re", "int", "1: answer 307 to the generated image"),
        p("t", "string", "Any text; only changes the cache key"),
        p("o", "int", "0 (default): the image's absolute URL as text/plain; 1: the image bytes"),
    ], (400, 401, 403, 404), tag="assets", ok="URL as text/plain, or the image (o=1), or 307 (re=1)")
    operation["responses"]["304"] = {"description": "Not modified (If-None-Match)"}
    operation["responses"]["307"] = {"description": "Redirect to the image (re=1), or to the original of a non-image"}
    return operation


READ_ERRORS = (400, 401, 403, 404)
WRITE_ERRORS = (400, 401, 403, 404, 412, 413)
MANAGE = (400, 401, 403, 404, 413)


def document() -> dict[str, Any]:
    paths: dict[str, Any] = {
        "/api/content/item/{model}": {
            "get": op("Get the item of a singleton, or the first item matching filter",
                       [MODEL, LOCALE, FILTER, SORT, FIELDS, POPULATE, *PERSONA], READ_ERRORS),
            "post": op("Create an item, or update one partially when data._id is given",
                        [MODEL], WRITE_ERRORS, body=True, ok="The whole stored item"),
        },
        "/api/content/item/{model}/{id}": {
            "get": op("Get one published item by id", [MODEL, ITEM_ID, LOCALE, FIELDS, POPULATE, *PERSONA],
                      READ_ERRORS),
            "delete": op("Delete an item (a tree node with its subtree)", [MODEL, ITEM_ID],
                          (401, 403, 404, 405), ok='{"success": true}'),
        },
        "/api/content/items/{model}": {
            "get": op("List published items: an array, or {data, meta: {total}} with limit and skip",
                       [MODEL, LOCALE, FILTER, SORT, FIELDS, LIMIT, SKIP, POPULATE, *PERSONA], READ_ERRORS),
        },
        "/api/content/items": {
            "get": op("Batch: several lists in one request, keyed by alias",
                       [param("models", "query", "json", "Object keyed by alias: {model?, filter, sort, fields, limit, skip, populate, locale}", True),
                        *PERSONA],
                       (400, 401, 412)),
        },
        "/api/content/tree/{model}": {
            "get": op("Items of a tree model, nested under _children",
                       [MODEL, param("parent", "query", "string", "Answer the subtree under this item"),
                        LOCALE, FILTER, FIELDS, POPULATE, *PERSONA], READ_ERRORS),
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
            "get": op("Health check (no key needed)", [], (), tag="system", security=False, ok='{"status": "ok"}'),
        },
        "/api/system/models": {"get": op("List model definitions", [], (401, 403), tag="system")},
        "/api/system/models/{name}": {
            "get": op("Get a model definition", [NAME], (401, 403, 404), tag="system"),
            "put": op("Create or replace a model definition", [NAME], MANAGE, body=True, tag="system"),
            "delete": op("Delete a model and all its items", [NAME], (401, 403, 404), tag="system"),
        },
        "/api/system/roles": {"get": op("List roles", [], (401, 403), tag="system")},
        "/api/system/roles/{name}": {
            "get": op("Get a role", [NAME], (401, 403, 404), tag="system"),
            "put": op("Create or replace a role's permissions", [NAME], MANAGE, body=True, tag="system"),
            "delete": op("Delete a role", [NAME], (400, 401, 403, 404), tag="system"),
        },
        "/api/system/keys": {
            "get": op("List API keys (never the keys themselves)", [], (401, 403), tag="system"),
            "post": op("Create an API key; the answer is the only time the key is shown",
                        [], MANAGE, body=True, tag="system"),
        },
        "/api/system/keys/{id}": {
            "delete": op("Revoke an API key", [param("id", "path", "string", "Key id")],
                          (401, 403, 404), tag="system"),
        },
        "/api/system/locales": {
            "get": op("List locales (default first)", [], (401, 403), tag="system"),
            "put": op("Replace the list of locales", [], MANAGE, body=True, tag="system"),
        },
        "/api/assets": {
            "get": op("List assets: an array, or {data, meta: {total}} with limit and skip",
                       [FILTER, SORT, FIELDS, LIMIT, SKIP], (400, 401, 403), tag="assets"),
            "post": _upload_op(),
        },
        "/api/assets/{id}": {
            "get": op("Get an asset object", [ASSET_ID], (401, 403, 404), tag="assets"),
            "post": op("Update an asset's title, description, tags, altText, folder or focal point fp",
                        [ASSET_ID], (400, 401, 403, 404, 412, 413), body=True, tag="assets"),
            "delete": op("Delete an asset, its file and its generated images", [ASSET_ID],
                          (401, 403, 404), tag="assets", ok='{"success": true}'),
        },
        "/api/assets/folders": {
            "get": op("List folders (all, or the children of ?parent=)",
                       [param("parent", "query", "string", "Only the folders directly under this one")],
                       (401, 403), tag="assets"),
            "post": op("Create a folder {data: {name, parent}}, or rename/move one with data._id",
                        [], (400, 401, 403, 404, 412, 413), body=True, tag="assets"),
        },
        "/api/assets/folders/{id}": {
            "delete": op("Delete a folder and its subfolders; their assets move to the root",
                          [param("id", "path", "string", "Folder id")], (401, 403, 404), tag="assets"),
        },
        "/api/assets/image/{id}": {"get": _image_op()},
        "/storage/uploads/{path}": {
            "get": op("An uploaded file (public, immutable, ETag/304)",
                       [param("path", "path", "string", "YYYY/MM/DD/name_unique.ext")], (404,),
                       tag="assets", security=False, ok="The file"),
        },
        "/storage/thumbs/{path}": {
            "get": op("A generated image (public, immutable, ETag/304)",
                       [param("path", "path", "string", "<asset id>/<key>.<ext>")], (404,),
                       tag="assets", security=False, ok="The image"),
        },
        "/api/openapi.json": {
            "get": op("This document", [], (), tag="system", security=False),
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
                }
            },
            "securitySchemes": {
                "apiKey": {"type": "apiKey", "in": "header", "name": "api-key"},
                "bearer": {"type": "http", "scheme": "bearer"},
            },
        },
        "security": [{"apiKey": []}, {"bearer": []}, {}],
    }


async def openapi_json(request: Request) -> Response:
    return json_response(document())


routes = [route("/api/openapi.json", get=openapi_json)]
