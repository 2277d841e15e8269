"""OpenAPI paths of machine translation (merged by quire.openapi.document)."""

from __future__ import annotations

from typing import Any

from quire.openapi import op, param

TASK: dict[str, Any] = {
    "type": "object", "required": ["id", "kind", "name", "state"],
    "properties": {"id": {"type": "string"}, "kind": {"type": "string", "enum": ["item", "model", "project", "pages"]},
                   "name": {"type": "string"}, "item": {"type": ["string", "null"]},
                   "locales": {"type": "array", "items": {"type": "string"}},
                   "state": {"type": "string", "enum": ["pending", "running", "done", "failed"]},
                   "done": {"type": "integer"}, "total": {"type": ["integer", "null"]},
                   "translated": {"type": "integer", "description": "values written"},
                   "errors": {"type": "array"}, "error": {"type": ["string", "null"]}}}
BODY: dict[str, Any] = {"type": "object", "properties": {"locales": {
    "type": "array", "items": {"type": "string"}, "description": "the locales to fill in (default: every other)"}}}


def paths() -> dict[str, Any]:
    def queued(summary: str, params: list[dict[str, Any]]) -> dict[str, Any]:
        operation = op(summary, params, (400, 403, 404), body=BODY, tag="translate")
        operation["requestBody"]["required"] = False
        operation["responses"]["202"] = {"description": "Queued: its task (GET /api/translate/tasks/{id})",
                                         "content": {"application/json": {"schema": TASK}}}
        return operation

    model = param("model", "path", "string", "The model's name", required=True)
    item = param("id", "path", "string", "The item's id", required=True)
    name = param("name", "path", "string", "The translation project's name", required=True)
    return {
        "/api/translate/item/{model}": {"post": queued("Machine-translate a singleton's missing localized values",
                                                       [model])},
        "/api/translate/item/{model}/{id}": {"post": queued("Machine-translate an item's missing localized values "
                                                            "(into its draft, marked unreviewed in _mt)", [model, item])},
        "/api/translate/model/{model}": {"post": queued("Machine-translate what is missing in every item of a model",
                                                        [model])},
        "/api/translate/project/{name}": {"post": queued("Machine-translate a translation project's missing values",
                                                         [name])},
        "/api/translate/pages": {"post": queued("Machine-translate every page's missing title and SEO texts "
                                                "(published pages only with hide_unreviewed = false)", [])},
        "/api/translate/project/{name}/unreviewed": {
            "get": op("A project's machine translations not reviewed yet: key -> locales", [name], (403, 404),
                      tag="translate"),
            "post": op("Mark values reviewed {keys: {key: [locales]}}", [name], (400, 403, 404), body=True,
                       tag="translate"),
        },
        "/api/translate/tasks/{id}": {"get": op("A machine translation task: its state and progress",
                                                [param("id", "path", "string", "The task's id", required=True)],
                                                (404,), tag="translate", schema=TASK)},
    }
