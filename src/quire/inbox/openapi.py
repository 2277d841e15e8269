"""OpenAPI paths of the forms API."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    from quire.openapi import FIELDS, FILTER, LIMIT, SKIP, SORT, error_responses, op, param

    form_id = param("id", "path", "string", "Form id")
    record_id = param("id", "path", "string", "Submission id")
    form_param = param("form", "query", "string", "Only the submissions of this form")

    def tagged(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="inbox", **kw)

    submit = tagged(
        "Submit a form (no api-key: the token is the credential). JSON {data: {...}}, urlencoded or "
        "multipart data[field] / data[field][] (files too); success and subject from query or body",
        [param("token", "path", "string", "The form's token"),
         param("success", "query", "string", "Where to send the browser after success (303), when relative "
                                               "or on an allowed domain"),
         param("subject", "query", "string", "Subject of the notification e-mail")],
        (400, 404, 412, 413), ok='{"success": true, "record": {...}}', security=False)
    submit["requestBody"] = {"required": True, "content": {
        "application/json": {"schema": {"type": "object", "properties": {"data": {"type": "object"}}}},
        "application/x-www-form-urlencoded": {"schema": {"type": "object"}},
        "multipart/form-data": {"schema": {"type": "object"}},
    }}
    submit["responses"]["303"] = {"description": "Redirect to success"}
    submit["responses"].update(error_responses(429))
    return {
        "/api/inbox/submit/{token}": {"post": submit},
        "/api/inbox/forms": {
            "get": tagged("List forms (with their tokens)", [], (401, 403)),
            "post": tagged("Create a form {data: {name, group, emails, domains, fields, honeypot, languages, "
                           "store}}, or change one partially with data._id", [], (400, 401, 403, 404, 412, 413),
                           body=True),
        },
        "/api/inbox/forms/{id}": {
            "get": tagged("One form", [form_id], (401, 403, 404)),
            "delete": tagged("Delete a form with its submissions and their files", [form_id], (401, 403, 404),
                             ok='{"success": true}'),
        },
        "/api/inbox/forms/{id}/token": {
            "post": tagged("Give the form a new token (the old submit URL stops working)", [form_id],
                           (401, 403, 404)),
        },
        "/api/inbox/submissions": {
            "get": tagged("Submissions, newest first: an array, or {data, meta: {total}} with limit and skip",
                          [form_param, FILTER, SORT, FIELDS, LIMIT, SKIP], (400, 401, 403, 404)),
        },
        "/api/inbox/submissions/export.csv": {
            "get": tagged("Submissions as CSV, oldest first", [form_param, FILTER], (400, 401, 403, 404),
                          ok="text/csv"),
        },
        "/api/inbox/submissions/{id}": {
            "get": tagged("One submission", [record_id], (401, 403, 404)),
            "post": tagged("Mark a submission as spam or not: {data: {spam: true}}", [record_id],
                           (400, 401, 403, 404, 412, 413), body=True),
            "delete": tagged("Delete a submission and its files", [record_id], (401, 403, 404),
                             ok='{"success": true}'),
        },
        "/api/inbox/submissions/{id}/attachments/{field}/{n}": {
            "get": tagged("Download an attachment", [
                record_id, param("field", "path", "string", "Field name"),
                param("n", "path", "string", "Position of the file in the field, from 0"),
            ], (401, 403, 404), ok="The file"),
        },
    }
