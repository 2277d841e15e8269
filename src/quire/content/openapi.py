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


def paths() -> dict[str, Any]:
    return {
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
    }
