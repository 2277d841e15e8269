"""HTTP routes of forms (`/api/inbox/...`): the public submit endpoint,
form management and submissions."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from quire.asgi import route
from quire.assets.routes import FILE_HEADERS, SANDBOX_POLICY, send_stored
from quire.auth.request import identify
from quire.config import InboxSettings
from quire.errors import BadRequest, PayloadTooLarge, PreconditionFailed, TooManyRequests
from quire.files import FileInfo, Files
from quire.http import (
    client_address,
    int_param,
    json_param,
    json_response,
    limited_receive,
    quire_of,
    read_data,
    read_json,
    service,
)
from quire.inbox.forms import FormService
from quire.inbox.service import (
    FilePart,
    Submission,
    SubmitService,
    UploadFailed,
    check_request_size,
)
from quire.inbox.submissions import SubmissionService

DATA_KEY = re.compile(r"^data\[([^\[\]]+)\](\[\])?$")
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


async def submit(request: Request) -> Response:
    quire = quire_of(request)
    form = service(request, FormService).by_token(request.path_params["token"])
    retry = await quire.rate_limiter.hit(form["_id"], client_address(request))
    if retry is not None:
        raise TooManyRequests("Too many submissions, try again later", retry)
    sent = await read_submission(request)
    outcome = await service(request, SubmitService).submit(form, sent, request.headers.get("origin"), request.headers.get("referer"))
    if outcome.redirect:
        return RedirectResponse(outcome.redirect, status_code=303)
    return json_response({"success": True, "record": outcome.record})


async def read_submission(request: Request) -> Submission:
    """`{"data": {...}}` as JSON, or form fields `data[name]` / `data[name][]`
    (files too, in multipart); `success` and `subject` from the body or the
    query string."""
    quire = quire_of(request)
    settings = quire.settings.inbox
    limit = settings.max_request_bytes
    check_request_size(request.headers.get("content-length"), limit)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    query = request.query_params
    sent = Submission(success=query.get("success"), subject=query.get("subject"))
    if kind == "application/json":
        try:
            body = await read_json(request, limit, quire.max_depth)
        except PayloadTooLarge:
            raise PayloadTooLarge("Upload failed", detail=f"the request is larger than {limit} bytes") from None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        sent.data = data
        sent.success = _text(body.get("success")) or sent.success
        sent.subject = _text(body.get("subject")) or sent.subject
        return sent
    if kind not in FORM_TYPES:
        raise PreconditionFailed("Item data is missing")
    limited = Request(request.scope, limited_receive(request.receive, limit))
    try:
        # The parser's own caps are loose (empty file inputs are parts too;
        # the request cap bounds a value's size): the exact limits are
        # checked on what it found, with messages that name the field.
        form = await limited.form(max_files=settings.max_files + settings.max_fields,
                                  max_fields=settings.max_fields + 10, max_part_size=limit)
    except PayloadTooLarge:
        raise PayloadTooLarge("Upload failed", detail=f"the request is larger than {limit} bytes") from None
    except (MultiPartException, HTTPException) as exc:
        raise _parser_error(str(getattr(exc, "detail", None) or exc), settings) from None
    try:
        await _collect(form, sent)
    finally:
        await form.close()
    return sent


def _parser_error(message: str, settings: InboxSettings) -> Exception:
    lowered = message.lower()
    if "too many files" in lowered:
        return UploadFailed(f"at most {settings.max_files} files per submission")
    if "too many fields" in lowered:
        return BadRequest(f"Too many fields: at most {settings.max_fields}")
    if "maximum size" in lowered:
        return BadRequest(f"A field is longer than {settings.max_field_length} characters")
    return BadRequest(f"Malformed form body: {message}")


async def _collect(form: Any, sent: Submission) -> None:
    lists: set[str] = set()
    for key, value in form.multi_items():
        if key in ("success", "subject") and isinstance(value, str):
            setattr(sent, key, value or getattr(sent, key))
            continue
        match = DATA_KEY.match(key)
        if match is None:
            continue
        name, many = match.group(1), bool(match.group(2))
        if isinstance(value, UploadFile):
            sent.files.setdefault(name, []).append(FilePart(value.filename or "", await value.read()))
        elif many or name in sent.data:  # `data[x][]`, or a name sent twice: a list
            current = sent.data.get(name)
            values: list[Any] = current if name in lists and isinstance(current, list) else (
                [] if current is None else [current])
            values.append(value)
            sent.data[name] = values
            lists.add(name)
        else:
            sent.data[name] = value


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


# -- forms (inbox/manage) ------------------------------------------------------


async def list_forms(request: Request) -> Response:
    return json_response(service(request, FormService).all(identify(request)))


async def save_form(request: Request) -> Response:
    identity = identify(request)
    identity.require("inbox/manage")
    return json_response(await service(request, FormService).save(await read_data(request), identity))


async def get_form(request: Request) -> Response:
    return json_response(service(request, FormService).get(request.path_params["id"], identify(request)))


async def delete_form(request: Request) -> Response:
    identity = identify(request)
    await service(request, SubmissionService).delete_form(request.path_params["id"], identity)
    return json_response({"success": True})


async def rotate_token(request: Request) -> Response:
    identity = identify(request)
    return json_response(await service(request, FormService).rotate_token(request.path_params["id"], identity))


# -- submissions (inbox/submissions) -------------------------------------------


async def list_submissions(request: Request) -> Response:
    identity = identify(request)
    identity.require("inbox/submissions")
    sort = json_param(request, "sort")
    docs, total = service(request, SubmissionService).find(
        identity, request.query_params.get("form") or None, json_param(request, "filter"),
        sort, int_param(request, "limit"), int_param(request, "skip"), json_param(request, "fields"),
    )
    return json_response(docs if total is None else {"data": docs, "meta": {"total": total}})


async def get_submission(request: Request) -> Response:
    return json_response(service(request, SubmissionService).get(request.path_params["id"], identify(request)))


async def update_submission(request: Request) -> Response:
    identity = identify(request)
    identity.require("inbox/submissions")
    record = await service(request, SubmissionService).update(request.path_params["id"], await read_data(request), identity)
    return json_response(record)


async def delete_submission(request: Request) -> Response:
    identity = identify(request)
    await service(request, SubmissionService).delete(request.path_params["id"], identity)
    return json_response({"success": True})


async def attachment(request: Request) -> Response:
    identity = identify(request)
    p = request.path_params
    submissions = service(request, SubmissionService)
    found, item = await submissions.attachment(p["id"], p["field"], p["n"], identity)
    return attachment_response(request, submissions.uploads, found, item)


def attachment_response(request: Request, uploads: Files, found: FileInfo, item: dict[str, Any]) -> Response:
    """A submission's file as a download: never shown inline, never sniffed,
    sandboxed, not cached (also what the studio answers)."""
    name = item["name"].replace('"', "")
    ascii_name = name.encode("ascii", "replace").decode().replace("?", "_")
    headers = {**FILE_HEADERS, "Content-Security-Policy": SANDBOX_POLICY, "Cache-Control": "private, no-store",
               "Content-Disposition": f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(name)}"}
    return send_stored(request, uploads, found, item["mime"], headers)


async def export_csv(request: Request) -> Response:
    identity = identify(request)
    form_id = request.query_params.get("form") or None
    rows = service(request, SubmissionService).export_csv(form_id, json_param(request, "filter"), identity)
    name = f"submissions-{form_id}.csv" if form_id else "submissions.csv"
    return StreamingResponse(rows, media_type="text/csv; charset=utf-8",
                             headers={"Content-Disposition": f'attachment; filename="{name}"',
                                      "Cache-Control": "private, no-store"})


routes = [
    route("/api/inbox/submit/{token}", post=submit),
    route("/api/inbox/forms", get=list_forms, post=save_form),
    route("/api/inbox/forms/{id}", get=get_form, delete=delete_form),
    route("/api/inbox/forms/{id}/token", post=rotate_token),
    route("/api/inbox/submissions", get=list_submissions),
    route("/api/inbox/submissions/export.csv", get=export_csv),
    route("/api/inbox/submissions/{id}", get=get_submission, post=update_submission, delete=delete_submission),
    route("/api/inbox/submissions/{id}/attachments/{field}/{n}", get=attachment),
]
