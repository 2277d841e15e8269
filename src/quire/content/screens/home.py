"""The studio's content home: every model the user may read, by kind, with
how many items each holds (drafts included), the way to a new item and the
notices of other modules; and what content gives the dashboard (models,
recent items) and the search box (models, items)."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.models import Model, ModelService
from quire.content.screens.lists import search_found
from quire.content.screens.titles import title_of
from quire.content.service import ContentService, ReadOptions
from quire.errors import BadRequest
from quire.http import quire_of, service
from quire.modules import FindSection, Found, Panel, Services
from quire.ui.screens import render, studio_page
from quire.ui.web import Login

RECENT = 10  # items on the dashboard, the last changed first
PER_KIND = 8  # items found per model by the search box
MODELS_SEARCHED = 30  # models whose items the search box looks in, the first by name


@studio_page
async def content_home(request: Request, login: Login) -> Response:
    models = [m for m in service(request, ModelService).all() if login.can(f"content/{m.name}/read")]
    content = service(request, ContentService)
    counts = {m.name: content.count(m.name, ReadOptions(drafts=login.can(f"content/{m.name}/update")),
                                    login.identity) for m in models}
    return render(request, login, "content/home.html", models=models, counts=counts,
                  notices=quire_of(request).notices(login.identity))


def _readable(services: Services, identity: Any) -> list[Model]:
    return [m for m in services.get(ModelService).all() if identity.can(f"content/{m.name}/read")]


def panels(services: Services, identity: Any) -> list[Panel]:
    """The dashboard's models and recently changed items."""
    models = _readable(services, identity)
    content = services.get(ContentService)
    recent: list[dict[str, Any]] = []
    for model in models:
        if model.type == "singleton":
            continue
        page = content.list_page(model.name, ReadOptions(sort={"_modified": -1}, limit=5), identity)
        for row in page.rows:
            item = orjson.loads(row)
            recent.append({"model": model.name, "_id": item.get("_id"), "_modified": item.get("_modified", 0),
                           "title": _recent_title(item)})
    recent.sort(key=lambda r: r["_modified"], reverse=True)
    return [Panel("content/dashboard.html", {"models": models, "recent": recent[:RECENT]}, order=10)]


def _recent_title(item: dict[str, Any]) -> str:
    for key in ("title", "name", "label", "slug"):
        if isinstance(item.get(key), str) and item[key]:
            return str(item[key])
    return str(item.get("_id", ""))


def find(services: Services, identity: Any, words: str) -> list[FindSection]:
    """Models whose name or label holds the words, and items the words find
    (by the model's search index, else its title-like fields)."""
    readable = sorted(_readable(services, identity), key=lambda m: m.name)
    lowered = words.lower()
    models = [Found(m.label or m.name, f"/studio/content/{m.name}", code=m.name, note=m.type)
              for m in readable if lowered in m.name.lower() or lowered in (m.label or "").lower()]
    items = [hit for m in readable[:MODELS_SEARCHED] if m.type != "singleton"
             for hit in _items(services, identity, m, words)]
    return [FindSection("Models", models, order=10), FindSection("Items", items, order=20)]


STATES = {0: " · draft", -1: " · archived"}


def _items(services: Services, identity: Any, model: Model, words: str) -> list[Found]:
    drafts = identity.can(f"content/{model.name}/update")
    try:
        found = search_found(services, model, words)
        if found.ranked == []:
            return []
        # in stored order: a text filter stops at the first matches instead of reading every item
        opts = ReadOptions(filter=found.condition, limit=PER_KIND, drafts=drafts)
        rows = services.get(ContentService).list_page(model.name, opts, identity).rows
    except BadRequest:  # words the index's query language refuses: nothing found there
        return []
    docs = [orjson.loads(row) for row in rows]
    if found.ranked is not None:
        rank = {item_id: n for n, item_id in enumerate(found.ranked)}
        docs.sort(key=lambda d: rank.get(d["_id"], len(rank)))
    label = model.label or model.name
    return [Found(title_of(model, d), f"/studio/content/{model.name}/item/{d['_id']}",
                  note=f"in {label}{STATES.get(d.get('_state'), '')}") for d in docs]


routes = [route("/studio/content", get=content_home, cors=False)]
