"""OpenAPI paths of revisions."""

from __future__ import annotations

from typing import Any

from quire.openapi import ID_PATTERN, ITEM_ID, MODEL, READ_ERRORS, WRITE_ERRORS, op, param

N = param("n", "path", "int", "Revision number (1 for the item's first kept write)")
WHO = {"type": "object", "properties": {"kind": {"enum": ["key", "user", "hook", "system", "public"]},
                                         "id": {"type": ["string", "null"]}, "name": {"type": ["string", "null"]},
                                         "role": {"type": "string"}}}
CHANGE = {"type": "object", "required": ["op", "path"],
          "properties": {"op": {"enum": ["add", "remove", "replace"]}, "path": {"type": "string"},
                         "old": {}, "new": {}}}
SUMMARY = {"type": "object", "required": ["n", "at", "action", "who", "fields"],
           "properties": {"n": {"type": "integer"}, "at": {"type": "number"},
                          "action": {"enum": ["create", "update", "delete", "restore"]}, "who": WHO,
                          "fields": {"type": "array", "items": {"type": "string"}}}}
REVISION = {"allOf": [SUMMARY, {"type": "object", "properties": {
    "diff": {"type": "array", "items": CHANGE}, "previous": {"type": ["object", "null"]},
    "doc": {"type": ["object", "null"]}}}]}


def _paths(base: str, params: list[dict[str, Any]], what: str, needs: str) -> dict[str, Any]:
    """The four operations of one kind of document's history."""
    return {
        base: {"get": op(f"The revisions of {what}, newest first (needs {needs})",
                         [*params, param("limit", "query", "int", "At most this many (1-200, default 50)"),
                          param("skip", "query", "int", "Skip this many")], READ_ERRORS, tag="revisions",
                         schema={"type": "object", "properties": {"data": {"type": "array", "items": SUMMARY},
                                                                  "total": {"type": "integer"}}})},
        base + "/diff": {"get": op(f"What changed between two revisions of {what}",
                                   [*params,
                                    param("from", "query", "int", "From the document as this revision left it "
                                          "(0: before the first kept one; default: the one before `to`)"),
                                    param("to", "query", "int", "To the document as this revision left it "
                                          "(default: the newest)")], READ_ERRORS, tag="revisions",
                                   schema={"type": "object", "properties": {
                                       "from": {"type": "integer"}, "to": {"type": "integer"},
                                       "changes": {"type": "array", "items": CHANGE}}})},
        base + "/{n}": {"get": op("One revision: who, when, what changed, the document before and after",
                                  [*params, N], READ_ERRORS, tag="revisions", schema=REVISION)},
        base + "/{n}/restore": {"post": op(f"Write {what} back as this revision left it (a new revision)",
                                           [*params, N], WRITE_ERRORS + (409,), tag="revisions",
                                           schema={"type": "object"})},
    }


def paths() -> dict[str, Any]:
    page_id = param("id", "path", "string", "Page id (24 hex characters)", pattern=ID_PATTERN)
    return {**_paths("/api/revisions/content/{model}/{id}", [MODEL, ITEM_ID], "an item",
                     "the model's update permission"),
            **_paths("/api/revisions/pages/{id}", [page_id], "a page", "pages/manage"),
            **_paths("/api/revisions/pages/settings", [], "the pages' settings", "pages/manage")}
