"""The OpenAPI 3.1 document (`GET /api/openapi.json`): the merge of the
paths every module declares (`Module.openapi`), and the helpers modules
describe their operations with. A test checks it lists every route."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from quire import __version__

if TYPE_CHECKING:
    from quire.modules import Module

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
        406: "Not acceptable: the Accept header allows no type this answer has",
        412: "Precondition failed",
        413: "Request body too large",
        409: "Conflict",
        410: "Gone: what was asked for is no longer kept (read everything again)",
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


READ_ERRORS = (400, 401, 403, 404)
WRITE_ERRORS = (400, 401, 403, 404, 412, 413)
MANAGE = (400, 401, 403, 404, 413)


def document(modules: Sequence[Module]) -> dict[str, Any]:
    """The whole document: every module's paths, and the shared components."""
    paths: dict[str, Any] = {}
    for module in modules:
        if module.openapi is not None:
            paths.update(module.openapi())
    return {
        "openapi": "3.1.0",
        "info": {"title": "Quire API", "version": __version__,
                 "description": "Headless CMS API. Errors are always {\"error\": message}."},
        "paths": paths,
        "components": {"schemas": SCHEMAS, "securitySchemes": SECURITY_SCHEMES},
        # Without a key the public role's permissions apply; operations that
        # take no key at all say `security: []`.
        "security": KEY_SECURITY,
    }


SCHEMAS: dict[str, Any] = {
    "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string"},
                       "fields": {"type": "array", "items": {"type": "string"}},
                       # a content save's 409: the item's current revision
                       "rev": {"type": "integer", "minimum": 0}},
    },
    "Success": {"type": "object", "required": ["success"],
                "properties": {"success": {"const": True}}},
    # a stored record: content item, page, asset, submission (`fields` may leave out _id)
    "Item": {"type": "object", "properties": {"_id": {"type": "string"}}},
    "List": {"oneOf": [{"type": "array", "items": ITEM}, {
        "type": "object", "required": ["data", "meta"],
        "properties": {"data": {"type": "array", "items": ITEM}, "meta": {
            "type": "object", "required": ["total"],
            "properties": {"total": {"type": "integer", "minimum": 0},
                           # content lists with a limit (docs/query-language.md#deep-pages-after)
                           "next": {"type": "string", "description": "The cursor of the next page, for "
                                    "after=; absent on the last page and on lists that page by skip only"}}}},
    }]},
}
SECURITY_SCHEMES: dict[str, Any] = {
    "apiKey": {"type": "apiKey", "in": "header", "name": "api-key",
               "description": "An API key; its role's permissions apply"},
    "apiKeyQuery": {"type": "apiKey", "in": "query", "name": "api_key",
                    "description": "The same key as a query parameter (it wins over the header)"},
    "bearer": {"type": "http", "scheme": "bearer",
               "description": "The same key as Authorization: Bearer <key>"},
}

