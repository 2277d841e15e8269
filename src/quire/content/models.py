"""Model definitions: validation, storage in `system/models`, a per-process
cache, expression indexes, and the store hints derived from field types."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from quire.bundleparts import BundlePart, Checked
from quire.cache import Cache, SystemValue
from quire.content.fields import FIELD_NAME, HINTS, FieldError, validate_definition_field
from quire.content.fill import KEPT_BYTES, Filler
from quire.errors import BadRequest, NotFound
from quire.events import Events, refusals_as_412
from quire.store import Collection, SqliteStore
from quire.store.sqlcompile import Hints

MODELS = "system/models"
KINDS = ("singleton", "collection", "tree")
LINK_HOLDERS = {"contentItemLink", "set", "object", "table"}
SYSTEM_HINTS: Hints = {
    "_state": "number", "_created": "number", "_modified": "number", "_o": "number",
    "_pid": "text", "_cby": "text", "_mby": "text", "_model": "text",
}
SYSTEM_FIELDS = set(SYSTEM_HINTS) | {"_id"}


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
    _markers: list[bytes] | None = field(default=None, repr=False, compare=False)
    _has_assets: bool | None = field(default=None, repr=False, compare=False)
    _splice: list[bytes] | bool | None = field(default=None, repr=False, compare=False)
    _asset_fields: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    _filler: Filler | None = field(default=None, repr=False, compare=False)

    @property
    def by_name(self) -> dict[str, dict[str, Any]]:
        return {f["name"]: f for f in self.fields}

    @property
    def filler(self) -> Filler:
        """Fills the fields an item holds no value for with null in answers
        (the model's field names; localized variants like `title_de` are not
        added)."""
        if self._filler is None:
            self._filler = Filler([f["name"] for f in self.fields])
        return self._filler

    def asset_markers(self, locales: list[str]) -> list[bytes] | None:
        """Byte strings of which one occurs in a stored item that holds an
        asset reference in a top-level field; None when references can sit
        deeper (in a set), so every item must be looked at."""
        if self._markers is None:
            markers = []
            for f in self.fields:
                if f["type"] == "set" and _has_asset(f):
                    return None
                if f["type"] == "asset":
                    opener = "[" if f["multiple"] else "{"  # what a stored reference starts with
                    keys = [f["name"]] + ([f"{f['name']}_{code}" for code in locales] if f["i18n"] else [])
                    markers += [f'"{k}":{opener}'.encode() for k in keys]
            self._markers = markers
        return self._markers

    def asset_splice(self, locales: list[str]) -> list[bytes] | None:
        """A pattern of the stored references of top-level single-valued asset
        fields, when that is the only place this model's items can hold
        `"<field>":{"_id":"<id>"}`: with no free-form field (object, set,
        table) the bytes cannot occur nested, and inside a JSON string the
        quotes would be escaped. None when the model does not qualify."""
        if self._splice is None:
            free_form = any(f["type"] in ("object", "set", "table") for f in self.fields)
            fields = [f for f in self.fields if f["type"] == "asset"]
            if free_form or not fields or any(f["multiple"] for f in fields):
                self._splice = False
            else:
                keys = [f["name"] for f in fields] + [
                    f"{f['name']}_{code}" for f in fields if f["i18n"] for code in locales
                ]
                self._splice = [f'"{k}":{{"_id":"'.encode() for k in keys]
        return self._splice if isinstance(self._splice, list) else None

    @property
    def has_assets(self) -> bool:
        if self._has_assets is None:
            self._has_assets = any(f["type"] == "asset" or (f["type"] == "set" and _has_asset(f)) for f in self.fields)
        return self._has_assets

    def asset_fields(self, locales: list[str]) -> list[dict[str, Any]]:
        """The definitions that can hold asset references (asset fields, and
        sets holding some), localized ones once per locale key; made once."""
        if self._asset_fields is None:
            holders = [f for f in self.fields if f["type"] == "asset" or (f["type"] == "set" and _has_asset(f))]
            out = list(holders)
            for f in holders:
                if f["i18n"]:
                    out += [{**f, "name": f"{f['name']}_{code}"} for code in locales]
            self._asset_fields = out
        return self._asset_fields

    def link_keys(self, locales: list[str]) -> list[str]:
        """Top-level keys whose values can hold content links (localized
        fields with their per-locale keys)."""
        keys = []
        for f in self.fields:
            if f["type"] in LINK_HOLDERS:
                keys.append(f["name"])
                if f["i18n"]:
                    keys += [f"{f['name']}_{code}" for code in locales]
        return keys

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


def _has_asset(field: dict[str, Any]) -> bool:
    for sub in (field.get("opts") or {}).get("fields", []) or []:
        if isinstance(sub, dict) and (sub.get("type") == "asset" or (sub.get("type") == "set" and _has_asset(sub))):
            return True
    return False


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
    def __init__(self, store: SqliteStore, cache: Cache, events: Events, locales: Any) -> None:
        self.store = store
        self.cache = cache
        self.events = events
        self.locales = locales
        self.models = store.collection(MODELS)
        self._definitions: SystemValue[dict[str, Model]] = cache.system(self._load)
        # filled-in rows of every model's answers (content/fill.py), kept by the app's cache
        self._rows_filled = cache.memo("content.fill", KEPT_BYTES)

    def _load(self) -> dict[str, Model]:
        out = {}
        for doc in self.models.find():
            doc = dict(doc)
            name = doc.pop("_id")
            model = out[name] = Model(name=name, **doc)
            model._filler = Filler([f["name"] for f in model.fields], self._rows_filled)
        return out

    def all(self) -> list[Model]:
        return sorted(self._definitions.get().values(), key=lambda m: m.name)

    def find(self, name: str) -> Model | None:
        return self._definitions.get().get(name)

    def get(self, name: str) -> Model:
        model = self._definitions.get().get(name)
        if model is None:
            raise NotFound(f"Model <{name}> not found")  # Cockpit's words, brackets included
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
        if previous is not None:
            self._check_stored_values_fit(previous, model)
        model._created = previous._created if previous else now
        model._modified = now
        doc = {"_id": model.name, **{k: v for k, v in model.to_json().items() if k != "name"}}
        with self.store.transaction():
            self.models.replace(doc)
            self.store.ensure_table(model.collection)
            self.store.ensure_indexes(model.collection, self.index_paths(model))
            self.cache.bump_system()
        return model

    async def asave(self, model: Model) -> Model:
        """`save` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.save(model)

    def _check_stored_values_fit(self, previous: Model, model: Model) -> None:
        """Filters on a single-valued text, number or boolean field compile to
        a plain comparison that assumes every stored value has that type. A
        definition change that would break the assumption for items already
        stored is refused, naming the field, rather than answering wrongly."""
        codes = self.locales.codes()
        before, after = previous.hints(codes), model.hints(codes)
        changed = [f for f, hint in after.items() if before.get(f) != hint and f not in SYSTEM_HINTS]
        if not changed or not self.store.table_exists(model.collection):
            return
        coll = self.store.collection(model.collection)
        for name in changed:
            misfits = coll.count_misfits((name,), after[name])
            if misfits:
                raise BadRequest(
                    f"Field {name}: {misfits} stored items hold values that are not {after[name]}; "
                    "change or clear them before changing the field's type",
                    fields=[name],
                )

    def index_paths(self, model: Model) -> list[list[tuple[str, ...]]]:
        """Expression indexes of a model. Every API read asks for `_state = 1`,
        so each declared index starts with `_state`: then one index answers
        both that condition and the declared fields' filter and sort."""
        out: list[list[tuple[str, ...]]] = [[("_state",)]]
        for columns in model.indexes:
            cols = [c.replace(":", "_") for c in columns]
            if cols[0] != "_state":
                cols.insert(0, "_state")
            out.append([(c,) for c in cols])
        return out

    def delete(self, name: str) -> None:
        self.get(name)
        with self.store.transaction():
            self.models.delete(name)
            self.store.drop_collection(collection_name(name))
            self.cache.bump_system()
            # in the transaction: search indexes of the model empty too
            with refusals_as_412():
                self.events.notify("content.model.remove", model=name)

    # -- bundles ----------------------------------------------------------

    def bundle_part(self) -> BundlePart:
        """Model definitions in export/import bundles, checked as a PUT of
        each; the checked value maps names to models (items check against it)."""
        return BundlePart("models", "models", lambda: [m.to_json() for m in self.all()],
                          _check_bundle_models, self._load_bundle)

    async def _load_bundle(self, models: dict[str, Model], identity: Any) -> int:
        for model in models.values():
            self.save(model)
        return len(models)

    async def adelete(self, name: str) -> None:
        """`delete` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            self.delete(name)


def _check_bundle_models(definitions: Any, checked: Checked) -> dict[str, Model]:
    if not isinstance(definitions or [], list):
        raise BadRequest("models must be a list")
    models: dict[str, Model] = {}
    for definition in definitions or []:
        if not isinstance(definition, dict) or not isinstance(definition.get("name"), str):
            raise BadRequest("every model needs a name")
        models[definition["name"]] = parse_model(definition["name"], definition)
    return models
