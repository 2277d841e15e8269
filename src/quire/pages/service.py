"""Pages: a tree of pages (`_pid`, `_o`) with a route per locale.

Pages live in the collection `pages/pages`. Reads see published pages only
(a page's own `_state`). A write loads the routing fields of every page,
applies the change, recomputes the routes of the changed subtree and checks
them against all other pages (drafts too: a draft would collide once
published) before anything is stored, all in one transaction.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from quire.auth.permissions import content as content_perm
from quire.auth.service import Identity
from quire.bundleparts import BundlePart, Checked, check_list
from quire.cache import Cache
from quire.config import PagesSettings
from quire.content.fields import is_empty
from quire.content.locales import rewrite_locale_keys
from quire.content.preview import fill
from quire.content.service import ContentService, ReadOptions
from quire.errors import (
    ApiError,
    BadRequest,
    Conflict,
    NotFound,
    PreconditionFailed,
    ValidationError,
)
from quire.events import Events, refusals_as_412
from quire.ids import is_id, new_id
from quire.pages import routing
from quire.pages.routing import DEFAULT
from quire.pages.validate import LOCALIZED, check_page, check_page_shape
from quire.store import Collection, Store
from quire.store import match as reference
from quire.store.query import And, Cond, Projection, parse_fields, parse_filter, parse_sort
from quire.trees import MISSING, parent_problem

PAGES = "pages/pages"
READ = "pages/read"
MANAGE = "pages/manage"
PREVIEW = "pages"  # what a page's preview token names
ANSWERS_KEPT = 64  # routes, sitemaps and menus kept per generation
PUBLISHED = Cond(("_state",), "eq", 1)
# Where a localized object (data, seo) lacks a key, the default's value shows.
_LOCALIZED_READ = (*LOCALIZED, "_r")
ROUTING_FIELDS = ("_pid", "_o", "_state", "type", "slug", "_r", "_modified")
_KEPT = ("_id", "_pid", "_o", "_state", "_created", "_modified", "_cby", "_mby")


@dataclass
class PageOptions:
    locale: str | None = None
    populate: int = 0
    fields: Any = None
    filter: Any = None
    sort: Any = None
    limit: int | None = None
    skip: int | None = None


def lastmod(timestamp: Any) -> str:
    """W3C datetime, as sitemaps write it."""
    when = datetime.fromtimestamp(int(timestamp or 0), UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def localize_page(doc: dict[str, Any], codes: list[str], locale: str | None) -> dict[str, Any]:
    """`locale`'s values of title, slug, data, seo and the route, falling back
    to the default's; objects (data, seo) fall back key by key, so a
    translation holds only the keys that differ."""
    if not locale:
        return doc
    out = dict(doc)
    for name in _LOCALIZED_READ:
        value = doc.get(f"{name}_{locale}") if locale in codes else None
        if isinstance(value, dict) and isinstance(doc.get(name), dict):
            out[name] = {**doc[name], **{k: v for k, v in value.items() if not is_empty(v)}}
        elif not is_empty(value):
            out[name] = value
        for code in codes:
            out.pop(f"{name}_{code}", None)
    return out


class PagesService:
    def __init__(self, store: Store, cache: Cache, content: ContentService, events: Events,
                 settings: PagesSettings) -> None:
        self.store = store
        self.cache = cache
        self.content = content
        self.events = events
        self.settings = settings
        self._collections: dict[tuple[str, ...], Collection] = {}
        # Answers computed from the store (routes, sitemaps, menus as JSON
        # bytes), kept until the next commit of any process: any collection,
        # since sitemaps list content items too. Immutable values only.
        self.answers = cache.region("pages.answers", ANSWERS_KEPT)
        self.ensure_indexes(self.codes())

    def ensure_indexes(self, codes: list[str]) -> None:
        """A route lookup in any locale is one index probe; made at start
        and whenever the locales change (never on a read)."""
        indexes: list[list[tuple[str, ...]]] = [[("_pid",), ("_o",)]]
        indexes += [[("_state",), (routing.route_key(loc),)] for loc in [DEFAULT, *codes]]
        self.store.ensure_indexes(PAGES, indexes)

    def codes(self) -> list[str]:
        return self.content.locales.codes()

    def locales(self) -> list[str]:
        return [DEFAULT, *self.codes()]

    def collection(self) -> Collection:
        """`pages/pages` with hints for its single-valued fields (so filters
        on them use the indexes); made once per set of locales."""
        codes = tuple(self.codes())
        coll = self._collections.get(codes)
        if coll is None:
            hints = {"_state": "number", "_o": "number", "_created": "number", "_modified": "number",
                     "_pid": "text", "_r": "text", "type": "text"}
            hints.update({f"_r_{c}": "text" for c in codes})
            coll = self._collections[codes] = self.store.collection(PAGES, hints)
        return coll

    def routing_fields(self) -> list[str]:
        """What routes, trees and sitemaps need of a page: read without
        decoding whole pages (layouts can be large)."""
        codes = self.codes()
        return [*ROUTING_FIELDS, *(f"slug_{c}" for c in codes), *(f"_r_{c}" for c in codes)]

    # -- reads ------------------------------------------------------------

    def find(self, opts: PageOptions, identity: Identity) -> tuple[list[dict[str, Any]], int | None]:
        identity.require(READ)
        if opts.filter is not None and not isinstance(opts.filter, dict):
            raise BadRequest("filter must be an object")
        node = And([PUBLISHED, parse_filter(rewrite_locale_keys(opts.filter or {}))])
        sort = parse_sort(rewrite_locale_keys(opts.sort)) if opts.sort is not None else []
        projection = parse_fields(opts.fields)
        coll = self.collection()
        docs = coll.find(node, sort, opts.limit or None, opts.skip)  # limit=0: no limit, as for content
        total = self.cache.count(coll, node) if opts.limit is not None and opts.skip is not None else None
        return self.answer(docs, opts, identity, projection), total

    def titled(self, words: str, limit: int, identity: Identity) -> list[dict[str, Any]]:
        """Pages of every state whose title, in any locale, holds `words`
        (case-insensitive), newest change first: the studio's search box,
        for who may manage pages."""
        identity.require(MANAGE)
        pattern = {"$regex": re.escape(words), "$options": "i"}
        spec = {"$or": [{name: pattern} for name in ["title", *(f"title_{c}" for c in self.codes())]]}
        return self.collection().find(parse_filter(spec), [(("_modified",), -1)], limit)

    def by_id(self, page_id: str, opts: PageOptions, identity: Identity,
              preview: str | None = None) -> dict[str, Any]:
        """A published page; with a preview token of this page
        (`preview_link`), the page in whatever state, without `pages/read`."""
        if preview is not None:
            self.content.previews.check(preview, PREVIEW, page_id)
        else:
            identity.require(READ)
        projection = parse_fields(opts.fields)
        doc = self.collection().get(page_id) if is_id(page_id) else None
        if doc is None or (doc.get("_state") != 1 and preview is None):
            raise NotFound("Page not found")
        return self.answer([doc], opts, identity, projection)[0]

    def preview_link(self, page_id: str, identity: Identity, seconds: Any) -> dict[str, Any]:
        """A preview token for a page (who may manage pages), and the
        `[pages] preview_url` address filled in with it."""
        identity.require(MANAGE)
        doc = self.collection().get(page_id) if is_id(page_id) else None
        if doc is None:
            raise NotFound("Page not found")
        issued = self.content.previews.issue(PREVIEW, page_id, seconds)
        values = {**doc, "id": page_id, "token": issued["token"], "route": doc.get("_r", "")}
        template = self.settings.preview_url
        links = [{"name": "Site", "url": fill(template, values)}] if template else []
        return {**issued, "links": links}

    def by_route(self, route: str, opts: PageOptions, identity: Identity) -> dict[str, Any]:
        """The published page at `route` in the request's locale; else, when
        the parent route is a collection page, that page with the published
        item whose slug is the last segment in `data.item`."""
        identity.require(READ)
        projection = parse_fields(opts.fields)
        route = routing.normalize(route)
        doc = self._find_route(route, opts.locale)
        if doc is not None:
            return self.answer([doc], opts, identity, projection)[0]
        parent, _, last = route.rpartition("/")
        page = self._find_route(parent or "/", opts.locale) if last else None
        if page is not None and page.get("type") == "collection":
            item = self._collection_item(page, last, opts, identity)
            if item is not None:
                answer = self.answer([page], opts, identity, None)[0]
                answer["data"] = {**(answer.get("data") or {}), "item": item}
                return reference.project(answer, projection) if projection else answer
        raise NotFound("Page not found")

    def _find_route(self, route: str, locale: str | None) -> dict[str, Any] | None:
        coll = self.collection()
        if locale and locale in self.codes():
            key = routing.route_key(locale)
            doc = coll.find_one(And([PUBLISHED, Cond((key,), "eq", route)]))
            if doc is not None:
                return doc
            # the default route serves where this locale's route is the same
            return coll.find_one(And([PUBLISHED, Cond(("_r",), "eq", route),
                                      Cond((key,), "exists", False)]))
        return coll.find_one(And([PUBLISHED, Cond(("_r",), "eq", route)]))

    def _collection_item(
        self, page: dict[str, Any], slug: str, opts: PageOptions, identity: Identity
    ) -> dict[str, Any] | None:
        data = page.get("data") or {}
        model = self.content.models.find(str(data.get("model")))
        if model is None or model.type != "collection" or not identity.can(content_perm(model.name, "read")):
            return None
        field = str(data.get("slugField") or "slug")
        keys = [field]
        definition = model.by_name.get(field)
        if opts.locale in self.codes() and definition is not None and definition["i18n"]:
            keys.insert(0, f"{field}_{opts.locale}")
        read = ReadOptions(locale=opts.locale, populate=opts.populate)
        for key in keys:
            read.filter = {key: slug}
            try:
                return self.content.item(model.name, None, read, identity)
            except NotFound:
                continue
        return None

    def answer(
        self, docs: list[dict[str, Any]], opts: PageOptions, identity: Identity, projection: Projection | None
    ) -> list[dict[str, Any]]:
        """Pages as the API answers them: localized, a singleton page with its
        item in `data.item`, links populated, projected."""
        codes = self.codes()
        out = [localize_page(d, codes, opts.locale) for d in docs]
        for doc in out:
            if doc.get("type") == "singleton":
                doc["data"] = {**(doc.get("data") or {}), "item": self._singleton(doc, opts, identity)}
        if opts.populate:
            self.content.populate_links(out, opts.populate, opts.locale, identity)
        return [reference.project(d, projection) for d in out] if projection else out

    def _singleton(self, page: dict[str, Any], opts: PageOptions, identity: Identity) -> Any:
        model = (page.get("data") or {}).get("model")
        if not isinstance(model, str):
            return None
        try:
            return self.content.item(model, None, ReadOptions(locale=opts.locale, populate=opts.populate), identity)
        except ApiError:  # gone, or not readable with this key
            return None

    def tree_order(self) -> list[dict[str, Any]]:
        """The routing fields of every page (all states), depth first,
        siblings by `_o`."""
        docs = self.collection().pick(self.routing_fields())
        docs.sort(key=lambda d: d.get("_o", 0))  # stable: creation order among equal `_o`
        children: dict[Any, list[dict[str, Any]]] = {}
        for doc in docs:
            children.setdefault(doc.get("_pid"), []).append(doc)
        out: list[dict[str, Any]] = []
        stack = list(reversed(children.get(None, [])))
        while stack:
            doc = stack.pop()
            out.append(doc)
            stack.extend(reversed(children.get(doc["_id"], [])))
        return out

    def routes(self, locale: str | None, identity: Identity) -> dict[str, list[dict[str, Any]]]:
        return orjson.loads(self.routes_json(locale, identity))

    def routes_json(self, locale: str | None, identity: Identity) -> bytes:
        identity.require(READ)
        return self.answers.fetch(("routes", locale), lambda: orjson.dumps(self._routes(locale)))

    def _routes(self, locale: str | None) -> dict[str, list[dict[str, Any]]]:
        wanted = [locale] if locale else self.locales()
        pages = [p for p in self.tree_order() if p.get("_state") == 1]
        return {
            loc: [{"route": routing.route_in(p, loc), "slug": routing.slug_in(p, loc),
                   "type": p.get("type"), "lastmod": lastmod(p.get("_modified"))} for p in pages]
            for loc in wanted
        }

    def sitemap(self, identity: Identity, limit: int | None = None) -> list[dict[str, Any]]:
        """Published pages (not links), then the items of collection pages
        the key may read, each with its route in every locale."""
        return orjson.loads(self.sitemap_json(identity, limit))

    def sitemap_json(self, identity: Identity, limit: int | None = None) -> bytes:
        identity.require(READ)
        # the items listed depend on what the key may read
        return self.answers.fetch(("sitemap", identity.role, identity.permissions, limit),
                                  lambda: orjson.dumps(self._sitemap(identity, limit)))

    def _sitemap(self, identity: Identity, limit: int | None) -> list[dict[str, Any]]:
        locales = self.locales()
        limit = limit or int(self.settings.max_sitemap_urls)
        out: list[dict[str, Any]] = []
        pages = [p for p in self.tree_order() if p.get("_state") == 1 and p.get("type") != "link"]
        for page in pages:
            out.append({"routes": {loc: routing.route_in(page, loc) for loc in locales},
                        "type": page.get("type"), "lastmod": lastmod(page.get("_modified"))})
        bound = [p["_id"] for p in pages if p.get("type") == "collection"]
        full = self.collection().get_many(bound)  # with `data`, which names the model
        for page_id in bound:
            out += self._item_entries(full[page_id], locales, identity, limit)
        return out[:limit]

    def _item_entries(
        self, page: dict[str, Any], locales: list[str], identity: Identity, limit: int
    ) -> list[dict[str, Any]]:
        data = page.get("data") or {}
        model = self.content.models.find(str(data.get("model")))
        if model is None or not identity.can(content_perm(model.name, "read")):
            return []
        field = str(data.get("slugField") or "slug")
        keep = ["_modified", field, *(f"{field}_{c}" for c in locales[1:])]
        items = self.content.collection(model).pick(keep, PUBLISHED, limit=limit)
        entries = []
        for item in items:
            if not _routable(item.get(field)):
                continue
            routes = {}
            for loc in locales:
                localized = item.get(f"{field}_{loc}") if loc != DEFAULT else None
                slug = localized if _routable(localized) else item[field]
                routes[loc] = routing.join(routing.route_in(page, loc), str(slug))
            entries.append({"routes": routes, "type": "item", "model": model.name,
                            "lastmod": lastmod(item.get("_modified"))})
        return entries

    # -- writes -----------------------------------------------------------

    async def save(self, data: Any, identity: Identity) -> dict[str, Any]:
        """Create a page, or change one partially when `data._id` is given;
        the routes of its subtree follow."""
        identity.require(MANAGE)
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        page_id = data.get("_id")
        if page_id is not None and not isinstance(page_id, str):
            raise BadRequest("_id must be a string", fields=["_id"])
        codes = self.codes()
        clean = check_page(data, codes)
        now = int(time.time())
        async with self.store.atomic():
            coll = self.collection()
            pages = {d["_id"]: d for d in coll.pick(self.routing_fields())}
            current = coll.get(page_id) if page_id is not None and page_id in pages else None
            if page_id is not None and current is None:
                raise NotFound("Page not found")
            if current is not None:
                page = self._changed(current, clean, pages)
                page.update({"_modified": now, "_mby": identity.actor})
            else:
                page = self._new(clean, codes, pages, now, identity)
            with refusals_as_412():  # handlers may change the page: the checks below see their changes
                await self.events.emit("pages.page.save.before", page=page, is_update=current is not None,
                                       identity=identity)
            check_page_shape(page, self._model_kind, codes)
            self._check_parent(page, pages)
            pages[page["_id"]] = page
            moved = self._apply_routes([page["_id"]], pages)
            _set_routes(page, moved.pop(page["_id"]))
            coll.replace(page)
            await self._saved(page, current, identity)
            for other in coll.get_many(list(moved)).values():
                coll.replace(_set_routes(other, moved[other["_id"]]))
        await self.events.emit_after("pages.page.save.after", page=page, is_update=current is not None,
                                     identity=identity)
        return page

    async def _saved(self, page: dict[str, Any], previous: dict[str, Any] | None, identity: Identity) -> None:
        """`pages.page.saved`: the page as stored and the one it replaced
        (None: a new page), inside the write's transaction (revisions).
        Pages whose routes only followed a parent's are not reported."""
        with refusals_as_412():
            await self.events.emit("pages.page.saved", page=page, previous=previous, identity=identity)

    def _changed(self, current: dict[str, Any], clean: dict[str, Any], pages: dict[str, Any]) -> dict[str, Any]:
        page = {**current, **clean}
        moved = "_pid" in clean and clean["_pid"] != current.get("_pid")
        if moved and "_o" not in clean:
            page["_o"] = self._next_order(pages, clean["_pid"])
        return _drop_nulls(page, clean)

    def _new(
        self, clean: dict[str, Any], codes: list[str], pages: dict[str, Any], now: int, identity: Identity
    ) -> dict[str, Any]:
        page: dict[str, Any] = {"_id": new_id(), "type": "layout", "title": "", "data": {}, "seo": {},
                                "layout": [], "_pid": None, "_state": 1}
        page.update(clean)
        # A slug left out is made from the title, and then each locale's
        # from its title; a slug sent (the home page's "") serves every locale.
        if "slug" not in clean:
            page["slug"] = routing.slugify(str(page.get("title") or ""))
            if not page["slug"]:  # only a slug sent as "" makes a home page
                raise ValidationError("page data", {"slug": "is required: the title has no letters or digits to make one of"})
            for code in codes:
                title = clean.get(f"title_{code}")
                if f"slug_{code}" not in clean and isinstance(title, str) and title:
                    page[f"slug_{code}"] = routing.slugify(title)
        if "_o" not in clean:
            page["_o"] = self._next_order(pages, page["_pid"])
        page.update({"_created": now, "_modified": now, "_cby": identity.actor, "_mby": identity.actor})
        return _drop_nulls(page, clean)

    @staticmethod
    def _next_order(pages: dict[str, Any], parent: str | None) -> int | float:
        orders = [p.get("_o", 0) for p in pages.values() if p.get("_pid") == parent]
        return max(orders) + 1 if orders else 0

    def _model_kind(self, name: str) -> str | None:
        model = self.content.models.find(name)
        return model.type if model is not None else None

    @staticmethod
    def _check_parent(page: dict[str, Any], pages: dict[str, Any]) -> None:
        def parent_of(page_id: str) -> object:
            found = pages.get(page_id)
            return MISSING if found is None else found.get("_pid")

        problem = parent_problem(page["_id"], page.get("_pid"), parent_of)
        if problem == "cycle":
            raise ValidationError("page data", {"_pid": "would make the page its own ancestor"})
        if problem == "missing":
            raise ValidationError("page data", {"_pid": "is not a page"})

    def _apply_routes(self, roots: list[str], pages: dict[str, Any]) -> dict[str, dict[str, str]]:
        """Recompute the routes of `roots` and their subtrees, refuse any that
        another page holds (409), and answer the route keys to store of the
        pages whose routes changed, the roots always."""
        locales = self.locales()
        routes = routing.compute_routes(pages, roots, locales)
        for loc in locales:
            taken = {routing.route_in(p, loc): pid for pid, p in pages.items() if pid not in routes}
            for pid, by_locale in routes.items():
                other = taken.get(by_locale[loc])
                if other is not None:
                    field = "slug" if loc == DEFAULT else f"slug_{loc}"
                    where = "" if loc == DEFAULT else f" in locale {loc}"
                    raise Conflict(f"Route {by_locale[loc]}{where} is already taken by page {other}",
                                   fields=[field])
                taken[by_locale[loc]] = pid
        changed = {}
        for pid, by_locale in routes.items():
            after = routing.stored_routes(by_locale)
            if pid in roots or _route_keys(pages[pid]) != after:
                changed[pid] = after
        return changed

    # -- the studio's tree -------------------------------------------------

    def outline(self, identity: Identity) -> list[dict[str, Any]]:
        """The tree as the studio shows it, depth first: routing fields and
        titles, every state for who may manage pages, published pages for
        who may only read them (as the API answers them)."""
        if not identity.can(MANAGE):
            identity.require(READ)
        names = [*self.routing_fields(), "title"]
        docs = self.collection().pick(names)
        if not identity.can(MANAGE):
            docs = [d for d in docs if d.get("_state") == 1]
        docs.sort(key=lambda d: d.get("_o", 0))
        children: dict[Any, list[dict[str, Any]]] = {}
        for doc in docs:
            children.setdefault(doc.get("_pid"), []).append(doc)

        def nest(parent: Any) -> list[dict[str, Any]]:
            return [{**d, "_children": nest(d["_id"])} for d in children.get(parent, [])]

        return nest(None)

    def stored(self, page_id: str, identity: Identity) -> dict[str, Any]:
        """A page as stored, any state (the studio's editor)."""
        identity.require(MANAGE)
        doc = self.collection().get(page_id) if isinstance(page_id, str) and is_id(page_id) else None
        if doc is None:
            raise NotFound("Page not found")
        return doc

    def preview(self, page: dict[str, Any], locale: str | None, identity: Identity) -> dict[str, Any]:
        """What the API answers for `page` (`page/{id}`), whatever its state."""
        identity.require(MANAGE)
        return self.answer([page], PageOptions(locale=locale), identity, None)[0]

    def move_plan(self, page_id: str, parent: str | None, identity: Identity) -> list[dict[str, Any]]:
        """What moving `page_id` under `parent` would do to routes, before
        anything is stored: [{_id, title, locale, old, new}] for every page
        of the moved subtree whose route changes. A move that cannot be
        done raises as `move` would (400 cycle or missing parent, 409 a
        route taken)."""
        identity.require(MANAGE)
        names = [*self.routing_fields(), "title"]
        pages = {d["_id"]: d for d in self.collection().pick(names)}
        page = pages.get(page_id) if isinstance(page_id, str) else None
        if page is None:
            raise NotFound("Page not found")
        moved = {**page, "_pid": parent}
        self._check_parent(moved, pages)
        if parent is not None and moved.get("slug") == "":
            raise ValidationError("page data", {"slug": "is required (only a top-level page, the home page, "
                                                        "may have an empty slug)"})
        before = {pid: dict(p) for pid, p in pages.items()}
        pages[page_id] = moved
        self._apply_routes([page_id], pages)  # raises 409 on a taken route
        after = routing.compute_routes(pages, [page_id], self.locales())
        changes = []
        for pid, by_locale in after.items():
            for loc, new in by_locale.items():
                old = routing.route_in(before[pid], loc)
                if old != new:
                    changes.append({"_id": pid, "title": before[pid].get("title") or "", "locale": loc,
                                    "old": old, "new": new})
        return changes

    async def move(self, page_id: str, parent: str | None, position: int, identity: Identity) -> dict[str, Any]:
        """Put `page_id` under `parent` at `position` among its siblings (the
        siblings are renumbered 0, 1, ...), its subtree's routes following,
        in one transaction; refused like a save (400, 409) with nothing
        stored."""
        identity.require(MANAGE)
        async with self.store.atomic():
            coll = self.collection()
            pages = {d["_id"]: d for d in coll.pick(self.routing_fields())}
            current = coll.get(page_id) if isinstance(page_id, str) and page_id in pages else None
            if current is None:
                raise NotFound("Page not found")
            if parent is not None and parent not in pages:
                raise ValidationError("page data", {"_pid": "is not a page"})
            page = {**current, "_pid": parent, "_modified": int(time.time()), "_mby": identity.actor}
            with refusals_as_412():
                await self.events.emit("pages.page.save.before", page=page, is_update=True, identity=identity)
            check_page_shape(page, self._model_kind, self.codes())
            self._check_parent(page, pages)
            siblings = sorted((p for pid, p in pages.items() if p.get("_pid") == parent and pid != page_id),
                              key=lambda p: p.get("_o", 0))
            order = [p["_id"] for p in siblings]
            order.insert(max(0, min(position, len(order))), page_id)
            pages[page_id] = page
            routes = self._apply_routes([page_id], pages)
            renumbered = {pid: i for i, pid in enumerate(order) if pid == page_id or pages[pid].get("_o") != i}
            page["_o"] = renumbered.pop(page_id)
            _set_routes(page, routes.pop(page_id))
            coll.replace(page)
            await self._saved(page, current, identity)
            for other in coll.get_many(sorted(set(routes) | set(renumbered))).values():
                if other["_id"] in routes:
                    _set_routes(other, routes[other["_id"]])
                if other["_id"] in renumbered:
                    other["_o"] = renumbered[other["_id"]]
                coll.replace(other)
        await self.events.emit_after("pages.page.save.after", page=page, is_update=True, identity=identity)
        return page

    def bundle_part(self) -> BundlePart:
        """Pages in export/import bundles, in creation order (the default
        list order); loaded by `load`."""
        return BundlePart("pages", "pages", lambda: self.collection().find(), _check_bundle_pages, self.load)

    async def load(self, docs: Any, identity: Identity) -> int:
        """Store pages as exported (ids, tree, order and states kept),
        checked like API writes, every route recomputed. For bundle imports:
        the caller holds the transaction. Pages are stored in the order
        sent, which is the export's creation order."""
        if not isinstance(docs, list):
            raise BadRequest("pages must be a list")
        codes = self.codes()
        coll = self.collection()
        pages = {d["_id"]: d for d in coll.pick(self.routing_fields())}
        existing = set(pages)
        for doc in docs:
            if not isinstance(doc, dict) or not is_id(doc.get("_id")):
                raise BadRequest("every page needs an _id")
            fields = check_page({k: v for k, v in doc.items() if k not in _KEPT}, codes)
            pages[doc["_id"]] = _drop_nulls({**fields, **{k: doc[k] for k in _KEPT if k in doc}}, fields)
        for doc in docs:
            page = pages[doc["_id"]]
            check_page_shape(page, self._model_kind, codes)
            self._check_parent(page, pages)
        routes = self._apply_routes([pid for pid, p in pages.items() if p.get("_pid") is None], pages)
        sent = [d["_id"] for d in docs]
        sent_ids = set(sent)
        before = coll.get_many([pid for pid in sent if pid in existing])
        moved = [pid for pid in routes if pid not in sent_ids]
        for pid, page in [(i, pages[i]) for i in sent] + list(coll.get_many(moved).items()):
            _set_routes(page, routes[pid])
            is_update = pid in existing
            with refusals_as_412(f"page {pid}: "):
                await self.events.emit("pages.page.save.before", page=page, is_update=is_update, identity=identity)
            coll.replace(page)
            if pid in sent_ids:
                await self._saved(page, before.get(pid), identity)
            self.store.after_commit(lambda page=page, is_update=is_update: self.events.emit_after(
                "pages.page.save.after", page=page, is_update=is_update, identity=identity))
        return len(docs)

    async def delete(self, page_id: str, identity: Identity) -> None:
        """Delete a page and its subtree."""
        identity.require(MANAGE)
        async with self.store.atomic():
            coll = self.collection()
            page = coll.get(page_id) if is_id(page_id) else None
            if page is None:
                raise NotFound("Page not found")
            removed = coll.subtree(page)
            for doc in removed:
                coll.delete(doc["_id"])
                with refusals_as_412():
                    await self.events.emit("pages.page.remove", page=doc, identity=identity)

    def exists(self, ids: list[str]) -> set[str]:
        return set(self.collection().get_many(ids))

    def published_links(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Title and routes of the published pages among `ids` (for menus)."""
        codes = self.codes()
        names = ["title", "_r", *(f"title_{c}" for c in codes), *(f"_r_{c}" for c in codes)]
        node = And([PUBLISHED, Cond(("_id",), "in", list(ids))])
        return {d["_id"]: d for d in self.collection().pick(names, node)}


def _routable(slug: Any) -> bool:
    """An item slug that `page?route=` can find: one path segment."""
    return isinstance(slug, str) and bool(slug) and routing.slug_problem(slug) is None


def _route_keys(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k == "_r" or k.startswith("_r_")}


def _set_routes(doc: dict[str, Any], keys: dict[str, str]) -> dict[str, Any]:
    for key in _route_keys(doc):
        del doc[key]
    doc.update(keys)
    return doc


def _drop_nulls(page: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """A localized value sent as null removes that locale's value."""
    return {k: v for k, v in page.items() if not (v is None and k in sent and k != "_pid")}


def _check_bundle_pages(value: Any, checked: Checked) -> list[dict[str, Any]]:
    return check_list(value, "pages", "page")
