"""Bulk edit in the studio (content/bulk.py): from a list, the selected
items or every item it shows, in three steps: the field, the operation and
the value; the count confirmed ("Set Kind: news on 37 items"); the edit,
with its progress, its outcome and an undo."""

from __future__ import annotations

import re
import secrets
from typing import Any

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content import transfer
from quire.content.bulk import OPERATIONS, BulkEdits, Edit, check, targets
from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService
from quire.content.screens import conditions
from quire.content.screens.list_query import parse_query, read_options, sortable_fields
from quire.content.screens.lists import both, list_filters, search_found
from quire.content.screens.titles import title_of
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest
from quire.http import json_response, quire_of, service
from quire.ids import is_id
from quire.ui.screens import Form, checked_form, need, render, studio_page
from quire.ui.web import Login

MAX_SELECTED = 500  # ids a form carries (the list's page holds at most 100)
MAX_ITEMS = 100_000  # items one edit of a whole list changes at most
TOKEN = re.compile(r"^[A-Za-z0-9_-]{8,64}$")  # the progress key the confirm page made


def _model(request: Request, login: Login) -> Model:
    model = service(request, ModelService).get(request.path_params["model"])
    need(login, f"content/{model.name}/read")
    need(login, f"content/{model.name}/update")
    return model


def _scope(request: Request, login: Login, model: Model, form: Form) -> tuple[list[str], str]:
    """The ids the edit is for, and how the page names them: the selected
    ones, or every item of the list as it was shown (its search, filter
    and conditions)."""
    if form.get("scope") != "all":
        ids = list(dict.fromkeys(i for i in form.getlist("ids") if is_id(i)))[:MAX_SELECTED]
        if not ids:
            raise BadRequest("Select the items first, or choose every item of the list")
        return ids, f"the {len(ids)} selected item{'' if len(ids) == 1 else 's'}"
    params = QueryParams(form.get("list").lstrip("?")[:8000])
    query = parse_query(params, sortable_fields(model, True))
    built, checked, spec, problem = list_filters(request, login, query, conditions.fields_of(model, True))
    if problem or any(c.error for c in checked):
        raise BadRequest("The list's filter has a problem: fix it on the list first")
    found = search_found(quire_of(request), model, query.q)
    opts = read_options(query, both(spec, built), True, found.condition)
    ids = service(request, BulkEdits).matching_ids(model, opts.filter, login.identity, MAX_ITEMS + 1)
    if len(ids) > MAX_ITEMS:
        raise BadRequest(f"The list holds more than {MAX_ITEMS:,} items: narrow it down first")
    return ids, f"all {len(ids):,} item{'' if len(ids) == 1 else 's'} of the list"


def _context(request: Request, login: Login, model: Model, form: Form) -> dict[str, Any]:
    ids, scope_text = _scope(request, login, model, form)
    codes = service(request, LocaleService).codes()
    return {"model": model, "targeted": ids, "ids": ids if form.get("scope") != "all" else [],
            "scope": form.get("scope") or "selected",
            "list_query": form.get("list"), "scope_text": scope_text, "count": len(ids),
            "targets": targets(model, codes), "operations": OPERATIONS, "chosen": form.get("field"),
            "op": form.get("op") or "set", "value": form.get("value"), "back": _back(model, form)}


def _back(model: Model, form: Form) -> str:
    query = form.get("list").lstrip("?")
    return f"/studio/content/{model.name}" + (f"?{query}" if query and "\n" not in query else "")


@studio_page
async def bulk_page(request: Request, login: Login) -> Response:
    """Step one: the field, the operation and the value."""
    model = _model(request, login)
    form = await checked_form(request, login)
    return render(request, login, "content/bulk.html", **_context(request, login, model, form), error=None)


async def _step(request: Request, login: Login) -> tuple[Model, Form, dict[str, Any], Edit | Response]:
    """A posted step of the edit, its page's context and the edit as
    chosen, or the first page again saying what is wrong with it."""
    model = _model(request, login)
    form = await checked_form(request, login)
    context = _context(request, login, model, form)
    try:
        codes = service(request, LocaleService).codes()
        return model, form, context, check(model, codes, form.get("field"), form.get("op"), form.get("value"))
    except BadRequest as exc:
        return model, form, context, render(request, login, "content/bulk.html", 400, **context, error=exc.message)


@studio_page
async def bulk_check(request: Request, login: Login) -> Response:
    """Step two: what will change, on how many items, confirmed."""
    _, form, context, edit = await _step(request, login)
    if not isinstance(edit, Edit):
        return edit
    return render(request, login, "content/bulk_confirm.html", **context, what=edit.describe(form.get("value")),
                  token=secrets.token_urlsafe(12))


@studio_page
async def bulk_run(request: Request, login: Login) -> Response:
    """Step three: the edit, item by item; its outcome and its undo."""
    model, form, context, edit = await _step(request, login)
    if not isinstance(edit, Edit):
        return edit
    token = form.get("token")
    progress = transfer.progress_recorder(service(request, ContentService).store, f"bulk-{token}", login.identity) \
        if TOKEN.match(token) else None
    outcome = await service(request, BulkEdits).run(model, context["targeted"], edit, form.get("value"),
                                                    login.identity, progress, lambda item: title_of(model, item))
    return render(request, login, "content/bulk_done.html", model=model, outcome=outcome, undone=False,
                  what=edit.describe(form.get("value")), back=context["back"])


@studio_page
async def bulk_undo(request: Request, login: Login) -> Response:
    model = _model(request, login)
    form = await checked_form(request, login)
    bulk = service(request, BulkEdits)
    record = bulk.get(request.path_params["id"], model.name) if is_id(request.path_params["id"]) else None
    if record is None:
        raise BadRequest("No such edit")
    try:
        outcome = await bulk.undo(model, record["_id"], login.identity, None, lambda item: title_of(model, item))
    except ApiError as exc:
        return render(request, login, "message.html", exc.status, title="Not undone", message=exc.message,
                      back=f"/studio/content/{model.name}", back_text="Back to the list")
    return render(request, login, "content/bulk_done.html", model=model, outcome=outcome, undone=True,
                  what=record["what"], back=_back(model, form))


@studio_page
async def bulk_progress(request: Request, login: Login) -> Response:
    _model(request, login)
    token = request.path_params["token"]
    done = transfer.progress_of(service(request, ContentService).store, f"bulk-{token}", login.identity) \
        if TOKEN.match(token) else None
    return json_response(done or {"done": 0, "total": 0})


routes = [
    route("/studio/content/{model}/bulk", post=bulk_page, cors=False),
    route("/studio/content/{model}/bulk/check", post=bulk_check, cors=False),
    route("/studio/content/{model}/bulk/run", post=bulk_run, cors=False),
    route("/studio/content/{model}/bulk/{id}/undo", post=bulk_undo, cors=False),
    route("/studio/content/{model}/bulk/progress/{token}", get=bulk_progress, cors=False),
]
