"""Search indexes (collection `searchmod/indexes`) that follow content, and
queries against them.

An index names a content model, the fields to search, a filter items must
match, extra locales and per-field weights. It follows content inside the
content write's transaction (`content.item.saved`, `content.item.remove`),
so after a commit search and content agree: an item that stops being
published or stops matching the filter leaves the index at once.

A rebuild writes every item again in chunks, each chunk reading its items
and writing their documents in one transaction, and stamps the rows with
the rebuild's number; rows with another stamp (items that left the index)
go at the end. Content writes during a rebuild go through the follower with
the same stamp, so nothing is lost or left stale.
"""

from __future__ import annotations

import re
import time
from typing import Any

from quire.auth.service import Identity
from quire.content.fields import is_empty
from quire.content.models import Model, ModelService
from quire.content.service import PUBLISHED, ContentService
from quire.errors import BadRequest, NotFound, ValidationError
from quire.events import Events
from quire.searchmod.engine import Engine
from quire.searchmod.fts import Doc, FtsEngine, Hit
from quire.searchmod.query import parse
from quire.searchmod.text import searchable
from quire.store import SqliteStore
from quire.store import match as reference
from quire.store.query import And, Cond, Node, parse_filter

INDEXES = "searchmod/indexes"
READ = "searchmod/read"
MANAGE = "searchmod/manage"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
DEFAULT = "default"
CHUNK = 500
MAX_LIMIT = 1000
MAX_OFFSET = 1_000_000
KEYS = ("label", "model", "fields", "filter", "locales", "weights")
# values of these field types are HTML (or may hold it): searched without markup
RICH_TEXT = {"wysiwyg", "markdown", "object", "set", "table"}


class SearchService:
    def __init__(self, store: SqliteStore, content: ContentService, models: ModelService, events: Events) -> None:
        self.store = store
        self.content = content
        self.models = models
        self.events = events
        self.engine: Engine = FtsEngine(store)
        self.indexes = store.collection(INDEXES)

    # -- definitions ------------------------------------------------------

    def all(self, identity: Identity) -> list[dict[str, Any]]:
        identity.require(MANAGE)
        return [self._described(d) for d in self.indexes.find(None, [(("name",), 1)])]

    def get(self, name: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        return self._described(self._definition(name))

    def _definition(self, name: str) -> dict[str, Any]:
        found = self.indexes.get(name) if NAME.match(name) else None
        if found is None:
            raise NotFound(f"Index '{name}' not found")
        return found

    def _described(self, index: dict[str, Any]) -> dict[str, Any]:
        return {**index, "documents": self.engine.count(index["name"])}

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
            if current is None or current["fields"] != index["fields"]:
                self.engine.create(name, index["fields"])  # new columns: a fresh index
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

    async def delete(self, name: str, identity: Identity) -> None:
        identity.require(MANAGE)
        async with self.store.atomic():
            self._definition(name)
            self.indexes.delete(name)
            self.engine.drop(name)

    # -- building and following -------------------------------------------

    async def rebuild(self, name: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        async with self.store.atomic():
            index = self._definition(name)
            self.indexes.update(name, {"build": index["build"] + 1})
        await self.build(name)
        return self._described(self._definition(name))

    async def build(self, name: str) -> int:
        """Write every published item that matches the filter, chunk by
        chunk (other writers run between chunks), then drop the rows the
        build did not write. Answers the number of items indexed."""
        written = 0
        after = ""
        known: set[str] = set()  # words already in the vocabulary
        while True:
            async with self.store.atomic():
                index = self._definition(name)
                model = self.models.get(index["model"])
                # The chunk walks the primary key alone (a `_state` condition
                # would make SQLite scan its index over every item and sort,
                # once per chunk); which items belong is decided here.
                rows = self.content.collection(model).find(Cond(("_id",), "gt", after), [(("_id",), 1)], CHUNK)
                wanted = And([PUBLISHED, parse_filter(index["filter"])])
                items = [item for item in rows if reference.matches(wanted, item)]
                self._write(index, model, items, known)
                written += len(items)
                if len(rows) < CHUNK:
                    self.engine.delete_stale(name, index["build"])
                    self.indexes.update(name, {"built_at": int(time.time())})
                    return written
                after = rows[-1]["_id"]

    def _write(self, index: dict[str, Any], model: Model, items: list[dict[str, Any]],
               known: set[str] | None = None) -> None:
        fields = index["fields"]
        docs = []
        rich = {f for f in fields if model.by_name.get(f, {}).get("type") in RICH_TEXT}
        for item in items:
            for locale in [DEFAULT, *index["locales"]]:
                # fields the item lacks stay missing (as in the item: `$exists` agrees with content)
                stored = {f: _localized(item, f, locale, model) for f in fields if f in item}
                texts = [searchable(stored.get(f), html=f in rich) for f in fields]
                docs.append(Doc(item["_id"], locale, stored, texts))
        self.engine.upsert(index["name"], fields, docs, index["build"], known)

    def _following(self, model: str) -> list[dict[str, Any]]:
        return self.indexes.find({"model": model}) if self.indexes.exists() else []

    async def item_saved(self, model: str, item: dict[str, Any], **_: Any) -> None:
        for index in self._following(model):
            definition = self.models.find(model)
            keep = item.get("_state") == 1 and reference.matches(parse_filter(index["filter"]), item)
            if keep and definition is not None:
                self._write(index, definition, [item])
            else:
                self.engine.delete(index["name"], item["_id"])

    async def item_removed(self, model: str, item: dict[str, Any], **_: Any) -> None:
        for index in self._following(model):
            self.engine.delete(index["name"], item["_id"])

    def model_removed(self, model: str, **_: Any) -> None:
        for index in self._following(model):
            self.engine.clear(index["name"])  # the model's items are gone

    def model_renamed(self, model: str, renames: dict[str, str], keys: dict[str, str], **_: Any) -> None:
        """Indexes of the model follow renamed fields, in the rename's
        transaction: their fields, weights and filter (`keys`: every stored
        key that moved, per-locale ones included), and the values stored
        with their documents. Nothing is indexed again."""
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
            if moved:
                self.engine.rename_fields(index["name"], moved)

    # -- queries ----------------------------------------------------------

    def index_for(self, model: str) -> str | None:
        """The index that covers a model's items, for a search box over its
        list (the studio's): one without a filter first, as it holds every
        published item; None when no index follows the model."""
        indexes = sorted(self._following(model), key=lambda d: (bool(d.get("filter")), d["name"]))
        return indexes[0]["name"] if indexes else None

    def matching_ids(self, name: str, text: str, limit: int = MAX_LIMIT) -> tuple[list[str], int]:
        """Ids of the items an index finds for `text`, best first, at most
        `limit`, and how many it finds in all; nothing for a query with
        nothing to search. No permission is checked here: the caller reads
        the items through content, with the reader's own (ids alone say
        nothing)."""
        query = parse(text)
        if not text.strip() or query.empty:
            return [], 0
        index = self._definition(name)
        weights = [float(index["weights"].get(f, 1)) for f in index["fields"]]
        hits, total = self.engine.search(name, query, DEFAULT, 1 + len(index["locales"]), None, weights,
                                         min(limit, MAX_LIMIT), 0)
        return list(dict.fromkeys(h.id for h in hits)), total


    def search(self, name: str, params: dict[str, Any], identity: Identity) -> dict[str, Any]:
        identity.require(READ)
        index = self._definition(name)
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
        weights = [float(index["weights"].get(f, 1)) for f in index["fields"]]
        locales = 1 + len(index["locales"])
        hits, total = self.engine.search(name, query, locale, locales, node, weights, limit, offset)
        shown = self._shown_fields(index, params.get("fields"))
        if params.get("highlight"):
            self.engine.highlight(name, index["fields"], hits, query, shown)
        return {"hits": [_answer(h, shown) for h in hits], "total": total, "query": text,
                "limit": limit, "offset": offset}

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


def _answer(hit: Hit, shown: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {"_id": hit.id, "_score": float(f"{hit.score:.6g}")}
    out.update((f, hit.data.get(f)) for f in shown)
    if "_formatted" in hit.data:
        out["_formatted"] = hit.data["_formatted"]
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
