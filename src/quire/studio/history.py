"""An item's history in the studio: its revisions (who, when, what), one
revision side by side (the fields it changed, before and after, or that
version against the item as it is now), and restoring it. Reads and the
restore go through RevisionService, as the API's routes do
(revisions/routes.py)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.admin.web import Login
from quire.asgi import route
from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService
from quire.content.service import ContentService, ReadOptions
from quire.errors import NotFound
from quire.http import service
from quire.ids import is_id
from quire.revisions.service import RevisionService, check_number
from quire.studio import widgets
from quire.studio.editor import editor_url
from quire.studio.titles import title_of
from quire.studio.web import checked_form, need, redirect_flash, render, studio_page

PAGE = 50
# written by every save (or set once when created): kept in a revision, left
# out of what the studio shows as changed
STAMPS = {"_rev", "_modified", "_mby", "_id", "_created", "_cby", "_model"}
SYSTEM_LABELS = {"_state": "State", "_pid": "Parent", "_o": "Position"}
ACTIONS = {"create": "Created", "update": "Changed", "delete": "Deleted", "restore": "Restored"}


def history_url(model: Model, item_id: str) -> str:
    return f"/studio/content/{model.name}/item/{item_id}/history"


def _target(request: Request, login: Login) -> tuple[Model, str]:
    """The model and item id of the page; the history needs the update
    permission (it shows drafts and deleted versions), as in the API."""
    name, item_id = request.path_params["model"], request.path_params["id"]
    need(login, f"content/{name}/update")
    model = service(request, ModelService).get(name)
    if not is_id(item_id):
        raise NotFound("Item not found")
    return model, item_id


def _current(request: Request, login: Login, model: Model, item_id: str) -> dict[str, Any] | None:
    try:
        item, _ = service(request, ContentService).item_with_rev(
            model.name, item_id if model.type != "singleton" else None, ReadOptions(drafts=True), login.identity)
    except NotFound:
        return None
    return item if item.get("_id") == item_id else None


def who_text(who: dict[str, Any]) -> str:
    kind, name = who.get("kind"), who.get("name") or who.get("id") or ""
    return {"user": f"{name}", "key": f"API key {name}", "hook": f"hook {name}",
            "system": f"command line ({who.get('id')})", "public": "a visitor (no key)"}.get(str(kind), str(name))


def _labels(model: Model, codes: list[str]) -> dict[str, str]:
    labels = dict(SYSTEM_LABELS)
    for field in model.fields:
        label = field.get("label") or field["name"]
        labels[field["name"]] = label
        for code in codes:
            labels[f"{field['name']}_{code}"] = f"{label} ({code})"
    return labels


def _rows(before: dict[str, Any] | None, after: dict[str, Any] | None, labels: dict[str, str]) -> list[dict[str, Any]]:
    """The top-level fields that differ, with both values as text."""
    before, after = before or {}, after or {}
    rows = []
    for key in dict.fromkeys([*before, *after]):
        if key in STAMPS or widgets.digest(before.get(key)) == widgets.digest(after.get(key)):
            continue
        rows.append({"key": key, "label": labels.get(key, key), "before": _text(before, key),
                     "after": _text(after, key)})
    return rows


def _text(doc: dict[str, Any], key: str) -> str:
    if key not in doc:
        return ""
    if key == "_state":
        return {1: "Published", 0: "Draft", -1: "Archived"}.get(doc[key], str(doc[key]))
    return widgets.short(doc[key], 4000)


@studio_page
async def history(request: Request, login: Login) -> Response:
    model, item_id = _target(request, login)
    skip = check_number(request.query_params.get("skip", "0") or "0", "skip")
    revisions = service(request, RevisionService)
    page, total = revisions.history(f"content/{model.name}", item_id, PAGE, skip)
    current = _current(request, login, model, item_id)
    if not total and current is None:
        raise NotFound("Item not found")
    labels = _labels(model, service(request, LocaleService).codes())
    for entry in page:
        entry["who_text"] = who_text(entry["who"])
        entry["action_text"] = ACTIONS.get(entry["action"], entry["action"])
        entry["field_labels"] = [labels.get(f, f) for f in entry["fields"] if f not in STAMPS]
    title = title_of(model, current) if current else f"Deleted item {item_id}"
    return render(request, login, "studio/history.html", model=model, item_id=item_id, current=current,
                  title=title, page=page, total=total, skip=skip, size=PAGE,
                  editor=editor_url(model, item_id) if current else None, base=history_url(model, item_id))


@studio_page
async def revision(request: Request, login: Login) -> Response:
    model, item_id = _target(request, login)
    n = check_number(request.path_params["n"])
    revisions = service(request, RevisionService)
    shown = revisions.get(f"content/{model.name}", item_id, n)
    current = _current(request, login, model, item_id)
    labels = _labels(model, service(request, LocaleService).codes())
    against = request.query_params.get("against") == "current"
    if against:
        rows = _rows(shown["doc"], current, labels)
    else:
        rows = _rows(shown["previous"], shown["doc"], labels)
    may_restore = shown["doc"] is not None and login.can(
        f"content/{model.name}/{'update' if current is not None else 'create'}")
    title = title_of(model, current or shown["doc"] or shown["previous"] or {})
    return render(request, login, "studio/history_revision.html", model=model, item_id=item_id, rev=shown,
                  who=who_text(shown["who"]), action=ACTIONS.get(shown["action"], shown["action"]), rows=rows,
                  against=against, current=current, may_restore=may_restore, title=title,
                  base=history_url(model, item_id), editor=editor_url(model, item_id) if current else None)


@studio_page
async def restore(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    model, item_id = _target(request, login)
    n = check_number(request.path_params["n"])
    saved = await service(request, RevisionService).restore_item(model.name, item_id, n, login.identity)
    return redirect_flash(request, editor_url(model, saved["_id"]), f"Restored the version of revision {n}.")


routes = [
    route("/studio/content/{model}/item/{id}/history", get=history, cors=False),
    route("/studio/content/{model}/item/{id}/history/{n}", get=revision, cors=False),
    route("/studio/content/{model}/item/{id}/history/{n}/restore", post=restore, cors=False),
]
