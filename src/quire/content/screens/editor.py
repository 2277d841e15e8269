"""The item editor: a new item, an item, a singleton's one item, and
deleting. Every read and write goes through ContentService, as the API's
routes do (content/routes.py); the form carries the revision it started
from, so that a save after someone else's is refused (409) and shown as a
conflict, never stored over theirs."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content import types
from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService
from quire.content.screens import drafts, formdata, pickers, widgets
from quire.content.screens.titles import title_of
from quire.content.service import ContentService, ReadOptions
from quire.errors import BadRequest, Conflict, NotFound, ValidationError
from quire.http import service
from quire.ui import zones
from quire.ui.screens import Form, checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

FIELD_TYPES_SCRIPT = "/studio/static/field-types.js"  # the widgets' browser code (FieldType.script)

STATES = [(1, "Published"), (0, "Draft"), (-1, "Archived")]


def editor_url(model: Model, item_id: str | None) -> str:
    if model.type == "singleton" or item_id is None:
        return f"/studio/content/{model.name}/item"
    return f"/studio/content/{model.name}/item/{item_id}"


def _read(request: Request, login: Login, model: Model, item_id: str | None) -> tuple[dict[str, Any], int]:
    """The item as stored (every state for who may update), and its revision."""
    drafts = login.can(f"content/{model.name}/update")
    return service(request, ContentService).item_with_rev(model.name, item_id, ReadOptions(drafts=drafts),
                                                          login.identity)


def _load(request: Request, login: Login, model: Model, item_id: str | None
          ) -> tuple[dict[str, Any], int, dict[str, Any]]:
    """What the editor shows: the draft of a published item when it has
    one, else the item; its revision; and the live item."""
    live, rev = _read(request, login, model, item_id)
    if live.get("_state") == 1 and rev and login.can(f"content/{model.name}/update"):
        item, draft_rev, is_draft = service(request, ContentService).item_or_draft(
            model.name, item_id, ReadOptions(), login.identity)
        if is_draft:
            return item, draft_rev, live
    return live, rev, live


def _new_item(model: Model) -> dict[str, Any]:
    return {f["name"]: f.get("default") for f in model.fields}


def _model(request: Request, login: Login) -> Model:
    name = request.path_params["model"]
    need(login, f"content/{name}/read")
    return service(request, ModelService).get(name)


def _screen(request: Request, login: Login, model: Model, item: dict[str, Any], *, item_id: str | None,
            rev: int | None, base: str | None = None, status: int = 200, errors: dict[str, str] | None = None,
            top: list[str] | None = None, conflict: dict[str, Any] | None = None,
            live: dict[str, Any] | None = None, intent: str = "draft") -> Response:
    locales = service(request, LocaleService).list()
    codes = [loc["i18n"] for loc in locales[1:]]
    is_new = item_id is None and model.type != "singleton" or (model.type == "singleton" and not rev)
    may_save = login.can(f"content/{model.name}/{'create' if is_new else 'update'}")
    refs = pickers.references(request, login, model, item)
    live = live if live is not None else item
    lifecycle = drafts.lifecycle(request, login, model, item, live, is_new)
    response = render(
        request, login, "content/editor.html", status,
        model=model, item=item, item_id=item_id, rev=rev, is_new=is_new, may_save=may_save,
        may_publish=login.can(f"content/{model.name}/publish"),
        may_delete=item_id is not None and model.type != "singleton" and login.can(f"content/{model.name}/delete"),
        may_history=not is_new and bool(item.get("_id")) and login.can(f"content/{model.name}/update"),
        locales=locales, codes=codes, groups=widgets.groups(model.fields), errors=errors or {}, top=top or [],
        conflict=conflict, base=base if base is not None else widgets.digests(model.fields, codes, item),
        refs=refs, w=widgets, states=STATES, title=title_of(model, item) if not is_new else "",
        action=editor_url(model, item_id), may_upload=login.can("assets/upload"),
        unsaved=status != 200, parent=request.query_params.get("parent", "") if model.type == "tree" else "",
        live=live, life=lifecycle, intent="publish" if intent == "publish" else "draft",
        # who else has it open (editor.js asks): a saved item only; events older than the page are old news
        presence=None if is_new else f"content/{model.name}" + ("" if model.type == "singleton" else f"/{item_id}"),
        now=int(time.time()),
    )
    return drafts.allow_frames(response, lifecycle)


@studio_page
async def new_item(request: Request, login: Login) -> Response:
    """A new item; a singleton's one item (there is no other)."""
    model = _model(request, login)
    if model.type == "singleton":
        item, rev, live = _load(request, login, model, None)
        return _screen(request, login, model, item, item_id=None, rev=rev, live=live)
    need(login, f"content/{model.name}/create")
    return _screen(request, login, model, _new_item(model), item_id=None, rev=None)


@studio_page
async def edit_item(request: Request, login: Login) -> Response:
    model = _model(request, login)
    if model.type == "singleton":
        raise NotFound("A singleton has one item: open it from its model")
    item, rev, live = _load(request, login, model, request.path_params["id"])
    return _screen(request, login, model, item, item_id=item["_id"], rev=rev, live=live)


@studio_page
async def save_new(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model = _model(request, login)
    return await _save(request, login, model, None, form)


@studio_page
async def save_existing(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model = _model(request, login)
    if model.type == "singleton":
        raise NotFound("A singleton has one item: open it from its model")
    return await _save(request, login, model, request.path_params["id"], form)


async def _save(request: Request, login: Login, model: Model, item_id: str | None, form: Form) -> Response:
    content = service(request, ContentService)
    codes = service(request, LocaleService).codes()
    if model.type != "singleton":  # a singleton's need (create or update) is the service's to say
        need(login, f"content/{model.name}/{'create' if item_id is None else 'update'}")
    data, problems = formdata.item_data(model.fields, formdata.tree_of(form), codes)
    rev = _rev(form)
    may_publish = login.can(f"content/{model.name}/publish")
    if "_state" in form and may_publish:
        data["_state"] = _state(form.get("_state"))
    base = form.get("_base")
    try:
        live = None if item_id is None and model.type != "singleton" else _read(request, login, model, item_id)[0]
    except NotFound:
        return _gone(request, login, model, data)
    if may_publish:
        problems.update(drafts.schedule_data(form, live or {}, data, zones.zone_name(request, login.user["_id"])))
    # a published item's changes are kept as its draft until published
    as_draft = live is not None and live.get("_state") == 1 and bool(live.get("_id"))
    intent = form.get("intent")

    def shown() -> dict[str, Any]:
        """What the form showed: the stored item (or its draft) with what
        was typed (only read again when the form comes back)."""
        stored = _new_item(model) if item_id is None and model.type != "singleton" else \
            _load(request, login, model, item_id)[0]
        return {**stored, **data}

    if problems:
        return _screen(request, login, model, shown(), item_id=item_id, rev=rev, base=base, status=400,
                       errors=problems, top=["Nothing was saved: correct the fields marked below."])
    if item_id is not None:
        data["_id"] = item_id
    if rev is not None:
        data["_rev"] = rev
    if model.type == "tree" and item_id is None and form.get("_pid"):
        data["_pid"] = form.get("_pid")  # a new child, from the tree's "add below"
    try:
        if as_draft:
            data.pop("_state", None)  # a draft has no state: it is published or discarded
            saved = await content.save_draft(model.name, data, login.identity)
            if intent == "publish" and may_publish:
                try:
                    saved = await content.publish(model.name, item_id, login.identity, expected=saved["_rev"])
                except (Conflict, ValidationError, BadRequest) as exc:
                    # the draft is kept; the editor says why it is not live
                    item, draft_rev, live_now = _load(request, login, model, item_id)
                    return _screen(request, login, model, item, item_id=item_id, rev=draft_rev, status=409,
                                   errors=getattr(exc, "errors", None) or {}, live=live_now,
                                   top=[f"The draft was saved but not published. {exc.message}"])
                return redirect_flash(request, editor_url(model, saved["_id"]), "Published.")
            return redirect_flash(request, editor_url(model, saved["_id"]), "Draft saved: not published yet.")
        saved = await content.save(model.name, data, login.identity)
    except Conflict:
        return _conflict(request, login, model, item_id, data, base, intent)
    except NotFound:
        if item_id is None:
            raise
        return _gone(request, login, model, data)
    except ValidationError as exc:
        return _screen(request, login, model, shown(), item_id=item_id, rev=rev, base=base, status=400,
                       errors=exc.errors, top=[f"Nothing was saved. {exc.message}"])
    except BadRequest as exc:
        fields = exc.extra.get("fields") or []
        return _screen(request, login, model, shown(), item_id=item_id, rev=rev, base=base, status=400,
                       errors={f: exc.message for f in fields}, top=[f"Nothing was saved. {exc.message}"])
    message = "Created." if item_id is None and model.type != "singleton" else "Saved."
    return redirect_flash(request, editor_url(model, saved["_id"]), message)


def _rev(form: Form) -> int | None:
    text = form.get("_rev").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or len(text) > 18:
        raise BadRequest("The form's revision is not a number; reload the page")
    return int(text)


def _state(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise BadRequest("_state must be 1 (published), 0 (draft) or -1 (archived)") from None
    return value


def _conflict(request: Request, login: Login, model: Model, item_id: str | None, mine: dict[str, Any],
              base: str, intent: str = "draft") -> Response:
    """The item moved on since the form was opened: which fields the others
    changed (their value now, and what this form holds), to reload or to
    overwrite on purpose (the form again, now naming the current revision)."""
    try:
        current, current_rev, _ = _load(request, login, model, item_id)
    except NotFound:
        return _gone(request, login, model, mine)
    codes = service(request, LocaleService).codes()
    started = widgets.parse_digests(base)
    changed = []
    for field in model.fields:
        for key in widgets.keys_of(field, codes):
            if started.get(key) != widgets.digest(current.get(key)):
                label = field.get("label") or field["name"]
                if key != field["name"]:
                    label += f" ({key.rpartition('_')[2]})"
                changed.append({"key": key, "label": label, "theirs": widgets.short(current.get(key)),
                                "mine": widgets.short(mine.get(key)),
                                "same": widgets.digest(current.get(key)) == widgets.digest(mine.get(key))})
    conflict = {"rev": current_rev, "changed": changed, "by": current.get("_mby"), "modified": current.get("_modified")}
    shown = {**current, **mine}
    return _screen(request, login, model, shown, item_id=item_id, rev=current_rev,
                   base=widgets.digests(model.fields, codes, current), status=409, conflict=conflict,
                   intent=intent)


def _gone(request: Request, login: Login, model: Model, mine: dict[str, Any]) -> Response:
    """The item was deleted while this form was open: what was typed, as a
    new item to create again (or to leave)."""
    typed = {**_new_item(model), **{k: v for k, v in mine.items() if not k.startswith("_")}}
    return _screen(request, login, model, typed, item_id=None, rev=None, status=409,
                   top=["Nothing was saved: someone deleted this item meanwhile. "
                        "Create it again from what you typed, or leave."])


@studio_page
async def delete_item(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    model = _model(request, login)
    need(login, f"content/{model.name}/delete")
    await service(request, ContentService).delete(model.name, request.path_params["id"], login.identity)
    return redirect_flash(request, f"/studio/content/{model.name}", "Deleted.")


async def field_types_script(request: Request) -> Response:
    """The browser code of the field types' widgets (`FieldType.script`),
    for every page that shows one: the editor, a module's screen. The
    registry is fixed once the app is built; a changed set of types (a
    package added) is a new ETag."""
    body = types.scripts().encode()
    tag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
    headers = {"etag": tag, "cache-control": "public, max-age=3600", "x-content-type-options": "nosniff"}
    if request.headers.get("if-none-match") == tag:
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="text/javascript", headers=headers)


routes = [
    route(FIELD_TYPES_SCRIPT, get=field_types_script, cors=False),
    *drafts.routes,
    route("/studio/content/{model}/item", get=new_item, post=save_new, cors=False),
    route("/studio/content/{model}/item/{id}", get=edit_item, post=save_existing, cors=False),
    route("/studio/content/{model}/item/{id}/delete", post=delete_item, cors=False),
    *pickers.routes,
]
