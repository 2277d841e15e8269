"""Search indexes (collection `searchmod/indexes`) that follow content, and
queries against them.

An index names a content model, the fields to search, a filter items must
match, extra locales and per-field weights. It follows content through
the queue of `follow.py`: a content write queues its item in its own
transaction and the index catches up right after the commit (in the
writing process at once unless it did within `CATCH_UP_EVERY`, else and
from any other within `follow.POLL` seconds). A search catches up first
whenever the database changed, so it always finds what was written
before it.

A build (creating or changing an index, a rebuild) writes every item into
a new generation of the index while searches keep answering from the live
one, then switches it in; queue rows written meanwhile are written into
the new generation after the switch, so nothing is lost or left stale.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.cache import Cache
from quire.content import types
from quire.content.fields import is_empty
from quire.content.models import Model, ModelService
from quire.content.service import PUBLISHED, ContentService
from quire.errors import BadRequest, NotFound, Unavailable, ValidationError
from quire.events import Events
from quire.outages import Outage
from quire.schemaparts import Effect, SchemaPart, without
from quire.searchmod.engine import Doc, Engine, Hit, Writer
from quire.searchmod.follow import POLL, Follower, Marks, ensure_queue, push, queue_end
from quire.searchmod.highlight import Marker
from quire.searchmod.index import TantivyEngine
from quire.searchmod.pgengine import PostgresEngine
from quire.searchmod.query import Query, parse
from quire.searchmod.text import searchable
from quire.store import PostgresStore, Store
from quire.store import match as reference
from quire.store.query import And, Cond, Node, parse_filter

INDEXES = "searchmod/indexes"
READ = "searchmod/read"
MANAGE = "searchmod/manage"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
DEFAULT = "default"
CHUNK = 500
# A commit catches up at most this often per process; the commits in
# between leave their rows to the poller (`follow.POLL`) or the next round.
CATCH_UP_EVERY = 0.05
log = logging.getLogger("quire.search")
MAX_LIMIT = 1000
MAX_OFFSET = 1_000_000
# what `Engine.search` takes before the page: index, generation, query, locale, weights
Searched = tuple[str, int, Query, str | None, list[float]]
KEYS = ("label", "model", "fields", "filter", "locales", "weights")


class SearchService:
    def __init__(self, store: Store, content: ContentService, models: ModelService, events: Events,
                 cache: Cache, root: Path) -> None:
        self.store = store
        self._kept = cache.region("searchmod.indexes", 256)  # definitions and live marks, per generation
        self.content = content
        self.models = models
        self.events = events
        self.root = root
        # the store's own database when it is PostgreSQL: every instance
        # searches the same index; else the embedded engine beside the data
        self.engine: Engine = (PostgresEngine(store.open_stream_connection) if isinstance(store, PostgresStore)
                               else TantivyEngine(self.root))
        self.indexes = store.collection(INDEXES)
        ensure_queue(store)
        self.follower = Follower(store, self.engine, self.root, self._all_definitions, self._docs)
        self._poller: asyncio.Task[None] | None = None
        self._last_round = float("-inf")  # when a commit of this process last caught up
        self.outage = Outage(log, "search")
        # One round at a time in this process: the engine's writer lock is a
        # file lock, which holds between processes, not between threads.
        self._round_lock = threading.Lock()
        self._background: Background | None = None

    def start(self) -> None:
        """On server start: catch up with what was queued while no server
        ran, then follow in the background (the embedded engine: a thread
        of its own) or by polling on the event loop (PostgreSQL)."""
        self._catch_up("at start")
        if isinstance(self.engine, TantivyEngine):
            # A round commits tantivy, which syncs its files to disk (about
            # 0.1 s here): on the event loop that held every request of the
            # worker, the answers of reads beside writes waited seconds.
            self._background = Background(self)
            self._background.start()
        else:
            self._poller = asyncio.get_running_loop().create_task(self._poll())

    def close(self, catch_up: bool = True) -> None:
        """Stop; with `catch_up`, index what is queued first (a command's
        last writes: no later round of this process would)."""
        if self._background is not None:
            self._background.stop()
            self._background = None
        if catch_up and self.follower.pending():
            self._catch_up("at close")
        if self._poller is not None:
            self._poller.cancel()
            self._poller = None

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(POLL)
            self.store.mark_stale()  # another process's commit moves the store's generation
            self._catch_up("")

    def _catch_up(self, when: str) -> None:
        """Write what is queued; never raises. The database away or busy is
        expected weather: one warning line per outage (and one when it is
        back), no traceback every round; other failures are logged whole."""
        try:
            if self.follower.pending():  # looking may need the database too
                with self._round_lock:
                    self.follower.catch_up()
        except Unavailable as exc:
            self.outage.failed(exc)
            return
        except Exception:  # noqa: BLE001 (a broken index must not stop the server; the next round tries again)
            log.exception("search: catching up %sfailed", when + " " if when else "")
            return
        self.outage.succeeded()

    def _all_definitions(self) -> list[dict[str, Any]]:
        return self.indexes.find() if self.indexes.exists() else []

    # -- definitions ------------------------------------------------------

    def all(self, identity: Identity) -> list[dict[str, Any]]:
        identity.require(MANAGE)
        return [self._described(d) for d in self.indexes.find(None, [(("name",), 1)])]

    def listed(self, identity: Identity) -> list[dict[str, Any]]:
        """The indexes with their document counts, for a role that may
        search (`searchmod/read`) or manage them."""
        if not identity.can(MANAGE):
            identity.require(READ)
        return [self._described(d) for d in self.indexes.find(None, [(("name",), 1)])]

    def progress(self, name: str) -> dict[str, Any] | None:
        """How far a build of the index got (`done` of `total` items, and
        `beat`, when it last moved); None when no build runs. Kept in the
        store's marks, so every worker and a reloaded page see it."""
        raw = self.store.get_meta(f"searchmod/progress/{name}")
        return orjson.loads(raw) if raw else None

    def get(self, name: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        return self._described(self._definition(name))

    def _definition(self, name: str) -> dict[str, Any]:
        found = self.indexes.get(name) if NAME.match(name) else None
        if found is None:
            raise NotFound(f"Index '{name}' not found")
        return found

    def _described(self, index: dict[str, Any]) -> dict[str, Any]:
        if self.follower.pending():  # the count includes every committed write, as a search does
            with self._round_lock:
                self.follower.catch_up()
        live = Marks(self.store, index["name"]).live()
        count = self.engine.count(index["name"], live["generation"], DEFAULT) if live else 0
        return {**index, "documents": count}

    async def put(self, name: str, body: Any, identity: Identity) -> dict[str, Any]:
        """Create or change an index, then build it."""
        identity.require(MANAGE)
        if not NAME.match(name):
            raise BadRequest("Index names are letters, digits, - and _, starting with a letter", fields=["name"])
        index = self._checked(name, body)
        now = int(time.time())
        async with self.store.atomic():
            current = self.indexes.get(name)
            clash = [d["name"] for d in self.indexes.find() if d["name"].lower() == name.lower() and d["name"] != name]
            if clash:
                raise BadRequest(f"Index {clash[0]} exists: index names are not case-sensitive", fields=["name"])
            index.update(_created=current["_created"] if current else now, _modified=now,
                         build=(current or {}).get("build", 0) + 1, built_at=None)
            self.indexes.replace(index)
        await self.build(name)
        return self._described(self._definition(name))

    def _checked(self, name: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise BadRequest('Body must be an object like {"model": "posts", "fields": ["title", "body"]}')
        errors: dict[str, str] = {}
        for key in body:
            if key not in KEYS and key not in ("name", "_id", "_created", "_modified", "build", "built_at",
                                               "documents"):
                errors[key] = "is not a property of an index"
        model_name = body.get("model")
        model = self.models.find(model_name) if isinstance(model_name, str) else None
        if model is None:
            errors["model"] = "must name a content model"
        elif model.type == "singleton":
            errors["model"] = "must be a collection or tree model"
        fields = body.get("fields")
        if not isinstance(fields, list) or not fields or not all(isinstance(f, str) for f in fields):
            errors["fields"] = "must be a non-empty list of field names"
        elif model is not None:
            unknown = [f for f in fields if f not in model.by_name]
            if unknown or len(set(fields)) != len(fields):
                errors["fields"] = f"must be fields of {model.name}, each once (not {', '.join(unknown) or 'repeated'})"
        spec = body.get("filter") or {}
        try:
            parse_filter(spec)
        except BadRequest as exc:
            errors["filter"] = exc.message
        codes = self.content.locales.codes()
        locales = body.get("locales") or []
        if not isinstance(locales, list) or any(loc not in codes for loc in locales):
            errors["locales"] = f"must list locales of the project ({', '.join(codes) or 'none configured'})"
        weights = body.get("weights") or {}
        if not isinstance(weights, dict) or any(
            k not in (fields or []) or isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1000
            for k, v in weights.items()
        ):
            errors["weights"] = "must map indexed fields to numbers above 0, at most 1000"
        label = body.get("label", name)
        if not isinstance(label, str):
            errors["label"] = "must be a string"
        if errors:
            raise ValidationError("index", errors)
        assert model is not None and isinstance(fields, list)
        return {"_id": name, "name": name, "label": label, "model": model.name, "fields": fields,
                "filter": spec, "locales": list(dict.fromkeys(locales)), "weights": weights}

    def schema_part(self) -> SchemaPart:
        """Search index definitions in schema snapshots; their documents are
        built from the content, so no change loses data."""
        def entries() -> list[dict[str, Any]]:
            return [without(d, "_id", "_created", "_modified", "build", "built_at") for d in self._all_definitions()]

        async def apply(current: dict[str, Any] | None, wanted: dict[str, Any] | None, identity: Any) -> None:
            # checked here, not before: the index may name a model the same plan adds
            if wanted is None:
                await self.delete(str((current or {}).get("name")), identity)
            else:
                await self.put(str(wanted["name"]), without(wanted, "name"), identity)

        def check(wanted: dict[str, Any]) -> None:
            # the rest is checked when applied: the model may be one the same plan adds
            extra = sorted(set(wanted) - set(KEYS) - {"name"})
            if extra:
                raise BadRequest(f"unknown keys {', '.join(extra)} (an index has name, {', '.join(sorted(KEYS))})")

        return SchemaPart("searchIndexes", entries, lambda current, wanted: Effect(), apply, check=check)

    async def delete(self, name: str, identity: Identity) -> None:
        identity.require(MANAGE)
        async with self.store.atomic():
            self._definition(name)
            self.indexes.delete(name)
            Marks(self.store, name).forget()
        with self.engine.writer_lock(name):
            self.engine.drop(name)

    # -- building and following -------------------------------------------

    async def rebuild(self, name: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        async with self.store.atomic():
            index = self._definition(name)
            self.indexes.update(name, {"build": index["build"] + 1})
        await self.build(name)
        return self._described(self._definition(name))

    async def build(self, name: str, stamp: bool = True) -> int:
        """Write every published item that matches the filter into a new
        generation, chunk by chunk (other requests run between chunks),
        then switch it in and write what was queued since the build
        began. Answers the number of items indexed. `stamp`: note the
        time in the definition's `built_at` (`rebuild_moved` keeps the
        definition as it came)."""
        marks = Marks(self.store, name)
        async with self.store.atomic():
            index = self._definition(name)
            generation, fields = index["build"], index["fields"]
            began = queue_end(self.store)
            marks.set_number("building", began)
            self._set_progress(name, {"done": 0, "total": self._total(index), "beat": time.time()})
        writer = self.engine.writer(name, generation, len(fields), fresh=True)
        try:
            written = await self._fill(writer, index)
            writer.commit()
        except BaseException:
            writer.abort()
            raise
        with self.engine.writer_lock(name):
            async with self.store.atomic():
                live = marks.live()
                current = self.indexes.get(name)
                if current is not None and current["build"] == generation and (
                        live is None or live["generation"] < generation):
                    marks.set_live(generation, fields)
                    marks.set_number("applied", began)
                    marks.set_number("building", None)
                    if stamp:
                        self.indexes.update(name, {"built_at": int(time.time())})
                if current is None or current["build"] == generation:  # a newer build shows its own
                    self._set_progress(name, None)
            self.engine.drop(name, keep=(marks.live() or {}).get("generation"))
        self.follower.catch_up(name)
        return written

    async def rebuild_moved(self, before: list[str] | tuple[str, ...] = ()) -> dict[str, int]:
        """After the store's documents were copied in from another database
        (`quire migrate`): the marks and the engine's data of every index
        are not those of these documents, so each is forgotten, and every
        defined index is built again under the generation its definition
        holds, the definition left as it came. `before`: the indexes
        defined here before the copy; the data of those no longer defined
        goes too. Answers the items indexed, per index."""
        names = [d["name"] for d in self._all_definitions()]
        for name in dict.fromkeys([*before, *names]):
            async with self.store.atomic():
                Marks(self.store, name).forget()
            with self.engine.writer_lock(name):
                self.engine.drop(name)
        return {name: await self.build(name, stamp=False) for name in names}

    async def _fill(self, writer: Writer, index: dict[str, Any]) -> int:
        """Every item that belongs in the index, into a fresh generation."""
        model = self.models.get(index["model"])
        wanted = And([PUBLISHED, parse_filter(index["filter"])])
        written, after, seen = 0, "", 0
        total = self._total(index)
        while True:
            # The chunk walks the primary key alone (a `_state` condition
            # would make SQLite scan its index over every item and sort,
            # once per chunk); which items belong is decided here.
            rows = self.content.collection(model).find(Cond(("_id",), "gt", after), [(("_id",), 1)], CHUNK)
            items = [item for item in rows if reference.matches(wanted, item)]
            for item in items:
                writer.add(self._item_docs(index, model, item))
            written += len(items)
            seen += len(rows)
            if len(rows) < CHUNK:
                return written
            after = rows[-1]["_id"]
            async with self.store.atomic():
                self._set_progress(index["name"], {"done": seen, "total": total, "beat": time.time()})
            await asyncio.sleep(0)

    def _total(self, index: dict[str, Any]) -> int:
        model = self.models.find(index["model"])
        return self.content.collection(model).count() if model is not None else 0

    def _set_progress(self, name: str, progress: dict[str, Any] | None) -> None:
        if progress is None:
            self.store.delete_meta(f"searchmod/progress/{name}")
        else:
            self.store.set_meta(f"searchmod/progress/{name}", orjson.dumps(progress).decode())

    def _item_docs(self, index: dict[str, Any], model: Model, item: dict[str, Any]) -> list[Doc]:
        fields = index["fields"]
        rich = {f for f in fields if model.by_name.get(f, {}).get("type") in types.rich_types()}
        docs = []
        for locale in [DEFAULT, *index["locales"]]:
            texts = [searchable(_localized(item, f, locale, model), html=f in rich) if f in item else ""
                     for f in fields]
            docs.append(Doc(item["_id"], locale, texts))
        return docs

    def _docs(self, index: dict[str, Any], ids: list[str], store: Store | None = None) -> dict[str, list[Doc] | None]:
        """Each item's documents as it is now: None when it is not in the
        index (deleted, not published, not matching the filter). `store`:
        the store object to read the items with (the background thread's)."""
        model = self.models.find(index["model"])
        if model is None:
            return dict.fromkeys(ids)
        coll = self.content.collection(model)
        if store is not None:
            coll = store.collection(coll.name, coll.hints)
        items = coll.get_many(ids)
        wanted = And([PUBLISHED, parse_filter(index["filter"])])
        return {i: self._item_docs(index, model, items[i]) if i in items and reference.matches(wanted, items[i])
                else None for i in ids}

    def _following(self, model: str) -> list[dict[str, Any]]:
        return self.indexes.find({"model": model}) if self.indexes.exists() else []

    def _queue(self, model: str, item_id: str | None) -> None:
        """Queue the item for every index of its model, in the write's
        transaction; catch up once that commits."""
        indexes = self._following(model)
        for index in indexes:
            push(self.store, index["name"], item_id)
        if indexes:
            self.store.after_commit(self._after_commit)

    def _after_commit(self) -> None:
        """Catch up after a commit, unless this process did within
        `CATCH_UP_EVERY`: then the poller (or a later commit, or a search,
        which catches up first) takes these rows. A round per save (a
        tantivy commit each, on the event loop) held the writers' lock and
        the worker's reads under a burst of writes. A failure leaves the
        rows to the next round."""
        if self._background is not None:
            self._background.wake()  # a server: its thread takes the rows
            return
        now = time.monotonic()
        if now - self._last_round < CATCH_UP_EVERY:
            return
        self._last_round = now
        self._catch_up("after a commit")

    async def item_saved(self, model: str, item: dict[str, Any], **_: Any) -> None:
        self._queue(model, item["_id"])

    async def item_removed(self, model: str, item: dict[str, Any], **_: Any) -> None:
        self._queue(model, item["_id"])

    def model_removed(self, model: str, **_: Any) -> None:
        self._queue(model, None)  # the model's items are gone

    def model_renamed(self, model: str, renames: dict[str, str], keys: dict[str, str], **_: Any) -> None:
        """Indexes of the model follow renamed fields, in the rename's
        transaction: their fields, weights and filter (`keys`: every stored
        key that moved, per-locale ones included). Nothing is indexed
        again (the engine knows fields by position; hits read the items)."""
        for index in self._following(model):
            moved = {old: new for old, new in renames.items() if old in index["fields"]}
            spec = _renamed_filter(index["filter"], keys)
            if not moved and spec == index["filter"]:
                continue
            self.indexes.update(index["name"], {
                "fields": [renames.get(f, f) for f in index["fields"]],
                "weights": {renames.get(f, f): w for f, w in index["weights"].items()},
                "filter": spec,
            })
            marks = Marks(self.store, index["name"])
            live = marks.live()
            if moved and live is not None:
                marks.set_live(live["generation"], [renames.get(f, f) for f in live["fields"]])

    # -- queries ----------------------------------------------------------

    def index_for(self, model: str) -> str | None:
        """The index that covers a model's items, for a search box over its
        list (the studio's): one without a filter first, as it holds every
        published item; None when no index follows the model."""
        indexes = sorted(self._following(model), key=lambda d: (bool(d.get("filter")), d["name"]))
        return indexes[0]["name"] if indexes else None

    def covers(self, model: str) -> bool:
        """Whether an index covers a model's items (`modules.ItemSearch`)."""
        return self.index_for(model) is not None

    def matching(self, model: str, words: str, limit: int) -> tuple[list[str], int]:
        """The items of `model` its index finds (`modules.ItemSearch`)."""
        index = self.index_for(model)
        return self.matching_ids(index, words, limit) if index is not None else ([], 0)

    def matching_ids(self, name: str, text: str, limit: int = MAX_LIMIT) -> tuple[list[str], int]:
        """Ids of the items an index finds for `text`, best first, at most
        `limit`, and how many it finds in all; nothing for a query with
        nothing to search. No permission is checked here: the caller reads
        the items through content, with the reader's own (ids alone say
        nothing)."""
        query = parse(text)
        if not text.strip() or query.empty:
            return [], 0
        index = self._read_definition(name)
        live = self._live(name)
        if live is None:
            return [], 0
        hits, total = self.engine.search(name, live["generation"], query, DEFAULT if index["locales"] else None,
                                         self._weights(index, live), min(limit, MAX_LIMIT), 0)
        return list(dict.fromkeys(h.id for h in hits)), total

    def _live(self, name: str) -> dict[str, Any] | None:
        """The live generation, once this process has written what is
        queued (when anything was written since it last looked)."""
        if self.follower.pending():
            with self._round_lock:
                self.follower.catch_up()
        return self._kept.fetch(("live", name), Marks(self.store, name).live)

    def _read_definition(self, name: str) -> dict[str, Any]:
        """`_definition` for searches, kept while nothing is written (not to be changed)."""
        return self._kept.fetch(("index", name), lambda: self._definition(name))

    @staticmethod
    def _weights(index: dict[str, Any], live: dict[str, Any]) -> list[float]:
        return [float(index["weights"].get(f, 1)) for f in live["fields"]]

    def search(self, name: str, params: dict[str, Any], identity: Identity) -> dict[str, Any]:
        identity.require(READ)
        index = self._read_definition(name)
        text = params.get("q")
        query = parse(text or "")
        if not text or not text.strip() or query.empty:
            raise BadRequest("Search query required")
        limit, offset = params.get("limit"), params.get("offset")
        limit = 50 if limit is None else limit
        offset = offset or 0
        if limit > MAX_LIMIT:
            raise BadRequest(f"<limit> must be at most {MAX_LIMIT}")
        if offset > MAX_OFFSET:
            raise BadRequest(f"<offset> must be at most {MAX_OFFSET}")
        locale = params.get("locale") or DEFAULT
        if locale not in index["locales"]:
            locale = DEFAULT  # as content reads: an unknown locale answers the default values
        node = self._filter(params.get("filter"))
        shown = self._shown_fields(index, params.get("fields"))
        live = self._live(name)
        model = self.models.find(index["model"])
        found: list[tuple[Hit, dict[str, Any]]] = []
        total = 0
        if live is not None and model is not None:
            args: Searched = (name, live["generation"], query, locale if index["locales"] else None,
                              self._weights(index, live))
            if node is None:
                hits, total = self.engine.search(*args, limit, offset)
                found = self._stored(model, index, locale, hits)
            else:
                found, total = self._filtered(args, model, index, locale, node, limit, offset)
        answers = [_answer(hit, stored, shown) for hit, stored in found]
        if params.get("highlight") and found:
            self._highlight(index, live or {}, model, query, shown, found, answers)
        return {"hits": answers, "total": total, "query": text, "limit": limit, "offset": offset}

    def _stored(self, model: Model, index: dict[str, Any], locale: str,
                hits: list[Hit]) -> list[tuple[Hit, dict[str, str]]]:
        """Each hit with its item's values of the index's fields in the
        locale, as JSON text (answered as they are, without decoding the
        item); fields the item lacks stay missing, as in the item. An item
        written since the index last caught up is left out."""
        fields = index["fields"]
        localized = [f for f in fields if locale != DEFAULT and model.by_name.get(f, {}).get("i18n")]
        names = ["_state", *fields, *(f"{f}_{locale}" for f in localized)]
        rows = self.content.collection(model).json_values([h.id for h in hits], names)
        out = []
        for hit in hits:
            row = rows.get(hit.id)
            if row is None or row[0] != "1":
                continue
            values = dict(zip(names[1:], row[1:], strict=True))
            for f in localized:
                own = values.pop(f"{f}_{locale}")
                if own is not None and not is_empty(orjson.loads(own)):
                    values[f] = own
            out.append((hit, {f: v for f, v in values.items() if v is not None}))
        return out

    def _filtered(self, args: Searched, model: Model, index: dict[str, Any], locale: str, node: Node,
                  limit: int, offset: int) -> tuple[list[tuple[Hit, dict[str, Any]]], int]:
        """A filter over the values: every hit is read and tested, best
        first (the cost grows with the matches, not with the page)."""
        _, every = self.engine.search(*args, 1, 0)
        hits, _ = self.engine.search(*args, max(every, 1), 0) if every else ([], 0)
        kept = []
        for start in range(0, len(hits), CHUNK):
            kept += [(hit, stored) for hit, stored in self._stored(model, index, locale, hits[start:start + CHUNK])
                     if reference.matches(node, {"_id": hit.id, **_decoded(stored)})]
        return kept[offset:offset + limit], len(kept)

    def _highlight(self, index: dict[str, Any], live: dict[str, Any], model: Model | None, query: Query,
                   shown: list[str], found: list[tuple[Hit, dict[str, Any]]], answers: list[dict[str, Any]]) -> None:
        """`_formatted`: each shown field's searchable text with the matches marked."""
        variants = {v for w in query.words
                    for v in self.engine.variants(index["name"], live["generation"], len(live["fields"]), w)}
        marker = Marker(query, variants)
        rich = {f for f in shown if model is not None and model.by_name.get(f, {}).get("type") in types.rich_types()}
        for (_, stored), answer in zip(found, answers, strict=True):
            values = _decoded(stored)
            answer["_formatted"] = {f: marker.format(searchable(values.get(f), html=f in rich)) for f in shown}

    @staticmethod
    def _filter(spec: Any) -> Node | None:
        if spec is None:
            return None
        if not isinstance(spec, dict):
            raise BadRequest("filter must be an object")
        return parse_filter(spec)

    @staticmethod
    def _shown_fields(index: dict[str, Any], wanted: str | None) -> list[str]:
        names = [f.strip() for f in (wanted or "").split(",") if f.strip()]
        if not names:
            return list(index["fields"])
        unknown = [f for f in names if f not in index["fields"]]
        if unknown:
            raise BadRequest(f"<fields> names fields the index does not store: {', '.join(unknown)}")
        return names


def _localized(item: dict[str, Any], field: str, locale: str, model: Model) -> Any:
    if locale != DEFAULT and model.by_name.get(field, {}).get("i18n"):
        value = item.get(f"{field}_{locale}")
        if not is_empty(value):
            return value
    return item.get(field)


def _decoded(stored: dict[str, str]) -> dict[str, Any]:
    return {f: orjson.loads(v) for f, v in stored.items()}


def _answer(hit: Hit, stored: dict[str, Any], shown: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"_id": hit.id, "_score": float(f"{hit.score:.6g}")}
    # JSON text as read from the item (a field the item lacks is null)
    out.update((f, orjson.Fragment(stored[f]) if f in stored else None) for f in shown)
    return out


def _renamed_filter(spec: Any, keys: dict[str, str]) -> Any:
    """A stored filter naming top-level keys by their new names (`title`,
    `title.sub`, `title_de`), through `$and`, `$or` and `$nor`; what sits
    under a field (its operators, `$elemMatch` documents) is left alone."""
    if isinstance(spec, list):
        return [_renamed_filter(s, keys) for s in spec]
    if not isinstance(spec, dict):
        return spec
    out = {}
    for key, value in spec.items():
        if key in ("$and", "$or", "$nor"):
            out[key] = _renamed_filter(value, keys)
        elif key.startswith("$"):
            out[key] = value
        else:
            head, dot, rest = key.partition(".")
            out[keys.get(head, head) + dot + rest] = value
    return out


class Background:
    """A server's follower thread: it writes the rows queued by this
    process's commits (woken after each, the commits of a round's time
    sharing the next round) and those other processes left (every `POLL`
    seconds), with a store object of its own, off the event loop."""

    def __init__(self, search: SearchService) -> None:
        self.search = search
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="quire-search", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(10)

    def _run(self) -> None:
        search = self.search
        store = search.store.clone(listen=False)
        indexes = store.collection(INDEXES)
        follower = Follower(store, search.engine, search.root,
                            lambda: indexes.find() if indexes.exists() else [],
                            lambda index, ids: search._docs(index, ids, store))
        try:
            while not self._stop.is_set():
                self._wake.wait(POLL)
                self._wake.clear()
                if self._stop.is_set():
                    break
                store.mark_stale()  # commits of the event loop's store and of other processes
                try:
                    if follower.pending():
                        with search._round_lock:
                            follower.catch_up()
                except Unavailable as exc:
                    search.outage.failed(exc)
                    continue
                except Exception:  # noqa: BLE001 (the next round tries again)
                    log.exception("search: catching up failed")
                    continue
                search.outage.succeeded()
        finally:
            store.close()
