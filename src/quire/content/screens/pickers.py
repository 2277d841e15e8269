"""The editor's pickers (htmx fragments under /studio/pick/ and
/studio/assets/): items of a link field's target model found by their
title-like fields, assets found by title, an upload in place (through
AssetService.upload, sniffed and capped as the API's upload is) and the
thumbnails they show. Also the names of what an item links to, for the
editor's widgets."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import anyio.to_thread
import orjson
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.assets.service import AssetService, Upload
from quire.content.asset_refs import AssetRefs
from quire.content.models import Model, ModelService
from quire.content.screens.titles import title_fields, title_of
from quire.content.service import ContentService, ReadOptions
from quire.errors import ApiError, BadRequest, Forbidden, NotFound
from quire.http import json_response, quire_of, service
from quire.modules import Found, Services, Usage
from quire.ui.screens import checked_form, multipart_form, need, render, studio_page
from quire.ui.web import Login, redirect, same_origin, same_token

FOUND = 20  # rows a picker shows; the search narrows them
_ID = re.compile(r"^[0-9a-f]{24}$")


def _search(fields: list[str], q: str) -> dict[str, Any] | None:
    q = q.strip()[:100]
    if not q:
        return None
    pattern = {"$regex": re.escape(q), "$options": "i"}
    if _ID.match(q):
        return {"_id": q}
    return {"$or": [{name: pattern} for name in fields]} if fields else {"_id": q}


@studio_page
async def pick_item(request: Request, login: Login) -> Response:
    """Items of `model` (a link field's target) whose title-like fields
    hold the search text; newest first."""
    target = service(request, ModelService).get(request.path_params["model"])
    need(login, f"content/{target.name}/read")
    q = request.query_params.get("q", "")
    opts = ReadOptions(filter=_search(title_fields(target), q), sort={"_created": -1}, limit=FOUND,
                       drafts=login.can(f"content/{target.name}/update"))
    rows = service(request, ContentService).list_page(target.name, opts, login.identity).rows
    items = [orjson.loads(r) for r in rows]
    found = [{"_id": i["_id"], "title": title_of(target, i), "state": i.get("_state", 1)} for i in items]
    return render(request, login, "content/widgets/pick_items.html", found=found, q=q, model=target,
                  target=request.query_params.get("for", ""))


@studio_page
async def pick_asset(request: Request, login: Login) -> Response:
    need(login, "assets/read")
    q = request.query_params.get("q", "").strip()[:100]
    spec = {"title": {"$regex": re.escape(q), "$options": "i"}} if q else None
    docs, _ = service(request, AssetService).find(spec, {"_created": -1}, FOUND, None, None)
    return render(request, login, "content/widgets/pick_assets.html", assets=docs, q=q,
                  target=request.query_params.get("for", ""))


@studio_page
async def thumb(request: Request, login: Login) -> Response:
    """A small picture of an asset (made once by the assets' image path)."""
    need(login, "assets/read")
    assets = service(request, AssetService)
    asset = assets.get(request.path_params["id"])
    if asset.get("type") != "image":
        raise NotFound("Not an image")
    opts, _ = assets.parse_image_options({"w": "160", "h": "160", "m": "bestFit"}, asset,
                                         request.headers.get("accept", ""))
    answer = await assets.image(asset, opts, "", login.identity)
    return redirect(answer.url)


@studio_page
async def upload(request: Request, login: Login) -> Response:
    """One file uploaded from a widget (multipart, the token in the
    X-CSRF-Token header): the new asset as JSON, or {"error": ...} with the
    API's message and status (a refused type, too large...)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        await checked_form(request, login)  # a form post: its token is checked first, as for every write
        raise BadRequest("Send the file as multipart/form-data")
    if not same_origin(request) or not same_token(login.session["csrf"], request.headers.get("x-csrf-token")):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
    try:
        need(login, "assets/upload")
        assets = service(request, AssetService)
        one = await _one_file(request, assets.settings.max_request_bytes)
        # the library holds this very file: the editor offers it instead of
        # a second copy (`?again=1`: the user chose to upload it anyway)
        same = None if request.query_params.get("again") == "1" else \
            await anyio.to_thread.run_sync(assets.same_file, one.data)
        if same is not None:
            return json_response({"duplicate": {"_id": same["_id"], "title": same["title"],
                                                "image": same["type"] == "image", "mime": same["mime"]}})
        created = await assets.upload([one], {}, login.identity)
    except ApiError as exc:
        return json_response({"error": exc.message}, status=exc.status)
    doc = created[0]
    return json_response({"_id": doc["_id"], "title": doc["title"], "image": doc["type"] == "image",
                          "mime": doc["mime"]})


async def _one_file(request: Request, limit: int) -> Upload:
    form = await multipart_form(request, limit, 1)
    try:
        part = form.get("file")
        if not isinstance(part, UploadFile):
            raise BadRequest("No file uploaded")
        return Upload(part.filename or "file", await part.read())
    finally:
        await form.close()


# -- what an item refers to ---------------------------------------------------

Visit = Callable[[dict[str, Any], Any], None]


def _walk(fields: list[dict[str, Any]], container: dict[str, Any], codes: list[str], visit: Visit) -> None:
    for field in fields:
        keys = [field["name"]] + ([f"{field['name']}_{c}" for c in codes] if field.get("i18n") else [])
        for key in keys:
            value = container.get(key)
            values = value if field.get("multiple") and isinstance(value, list) else [value]
            for one in values:
                if one is None:
                    continue
                if field["type"] == "set" and isinstance(one, dict):
                    subs = [f for f in (field.get("opts") or {}).get("fields", []) if isinstance(f, dict)]
                    _walk(subs, one, [], visit)
                else:
                    visit(field, one)


def references(request: Request, login: Login, model: Model, item: dict[str, Any]) -> dict[str, Any]:
    """The assets (id -> asset) and linked items (id -> title) an item's
    fields refer to, for the widgets to show by name."""
    asset_ids: list[str] = []
    links: dict[str, list[str]] = {}

    def visit(field: dict[str, Any], value: Any) -> None:
        ref = value.get("_id") if isinstance(value, dict) else value
        if not isinstance(ref, str) or not _ID.match(ref):
            return
        if field["type"] == "asset":
            asset_ids.append(ref)
        elif field["type"] == "contentItemLink":
            links.setdefault((field.get("opts") or {}).get("link") or "", []).append(ref)

    codes = [c for c in service(request, ContentService).locales.codes()]
    _walk(model.fields, item, codes, visit)
    found_assets = service(request, AssetService).get_many(asset_ids) if asset_ids and login.can("assets/read") else {}
    return {"assets": found_assets, "links": link_titles(request, login, links)}


def column_links(request: Request, login: Login, model: Model, columns: list[str],
                 items: list[dict[str, Any]]) -> dict[str, str]:
    """The titles of the items that a list's shown link columns point to
    (id -> title), one read per linked model for the whole page."""
    links: dict[str, list[str]] = {}
    for name in columns:
        field = model.by_name.get(name)
        if field is None or field["type"] != "contentItemLink":
            continue
        target = (field.get("opts") or {}).get("link") or ""
        for item in items:
            value = item.get(name)
            for one in value if isinstance(value, list) else [value]:
                ref = one.get("_id") if isinstance(one, dict) else None
                if isinstance(ref, str) and _ID.match(ref):
                    links.setdefault(target, []).append(ref)
    return link_titles(request, login, links) if links else {}


def link_titles(request: Request, login: Login, links: dict[str, list[str]]) -> dict[str, str]:
    """id -> title of linked items (per target model), as far as the user
    may read them; drafts only for who may update the target."""
    return titles_of(quire_of(request), login.identity, links)


def titles_of(services: Services, identity: Any, links: dict[str, list[str]]) -> dict[str, str]:
    """`link_titles` for a caller without a request."""
    titles: dict[str, str] = {}
    for name, ids in links.items():
        target = services.get(ModelService).find(name)
        if target is None or not identity.can(f"content/{name}/read"):
            continue
        opts = ReadOptions(filter={"_id": {"$in": ids}}, limit=len(ids),
                           drafts=identity.can(f"content/{name}/update"))
        try:
            rows = services.get(ContentService).list_page(name, opts, identity).rows
        except ApiError:
            continue
        for row in rows:
            doc = orjson.loads(row)
            titles[doc["_id"]] = title_of(target, doc)
    return titles


routes = [
    route("/studio/pick/{model}", get=pick_item, cors=False),
    route("/studio/assets/pick", get=pick_asset, cors=False),
    route("/studio/assets/thumb/{id}", get=thumb, cors=False),
    route("/studio/assets/upload", post=upload, cors=False),
]


def asset_usage(services: Services, identity: Any, kind: str, asset_id: str, limit: int) -> Usage | None:
    """The items holding an asset (`Module.usage`), linked by title as far
    as the user may read them, and the exact count."""
    if kind != "asset":
        return None
    pairs, total = services.get(AssetRefs).used_by(asset_id, limit)
    by_model: dict[str, list[str]] = {}
    for model, item in pairs:
        by_model.setdefault(model, []).append(item)
    titles = titles_of(services, identity, by_model)
    models = services.get(ModelService)
    found = []
    for model_name, item in pairs:
        if item in titles:
            target = models.find(model_name)
            label = (target.label or target.name) if target else model_name
            found.append(Found(titles[item], f"/studio/content/{model_name}/item/{item}", note=label))
    return Usage(found, total, len(pairs) - len(found))
