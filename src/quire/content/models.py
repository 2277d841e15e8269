"""Model definitions: validation, storage in `system/models`, a per-process
cache, expression indexes, and the store hints derived from field types."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from quire.cache import SystemCache, bump_system_version
from quire.content.fields import FIELD_NAME, HINTS, FieldError, validate_definition_field
from quire.errors import BadRequest, NotFound
from quire.store import Collection, SqliteStore
from quire.store.sqlcompile import Hints

MODELS = "system/models"
KINDS = ("singleton", "collection", "tree")
SYSTEM_HINTS: Hints = {
    "_state": "number", "_created": "number", "_modified": "number", "_o": "number",
    "_pid": "text", "_cby": "text", "_mby": "text", "_model": "text",
}
SYSTEM_FIELDS = set(SYSTEM_HINTS) | {"_id"}
DEFAULT_INDEXES = [["_state"]]


def collection_name(model: str) -> str:
    return f"content/{model}"


@dataclass
class Model:
    name: str
    type: str
    label: str
    fields: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    indexes: list[list[str]] = field(default_factory=list)
    _created: int = 0
    _modified: int = 0
    _collection: Collection | None = field(default=None, repr=False, compare=False)

    @property
    def by_name(self) -> dict[str, dict[str, Any]]:
        return {f["name"]: f for f in self.fields}

    @property
    def localized(self) -> list[str]:
        return [f["name"] for f in self.fields if f["i18n"]]

    @property
    def collection(self) -> str:
        return collection_name(self.name)

    def hints(self, locales: list[str]) -> Hints:
        hints = dict(SYSTEM_HINTS)
        for f in self.fields:
            hint = HINTS.get(f["type"])
            if hint and not f["multiple"]:
                hints[f["name"]] = hint
                if f["i18n"]:
                    for loc in locales:
                        hints[f"{f['name']}_{loc}"] = hint
        return hints

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "type": self.type,
            "fields": self.fields,
            "meta": self.meta,
            "indexes": self.indexes,
            "_created": self._created,
            "_modified": self._modified,
        }


def parse_model(name: str, body: Any) -> Model:
    """A model definition from a request body; 400 naming what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("Model definition must be an object")
    if not FIELD_NAME.match(name):
        raise BadRequest("Model name must match ^[A-Za-z][A-Za-z0-9_]*$", fields=["name"])
    if body.get("name", name) != name:
        raise BadRequest("Model name in the body differs from the path", fields=["name"])
    unknown = set(body) - {"name", "label", "type", "fields", "meta", "indexes", "_created", "_modified"}
    if unknown:
        raise BadRequest(f"Unknown model keys: {', '.join(sorted(unknown))}", fields=sorted(unknown))
    kind = body.get("type", "collection")
    if kind not in KINDS:
        raise BadRequest(f"Model type must be one of {', '.join(KINDS)}", fields=["type"])
    raw_fields = body.get("fields", [])
    if not isinstance(raw_fields, list):
        raise BadRequest("fields must be a list", fields=["fields"])
    fields = []
    try:
        for i, raw in enumerate(raw_fields):
            fields.append(validate_definition_field(raw, i))
    except FieldError as exc:
        raise BadRequest(str(exc), fields=["fields"]) from None
    names = [f["name"] for f in fields]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise BadRequest(f"Duplicate field names: {', '.join(dupes)}", fields=["fields"])
    meta = body.get("meta") or {}
    if not isinstance(meta, dict):
        raise BadRequest("meta must be an object", fields=["meta"])
    indexes = _parse_indexes(body.get("indexes") or [], set(names))
    label = body.get("label") or name
    if not isinstance(label, str):
        raise BadRequest("label must be a string", fields=["label"])
    return Model(name, kind, label, fields, meta, indexes)


def _parse_indexes(raw: Any, names: set[str]) -> list[list[str]]:
    if not isinstance(raw, list):
        raise BadRequest("indexes must be a list of field names (or lists of them)", fields=["indexes"])
    out = []
    for entry in raw:
        columns = entry if isinstance(entry, list) else [entry]
        if not columns or not all(isinstance(c, str) for c in columns):
            raise BadRequest("indexes must be a list of field names (or lists of them)", fields=["indexes"])
        for col in columns:
            base = col.split(":")[0]
            if base not in names and base not in SYSTEM_FIELDS:
                raise BadRequest(f"Index on unknown field {col}", fields=["indexes"])
        out.append(columns)
    return out


class ModelService:
    def __init__(self, store: SqliteStore, locales: Any) -> None:
        self.store = store
        self.locales = locales
        self.models = store.collection(MODELS)
        self._cache: SystemCache[dict[str, Model]] = SystemCache(store, self._load)

    def _load(self) -> dict[str, Model]:
        out = {}
        for doc in self.models.find():
            doc = dict(doc)
            name = doc.pop("_id")
            out[name] = Model(name=name, **doc)
        return out

    def all(self) -> list[Model]:
        return sorted(self._cache.get().values(), key=lambda m: m.name)

    def find(self, name: str) -> Model | None:
        return self._cache.get().get(name)

    def get(self, name: str) -> Model:
        model = self._cache.get().get(name)
        if model is None:
            raise NotFound(f"Model {name} not found")
        return model

    def hints(self, model: Model) -> Hints:
        return self.collection(model).hints

    def collection(self, model: Model) -> Collection:
        """The model's collection with its store hints, made once per loaded
        definition (a change of models or locales reloads the definitions)."""
        if model._collection is None:
            model._collection = self.store.collection(model.collection, model.hints(self.locales.codes()))
        return model._collection

    def save(self, model: Model) -> Model:
        now = int(time.time())
        previous = self.find(model.name)
        model._created = previous._created if previous else now
        model._modified = now
        doc = {"_id": model.name, **{k: v for k, v in model.to_json().items() if k != "name"}}
        with self.store.transaction():
            self.models.replace(doc)
            self.store.ensure_table(model.collection)
            self.store.ensure_indexes(model.collection, self.index_paths(model))
            bump_system_version(self.store)
        return model

    def index_paths(self, model: Model) -> list[list[tuple[str, ...]]]:
        out: list[list[tuple[str, ...]]] = []
        for columns in DEFAULT_INDEXES + model.indexes:
            out.append([(c.replace(":", "_"),) for c in columns])
        return out

    def delete(self, name: str) -> None:
        self.get(name)
        with self.store.transaction():
            self.models.delete(name)
            self.store.drop_collection(collection_name(name))
            bump_system_version(self.store)
