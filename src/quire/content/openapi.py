"""OpenAPI paths of the content API."""

from __future__ import annotations

from typing import Any

from quire.openapi import (
    DATA_BODY,
    FIELDS,
    FILTER,
    ITEM,
    ITEM_ID,
    LIMIT,
    LIST,
    LOCALE,
    MODEL,
    OBJECT,
    OBJECTS,
    PERSONA,
    POPULATE,
    READ_ERRORS,
    SKIP,
    SORT,
    SUCCESS,
    WRITE_ERRORS,
    op,
    param,
)

# The item's revision (`_rev`), on every answer of one item
ETAG = {"ETag": {"description": 'The item\'s revision, its _rev, as a strong tag: "7"',
                 "schema": {"type": "string", "pattern": '^"[0-9]+"$'}}}
IF_MATCH = param("If-Match", "header", "string",
                 'The revision the save started from, as the ETag names it ("7"; W/"7" and 7 too), '
                 "or * for any stored revision: if the item is at another one, 409 and nothing is stored. "
                 "The same as _rev in data.")
CONFLICT = {"409": {
    "description": "The item was changed by someone else: it is at another revision than the one named "
                   "(_rev or If-Match): {error, rev}, rev the current one (0: not stored yet)",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}}


# Cursor pages: `after`, `meta.next` in the envelope, a Link header on a bare array
AFTER = param("after", "query", "string",
              "The cursor of the previous page (its Link rel=next, or meta.next): the next page of the same "
              "query (filter, sort, fields, locale and populate unchanged), at the cost of the first page; "
              "needs a limit, goes without skip (skip=0 keeps the envelope)")
LINK = {"Link": {"description": 'With limit and no skip, unless this is the last page: </api/content/items/...?'
                                '...&after=<cursor>>; rel="next" (RFC 8288)',
                 "schema": {"type": "string"}}}


def with_link(operation: dict[str, Any]) -> dict[str, Any]:
    operation["responses"]["200"]["headers"] = LINK
    return operation


def with_revision(operation: dict[str, Any], saves: bool = False) -> dict[str, Any]:
    """An item answer with its ETag; a save also with If-Match and 409."""
    operation["responses"]["200"]["headers"] = ETAG
    if saves:
        operation["parameters"] = [*operation["parameters"], IF_MATCH]
        operation["responses"].update(CONFLICT)
    return operation


DRAFT = param("draft", "query", "string",
              "1: the item's draft if it has one, else the item in any state, with _draft saying which "
              "(needs the model's update permission); on a save, write a draft instead of the live item",
              enum=["0", "1", "true", "false"])
PREVIEW = param("preview", "query", "string",
                "A preview token of this item (POST /api/content/preview/...): its draft without an API key")


def optional_body(operation: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    operation["requestBody"] = {"required": False, "content": {"application/json": {"schema": schema}}}
    return operation


PUBLISH_BODY = {"type": "object", "properties": {
    "_rev": {"type": "integer", "minimum": 0, "description": "The revision seen (the draft's, else the item's)"}},
    "additionalProperties": False}
PREVIEW_BODY = {"type": "object", "properties": {
    "seconds": {"type": "integer", "minimum": 1, "maximum": 604800, "description": "Validity (default 3600)"},
    "locale": {"type": "string", "description": "Fills {locale} in the model's preview addresses"}}}
PREVIEW_ANSWER = {"type": "object", "properties": {
    "token": {"type": "string"}, "expires": {"type": "integer"},
    "links": {"type": "array", "items": {"type": "object", "properties": {
        "name": {"type": "string"}, "url": {"type": "string"}}}}}}


def lifecycle() -> dict[str, Any]:
    """Publishing, unpublishing, drafts and preview links, for an item by
    id and for a singleton's one item."""
    out: dict[str, Any] = {}
    for suffix, params in (("/{model}", [MODEL]), ("/{model}/{id}", [MODEL, ITEM_ID])):
        out["/api/content/publish" + suffix] = {"post": with_revision(optional_body(op(
            "Publish the item: its draft (if it has one) becomes the live item, checked as a save, with _state 1",
            params, (400, 401, 403, 404, 409, 412)), PUBLISH_BODY))}
        out["/api/content/unpublish" + suffix] = {"post": with_revision(op(
            "Unpublish the item (_state 0); its draft stays", params, (401, 403, 404, 412)))}
        out["/api/content/draft" + suffix] = {"delete": op(
            "Discard the item's draft (the live item stays)", params, (401, 403, 404, 412), schema=SUCCESS)}
        out["/api/content/preview" + suffix] = {"post": optional_body(op(
            "A signed, expiring preview token for the item, and the model's preview addresses filled in",
            params, (400, 401, 403, 404), schema=PREVIEW_ANSWER), PREVIEW_BODY)}
    out["/api/content/preview"] = {"delete": op(
        "End every preview link of items and pages given out so far (system/manage)", [], (401, 403, 412),
        schema=SUCCESS)}
    return out


def paths() -> dict[str, Any]:
    return {
        **lifecycle(),
        # a browser page, listed so every route is (docs/studio.md, live preview)
        "/demo/preview": {
            "get": op("An example site page for the live preview: it reads the item its preview token opens "
                      "and shows the studio's unsaved edits as they arrive", [], (), tag="preview",
                      security=False, schema={"type": "string"}, media="text/html"),
        },
        "/api/content/item/{model}": {
            "get": with_revision(op("Get the item of a singleton, or the first item matching filter",
                                    [MODEL, LOCALE, FILTER, SORT, FIELDS, POPULATE, DRAFT, PREVIEW, *PERSONA],
                                    READ_ERRORS, schema=ITEM)),
            "post": with_revision(op("Create an item, or update one partially when data._id is given; "
                                     "data._rev (or If-Match) names the revision the save started from; "
                                     "draft=1 writes a draft beside a published item",
                                     [MODEL, DRAFT], WRITE_ERRORS, body=DATA_BODY, ok="The whole stored item",
                                     schema=ITEM), saves=True),
        },
        "/api/content/item/{model}/{id}": {
            "get": with_revision(op("Get one published item by id (its draft with draft=1 or a preview token)",
                                    [MODEL, ITEM_ID, LOCALE, FIELDS, POPULATE, DRAFT, PREVIEW, *PERSONA], READ_ERRORS,
                                    schema=ITEM)),
            "delete": op("Delete an item (a tree node with its subtree)", [MODEL, ITEM_ID],
                         (401, 403, 404, 405), ok='{"success": true}', schema=SUCCESS),
        },
        "/api/content/items/{model}": {
            "get": with_link(op("List published items: an array, or {data, meta: {total, next}} with limit "
                                "and skip; with a limit, pages follow by cursor (after=)",
                                [MODEL, LOCALE, FILTER, SORT, FIELDS, LIMIT, SKIP, AFTER, POPULATE, *PERSONA],
                                READ_ERRORS, schema=LIST)),
        },
        "/api/content/items": {
            "get": op("Batch: several lists in one request, keyed by alias",
                      [param("models", "query", "json", "Object keyed by alias: {model?, filter, sort, fields, "
                             "limit, skip, after, populate, locale}", True, type="object"),
                       *PERSONA],
                      (400, 401, 412), schema=OBJECT),
        },
        "/api/content/tree/{model}": {
            "get": op("Items of a tree model, nested under _children",
                      [MODEL, param("parent", "query", "string", "Answer the subtree under this item"),
                       LOCALE, FILTER, FIELDS, POPULATE, *PERSONA], READ_ERRORS, schema=OBJECTS),
        },
        "/api/content/export/{model}": {
            "get": op("A model's items as a download: CSV (a column per field and locale, formula-safe), JSON or "
                      "NDJSON; the list the same parameters select",
                      [MODEL, FILTER, SORT, FIELDS, LOCALE,
                       param("format", "query", "string", "csv (default), json or ndjson",
                             enum=["csv", "json", "ndjson"]),
                       param("states", "query", "string", "all: every state, drafts and archived too "
                             "(needs the update permission); published (default)", enum=["published", "all"])],
                      READ_ERRORS, media="text/csv"),
        },
        "/api/content/import/{model}": {
            "post": {**op("Store the rows of a CSV, JSON or NDJSON file (the body) as items",
                          [MODEL,
                           param("format", "query", "string", "csv (default), json or ndjson",
                                 enum=["csv", "json", "ndjson"]),
                           param("mapping", "query", "json", "column -> field name, or null to leave it out",
                                 type="object"),
                           param("mode", "query", "string", "all (default): a bad row stores nothing; skip: the "
                                 "good rows are stored", enum=["all", "skip"]),
                           param("preview", "query", "string", "1: store nothing, answer the first 20 rows",
                                 enum=["1", "true"]),
                           param("progress", "query", "string", "a key to ask /api/content/import-progress/{key}",
                                 pattern="^[A-Za-z0-9_-]{1,64}$")],
                          (*WRITE_ERRORS, 413), body=False, schema=OBJECT),
                     "requestBody": {"required": True, "content": {
                         "text/csv": {"schema": {"type": "string"}},
                         "application/json": {"schema": {"type": "array", "items": OBJECT}},
                         "application/x-ndjson": {"schema": {"type": "string"}}}},
                     "description": "Every row is checked as an API write checks it; each problem names its row "
                                    "(the line of the file) and field. Rows with an _id replace that item."},
        },
        "/api/content/import-progress/{key}": {
            "get": op("How far an import given progress=<key> got: {done, total}",
                      [param("key", "path", "string", "The import's progress key")], (404,), schema=OBJECT),
        },
        "/api/content/lock/{model}/{id}": {
            "get": op("Whether an editor of the studio holds the item's edit lock (advice: saves are guarded by "
                      "_rev): {locked: false} or {locked: true, by, user, since}",
                      [MODEL, param("id", "path", "string", "The item's id")], (401, 403, 404), schema=OBJECT),
        },
        "/api/content/lock/{model}": {
            "get": op("Whether an editor of the studio holds a singleton's edit lock", [MODEL], (401, 403, 404),
                      schema=OBJECT),
        },
        "/api/content/aggregate/{model}": {
            "get": op("Run a MongoDB aggregation pipeline over published items; answers the array of result documents",
                       [MODEL, LOCALE,
                        param("pipeline", "query", "string",
                              "JSON (or JSON5) array of stages: $match $project $addFields $set $group $sort $skip "
                              "$limit $unwind $count $lookup")],
                       (*READ_ERRORS, 412)),
        },
    }
