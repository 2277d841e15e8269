"""HTTP routes of the pages API (`/api/pages/...`)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.content.preview import DEFAULT_SECONDS
from quire.errors import BadRequest
from quire.http import (
    int_param,
    json_param,
    json_response,
    quire_of,
    raw_json_response,
    read_data,
    read_json,
    service,
)
from quire.pages import sitemap
from quire.pages.menus import MenuService
from quire.pages.service import PageOptions, PagesService
from quire.persona.request import persona_of


def _locale(request: Request) -> str | None:
    return request.query_params.get("locale") or None


def _options(request: Request, *, listing: bool = False) -> PageOptions:
    opts = PageOptions(
        locale=_locale(request),
        populate=int_param(request, "populate") or 0,
        fields=json_param(request, "fields"),
    )
    if listing:
        opts.filter = json_param(request, "filter")
        opts.sort = json_param(request, "sort")
        opts.limit = int_param(request, "limit")
        opts.skip = int_param(request, "skip")
    return opts


async def list_pages(request: Request) -> Response:
    identity = identify(request)
    docs, total = service(request, PagesService).find(_options(request, listing=True), identity)
    persona = persona_of(request)
    if persona is not None:
        docs = persona.apply(docs)
    return json_response(docs if total is None else {"data": docs, "meta": {"total": total}})


def _page(request: Request, page: dict[str, Any]) -> Response:
    persona = persona_of(request)
    return json_response(page if persona is None else persona.apply(page))


async def page_by_route(request: Request) -> Response:
    identity = identify(request)
    opts = _options(request)
    path = request.query_params.get("route")
    if path is None:
        raise BadRequest("<route> parameter is missing")
    return _page(request, service(request, PagesService).by_route(path, opts, identity))


async def page_by_id(request: Request) -> Response:
    identity = identify(request)
    opts = _options(request)
    preview = request.query_params.get("preview") if request.scope["query_string"] else None
    page = service(request, PagesService).by_id(request.path_params["id"], opts, identity, preview=preview)
    response = _page(request, page)
    if preview is not None:
        response.headers["cache-control"] = "no-store"
    return response


async def preview_page(request: Request) -> Response:
    """A preview token for a page, and `[pages] preview_url` filled in."""
    identity = identify(request)
    body: dict[str, Any] = {}
    if await request.body():
        quire = quire_of(request)
        sent = await read_json(request, quire.max_body, quire.max_depth)
        if not isinstance(sent, dict):
            raise BadRequest("The body must be a JSON object (or empty)")
        body = sent
    link = service(request, PagesService).preview_link(request.path_params["id"], identity,
                                                       body.get("seconds", DEFAULT_SECONDS))
    return json_response(link, headers={"Cache-Control": "no-store"})


async def save_page(request: Request) -> Response:
    identity = identify(request)
    data = await read_data(request)
    return json_response(await service(request, PagesService).save(data, identity))


async def delete_page(request: Request) -> Response:
    identity = identify(request)
    await service(request, PagesService).delete(request.path_params["id"], identity)
    return json_response({"success": True})


async def list_menus(request: Request) -> Response:
    identity = identify(request)
    return raw_json_response(service(request, MenuService).all_json(_locale(request), identity))


async def get_menu(request: Request) -> Response:
    identity = identify(request)
    return raw_json_response(service(request, MenuService).get_json(request.path_params["name"], _locale(request), identity))


async def save_menu(request: Request) -> Response:
    identity = identify(request)
    data = await read_data(request)
    return json_response(await service(request, MenuService).save(data, identity))


async def delete_menu(request: Request) -> Response:
    identity = identify(request)
    await service(request, MenuService).delete(request.path_params["name"], identity)
    return json_response({"success": True})


async def get_settings(request: Request) -> Response:
    identity = identify(request)
    return json_response(service(request, MenuService).settings(_locale(request), identity))


async def save_settings(request: Request) -> Response:
    identity = identify(request)
    data = await read_data(request)
    return json_response(await service(request, MenuService).save_settings(data, identity))


async def get_routes(request: Request) -> Response:
    identity = identify(request)
    return raw_json_response(service(request, PagesService).routes_json(_locale(request), identity))


async def get_sitemap(request: Request) -> Response:
    identity = identify(request)
    return raw_json_response(service(request, PagesService).sitemap_json(identity))


async def get_sitemap_xml(request: Request) -> Response:
    identity = identify(request)
    quire = quire_of(request)
    config = quire.settings.pages
    site = config.site_url or quire.public_url or str(request.base_url)

    def render() -> bytes:
        return sitemap.render(service(request, PagesService).sitemap(identity), site, config.default_language,
                              config.locale_prefix, config.max_sitemap_urls)

    body = service(request, PagesService).answers.fetch(("sitemap.xml", site, identity.role, identity.permissions), render)
    return Response(body, media_type="application/xml; charset=utf-8")


routes = [
    route("/api/pages/menus", get=list_menus),
    route("/api/pages/menu", post=save_menu),
    route("/api/pages/menu/{name}", get=get_menu, delete=delete_menu),
    route("/api/pages/pages", get=list_pages),
    route("/api/pages/page", get=page_by_route, post=save_page),
    route("/api/pages/page/{id}", get=page_by_id, delete=delete_page),
    route("/api/pages/preview/{id}", post=preview_page),
    route("/api/pages/routes", get=get_routes),
    route("/api/pages/settings", get=get_settings, post=save_settings),
    route("/api/pages/sitemap", get=get_sitemap),
    route("/api/pages/sitemap.xml", get=get_sitemap_xml),
]
