"""Export a list as it is filtered, and import a file in three steps: the
file (kept in the site's storage under `imports/` meanwhile), the mapping
of its columns with a preview of the first rows, the import with its
progress and the problems of each bad row. Everything goes through
`content/transfer.py`, as the API's import and export do."""

from __future__ import annotations

import dataclasses
import secrets
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.assets.service import AssetService
from quire.content import transfer
from quire.content.models import Model, ModelService
from quire.content.screens import conditions
from quire.content.screens.list_query import (
    parse_query,
    read_options,
    sortable_fields,
)
from quire.content.screens.lists import both, list_filters, search_found
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest, Forbidden, NotFound
from quire.files import Files
from quire.http import json_response, quire_of, service
from quire.responses import ClosingStream, chained
from quire.ui.screens import Form, checked_form, multipart_file, need, render, studio_page
from quire.ui.web import Login, same_origin, same_token

UPLOADS = "imports"  # where a file waits between its upload and its import
KEPT_SECONDS = 24 * 3600  # a file left waiting longer is removed by the next upload
EXTENSIONS = {"csv": "csv", "tsv": "csv", "txt": "csv", "json": "json", "ndjson": "ndjson", "jsonl": "ndjson"}


def _model(request: Request, login: Login) -> Model:
    name = request.path_params["model"]
    model = service(request, ModelService).get(name)
    need(login, f"content/{name}/read")
    return model


def _waiting(request: Request) -> Files:
    return service(request, AssetService).files.under(UPLOADS)


@studio_page
async def export_list(request: Request, login: Login) -> Response:
    """The list as the page shows it (search, filter, sort; every state for
    who may edit), every page of it, as a file."""
    model = _model(request, login)
    fmt = request.query_params.get("format", "csv")
    if fmt not in transfer.FORMATS:
        raise BadRequest(f"format must be one of {', '.join(transfer.FORMATS)}")
    drafts = login.can(f"content/{model.name}/update")
    query = parse_query(request.query_params, sortable_fields(model, drafts))
    found = search_found(quire_of(request), model, query.q)
    built, checked, spec, problem = list_filters(request, login, query, conditions.fields_of(model, drafts))
    bad = next((c for c in checked if c.error), None)
    # the list leaves such a filter out and says so; a file is refused instead
    if problem:
        raise BadRequest(problem)
    if bad is not None:
        raise BadRequest(f"the condition on {bad.field} {bad.error}")
    opts = read_options(query, both(spec, built), drafts, found.condition)
    opts = dataclasses.replace(opts, limit=None, skip=None)
    content = service(request, ContentService)
    chunks = transfer.export_rows(content, model, opts, login.identity, fmt)
    first = next(chunks, b"")
    stamp = time.strftime("%Y-%m-%d")

    return ClosingStream(chained(first, chunks), media_type=transfer.FORMATS[fmt], headers={
        "Content-Disposition": f'attachment; filename="{model.name}-{stamp}.{fmt}"'})


@studio_page
async def import_page(request: Request, login: Login) -> Response:
    model = _model(request, login)
    need(login, f"content/{model.name}/create")
    return render(request, login, "content/import.html", model=model, limit=_limit(request))


def _limit(request: Request) -> int:
    return int(quire_of(request).settings.content.import_max_bytes)


@studio_page
async def upload_file(request: Request, login: Login) -> Response:
    """Step two: the file kept, its columns mapped and its first rows shown."""
    model = _model(request, login)
    need(login, f"content/{model.name}/create")
    try:
        fields, filename, raw = await _multipart(request, login, _limit(request))
        if not raw:
            raise BadRequest("Choose a file to import")
        fmt = fields.get("format") or EXTENSIONS.get(filename.rsplit(".", 1)[-1].lower(), "")
        if fmt not in transfer.FORMATS:
            raise BadRequest("Choose the file's format: CSV, JSON or NDJSON")
        preview = await _preview(request, login, model, raw, fmt, {})
    except ApiError as exc:
        if exc.status == 404 or isinstance(exc, Forbidden):
            raise
        return render(request, login, "content/import.html", exc.status, model=model, limit=_limit(request),
                      error=exc.message)
    waiting = _waiting(request)
    _remove_old(waiting)
    token = secrets.token_urlsafe(16)
    waiting.put(f"{token}.{fmt}", raw)
    return render(request, login, "content/import_map.html", **_mapping_context(model, request, preview, token,
                                                                             fmt, filename))


async def _preview(request: Request, login: Login, model: Model, raw: bytes, fmt: str,
                   mapping: dict[str, str | None]) -> transfer.Outcome:
    content = service(request, ContentService)
    wanted = transfer.Request(raw, fmt, mapping, "all", preview=True)
    try:
        return await transfer.import_rows(content, model.name, wanted, login.identity)
    except BadRequest as exc:
        if "Columns that are not fields" not in exc.message:
            raise
        # unmapped columns: shown on the mapping step, left out until mapped
        header, _ = transfer.read_rows(raw, fmt)
        fields = _targets(model, content.locales.codes())
        unmapped: dict[str, str | None] = {c: None for c in header if c not in fields}
        wanted = transfer.Request(raw, fmt, unmapped, "all", preview=True)
        return await transfer.import_rows(content, model.name, wanted, login.identity)


def _targets(model: Model, codes: list[str]) -> list[str]:
    """What a column may go to: the fields (and per-locale keys) and the kept system keys."""
    out = [f["name"] for f in model.fields]
    out += [f"{f['name']}_{code}" for f in model.fields if f.get("i18n") for code in codes]
    return out + list(transfer.KEPT)


def _mapping_context(model: Model, request: Request, preview: transfer.Outcome, token: str, fmt: str,
                     filename: str) -> dict[str, Any]:
    codes = service(request, ContentService).locales.codes()
    targets = _targets(model, codes)
    return {"model": model, "token": token, "format": fmt, "filename": filename, "columns": preview.columns,
            "targets": targets, "guess": {c: (c if c in targets else "") for c in preview.columns},
            "preview": preview.preview or [], "problems": preview.problems}


async def _waiting_file(request: Request, login: Login) -> tuple[Form, str, str, bytes, dict[str, str | None]]:
    """The form of steps two and three: the upload it names, read back, and
    the mapping chosen."""
    form = await checked_form(request, login)
    token, fmt = form.get("token") or "", form.get("format") or ""
    if not token.replace("-", "").replace("_", "").isalnum() or fmt not in transfer.FORMATS:
        raise BadRequest("The upload was not found: choose the file again")
    try:
        raw = _waiting(request).read(f"{token}.{fmt}")
    except FileNotFoundError:
        raise NotFound("The upload was not found (it is kept a day): choose the file again") from None
    mapping = {key.removeprefix("map:"): (value or None) for key, value in form.pairs if key.startswith("map:")}
    return form, token, fmt, raw, mapping


@studio_page
async def preview_again(request: Request, login: Login) -> Response:
    """Step two again: the first rows with the mapping as it is now chosen."""
    model = _model(request, login)
    need(login, f"content/{model.name}/create")
    form, token, fmt, raw, mapping = await _waiting_file(request, login)
    preview = await _preview(request, login, model, raw, fmt, mapping)
    context = _mapping_context(model, request, preview, token, fmt, form.get("filename"))
    context["guess"] = {c: mapping.get(c) or "" for c in preview.columns}
    return render(request, login, "content/import_map.html", **context)


@studio_page
async def run_import(request: Request, login: Login) -> Response:
    """Step three: the file imported with the mapping chosen; the outcome,
    each bad row named."""
    model = _model(request, login)
    need(login, f"content/{model.name}/create")
    form, token, fmt, raw, mapping = await _waiting_file(request, login)
    waiting = _waiting(request)
    mode = form.get("mode") or "all"
    content = service(request, ContentService)
    wanted = transfer.Request(raw, fmt, mapping, mode)
    progress = transfer.progress_recorder(content.store, token, login.identity)

    try:
        outcome = await transfer.import_rows(content, model.name, wanted, login.identity, progress)
    except ApiError as exc:
        if exc.status == 404 or isinstance(exc, Forbidden):
            raise
        return render(request, login, "message.html", exc.status, title="Nothing was imported",
                      message=exc.message, back=f"/studio/content/{model.name}/import", back_text="Choose a file")
    stored = outcome.created + outcome.updated
    if stored or not outcome.problems:
        waiting.delete(f"{token}.{fmt}")
    status = 400 if outcome.problems and not stored else 200
    return render(request, login, "content/import_done.html", status, model=model, outcome=outcome, mode=mode,
                  token=token, format=fmt, mapping=mapping)


@studio_page
async def import_progress(request: Request, login: Login) -> Response:
    _model(request, login)
    token = request.path_params["token"]
    done = transfer.progress_of(service(request, ContentService).store, token, login.identity)
    return json_response(done or {"done": 0, "total": 0})


async def _multipart(request: Request, login: Login, limit: int) -> tuple[dict[str, str], str, bytes | None]:
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        await checked_form(request, login)  # a form post: its token is checked first, as for every write
        raise BadRequest("Send the file as multipart/form-data")
    if not same_origin(request):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
    fields, filename, raw = await multipart_file(request, limit)
    if not same_token(login.session["csrf"], fields.get("csrf") or request.headers.get("x-csrf-token", "")):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
    return fields, filename, raw


def _remove_old(waiting: Files) -> None:
    """Files that waited for their import longer than a day."""
    cutoff = time.time() - KEPT_SECONDS
    old = [info.key for info in waiting.list() if info.modified < cutoff]
    if old:
        waiting.delete_many(old)


routes = [
    route("/studio/content/{model}/export", get=export_list, cors=False),
    route("/studio/content/{model}/import", get=import_page, post=upload_file, cors=False),
    route("/studio/content/{model}/import/preview", post=preview_again, cors=False),
    route("/studio/content/{model}/import/run", post=run_import, cors=False),
    route("/studio/content/{model}/import/progress/{token}", get=import_progress, cors=False),
]
