"""The model builder: create, change and delete models (`system/manage`).

Changes go through `ModelService.asave` exactly as `PUT
/api/system/models/{name}` does, with the same messages: a renamed field
is sent as a rename (stored values follow in the same transaction), a
removed field that items hold values of needs a confirmation that deletes
those values (`drop_values`), and a change stored values do not fit is
refused by the service naming the items in the way. A refused save shows
the form as it was typed, with the message next to the field."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content import types
from quire.content.fields import FIELD_NAME, FieldError
from quire.content.models import KINDS, ModelService, parse_change
from quire.content.screens.model_form import (
    CODE_LANGUAGES,
    MAX_DEPTH,
    FieldRow,
    ModelForm,
    definition_of,
    form_of_model,
    human_label,
    new_key,
    parse_form,
)
from quire.content.service import ContentService, ReadOptions
from quire.errors import BadRequest
from quire.http import service
from quire.ui.screens import Form, checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

MANAGE = "system/manage"
RESERVED = {"new"}  # would clash with /studio/models/new
LIST_NAME = re.compile(r"^(field|f[0-9a-f]{8}-fields)$")
ROW_KEY = re.compile(r"^[A-Za-z0-9_]{1,40}$")
ROW_ERROR = re.compile(r"^fields\[(\d+)\]")


@studio_page
async def models_list(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    models = service(request, ModelService).all()
    content = service(request, ContentService)
    counts = {m.name: content.count(m.name, ReadOptions(drafts=True), login.identity)
              for m in models if login.can(f"content/{m.name}/read") and login.can(f"content/{m.name}/update")}
    return render(request, login, "content/models.html", models=models, counts=counts)


@studio_page
async def new_model_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    # no label typed: it is made from the name, and follows a rename
    form = ModelForm(rows=[FieldRow(new_key(), name="title", required=True)])
    return _editor(request, login, form, new=True)


@studio_page
async def create_model(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    form = parse_form(posted)
    for row in form.all_rows():
        row.was = ""  # nothing is stored yet: nothing to rename
    if _rearranged(posted, form):
        return _editor(request, login, form, new=True)
    models = service(request, ModelService)
    if not FIELD_NAME.match(form.name):
        form.errors["name"] = "Model name must match ^[A-Za-z][A-Za-z0-9_]*$"  # the API's words
    elif form.name in RESERVED:
        form.errors["name"] = f"{form.name} is a word of the studio's addresses; pick another name"
    elif models.find(form.name) is not None:
        form.errors["name"] = f"Model {form.name} exists already; pick another name"
    if form.kind not in KINDS:
        form.errors["kind"] = f"Model type must be one of {', '.join(KINDS)}"
    try:
        body, _ = definition_of(form)  # the fields' messages too, not only the first problem
        if form.errors:
            return _editor(request, login, form, new=True, status=400)
        model, _, _ = parse_change(form.name, body)
        await models.asave(model, identity=login.identity)
    except FieldError as exc:
        form.error = str(exc)
        return _editor(request, login, form, new=True, status=400)
    except BadRequest as exc:
        _place(form, exc)
        return _editor(request, login, form, new=True, status=400)
    return redirect_flash(request, f"/studio/models/{model.name}", f"Created model {model.name}.")


@studio_page
async def edit_model_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    models = service(request, ModelService)
    model = models.get(request.path_params["name"])
    return _editor(request, login, form_of_model(model))


@studio_page
async def save_model(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    models = service(request, ModelService)
    previous = models.get(request.path_params["name"])
    form = parse_form(posted, fixed_name=previous.name)
    form.kind = previous.type  # fixed after creation, like the name
    if _rearranged(posted, form):
        return _editor(request, login, form)
    # counting values reads every item: only when a stored field goes
    kept = {r.was for r in form.live_rows() if r.was}
    counted = models.field_usage(previous.name) if set(previous.by_name) - kept else None
    usage = counted.fields if counted else {}
    total = counted.total if counted else None  # else counted by the page once loaded
    for row in form.rows:
        row.usage = usage.get(row.was) if counted else None
    drop = _drop_confirmed(form, previous.by_name, usage)
    if drop is None:
        return _editor(request, login, form, status=400, total=total)
    try:
        body, renames = definition_of(form)
        model, renames, _ = parse_change(previous.name, {**body, "renames": renames})
        await models.asave(model, renames, drop, login.identity)
    except FieldError as exc:
        form.error = str(exc)
        return _editor(request, login, form, status=400, total=total)
    except BadRequest as exc:
        _place(form, exc)
        return _editor(request, login, form, status=400, total=total)
    return redirect_flash(request, f"/studio/models/{previous.name}", f"Saved model {previous.name}.")


def _drop_confirmed(form: ModelForm, stored: dict[str, Any], usage: dict[str, int]) -> bool | None:
    """Whether the save deletes values of removed fields: True when every
    removed field that items hold values of is confirmed; None (with the
    messages placed) when one is not, so nothing is saved."""
    kept = {r.was for r in form.live_rows() if r.was}
    confirmed = {r.was for r in form.rows if r.remove and r.drop}
    missing = False
    for name in stored:
        if name in kept or not usage.get(name):
            continue
        if name in confirmed:
            continue
        missing = True
        count = usage[name]
        message = (f"{count} {'item holds' if count == 1 else 'items hold'} a value of {name}: "
                   f"tick \u201calso delete the stored values\u201d to remove the field with its values, "
                   "or keep the field")
        row = next((r for r in form.rows if r.was == name), None)
        if row is not None:
            row.error = message
        else:
            form.error = message
    if missing:
        form.error = form.error or "Removing a field that items hold values of needs a confirmation."
        return None
    return bool(confirmed)


def _rearranged(posted: Form, form: ModelForm) -> bool:
    """Without JavaScript the form's own buttons add a field or move one
    (`action=add`, `add:<set key>`, `up:<key>`, `down:<key>`): the page
    comes back changed, nothing is saved."""
    action = posted.get("action")
    if action == "add":
        form.rows.append(FieldRow(new_key(), type=_type(posted.get("add-type"))))
        return True
    verb, _, key = action.partition(":")
    if verb == "add":
        parent = next((r for r in form.all_rows() if r.key == key), None)
        if parent is not None:
            parent.fields.append(FieldRow(new_key(), type=_type(posted.get(f"{key}-add-type"))))
        return True
    if verb in ("up", "down"):
        for rows in [form.rows, *(r.fields for r in form.all_rows())]:
            at = next((i for i, r in enumerate(rows) if r.key == key), None)
            if at is not None:
                to = at - 1 if verb == "up" else at + 1
                if 0 <= to < len(rows):
                    rows[at], rows[to] = rows[to], rows[at]
        return True
    return False


def _type(value: str) -> str:
    return value if value in types.names() else "text"


def _place(form: ModelForm, exc: BadRequest) -> None:
    """Put the service's message next to what it is about: the name, the
    kind, a field (by its position or its name), else at the top."""
    names = exc.extra.get("fields") or []
    where = names[0] if len(names) == 1 else None
    if where in ("name", "label", "preview"):
        form.errors[where] = exc.message
        return
    if where == "type":
        form.errors["kind"] = exc.message
        return
    live = form.live_rows()
    position = ROW_ERROR.match(exc.message)
    if where == "fields" and position and int(position.group(1)) < len(live):
        live[int(position.group(1))].error = exc.message
        return
    if where == "fields" and exc.message.startswith("Duplicate field names: "):
        dupes = set(exc.message.removeprefix("Duplicate field names: ").split(", "))
        for dupe in live:
            if dupe.name in dupes:
                dupe.error = exc.message
        return
    row = next((r for r in live if where and where in (r.name, r.was)), None)
    if row is not None:
        row.error = exc.message
    else:
        form.error = exc.message


def _editor(request: Request, login: Login, form: ModelForm, new: bool = False, status: int = 200,
            total: int | None = None) -> Response:
    """The builder's page; `total` (items) None: counted after it loads."""
    models = service(request, ModelService).all()
    return render(request, login, "content/model_edit.html", status, form=form, new=new, total=total,
                  **_row_context(models), kinds=KINDS)


@studio_page
async def field_usage(request: Request, login: Login) -> Response:
    """How many items hold a value of each field (htmx, when the editor has
    loaded: counting reads every item, so the page does not wait for it).
    Out-of-band parts for the fields named in `fields` and the total."""
    need(login, MANAGE)
    models = service(request, ModelService)
    model = models.get(request.path_params["name"])
    usage = models.field_usage(model.name)
    counts = []
    for pair in request.query_params.get("fields", "").split(","):
        key, _, name = pair.partition(":")
        if ROW_KEY.match(key) and name in usage.fields:
            counts.append((key, name, usage.fields[name]))
    return render(request, login, "content/model_usage.html", counts=counts, total=usage.total)


def _row_context(models: list[Any]) -> dict[str, Any]:
    return {"types": types.all_types(),
            "type_facts": {t.name: {"plain": t.plain, "example": t.example} for t in types.all_types()}, "languages": CODE_LANGUAGES, "max_depth": MAX_DEPTH,
            "link_targets": [(m.name, m.label) for m in models], "human_label": human_label}


@studio_page
async def field_row(request: Request, login: Login) -> Response:
    """A new field row (htmx: "Add field"), in list `list` at `depth`."""
    need(login, MANAGE)
    list_name = request.query_params.get("list", "field")
    if not LIST_NAME.match(list_name):
        raise BadRequest("list must be field or <key>-fields")
    try:
        depth = min(int(request.query_params.get("depth", "0")), 8)
    except ValueError:
        depth = 0
    kind = _type(request.query_params.get("type") or request.query_params.get("add-type", "")
                 or _add_type(request, list_name))
    row = FieldRow(new_key(), type=kind)
    models = service(request, ModelService).all()
    return render(request, login, "content/model_row.html", row=row, list_name=list_name, depth=depth, fresh=True, **_row_context(models))


def _add_type(request: Request, list_name: str) -> str:
    """The type chosen in the list's own "add" menu (htmx sends it by name)."""
    parent = list_name.removesuffix("-fields") if list_name != "field" else ""
    return request.query_params.get(f"{parent}-add-type", "") if parent else ""


@studio_page
async def delete_model_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    models = service(request, ModelService)
    model = models.get(request.path_params["name"])
    return render(request, login, "content/model_delete.html", model=model, total=_items(request, login, model.name))


@studio_page
async def delete_model(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    models = service(request, ModelService)
    model = models.get(request.path_params["name"])
    total = _items(request, login, model.name)
    if posted.get("confirm") != model.name:
        return render(request, login, "content/model_delete.html", 400, model=model, total=total,
                      error="Confirm on this page to delete the model.")
    await models.adelete(model.name, login.identity)
    items = f" and its {total:,} {'item' if total == 1 else 'items'}" if total else ""
    return redirect_flash(request, "/studio/models", f"Deleted model {model.name}{items}.")


def _items(request: Request, login: Login, name: str) -> int:
    """How many items a model holds, drafts included: the content service's
    count when the role may read them all, else a count of every item."""
    if login.can(f"content/{name}/read") and login.can(f"content/{name}/update"):
        return service(request, ContentService).count(name, ReadOptions(drafts=True), login.identity)
    return service(request, ModelService).field_usage(name).total


routes = [
    route("/studio/models", get=models_list, cors=False),
    route("/studio/models/new", get=new_model_page, post=create_model, cors=False),
    route("/studio/models/{name}", get=edit_model_page, post=save_model, cors=False),
    route("/studio/models/{name}/delete", get=delete_model_page, post=delete_model, cors=False),
    route("/studio/fragments/model-field", get=field_row, cors=False),
    route("/studio/fragments/model-usage/{name}", get=field_usage, cors=False),
]
