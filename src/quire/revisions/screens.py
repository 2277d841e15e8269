"""The history of an item or a page in the studio: its revisions (who,
when, what), one revision side by side (the fields it changed, before and
after, or that version against the document as it is now), and restoring
it. Reads and the restore go through RevisionService, as the API's routes
do (revisions/routes.py); a `Subject` says which document a page is about."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import Route, route
from quire.assets.service import AssetService
from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService
from quire.content.screens import widgets
from quire.content.screens.editor import STATES, editor_url
from quire.content.screens.pickers import link_titles
from quire.content.screens.titles import title_of
from quire.content.service import ContentService, ReadOptions
from quire.errors import NotFound
from quire.http import service
from quire.ids import is_id
from quire.pages.menus import MenuService
from quire.pages.service import MANAGE, PagesService
from quire.revisions import shown
from quire.revisions.service import PAGES, SETTINGS, RevisionService, check_number
from quire.ui.screens import checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

PAGE = 50
# written by every save (or set once when created): kept in a revision, left
# out of what the studio shows as changed
STAMPS = {"_rev", "_modified", "_mby", "_id", "_created", "_cby", "_model"}
SYSTEM_LABELS = {"_state": "State", "_pid": "Parent", "_o": "Position"}
ACTIONS = {"create": "Created", "update": "Changed", "delete": "Deleted", "restore": "Restored"}


@dataclass
class Subject:
    """The document a history page is about."""

    resource: str
    item_id: str
    title: str
    current: dict[str, Any] | None  # as it is now; None once deleted
    crumbs: list[tuple[str, str]]  # (label, link) before the document's own
    editor: str | None  # where the document is edited, while it exists
    base: str  # the history's address
    labels: dict[str, str]
    may_restore: bool
    restore: Callable[[int], Awaitable[dict[str, Any]]]
    # a field's type by key (a per-locale key too), for showing its values
    # as an editor reads them (shown.py); pages' and settings' have none
    kinds: dict[str, str] = field(default_factory=dict)


def history_url(model: Model, item_id: str) -> str:
    return f"/studio/content/{model.name}/item/{item_id}/history"


def content_subject(request: Request, login: Login) -> Subject:
    """An item; its history needs the update permission (it shows drafts
    and deleted versions), as in the API."""
    name, item_id = request.path_params["model"], request.path_params["id"]
    need(login, f"content/{name}/update")
    model = service(request, ModelService).get(name)
    if not is_id(item_id):
        raise NotFound("Item not found")
    try:
        found, _ = service(request, ContentService).item_with_rev(
            model.name, item_id if model.type != "singleton" else None, ReadOptions(drafts=True), login.identity)
        current = found if found.get("_id") == item_id else None
    except NotFound:
        current = None
    revisions = service(request, RevisionService)
    return Subject(
        f"content/{model.name}", item_id, title_of(model, current) if current else f"Deleted item {item_id}",
        current, [("Content", "/studio/content"), (model.label or model.name, f"/studio/content/{model.name}")],
        editor_url(model, item_id) if current else None, history_url(model, item_id),
        _labels(model, service(request, LocaleService).codes()),
        login.can(f"content/{model.name}/{'update' if current is not None else 'create'}"),
        lambda n: revisions.restore_item(model.name, item_id, n, login.identity),
        _kinds(model, service(request, LocaleService).codes()))


def page_subject(request: Request, login: Login) -> Subject:
    page_id = request.path_params["id"]
    need(login, MANAGE)
    if not is_id(page_id):
        raise NotFound("Page not found")
    current = service(request, PagesService).collection().get(page_id)
    revisions = service(request, RevisionService)
    labels = {**SYSTEM_LABELS, "title": "Title", "slug": "Slug", "type": "Type", "data": "Data", "seo": "SEO",
              "layout": "Layout", "model": "Model", "link": "Link"}
    return Subject(PAGES, page_id, str(current.get("title") or page_id) if current else f"Deleted page {page_id}",
                   current, [("Pages", "/studio/pages")], f"/studio/pages/{page_id}" if current else None,
                   f"/studio/pages/{page_id}/history", labels, True,
                   lambda n: revisions.restore_page(page_id, n, login.identity))


def settings_subject(request: Request, login: Login) -> Subject:
    need(login, MANAGE)
    # the settings are never missing, only not saved yet: their history is then empty, not a 404
    current = service(request, MenuService).settings_coll.get("settings") or {}
    revisions = service(request, RevisionService)
    labels = {"seo": "SEO", "images": "Images", "scripts": "Scripts", "preview": "Preview", "meta": "Meta"}
    return Subject(SETTINGS, "settings", "Page settings", current, [("Pages", "/studio/pages")],
                   "/studio/pages/settings", "/studio/pages/settings/history", labels, True,
                   lambda n: revisions.restore_settings(n, login.identity))


def who_text(who: dict[str, Any]) -> str:
    kind, name = who.get("kind"), who.get("name") or who.get("id") or ""
    return {"user": f"{name}", "key": f"API key {name}", "hook": f"hook {name}",
            "system": f"command line ({who.get('id')})", "public": "a visitor (no key)"}.get(str(kind), str(name))


def _labels(model: Model, codes: list[str]) -> dict[str, str]:
    labels = dict(SYSTEM_LABELS)
    for f in model.fields:
        label = f.get("label") or f["name"]
        labels[f["name"]] = label
        for code in codes:
            labels[f"{f['name']}_{code}"] = f"{label} ({code})"
    return labels


def _kinds(model: Model, codes: list[str]) -> dict[str, str]:
    kinds = {}
    for f in model.fields:
        kind = {"contentItemLink": "link", "asset": "asset"}.get(f["type"], f["type"])
        kinds[f["name"]] = kind
        for code in codes if f.get("i18n") else ():
            kinds[f"{f['name']}_{code}"] = kind
    return kinds


def _rows(request: Request, login: Login, before: dict[str, Any] | None, after: dict[str, Any] | None,
          subject: Subject) -> list[dict[str, Any]]:
    """The top-level fields that differ, each with its two cells."""
    before, after = before or {}, after or {}
    keys = [k for k in dict.fromkeys([*before, *after]) if k not in STAMPS and not k.startswith("_r")
            and widgets.digest(before.get(k)) != widgets.digest(after.get(k))]
    refs = _refs(request, login, [(subject.kinds.get(k), v) for k in keys for v in (before.get(k), after.get(k))])
    rows = []
    for key in keys:
        def plain(value: Any, key: str = key) -> str:
            return dict(STATES).get(value, str(value)) if key == "_state" else shown.plain_text(value)
        cells = shown.side_by_side(subject.kinds.get(key), before.get(key), after.get(key), key not in before,
                                   key not in after, refs, plain)
        rows.append({"key": key, "label": subject.labels.get(key, key), "before": cells[0], "after": cells[1]})
    return rows


def _refs(request: Request, login: Login, values: list[tuple[str | None, Any]]) -> shown.Refs:
    """The titles of the items and the assets the changed values name, as
    far as the reader may see them."""
    links: dict[str, list[str]] = {}
    for model, item_id in shown.refs_in([v for kind, v in values if kind == "link"], "link"):
        links.setdefault(model, []).append(item_id)
    refs = shown.Refs(item_url=lambda model, item_id: f"/studio/content/{model}/item/{item_id}")
    if links:
        refs.items = link_titles(request, login, links)
    asset_ids = [i for _, i in shown.refs_in([v for kind, v in values if kind == "asset"], "asset")]
    if asset_ids and login.can("assets/read"):
        stored = service(request, AssetService).assets
        refs.assets = {i: doc for i in dict.fromkeys(asset_ids) if (doc := stored.get(i)) is not None}
    return refs


def _history_page(request: Request, login: Login, subject: Subject) -> Response:
    skip = check_number(request.query_params.get("skip", "0") or "0", "skip")
    page, total = service(request, RevisionService).history(subject.resource, subject.item_id, PAGE, skip)
    if not total and subject.current is None:
        raise NotFound("Not found")
    for entry in page:
        entry["who_text"] = who_text(entry["who"])
        entry["action_text"] = ACTIONS.get(entry["action"], entry["action"])
        entry["field_labels"] = [subject.labels.get(f, f) for f in entry["fields"]
                                 if f not in STAMPS and not f.startswith("_r")]
    return render(request, login, "revisions/history.html", s=subject, page=page, total=total, skip=skip, size=PAGE)


def _revision_page(request: Request, login: Login, subject: Subject) -> Response:
    n = check_number(request.path_params["n"])
    revision = service(request, RevisionService).get(subject.resource, subject.item_id, n)
    against = request.query_params.get("against") == "current"
    rows = _rows(request, login, revision["doc"], subject.current, subject) if against else \
        _rows(request, login, revision["previous"], revision["doc"], subject)
    return render(request, login, "revisions/history_revision.html", s=subject, rev=revision,
                  who=who_text(revision["who"]), action=ACTIONS.get(revision["action"], revision["action"]),
                  rows=rows, against=against, may_restore=revision["doc"] is not None and subject.may_restore)


def screens(base: str, subject_of: Callable[[Request, Login], Subject],
            editor_of: Callable[[Request, dict[str, Any]], str]) -> list[Route]:
    """The history, a revision and its restore for one kind of document
    under `base`; `editor_of(request, saved)` is where a restore lands."""

    @studio_page
    async def history(request: Request, login: Login) -> Response:
        return _history_page(request, login, subject_of(request, login))

    @studio_page
    async def revision(request: Request, login: Login) -> Response:
        return _revision_page(request, login, subject_of(request, login))

    @studio_page
    async def restore(request: Request, login: Login) -> Response:
        await checked_form(request, login)
        subject = subject_of(request, login)
        n = check_number(request.path_params["n"])
        saved = await subject.restore(n)
        return redirect_flash(request, editor_of(request, saved), f"Restored the version of revision {n}.")

    return [route(base, get=history, cors=False), route(base + "/{n}", get=revision, cors=False),
            route(base + "/{n}/restore", post=restore, cors=False)]


def _item_editor(request: Request, saved: dict[str, Any]) -> str:
    return editor_url(service(request, ModelService).get(request.path_params["model"]), saved["_id"])


routes = [
    *screens("/studio/content/{model}/item/{id}/history", content_subject, _item_editor),
    # the settings' before pages/{id}: "settings" is no page id
    *screens("/studio/pages/settings/history", settings_subject, lambda _, __: "/studio/pages/settings"),
    *screens("/studio/pages/{id}/history", page_subject, lambda _, saved: f"/studio/pages/{saved['_id']}"),
]
