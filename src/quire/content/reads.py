"""The read side of content items: lists (a page, a count, a stream),
single items, trees, and what turns stored rows into answers (locale,
projection, linked items, assets).

Reads see published items only. Lists come back as JSON text per item; when
a request needs no transformation (no locale, projection or populate) the
stored text goes out untouched, which keeps the common list cheap.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from quire.auth.permissions import content as perm
from quire.auth.service import Identity
from quire.cache import Cache
from quire.content import cursor
from quire.content.fill import doc_rev
from quire.content.locales import LocaleService, localize, rewrite_locale_keys
from quire.content.models import Model, ModelService
from quire.content.populate import populate
from quire.content.types import layout
from quire.errors import BadRequest, NotFound
from quire.ids import is_id
from quire.store import Collection
from quire.store import match as reference
from quire.store.query import (
    And,
    Cond,
    Node,
    Path,
    Projection,
    parse_fields,
    parse_filter,
    parse_sort,
)
from quire.store.sqlite import Position

PUBLISHED = Cond(("_state",), "eq", 1)
# a deep `skip` is read from the position of the nearest multiple of this
SKIP_STRIDE = 1000
SKIP_MARKS_KEPT = 4096
# populated rows kept per app for the store's generation, by their bytes
POPULATED_KEPT = 16 * 1024 * 1024
_ROW_HEAD = 40  # `{"_id":"<24 hex>"` and a little more: tells rows apart (as in fill.py)
_ENTRY = 200  # what an entry costs besides its bytes (key, tuple, dict slot)
_HEX24 = re.compile(rb"[0-9a-f]{24}")
_AFTER_NEEDS_LIMIT = "<after> needs a <limit> of 1 or more: the size of the page that follows the cursor"
_NOT_A_MODEL = "@"  # no model has this name, so every key is searched for links


@dataclass
class ReadOptions:
    filter: Any = None
    sort: Any = None
    fields: Any = None
    limit: int | None = None
    skip: int | None = None
    populate: int = 0
    locale: str | None = None
    # every state, drafts and archived items too (the studio's lists); needs
    # the model's update permission
    drafts: bool = False
    # the cursor of the previous page (`Page.next`): keyset paging
    after: str | None = None
    # the cursor is bound to what picks and orders the items only, not to
    # `fields` and `populate` (a typed GraphQL list reads what its
    # selection asks, which may change from one page to the next)
    cursor_by_order: bool = False

    @property
    def transforms(self) -> bool:
        return bool(self.fields or self.populate or self.locale)

    @property
    def paged(self) -> bool:
        """Read as one page (`list_page`) rather than streamed: a limit was
        given, or `limit=0` (no limit, as in Cockpit) with `skip`, which asks
        for the `{data, meta}` envelope."""
        return self.limit is not None and (self.limit > 0 or self.skip is not None)

    @property
    def whole_with_total(self) -> bool:
        """`limit=0` with `skip`: everything from `skip` on in the `{data,
        meta}` envelope. The list route streams it like an unbounded list."""
        return self.limit == 0 and self.skip is not None


@dataclass
class Page:
    rows: list[bytes]
    total: int | None
    next: str | None = None  # the cursor of the next page; None on the last one


class AssetLookup(Protocol):
    """What content needs of the assets module, handed to it when the app
    is built (the assets service is one): asset objects by id, as objects
    and as their JSON bytes; unknown ids are left out."""

    def get_many(self, ids: list[str]) -> dict[str, dict[str, Any]]: ...

    def get_many_json(self, ids: list[str]) -> dict[str, bytes]: ...


class ContentReader:
    """Reads content: the permission to read, the user's filter (with link
    filters resolved), sort and projection, and the rendering of rows. It
    writes nothing; `ContentWriter` owns every change."""

    def __init__(self, cache: Cache, models: ModelService, locales: LocaleService,
                 assets: AssetLookup | None = None, max_populate: int = 5) -> None:
        self.cache = cache
        self.models = models
        self.locales = locales
        self.max_populate = max_populate
        # ids -> {id: asset}: asset references in answers become asset objects
        self.resolve_assets: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None
        self.resolve_asset_json: Callable[[list[str]], dict[str, bytes]] | None = None
        if assets is not None:
            self.resolve_assets, self.resolve_asset_json = assets.get_many, assets.get_many_json

    def collection(self, model: Model) -> Collection:
        return self.models.collection(model)

    def readable(self, name: str, identity: Identity) -> Model:
        model = self.models.get(name)
        identity.require(perm(name, "read"))
        return model

    # -- queries ----------------------------------------------------------

    def query(self, model: Model, spec: Any, identity: Identity, drafts: bool = False) -> Node:
        """The user's filter, published items only (every item with
        `drafts`, for who may update them), extensions resolved."""
        if drafts:
            identity.require(perm(model.name, "update"))
        if spec is None:
            return And([]) if drafts else PUBLISHED
        if not isinstance(spec, dict):
            raise BadRequest("filter must be an object")
        spec = self._resolve_link_filters(model, rewrite_locale_keys(spec), identity)
        return parse_filter(spec) if drafts else And([PUBLISHED, parse_filter(spec)])

    def _resolve_link_filters(self, model: Model, spec: Any, identity: Identity) -> Any:
        """`{"@author.name": "Ann"}` -> `{"author._id": {"$in": [ids of
        published authors named Ann]}}`: one query on the linked model."""
        if isinstance(spec, list):
            return [self._resolve_link_filters(model, s, identity) for s in spec]
        if not isinstance(spec, dict):
            return spec
        out: dict[str, Any] = {}
        for key, value in spec.items():
            if key in ("$and", "$or", "$nor"):
                out[key] = self._resolve_link_filters(model, value, identity)
            elif isinstance(key, str) and key.startswith("@"):
                field, _, rest = key[1:].partition(".")
                target = self._link_target(model, field)
                linked = self.readable(target.name, identity)
                if not rest:
                    raise BadRequest(f"Filter {key} needs a field of {target.name}, like @{field}.title")
                sub = self.query(linked, {rest: value}, identity)
                ids = self.collection(linked).ids(sub)
                path = f"{field}._id"
                out.setdefault("$and", []).append({path: {"$in": ids}})
            else:
                out[key] = value
        return out

    def _link_target(self, model: Model, field: str) -> Model:
        definition = model.by_name.get(field)
        if definition is None or definition["type"] != "contentItemLink":
            raise BadRequest(f"Filter @{field}: {field} is not a link field of {model.name}")
        return self.models.get(definition["opts"]["link"])

    # -- reads ------------------------------------------------------------

    def list_page(self, name: str, opts: ReadOptions, identity: Identity) -> Page:
        """A list read at once (limit given; 0 means no limit); `total` when
        skip was given too."""
        model = self.readable(name, identity)
        coll = self.collection(model)
        node = self.query(model, opts.filter, identity, opts.drafts)
        sort = self._sort(opts.sort)
        projection = parse_fields(opts.fields)
        cursor_next = None
        if opts.limit:
            # a page by keyset: with the position of its last row, for `after`
            digest = self._digest(name, opts)
            after = cursor.decode(opts.after, digest) if opts.after else None
            if after is None and opts.skip and opts.skip >= SKIP_STRIDE:
                rows, position = self._deep_page(coll, node, sort, opts.limit, opts.skip)
            else:
                rows, position = coll.find_page(node, sort, opts.limit, after, opts.skip)
            cursor_next = cursor.encode(position, digest) if position is not None else None
        else:
            rows = coll.find_raw(node, sort, None, opts.skip)
        total = self.cache.count(coll, node) if opts.limit is not None and opts.skip is not None else None
        # a whole list (limit=0) is not kept, like a streamed one
        return Page(self.render(model, rows, opts, projection, identity, keep=bool(opts.limit)), total, cursor_next)

    def _deep_page(self, coll: Collection, node: Node, sort: list[tuple[Path, int]], limit: int,
                   skip: int) -> tuple[list[bytes], Position | None]:
        """A page far down a list by `skip`: counting rows off costs O(skip),
        so the position of every `SKIP_STRIDE`-th row is kept for the store's
        generation and the page is read from the nearest one before it, as a
        cursor would (`skip=5050` counts off 50 rows after row 5,000). The
        first read of a mark counts off once to find it."""
        mark = skip // SKIP_STRIDE * SKIP_STRIDE
        region = self.cache.region("content.skip_marks", SKIP_MARKS_KEPT)
        key = (coll.page_key(node, sort), mark)
        start = region.get(key)
        if start is None:
            _, start = coll.find_page(node, sort, 1, None, mark - 1)
            if start is None:  # the list ends before row `mark`: the page is empty
                return [], None
            region.put(key, start)
        return coll.find_page(node, sort, limit, start, skip - mark)

    @staticmethod
    def _digest(name: str, opts: ReadOptions) -> str:
        """What a cursor of this list is bound to: every parameter that
        shapes the list or its items, but the page size and skip."""
        if opts.after is not None and not opts.limit:
            raise BadRequest(_AFTER_NEEDS_LIMIT)
        if opts.after is not None and opts.skip:
            raise BadRequest("<after> and <skip> do not go together: the cursor says where the page starts "
                             "(skip=0 keeps the {data, meta} answer)")
        if opts.cursor_by_order:
            return cursor.query_digest(name, {"filter": opts.filter, "sort": opts.sort, "locale": opts.locale,
                                              "drafts": opts.drafts, "by": "order"})
        return cursor.query_digest(name, {"filter": opts.filter, "sort": opts.sort, "fields": opts.fields,
                                          "locale": opts.locale, "populate": opts.populate,
                                          "drafts": opts.drafts})

    def count(self, name: str, opts: ReadOptions, identity: Identity) -> int:
        """How many items the list of `opts` has, before skip and limit."""
        model = self.readable(name, identity)
        return self.cache.count(self.collection(model), self.query(model, opts.filter, identity, opts.drafts))

    def list_stream(self, name: str, opts: ReadOptions, identity: Identity) -> Generator[list[bytes], None, None]:
        """An unbounded list, chunk by chunk from the database."""
        if opts.after is not None:
            raise BadRequest(_AFTER_NEEDS_LIMIT)
        model = self.readable(name, identity)
        coll = self.collection(model)
        node = self.query(model, opts.filter, identity, opts.drafts)
        sort = self._sort(opts.sort)
        projection = parse_fields(opts.fields)

        def chunks() -> Generator[list[bytes], None, None]:
            for rows in coll.stream_raw(node, sort, None, opts.skip):
                yield self.render(model, rows, opts, projection, identity, keep=False)

        return chunks()

    def _sort(self, spec: Any) -> list[tuple[tuple[str, ...], int]]:
        return parse_sort(rewrite_locale_keys(spec)) if spec is not None else []

    def render(
        self,
        model: Model,
        rows: list[bytes],
        opts: ReadOptions,
        projection: Projection | None,
        identity: Identity,
        keep: bool = True,
    ) -> list[bytes]:
        if opts.populate and keep and rows and not self.cache.store.in_transaction():
            return self._render_populated(model, rows, opts, projection, identity)
        needs_work = self._needs_work(model, opts, rows)  # on the rows just read, still in the CPU cache
        if not opts.transforms:  # every field: on the stored bytes (fill.py); adds no asset marker
            rows = model.filler.rows(rows, keep)
        if not needs_work:
            return rows
        if not opts.transforms:  # only asset references: touch just the rows holding one
            codes = self.locales.codes()
            splice = model.asset_splice(codes)
            if splice is not None and self.resolve_asset_json is not None:
                return self._splice_assets(rows, splice, self.resolve_asset_json)
            markers = model.asset_markers(codes)
            if markers is not None:
                return self._render_assets(model, rows, markers)
        docs = [orjson.loads(r) for r in rows]
        docs = self.transform(model, docs, opts, projection, identity)
        return [orjson.dumps(d) for d in docs]

    def _render_populated(
        self, model: Model, rows: list[bytes], opts: ReadOptions, projection: Projection | None, identity: Identity
    ) -> list[bytes]:
        """Rows with their links resolved (`render` with populate), each
        answer kept for the store's generation: a populated row depends on
        the stored row, on the linked items and assets (any write moves the
        generation, in every worker), on the request's view (depth, locale,
        fields) and on what the caller may read (role and permissions). A
        page read again costs a lookup and a comparison per row, like a plain
        one; only the rows not kept are decoded, populated and encoded."""
        try:
            fields = None if opts.fields is None else orjson.dumps(opts.fields)
        except TypeError:  # not JSON (a caller in Python): not kept
            return self._transform_rows(model, rows, opts, projection, identity)
        view = (model.name, opts.populate, opts.locale, fields, identity.role, identity.permissions)
        region = self.cache.region("content.populated", POPULATED_KEPT)
        generation = self.cache.generation  # before the work: an answer of an older generation is not kept
        keys = [(view, row[:_ROW_HEAD]) for row in rows]
        kept = region.get_many(keys)
        out: list[bytes | None] = []
        missing: list[int] = []
        for i, (key, row) in enumerate(zip(keys, rows, strict=True)):
            found = kept.get(key)
            if found is not None and found[0] == row:
                out.append(found[1])
            else:
                out.append(None)
                missing.append(i)
        if missing:
            done = self._transform_rows(model, [rows[i] for i in missing], opts, projection, identity)
            for i, answer in zip(missing, done, strict=True):
                out[i] = answer
                region.put(keys[i], (rows[i], answer), generation, _ENTRY + len(rows[i]) + len(answer))
        return out  # type: ignore[return-value]  # every None was replaced

    def _transform_rows(
        self, model: Model, rows: list[bytes], opts: ReadOptions, projection: Projection | None, identity: Identity
    ) -> list[bytes]:
        docs = self.transform(model, [orjson.loads(r) for r in rows], opts, projection, identity)
        return [orjson.dumps(d) for d in docs]

    def _needs_work(self, model: Model, opts: ReadOptions, rows: list[bytes]) -> bool:
        if opts.transforms:
            return True
        if not model.has_assets or self.resolve_assets is None:
            return False
        markers = model.asset_markers(self.locales.codes())
        if markers is None:
            return True
        return any(m in row for row in rows for m in markers)

    def transform(
        self,
        model: Model,
        docs: list[dict[str, Any]],
        opts: ReadOptions,
        projection: Projection | None,
        identity: Identity,
    ) -> list[dict[str, Any]]:
        if opts.locale:
            codes = self.locales.codes()
            docs = [localize(d, model.localized, codes, opts.locale, model.localized_inside) for d in docs]
        # every field before the projection, so that it picks the filled nulls like stored ones
        docs = [model.filler.doc(d) for d in docs]
        if projection:
            docs = [reference.project(d, projection) for d in docs]
            if model.type == "singleton":
                docs = [_keep_model(d, model.name, projection) for d in docs]
        placed: list[tuple[str, dict[str, Any]]] = []
        if opts.populate:
            placed = self.populate(model.name, docs, opts.populate, opts.locale, identity)
        self.attach_assets([(model, d) for d in docs] + [
            (m, d) for name, d in placed if (m := self.models.find(name)) is not None
        ])
        return docs

    @staticmethod
    def _splice_assets(
        rows: list[bytes], prefixes: list[bytes], resolve: Callable[[list[str]], dict[str, bytes]]
    ) -> list[bytes]:
        """Put the asset objects' JSON in place of the stored references
        (`"image":{"_id":"<24 hex>"}`) without decoding the items; see
        Model.asset_splice for why the bytes can only be those references."""
        spots: list[list[tuple[int, int, str]]] = []
        ids: list[str] = []
        for row in rows:
            found: list[tuple[int, int, str]] = []
            for prefix in prefixes:
                at = row.find(prefix)
                while at >= 0:
                    start = at + len(prefix) - 8  # the value: {"_id":"
                    end = at + len(prefix) + 26  # 24 hex, then "}
                    raw_id = row[end - 26:end - 2]
                    if row[end - 2:end] == b'"}' and _HEX24.fullmatch(raw_id):
                        found.append((start, end, raw_id.decode()))
                    at = row.find(prefix, at + 1)
            found.sort()
            spots.append(found)
            ids += [s[2] for s in found]
        if not ids:
            return rows
        objects = resolve(ids)
        out = []
        for row, found in zip(rows, spots, strict=True):
            if not found:
                out.append(row)
                continue
            parts: list[bytes] = []
            last = 0
            for start, end, asset_id in found:
                parts += [row[last:start], objects.get(asset_id, b"null")]
                last = end
            parts.append(row[last:])
            out.append(b"".join(parts))
        return out

    def _render_assets(self, model: Model, rows: list[bytes], markers: list[bytes]) -> list[bytes]:
        parsed = {i: orjson.loads(r) for i, r in enumerate(rows) if any(m in r for m in markers)}
        self.attach_assets([(model, d) for d in parsed.values()], copy=False)
        return [orjson.dumps(parsed[i]) if i in parsed else r for i, r in enumerate(rows)]

    def attach_assets(self, pairs: list[tuple[Model, dict[str, Any]]], copy: bool = True) -> None:
        """Replace asset references by the current asset objects (one query);
        a reference to a deleted asset becomes None."""
        if self.resolve_assets is None:
            return
        codes = self.locales.codes()
        slots: list[tuple[Any, Any, str]] = []
        for model, doc in pairs:
            if model.has_assets:
                _asset_slots(model.asset_fields(codes), doc, slots)
        if not slots:
            return
        found = self.resolve_assets(list({s[2] for s in slots}))
        for container, key, asset_id in slots:
            asset = found.get(asset_id)
            # a copy per place unless the answer is serialised at once
            container[key] = (dict(asset) if copy else asset) if asset is not None else None

    def populate_links(
        self, docs: list[dict[str, Any]], depth: int, locale: str | None, identity: Identity
    ) -> None:
        """Resolve content links anywhere inside documents that are not
        content items (pages, menus), with the rules of `populate=`."""
        placed = self.populate(_NOT_A_MODEL, docs, depth, locale, identity)
        self.attach_assets([(m, d) for name, d in placed if (m := self.models.find(name)) is not None])

    def populate(
        self, source: str, docs: list[dict[str, Any]], depth: int, locale: str | None, identity: Identity
    ) -> list[tuple[str, dict[str, Any]]]:
        """Resolve links of `docs` (items of model `source`) in place."""
        codes = self.locales.codes()

        def fetch(model_name: str, ids: list[str]) -> dict[str, dict[str, Any]]:
            linked = self.models.find(model_name)
            if linked is None or not identity.can(perm(model_name, "read")):
                return {}
            found = self.collection(linked).get_many(ids)
            out = {}
            for item_id, doc in found.items():
                if doc.get("_state") == 1:
                    out[item_id] = linked.filler.doc(
                        localize(doc, linked.localized, codes, locale, linked.localized_inside) if locale else doc)
            return out

        def link_keys(model_name: str) -> list[str] | None:
            linked = self.models.find(model_name)
            return linked.link_keys(codes) if linked is not None else None

        return populate(source, docs, min(depth, self.max_populate), fetch, link_keys)

    def item_raw(self, name: str, item_id: str, identity: Identity) -> bytes:
        """A published item by id as its stored JSON, for a request that
        needs no transformation."""
        model = self.readable(name, identity)
        raw = self.collection(model).get_raw(item_id, published_only=True) if is_id(item_id) else None
        if raw is None:
            raise NotFound("Item not found")
        # not kept: reads by id spread over every item and would push out the rows of list pages
        return self.render(model, [raw], ReadOptions(), None, identity, keep=False)[0]

    def item(self, name: str, item_id: str | None, opts: ReadOptions, identity: Identity) -> dict[str, Any]:
        """By id; else a singleton's item; else the first item matching filter."""
        return self.item_with_rev(name, item_id, opts, identity)[0]

    def item_with_rev(
        self, name: str, item_id: str | None, opts: ReadOptions, identity: Identity
    ) -> tuple[dict[str, Any], int]:
        """`item`, and the revision of the stored item it answers (for the
        ETag: the answer may leave `_rev` out by its `fields`); 0 for a
        singleton not stored yet. With `opts.drafts` (who may update the
        model: the studio's editor) an item in any state."""
        model = self.readable(name, identity)
        if opts.drafts:
            identity.require(perm(name, "update"))
        coll = self.collection(model)
        projection = parse_fields(opts.fields)  # bad parameters answer 400 before any lookup
        doc: dict[str, Any] | None
        if item_id is not None:
            doc = coll.get(item_id) if is_id(item_id) else None
            if doc is not None and doc.get("_state") != 1 and not opts.drafts:
                doc = None
        elif model.type == "singleton":
            doc = coll.find_one(None if opts.drafts else PUBLISHED) or self._singleton_defaults(model)
        else:
            doc = coll.find_one(self.query(model, opts.filter, identity), self._sort(opts.sort))
        if doc is None:
            raise NotFound("Item not found")
        return self.transform(model, [doc], opts, projection, identity)[0], doc_rev(doc)

    def _singleton_defaults(self, model: Model) -> dict[str, Any]:
        doc: dict[str, Any] = {f["name"]: f.get("default") for f in model.fields}
        doc["_model"] = model.name
        doc["_rev"] = 0  # not stored yet: a save naming revision 0 creates it
        return doc

    def tree(self, name: str, parent: str | None, opts: ReadOptions, identity: Identity) -> list[dict[str, Any]]:
        model = self.readable(name, identity)
        if model.type != "tree":
            raise BadRequest(f"Model {name} is not a tree")
        coll = self.collection(model)
        docs = coll.find(self.query(model, opts.filter, identity, opts.drafts), [(("_o",), 1)])
        projection = parse_fields(opts.fields)
        children: dict[str | None, list[dict[str, Any]]] = {}
        for doc in docs:
            children.setdefault(doc.get("_pid"), []).append(doc)
        if parent is not None and not any(d["_id"] == parent for d in docs):
            raise NotFound("Item not found")
        shaped = {id(d): d2 for d, d2 in zip(docs, self.transform(model, docs, opts, projection, identity), strict=True)}

        def build(pid: str | None, depth: int) -> list[dict[str, Any]]:
            out = []
            for doc in children.get(pid, []):
                node = dict(shaped[id(doc)])
                node["_children"] = build(doc["_id"], depth + 1) if depth < 64 else []
                out.append(node)
            return out

        return build(parent, 0)


def _asset_slots(fields: list[dict[str, Any]], container: dict[str, Any], slots: list[tuple[Any, Any, str]]) -> None:
    """Where asset references sit in `container`, following the definitions
    (top-level asset fields, and asset fields inside sets and inside the
    blocks of layout fields)."""
    for f in fields:
        value = container.get(f["name"])
        if value is None:
            continue
        if f["type"] == "asset":
            if isinstance(value, dict) and isinstance(value.get("_id"), str):
                slots.append((container, f["name"], value["_id"]))
            elif isinstance(value, list):
                slots.extend((value, i, v["_id"]) for i, v in enumerate(value)
                             if isinstance(v, dict) and isinstance(v.get("_id"), str))
        elif f["type"] == "set":
            subfields = [s for s in (f.get("opts") or {}).get("fields", []) if isinstance(s, dict) and "name" in s]
            for sub in value if isinstance(value, list) else [value]:
                if isinstance(sub, dict):
                    _asset_slots([{"i18n": False, **s} for s in subfields], sub, slots)
        elif f["type"] == "layout":
            known = {c["name"]: c for c in layout.components(f)}
            for block in layout.instances(value):
                component, data = known.get(block.get("component")), block.get("data")
                if component is not None and isinstance(data, dict):
                    _asset_slots([{"i18n": False, **s} for s in component["fields"]], data, slots)


def _keep_model(doc: dict[str, Any], name: str, projection: Projection) -> dict[str, Any]:
    """A singleton's item keeps `_model` under an inclusion projection, as
    in Cockpit (like `_id`, it goes only when excluded by name)."""
    if projection.include and "_model" not in doc:
        doc["_model"] = name
    return doc

