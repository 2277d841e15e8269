"""Search indexes (`searchmod/read` to see them and try queries,
`searchmod/manage` to create, change, rebuild and delete them).

The form holds what the API's index definition holds (label, model,
fields, weights, filter, locales); a save goes through
`SearchService.put`, so its validation messages are shown next to their
fields. A rebuild runs in the background; its progress is kept in the
store's marks by the search service, so the page (polling with htmx)
shows it after a reload and in every worker."""

from __future__ import annotations

import asyncio
import html
import logging
import math
import re
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.errors import BadRequest, Forbidden, NotFound, ValidationError
from quire.http import service
from quire.searchmod.service import NAME, SearchService
from quire.ui.screens import Form, checked_form, json_of, need, redirect_flash, render, studio_page
from quire.ui.web import Login

READ = "searchmod/read"
MANAGE = "searchmod/manage"
PAGE = "/studio/search"
STALE = 30  # seconds a build's progress may stand still before it counts as stopped
MAX_QUERY = 500
MAX_TEXT = 20_000
_running: set[asyncio.Task[Any]] = set()  # rebuilds of this process (kept referenced while they run)
_MARK = re.compile(r"(</?mark>)")
log = logging.getLogger("quire.studio")


def _may_read(login: Login) -> None:
    if not (login.can(READ) or login.can(MANAGE)):
        raise Forbidden(f"Your role does not allow this ({READ}).")


@dataclass
class IndexForm:
    name: str = ""
    label: str = ""
    model: str = ""
    fields: str = ""
    weights: str = ""
    filter: str = ""
    locales: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)


def form_of(index: dict[str, Any]) -> IndexForm:
    return IndexForm(name=index["name"], label=index.get("label") or "", model=index["model"],
                     fields=", ".join(index["fields"]),
                     weights="\n".join(f"{k} = {v}" for k, v in (index.get("weights") or {}).items()),
                     filter=orjson.dumps(index["filter"], option=orjson.OPT_INDENT_2).decode() if index.get("filter") else "",
                     locales=list(index.get("locales") or []))


def parse(posted: Form, name: str) -> tuple[IndexForm, dict[str, Any]]:
    """The form as typed and the body for the API (problems of the form's
    own syntax, as a weight that is not a number, placed on the form)."""
    form = IndexForm(name=name, label=posted.get("label").strip()[:MAX_TEXT], model=posted.get("model")[:200],
                     fields=posted.get("fields")[:MAX_TEXT], weights=posted.get("weights")[:MAX_TEXT],
                     filter=posted.get("filter")[:MAX_TEXT], locales=posted.getlist("locales")[:100])
    body: dict[str, Any] = {"label": form.label or name, "model": form.model,
                            "fields": [f.strip() for f in form.fields.split(",") if f.strip()],
                            "locales": form.locales}
    weights: dict[str, Any] = {}
    for n, line in enumerate(form.weights.splitlines(), 1):
        if not line.strip():
            continue
        key, eq, value = line.partition("=")
        try:
            number = float(value) if eq else None
        except ValueError:
            number = None
        # nan, inf and 1e999 are no weight (and int() of them would fail below)
        weights[key.strip()] = number if number is not None and math.isfinite(number) else None
        if weights[key.strip()] is None:
            form.errors["weights"] = f"line {n}: write field = number, like title = 3"
    body["weights"] = {k: (int(v) if v is not None and v == int(v) else v) for k, v in weights.items()}
    if form.filter.strip():
        try:
            body["filter"] = json_of(form.filter)
        except ValueError as exc:
            form.errors["filter"] = f"is not JSON: {exc}"
    return form, body


def _choices(request: Request) -> dict[str, Any]:
    models = [m for m in service(request, ModelService).all() if m.type != "singleton"]
    return {"models": sorted(models, key=lambda m: m.name),
            "codes": service(request, LocaleService).codes()}


def _progress(search: SearchService, name: str) -> dict[str, Any] | None:
    found = search.progress(name)
    if found is None:
        return None
    total = max(found["total"], 1)
    return {**found, "percent": min(100, int(100 * found["done"] / total)),
            "stalled": time.time() - found["beat"] > STALE}


@studio_page
async def indexes_page(request: Request, login: Login) -> Response:
    _may_read(login)
    search = service(request, SearchService)
    indexes = search.listed(login.identity)
    for index in indexes:
        index["progress"] = _progress(search, index["name"])
    return render(request, login, "searchmod/settings_search.html", indexes=indexes)


@studio_page
async def new_index_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return render(request, login, "searchmod/settings_search_edit.html", form=IndexForm(), new=True, **_choices(request))


@studio_page
async def create_index(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    name = posted.get("name").strip()[:100]
    form, body = parse(posted, name)
    search = service(request, SearchService)
    if not NAME.match(name):
        form.errors["name"] = "Index names are letters, digits, - and _, starting with a letter (up to 64)"
    elif any(i["name"].lower() == name.lower() for i in search.listed(login.identity)):
        form.errors["name"] = f"Index {name} exists already; pick another name"
    return await _save(request, login, form, body, new=True)


async def _save(request: Request, login: Login, form: IndexForm, body: dict[str, Any], new: bool) -> Response:
    search = service(request, SearchService)
    if not form.errors:
        try:
            await search.put(form.name, body, login.identity)
        except ValidationError as exc:
            form.errors.update({k: f"{k} {v}" for k, v in exc.errors.items()})
        except BadRequest as exc:
            named = (exc.extra.get("fields") or ["top"])[0]
            form.errors[named if named in ("name", "filter") else "top"] = exc.message
    if form.errors:
        return render(request, login, "searchmod/settings_search_edit.html", 400, form=form, new=new, **_choices(request))
    return redirect_flash(request, f"{PAGE}/{form.name}", f"Saved and built index {form.name}.")


def _name(request: Request) -> str:
    name = request.path_params["name"]
    if not NAME.match(name):
        raise NotFound(f"Index '{name[:64]}' not found")
    return str(name)


@studio_page
async def index_page(request: Request, login: Login) -> Response:
    _may_read(login)
    search = service(request, SearchService)
    name = _name(request)
    index = next((i for i in search.listed(login.identity) if i["name"] == name), None)
    if index is None:
        raise NotFound(f"Index '{name}' not found")
    q = request.query_params.get("q", "")[:MAX_QUERY]
    locale = request.query_params.get("locale", "")[:40]
    hits, total, error = [], 0, None
    if q.strip() and login.can(READ):
        try:
            found = search.search(name, {"q": q, "highlight": True, "limit": 20, "locale": locale or None},
                                  login.identity)
            hits = [{**h, "marked": {f: marked(v) for f, v in (h.get("_formatted") or {}).items()},
                     "title": _plain(h.get("_formatted") or {}) or h["_id"]} for h in found["hits"]]
            total = found["total"]
        except BadRequest as exc:
            error = exc.message
    form = form_of(index) if login.can(MANAGE) else None
    return render(request, login, "searchmod/settings_search_index.html", index=index, form=form, q=q, locale=locale,
                  hits=hits, total=total, error=error, progress=_progress(search, name), **_choices(request))


def _plain(formatted: dict[str, Any]) -> str:
    """The first field's text without its marks (the hit's link text)."""
    first = next(iter(formatted.values()), "")
    return html.unescape(_MARK.sub("", str(first or "")))[:200]


def marked(text: Any) -> Markup:
    """The service's highlighted text, every character escaped except its
    <mark> and </mark> tags (the text between them is unescaped once and
    escaped again, so nothing else it holds can become markup)."""
    out = []
    for part in _MARK.split(str(text)):
        out.append(Markup(part) if part in ("<mark>", "</mark>") else escape(html.unescape(part)))
    return Markup("").join(out)


@studio_page
async def save_index(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    name = _name(request)
    service(request, SearchService).get(name, login.identity)  # 404 when it is gone
    form, body = parse(posted, name)
    return await _save(request, login, form, body, new=False)


@studio_page
async def rebuild_index(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    name = _name(request)
    search = service(request, SearchService)
    search.get(name, login.identity)
    running = _progress(search, name)
    # a build that is moving (in any worker) is not started again: a second
    # click would only redo the work; a stopped one (no progress for STALE
    # seconds: its worker died) is started afresh
    if running is None or running["stalled"]:
        task = asyncio.get_running_loop().create_task(search.rebuild(name, login.identity))
        _running.add(task)
        task.add_done_callback(_finished)
    if request.headers.get("hx-request"):
        await asyncio.sleep(0)
        return render(request, login, "searchmod/settings_search_progress.html", name=name,
                      progress=_progress(search, name) or {"done": 0, "total": 0, "percent": 0, "stalled": False})
    return redirect_flash(request, f"{PAGE}/{name}", f"Rebuilding index {name}…")


def _finished(task: asyncio.Task[Any]) -> None:
    _running.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("search: a rebuild started from the studio failed", exc_info=task.exception())


@studio_page
async def progress_fragment(request: Request, login: Login) -> Response:
    _may_read(login)
    name = _name(request)
    return render(request, login, "searchmod/settings_search_progress.html", name=name,
                  progress=_progress(service(request, SearchService), name))


@studio_page
async def delete_index(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    name = _name(request)
    await service(request, SearchService).delete(name, login.identity)
    return redirect_flash(request, PAGE, f"Deleted index {name}.")


routes = [
    route(PAGE, get=indexes_page, cors=False),
    route(PAGE + "/new", get=new_index_page, post=create_index, cors=False),
    route(PAGE + "/{name}", get=index_page, post=save_index, cors=False),
    route(PAGE + "/{name}/rebuild", post=rebuild_index, cors=False),
    route(PAGE + "/{name}/progress", get=progress_fragment, cors=False),
    route(PAGE + "/{name}/delete", post=delete_index, cors=False),
]
