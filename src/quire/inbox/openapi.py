"""OpenAPI paths of the forms API."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    from quire.openapi import (
        DATA_BODY,
        FIELDS,
        FILTER,
        ID_PATTERN,
        LIMIT,
        LIST,
        OBJECT,
        OBJECTS,
        SKIP,
        SORT,
        SUCCESS,
        error_responses,
        op,
        param,
    )

    form_id = param("id", "path", "string", "Form id", pattern=ID_PATTERN)
    record_id = param("id", "path", "string", "Submission id", pattern=ID_PATTERN)
    form_param = param("form", "query", "string", "Only the submissions of this form")

    def tagged(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="inbox", **kw)

    submit = tagged(
        "Submit a form (no api-key: the token is the credential). JSON {data: {...}}, urlencoded or "
        "multipart data[field] / data[field][] (files too); success and subject from query or body",
        [param("token", "path", "string", "The form's token", pattern="^[A-Za-z0-9_-]+$"),
         param("success", "query", "string", "Where to send the browser after success (303), when relative "
                                               "or on an allowed domain"),
         param("subject", "query", "string", "Subject of the notification e-mail")],
        (400, 404, 412, 413), ok='{"success": true, "record": {...}}', security=False,
        schema={"type": "object", "required": ["success", "record"],
                "properties": {"success": {"const": True}, "record": OBJECT}})
    submit["requestBody"] = {"required": True, "content": {
        "application/json": {"schema": DATA_BODY},
        "application/x-www-form-urlencoded": {"schema": {"type": "object"}},
        "multipart/form-data": {"schema": {"type": "object"}},
    }}
    submit["responses"]["303"] = {"description": "Redirect to success"}
    submit["responses"].update(error_responses(429))
    attachment = tagged("Download an attachment (Content-Disposition: attachment)", [
        record_id, param("field", "path", "string", "Field name"),
        param("n", "path", "int", "Position of the file in the field, from 0"),
    ], (401, 403, 404), ok="The file")
    attachment["responses"]["200"]["content"] = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
    return {
        "/api/inbox/submit/{token}": {"post": submit},
        "/api/inbox/forms": {
            "get": tagged("List forms (with their tokens)", [], (401, 403), schema=OBJECTS),
            "post": tagged("Create a form {data: {name, group, emails, domains, fields, honeypot, languages, "
                           "store}}, or change one partially with data._id", [], (400, 401, 403, 404, 412, 413),
                           body=DATA_BODY, schema=OBJECT),
        },
        "/api/inbox/forms/{id}": {
            "get": tagged("One form", [form_id], (401, 403, 404), schema=OBJECT),
            "delete": tagged("Delete a form with its submissions and their files", [form_id], (401, 403, 404),
                             ok='{"success": true}', schema=SUCCESS),
        },
        "/api/inbox/forms/{id}/token": {
            "post": tagged("Give the form a new token (the old submit URL stops working)", [form_id],
                           (401, 403, 404), schema=OBJECT),
        },
        "/api/inbox/submissions": {
            "get": tagged("Submissions, newest first: an array, or {data, meta: {total}} with limit and skip",
                          [form_param, FILTER, SORT, FIELDS, LIMIT, SKIP], (400, 401, 403, 404), schema=LIST),
        },
        "/api/inbox/submissions/export.csv": {
            "get": tagged("Submissions as CSV (UTF-8 with a byte order mark), oldest first", [form_param, FILTER],
                          (400, 401, 403, 404), ok="text/csv", media="text/csv", schema={"type": "string"}),
        },
        "/api/inbox/submissions/{id}": {
            "get": tagged("One submission", [record_id], (401, 403, 404), schema=OBJECT),
            "post": tagged("Mark a submission as spam or not: {data: {spam: true}}", [record_id],
                           (400, 401, 403, 404, 412, 413), body=DATA_BODY, schema=OBJECT),
            "delete": tagged("Delete a submission and its files", [record_id], (401, 403, 404),
                             ok='{"success": true}', schema=SUCCESS),
        },
        "/api/inbox/submissions/{id}/attachments/{field}/{n}": {"get": attachment},
    }
