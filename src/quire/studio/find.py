"""The search box of the admin's bar: one query, answered with the models,
items, pages and assets it names, each a link to its screen. Items are found
as a model's list finds them (its search index when one covers it, else its
title-like fields); only what the user may read is searched."""

from __future__ import annotations

import re
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire.admin.web import Login, redirect
from quire.asgi import route
from quire.assets.service import AssetService
from quire.content.models import Model, ModelService
from quire.content.service import ContentService, ReadOptions
from quire.errors import BadRequest
from quire.http import service
from quire.pages.service import PagesService
from quire.studio.lists import search_found
from quire.studio.titles import title_of
from quire.studio.web import render, studio_page

MAX_WORDS = 200  # characters of the box that count
PER_KIND = 8  # results shown per model, and of pages and assets
MODELS_SEARCHED = 30  # models whose items are searched, the first by name


@studio_page
async def find(request: Request, login: Login) -> Response:
    q = " ".join(request.query_params.get("q", "").split())[:MAX_WORDS]
    if not q:
        return render(request, login, "studio/find.html", q=q, models=[], items=[], pages=[], assets=[])
    readable = sorted((m for m in service(request, ModelService).all() if login.can(f"content/{m.name}/read")),
                      key=lambda m: m.name)
    lowered = q.lower()
    models = [m for m in readable if lowered in m.name.lower() or lowered in (m.label or "").lower()]
    items = [hit for m in readable[:MODELS_SEARCHED] if m.type != "singleton" for hit in _items(request, login, m, q)]
    pages = _pages(request, login, q)
    assets = _assets(request, login, q)
    only = _only_target(models, items, pages, assets)
    if only is not None:  # one thing found: the box jumps to it
        return redirect(only)
    return render(request, login, "studio/find.html", q=q, find_q=q, models=models, items=items, pages=pages,
                  assets=assets)


def _items(request: Request, login: Login, model: Model, q: str) -> list[dict[str, Any]]:
    drafts = login.can(f"content/{model.name}/update")
    try:
        found = search_found(request, model, q)
        if found.ranked == []:
            return []
        # in stored order: a text filter stops at the first matches instead of reading every item
        opts = ReadOptions(filter=found.condition, limit=PER_KIND, drafts=drafts)
        rows = service(request, ContentService).list_page(model.name, opts, login.identity).rows
    except BadRequest:  # words the index's query language refuses: nothing found there
        return []
    docs = [orjson.loads(row) for row in rows]
    if found.ranked is not None:
        rank = {item_id: n for n, item_id in enumerate(found.ranked)}
        docs.sort(key=lambda d: rank.get(d["_id"], len(rank)))
    return [{"model": model, "id": d["_id"], "title": title_of(model, d), "state": d.get("_state")} for d in docs]


def _pages(request: Request, login: Login, q: str) -> list[dict[str, Any]]:
    if not login.can("pages/manage"):
        return []
    try:
        pages = service(request, PagesService)
    except LookupError:  # the pages module is not in the app
        return []
    return [{"id": p["_id"], "title": p.get("title") or p.get("slug") or p["_id"], "route": p.get("_r"),
             "state": p.get("_state")} for p in pages.titled(q, PER_KIND, login.identity)]


def _assets(request: Request, login: Login, q: str) -> list[dict[str, Any]]:
    if not login.can("assets/read"):
        return []
    pattern = {"$regex": re.escape(q), "$options": "i"}
    spec = {"$or": [{"title": pattern}, {"path": pattern}, {"tags": pattern}]}
    docs, _ = service(request, AssetService).find(spec, {"_created": -1}, PER_KIND, None, None)
    return [{"id": d["_id"], "title": d.get("title") or d.get("path", ""), "mime": d.get("mime", ""),
             "image": str(d.get("mime", "")).startswith("image/")} for d in docs]


def _only_target(models: list[Model], items: list[dict[str, Any]], pages: list[dict[str, Any]],
                 assets: list[dict[str, Any]]) -> str | None:
    """The address of the one thing found, if exactly one was."""
    targets = ([f"/studio/content/{m.name}" for m in models]
               + [f"/studio/content/{i['model'].name}/item/{i['id']}" for i in items]
               + [f"/studio/pages/{p['id']}" for p in pages] + [f"/studio/assets/{a['id']}" for a in assets])
    return targets[0] if len(targets) == 1 else None


routes = [route("/studio/find", get=find, cors=False)]
