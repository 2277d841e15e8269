"""Pages, menus, the pages' settings, translations and search in the
schema, in the style of Cockpit's `content` field: arguments as REST's
parameters, answers as REST's JSON (`JsonType`), through the same
services. A role sees the fields of the modules it may read."""

from __future__ import annotations

from typing import Any

import orjson
from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLField,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLResolveInfo,
    GraphQLString,
)

from quire.auth.service import Identity
from quire.content.reads import ReadOptions
from quire.errors import BadRequest
from quire.gql.cockpit import Context, json_arg, personal
from quire.gql.scalars import JSON_TYPE
from quire.l10n.service import L10nService
from quire.pages.menus import MenuService
from quire.pages.service import PageOptions, PagesService
from quire.searchmod.service import SearchService


def _locale(value: Any) -> str | None:
    return value or None


def _page_options(args: dict[str, Any], max_items: int) -> PageOptions:
    limit = args.get("limit")
    if limit is not None and not 0 <= limit <= max_items:
        raise BadRequest(f"<limit> must be from 0 to {max_items:,} ([graphql] max_items)")
    return PageOptions(locale=_locale(args.get("locale")), populate=args.get("populate") or 0,
                       fields=json_arg(args.get("fields"), "fields"), filter=json_arg(args.get("filter"), "filter"),
                       sort=json_arg(args.get("sort"), "sort"), limit=limit if limit else max_items,
                       skip=args.get("skip"))


def pages(source: Any, info: GraphQLResolveInfo, **args: Any) -> list[Any]:
    context: Context = info.context
    docs, _ = context.services.get(PagesService).find(_page_options(args, context.max_items), context.identity)
    return personal(context, docs)


def page(source: Any, info: GraphQLResolveInfo, route: str | None = None, id: str | None = None,
         **args: Any) -> Any:
    context: Context = info.context
    service = context.services.get(PagesService)
    opts = _page_options(args, context.max_items)
    if (route is None) == (id is None):
        raise BadRequest("Give the page's route or its id")
    found = service.by_route(route, opts, context.identity) if route is not None else \
        service.by_id(id or "", opts, context.identity)
    return personal(context, found)


def menus(source: Any, info: GraphQLResolveInfo, locale: str | None = None) -> Any:
    context: Context = info.context
    return orjson.loads(context.services.get(MenuService).all_json(_locale(locale), context.identity))


def menu(source: Any, info: GraphQLResolveInfo, name: str, locale: str | None = None) -> Any:
    context: Context = info.context
    return orjson.loads(context.services.get(MenuService).get_json(name, _locale(locale), context.identity))


def page_settings(source: Any, info: GraphQLResolveInfo, locale: str | None = None) -> Any:
    context: Context = info.context
    return personal(context, context.services.get(MenuService).settings(_locale(locale), context.identity))


def page_routes(source: Any, info: GraphQLResolveInfo, locale: str | None = None) -> Any:
    context: Context = info.context
    return orjson.loads(context.services.get(PagesService).routes_json(_locale(locale), context.identity))


def translations(source: Any, info: GraphQLResolveInfo, project: str, locale: str | None = None,
                 nested: bool = False) -> Any:
    context: Context = info.context
    service = context.services.get(L10nService)
    if locale:
        return service.one_locale(project, locale, context.identity, nested)
    return service.full(project, context.identity, nested)


def search(source: Any, info: GraphQLResolveInfo, index: str, q: str, **args: Any) -> Any:
    context: Context = info.context
    params = {"q": q, "limit": args.get("limit"), "offset": args.get("offset"), "fields": args.get("fields"),
              "locale": args.get("locale"), "filter": json_arg(args.get("filter"), "filter"),
              "highlight": bool(args.get("highlight"))}
    return context.services.get(SearchService).search(index, params, context.identity)


def preview_item(source: Any, info: GraphQLResolveInfo, model: str, token: str, id: str | None = None,
                 locale: str | None = None, populate: int = 0) -> Any:
    """The item a preview link shows (its draft, or the item in whatever
    state), for whoever holds the link's token, as REST's `?preview=`."""
    context: Context = info.context
    content = context.content
    identity = content.preview_identity(model, id, token, context.identity)
    opts = ReadOptions(locale=_locale(locale), populate=populate or 0)
    item, _, is_draft = content.item_or_draft(model, id, opts, identity, links_as=context.identity)
    return personal(context, {**item, "_draft": is_draft})


def query_fields(identity: Identity) -> dict[str, GraphQLField]:
    out: dict[str, GraphQLField] = {
        # open to every role: the token is the permission, as on REST
        "previewItem": GraphQLField(
            JSON_TYPE, {"model": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                        "token": GraphQLArgument(GraphQLNonNull(GraphQLString)), "id": GraphQLArgument(GraphQLString),
                        "locale": GraphQLArgument(GraphQLString),
                        "populate": GraphQLArgument(GraphQLInt, default_value=0)}, preview_item,
            description="The item a preview link shows, as GET /api/content/item/{model}/{id}?preview=<token>"),
    }
    locale = GraphQLArgument(GraphQLString)
    if identity.can("pages/read"):
        listing = {"limit": GraphQLArgument(GraphQLInt), "skip": GraphQLArgument(GraphQLInt),
                   "sort": GraphQLArgument(JSON_TYPE), "filter": GraphQLArgument(JSON_TYPE),
                   "fields": GraphQLArgument(JSON_TYPE), "locale": locale,
                   "populate": GraphQLArgument(GraphQLInt, default_value=0)}
        out["pages"] = GraphQLField(GraphQLList(JSON_TYPE), listing, pages,
                                    description="Published pages, as GET /api/pages/pages")
        out["page"] = GraphQLField(
            JSON_TYPE, {"route": GraphQLArgument(GraphQLString), "id": GraphQLArgument(GraphQLString),
                        "locale": locale, "populate": GraphQLArgument(GraphQLInt, default_value=0),
                        "fields": GraphQLArgument(JSON_TYPE)}, page,
            description="A page by its route (in the locale) or id, as GET /api/pages/page")
        out["pageRoutes"] = GraphQLField(JSON_TYPE, {"locale": locale}, page_routes,
                                         description="Routes per locale, as GET /api/pages/routes")
    # menus and the settings are public to every reader of the site, as on REST
    out["menus"] = GraphQLField(JSON_TYPE, {"locale": locale}, menus, description="As GET /api/pages/menus")
    out["menu"] = GraphQLField(JSON_TYPE, {"name": GraphQLArgument(GraphQLNonNull(GraphQLString)), "locale": locale},
                               menu, description="As GET /api/pages/menu/{name}")
    out["pageSettings"] = GraphQLField(JSON_TYPE, {"locale": locale}, page_settings,
                                       description="As GET /api/pages/settings")
    if identity.can("l10n/read"):
        out["translations"] = GraphQLField(
            JSON_TYPE, {"project": GraphQLArgument(GraphQLNonNull(GraphQLString)), "locale": locale,
                        "nested": GraphQLArgument(GraphQLBoolean, default_value=False)}, translations,
            description="A translation project, or one locale of it, as GET /api/l10n/project/{name}")
    if identity.can("searchmod/read"):
        out["search"] = GraphQLField(
            JSON_TYPE, {"index": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                        "q": GraphQLArgument(GraphQLNonNull(GraphQLString)), "limit": GraphQLArgument(GraphQLInt),
                        "offset": GraphQLArgument(GraphQLInt), "fields": GraphQLArgument(GraphQLString),
                        "locale": locale, "filter": GraphQLArgument(JSON_TYPE),
                        "highlight": GraphQLArgument(GraphQLBoolean, default_value=False)}, search,
            description="A search of an index, as GET /api/searchmod/search/{index}")
    return out
