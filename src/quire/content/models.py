"""Model definitions: validation, storage in `system/models`, a per-process
cache, expression indexes, and the store hints derived from field types."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from quire.auth.service import SYSTEM, Identity
from quire.bundleparts import BundlePart, Checked
from quire.cache import Cache, SystemValue
from quire.content import types
from quire.content.fields import (
    FIELD_NAME,
    FieldError,
    check_value,
    localized_inside,
    validate_definition_field,
)
from quire.content.fill import KEPT_BYTES, Filler
from quire.content.preview import check_uris
from quire.content.types import layout
from quire.errors import BadRequest, NotFound
from quire.events import Events, refusals_as_412
from quire.store import Collection, Store
from quire.store.sqlcompile import Hints

MODELS = "system/models"
KINDS = ("singleton", "collection", "tree")
LINK_HOLDERS = {"contentItemLink", "set", "object", "table", "layout"}
HOLDERS = ("set", "layout")  # types whose values hold fields of their own (asset references among them)
SYSTEM_HINTS: Hints = {
    "_state": "number", "_created": "number", "_modified": "number", "_o": "number",
    "_pid": "text", "_cby": "text", "_mby": "text", "_model": "text",
}
SYSTEM_FIELDS = set(SYSTEM_HINTS) | {"_id"}


def collection_name(model: str) -> str:
    return f"content/{model}"


def drafts_name(model: str) -> str:
    """The collection of the drafts kept beside a model's published items."""
    return f"drafts/{model}"


@dataclass
class Model:
    name: str
    type: str
    label: str
    fields: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)
    indexes: list[list[str]] = field(default_factory=list)
    # preview links: [{"name", "uri"}], the site's pages that show an item
    # (content/preview.py); their origins may be framed by the studio
    preview: list[dict[str, str]] = field(default_factory=list)
    _created: int = 0
    _modified: int = 0
    _collection: Collection | None = field(default=None, repr=False, compare=False)
    _markers: list[bytes] | None = field(default=None, repr=False, compare=False)
    _has_assets: bool | None = field(default=None, repr=False, compare=False)
    _splice: list[bytes] | bool | None = field(default=None, repr=False, compare=False)
    _asset_fields: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)
    _filler: Filler | None = field(default=None, repr=False, compare=False)
    _inside: dict[str, Any] | None = field(default=None, repr=False, compare=False)

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
                if f["type"] in HOLDERS and _has_asset(f):
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
        table, json) the bytes cannot occur nested, and inside a JSON string the
        quotes would be escaped. None when the model does not qualify."""
        if self._splice is None:
            free_form = any(f["type"] in ("object", "set", "table", "json", "layout") for f in self.fields)
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
            self._has_assets = any(f["type"] == "asset" or (f["type"] in HOLDERS and _has_asset(f)) for f in self.fields)
        return self._has_assets

    def asset_fields(self, locales: list[str]) -> list[dict[str, Any]]:
        """The definitions that can hold asset references (asset fields, and
        sets holding some), localized ones once per locale key; made once."""
        if self._asset_fields is None:
            holders = [f for f in self.fields if f["type"] == "asset" or (f["type"] in HOLDERS and _has_asset(f))]
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
    def localized_inside(self) -> dict[str, Any]:
        """Set fields with localized sub-fields (`fields.localized_inside`)."""
        if self._inside is None:
            self._inside = localized_inside(self.fields)
        return self._inside

    @property
    def collection(self) -> str:
        return collection_name(self.name)

    def hints(self, locales: list[str]) -> Hints:
        hints = dict(SYSTEM_HINTS)
        for f in self.fields:
            hint = types.hint_of(f["type"])
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
            "preview": self.preview,
            "_created": self._created,
            "_modified": self._modified,
        }


def _has_asset(field: dict[str, Any]) -> bool:
    """Whether a set or layout field can hold asset references inside."""
    if field.get("type") == "layout":
        return True  # the core image block holds one
    for sub in (field.get("opts") or {}).get("fields", []) or []:
        if isinstance(sub, dict) and (sub.get("type") == "asset" or (sub.get("type") in HOLDERS and _has_asset(sub))):
            return True
    return False


def parse_model(name: str, body: Any, renames: Mapping[str, str] | None = None) -> Model:
    """A model definition from a request body; 400 naming what is wrong.
    With `renames` (old -> new field names), indexes may name a renamed
    field by either name (the save rewrites them)."""
    if not isinstance(body, dict):
        raise BadRequest("Model definition must be an object")
    if not FIELD_NAME.match(name):
        raise BadRequest("Model name must match ^[A-Za-z][A-Za-z0-9_]*$", fields=["name"])
    if body.get("name", name) != name:
        raise BadRequest("Model name in the body differs from the path", fields=["name"])
    unknown = set(body) - {"name", "label", "type", "fields", "meta", "indexes", "preview", "_created", "_modified"}
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
    known = set(names) | {n for pair in (renames or {}).items() for n in pair if isinstance(n, str)}
    indexes = _parse_indexes(body.get("indexes") or [], known)
    label = body.get("label") or name
    if not isinstance(label, str):
        raise BadRequest("label must be a string", fields=["label"])
    return Model(name, kind, label, fields, meta, indexes, check_uris(body.get("preview")))


def parse_change(name: str, body: Any) -> tuple[Model, dict[str, str], bool]:
    """A model PUT's body: the definition, and the two keys that say how
    stored items follow it and are never stored: `renames` (an object of
    old -> new field names) and `dropValues` (true: remove the values of
    fields the definition drops)."""
    if not isinstance(body, dict):
        raise BadRequest("Model definition must be an object")
    body = dict(body)
    renames = body.pop("renames", None) or {}
    if not isinstance(renames, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in renames.items()):
        raise BadRequest('renames must be an object of field names, like {"old": "new"}', fields=["renames"])
    drop = body.pop("dropValues", False)
    if not isinstance(drop, bool):
        raise BadRequest("dropValues must be true or false", fields=["dropValues"])
    return parse_model(name, body, renames), renames, drop


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
    def __init__(self, store: Store, cache: Cache, events: Events, locales: Any) -> None:
        self.store = store
        self.cache = cache
        self.events = events
        self.locales = locales
        self.models = store.collection(MODELS)
        self._definitions: SystemValue[dict[str, Model]] = cache.system(self._load)
        # the shared blocks every save copies into layout fields (content/library.py sets it)
        self.shared_components: Callable[[], list[dict[str, Any]]] = list
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

    def save(self, model: Model, renames: Mapping[str, str] | None = None, drop_values: bool = False,
             identity: Identity | None = None) -> Model:
        """Create or change a model, in one transaction with the stored
        items it affects (docs/content-api.md, "Changing a model").

        `renames` (old -> new field names): every stored item follows, its
        value (and per-locale values) moving to the new name, and declared
        indexes and search indexes naming the field follow too; the
        definition may carry the field under either name. `drop_values`:
        values of fields the new definition no longer has are removed from
        the items (by default they stay, as in Cockpit). A change that
        stored values do not fit is refused (400 with their count and ids)
        and nothing changes. `identity` is who changes it (the command line
        when None), for `content.model.save` handlers."""
        now = int(time.time())
        identity = identity or SYSTEM
        with self.store.transaction():  # the checks too: no write can slip in between
            try:
                model = replace(model, fields=layout.share(model.fields, self.shared_components()))
            except FieldError as exc:
                raise BadRequest(str(exc), fields=["fields"]) from None
            previous = self.find(model.name)
            codes = self.locales.codes()
            renames = dict(renames or {})
            if renames:
                if previous is None:
                    raise BadRequest(f"Model {model.name} does not exist yet: it has no fields to rename",
                                     fields=["renames"])
                _check_renames(previous, model, renames, codes)
                model = _renamed_definition(model, renames)
            moves, drop = {}, []
            if previous is not None:
                moves = _moved_keys(previous, model, renames, codes)
                drop = _dropped_keys(previous, model, renames, codes) if drop_values else []
                self._check_stored_values_fit(previous, model, renames, moves)
                self._check_targets_free(model, renames, moves)
            model._created = previous._created if previous else now
            model._modified = now
            doc = {"_id": model.name, **{k: v for k, v in model.to_json().items() if k != "name"}}
            self.models.replace(doc)
            self.store.ensure_table(model.collection)
            if moves or drop:
                # one UPDATE; items' `_modified` stays (the schema changed, not
                # the content), their revision moves so stale editors notice
                self.store.collection(model.collection).move_keys(moves, drop, bump=REVISION)
                drafts = self.store.collection(drafts_name(model.name))
                if drafts.exists():  # drafts beside published items follow their fields
                    drafts.move_keys(moves, drop, bump=REVISION)
                    for draft in drafts.find():  # and what they started from (few: a draft per item at most)
                        basis = draft.get("_basis") or {}
                        moved = {moves.get(k, k): v for k, v in basis.items() if k not in drop}
                        if moved != basis:
                            drafts.replace({**draft, "_basis": moved})
            hints = model.hints(codes)
            self.store.ensure_indexes(model.collection, self.index_paths(model), hints)
            # automatic indexes on fields gone (or no longer of one type) serve nothing
            self.store.drop_auto_indexes(model.collection, lambda cols: all(c == "_id" or c in hints for c in cols))
            self.cache.bump_system()
            if renames:
                # in the transaction: search indexes follow the new names
                with refusals_as_412():
                    self.events.notify("content.model.rename", model=model.name, renames=renames, keys=moves,
                                       identity=identity)
            with refusals_as_412():
                self.events.notify("content.model.save", model=model.name, definition=model.to_json(),
                                   previous=previous.to_json() if previous is not None else None,
                                   renames=renames, dropped=drop, identity=identity)
        return model

    def check_change(self, model: Model) -> None:
        """The checks `save` makes of a changed definition against the
        stored items (400 naming what is in the way), without saving."""
        previous = self.find(model.name)
        if previous is None:
            return
        moves = _moved_keys(previous, model, {}, self.locales.codes())
        self._check_stored_values_fit(previous, model, {}, moves)
        self._check_targets_free(model, {}, moves)

    async def asave(self, model: Model, renames: Mapping[str, str] | None = None,
                    drop_values: bool = False, identity: Identity | None = None) -> Model:
        """`save` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.save(model, renames, drop_values, identity)

    def field_usage(self, name: str) -> FieldUsage:
        """How many items of model `name` hold a non-empty value (not null,
        "", [] or {}) per field, a localized field counting an item once
        when any of its per-locale values is set; and how many items there
        are. What the studio shows before a field is deleted."""
        model = self.get(name)
        codes = self.locales.codes()
        groups = {f["name"]: _stored_keys(model, f["name"], f["i18n"], codes) for f in model.fields}
        counts, total = self.store.collection(model.collection).count_non_empty(groups)
        return FieldUsage(counts, total)

    def _check_stored_values_fit(self, previous: Model, model: Model, renames: Mapping[str, str],
                                 moves: Mapping[str, str]) -> None:
        """Every stored value of a field whose definition changes (type,
        `multiple`, options, localization) or that is new (items may keep
        values of a field deleted earlier) must pass the field checkers
        exactly as a save would; null and missing values always fit.
        Otherwise 400 naming the field, with how many items are in the way
        and their ids (`count`, `items`: the first 100), and nothing
        changes. Filters compile to plain comparisons that trust a field's
        type, so this also keeps every filter answering right."""
        if not self.store.table_exists(model.collection):
            return
        codes = self.locales.codes()
        coll = self.store.collection(model.collection)
        was = {new: old for old, new in renames.items()}
        stored_as = {new: old for old, new in moves.items()}  # values sit under the old keys until the move
        for f in model.fields:
            before = previous.by_name.get(was.get(f["name"], f["name"]))
            if before is not None and all(before.get(k) == f.get(k) for k in FITTING_KEYS):
                continue
            keys = [stored_as.get(k, k) for k in _stored_keys(model, f["name"], f["i18n"], codes)]
            misfits: list[str] = []
            reason = ""
            for item_id, values in coll.values_at(keys):
                for value in values:
                    if value is None:
                        continue
                    try:
                        check_value(f, value)
                    except FieldError as exc:
                        reason = reason or str(exc)
                        misfits.append(item_id)
                        break
            if misfits:
                raise _in_the_way(f["name"], misfits, f"values that do not fit the new definition (first: {reason})")

    def _check_targets_free(self, model: Model, renames: Mapping[str, str], moves: Mapping[str, str]) -> None:
        """A rename never overwrites: items still holding values under the
        new name (a deleted field keeps its values) are in the way."""
        if not renames or not self.store.table_exists(model.collection):
            return
        coll = self.store.collection(model.collection)
        codes = self.locales.codes()
        for old, new in renames.items():
            targets = [new] + [f"{new}_{c}" for c in codes if moves.get(f"{old}_{c}") == f"{new}_{c}"]
            taken = [item_id for item_id, _ in coll.values_at(targets)]
            if taken:
                raise _in_the_way(new, taken, f"values under {new} already (kept from a deleted field); "
                                  "pick another name or remove those values first")

    def index_paths(self, model: Model) -> list[list[tuple[str, ...]]]:
        """Expression indexes of a model. Every API read asks for `_state = 1`,
        so each declared index starts with `_state`: then one index answers
        both that condition and the declared fields' filter and sort. Each
        is also kept without `_state`, for lists of every state."""
        out: list[list[tuple[str, ...]]] = [[("_state",)]]
        for columns in model.indexes:
            cols = [c.replace(":", "_") for c in columns]
            if cols[0] != "_state":
                # and once without: the studio's lists show every state to
                # editors, sorted by any indexed column, which an index
                # starting with `_state` cannot answer in order
                out.append([(c,) for c in cols])
                cols.insert(0, "_state")
            out.append([(c,) for c in cols])
        return out

    def indexes(self, name: str) -> list[dict[str, Any]]:
        """Every index of model `name`'s items with its origin: `built-in`
        (`_state`, which every API read tests), `declared` (the model's
        `indexes`) or `automatic` (docs/query-language.md), fields and size."""
        model = self.get(name)
        found = self.store.indexes(model.collection)
        for index in found:
            if index["origin"] == "declared" and index["fields"] == ["_state"]:
                index["origin"] = "built-in"
        return found

    def delete(self, name: str, identity: Identity | None = None) -> None:
        self.get(name)
        with self.store.transaction():
            self.models.delete(name)
            self.store.drop_collection(collection_name(name))
            self.store.drop_collection(drafts_name(name))
            self.cache.bump_system()
            # in the transaction: search indexes of the model empty too
            with refusals_as_412():
                self.events.notify("content.model.remove", model=name, identity=identity or SYSTEM)

    # -- bundles ----------------------------------------------------------

    def bundle_part(self) -> BundlePart:
        """Model definitions in export/import bundles, checked as a PUT of
        each; the checked value maps names to models (items check against it)."""
        return BundlePart("models", "models", lambda: [m.to_json() for m in self.all()],
                          _check_bundle_models, self._load_bundle)

    async def _load_bundle(self, models: dict[str, Model], identity: Any) -> int:
        for model in models.values():
            self.save(model, identity=identity)
        return len(models)

    async def adelete(self, name: str, identity: Identity | None = None) -> None:
        """`delete` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            self.delete(name, identity)


def _check_bundle_models(definitions: Any, checked: Checked) -> dict[str, Model]:
    if not isinstance(definitions or [], list):
        raise BadRequest("models must be a list")
    models: dict[str, Model] = {}
    for definition in definitions or []:
        if not isinstance(definition, dict) or not isinstance(definition.get("name"), str):
            raise BadRequest("every model needs a name")
        models[definition["name"]] = parse_model(definition["name"], definition)
    return models


REVISION = "_rev"  # items' revision: raised by one in every item a schema change rewrites
# keys of a field definition that decide which values fit it
FITTING_KEYS = ("type", "multiple", "opts", "i18n")
SHOWN_IDS = 10  # ids spelled out in a refusal's message
LISTED_IDS = 100  # ids in its `items`


@dataclass
class FieldUsage:
    """Per field, how many items hold a non-empty value; and all items."""

    fields: dict[str, int]
    total: int

    def to_json(self) -> dict[str, Any]:
        return {"fields": self.fields, "total": self.total}


def _stored_keys(model: Model, name: str, i18n: bool, codes: list[str]) -> list[str]:
    """The top-level keys an item holds a field's values under: its name,
    and its per-locale keys when localized (a key that is a field of its
    own is that field's)."""
    keys = [name]
    if i18n:
        keys += [k for k in (f"{name}_{code}" for code in codes) if k not in model.by_name]
    return keys


def _check_renames(previous: Model, model: Model, renames: dict[str, str], codes: list[str]) -> None:
    """400 naming the field for a rename that cannot be done; renames to
    the same name are dropped."""
    for old, new in list(renames.items()):
        if not isinstance(old, str) or not isinstance(new, str):
            raise BadRequest("renames must map field names to new names", fields=["renames"])
        if old == new:
            del renames[old]
            continue
        if old not in previous.by_name:
            raise BadRequest(f"Field {old} cannot be renamed: {previous.name} has no such field", fields=[old])
        if not FIELD_NAME.match(new) or new in SYSTEM_FIELDS:
            raise BadRequest(f"Field {old} cannot be renamed to {new!r}: a field name must match "
                             "^[A-Za-z][A-Za-z0-9_]*$ and not be a system name", fields=[old])
        localized_keys = {f"{f['name']}_{code}" for f in [*previous.fields, *model.fields]
                          if f["i18n"] and f["name"] != old for code in codes}
        if new in previous.by_name or new in localized_keys:
            raise BadRequest(f"Field {old} cannot be renamed to {new}: {new} is taken", fields=[old])
        if list(renames.values()).count(new) > 1:
            raise BadRequest(f"Two fields cannot both be renamed to {new}", fields=[old])
        if old in model.by_name and new in model.by_name:
            raise BadRequest(f"Field {old} is renamed to {new}: the definition cannot hold both", fields=[old])
        if old not in model.by_name and new not in model.by_name:
            raise BadRequest(f"Field {old} is renamed to {new}: the definition holds neither", fields=[old])
        field = model.by_name.get(new) or model.by_name[old]
        if field["i18n"] or previous.by_name[old]["i18n"]:
            clash = [f"{new}_{code}" for code in codes if f"{new}_{code}" in model.by_name]
            if clash:
                raise BadRequest(f"Field {old} cannot be renamed to {new}: its localized key {clash[0]} "
                                 "is a field", fields=[old])


def _renamed_definition(model: Model, renames: Mapping[str, str]) -> Model:
    """A copy of the definition with renamed fields under their new names,
    and its declared indexes (`title` or `title:de`) naming them so."""
    fields = [{**f, "name": renames[f["name"]]} if f["name"] in renames else f for f in model.fields]
    indexes = [[_renamed_column(c, renames) for c in columns] for columns in model.indexes]
    return Model(model.name, model.type, model.label, fields, model.meta, indexes, model.preview)


def _renamed_column(column: str, renames: Mapping[str, str]) -> str:
    base, colon, locale = column.partition(":")
    return renames.get(base, base) + colon + locale


def _moved_keys(previous: Model, model: Model, renames: Mapping[str, str], codes: list[str]) -> dict[str, str]:
    """Every stored key a rename moves, old -> new: the field's, and its
    per-locale keys when it is (or was) localized."""
    moves = {}
    for old, new in renames.items():
        moves[old] = new
        if previous.by_name[old]["i18n"] or model.by_name[new]["i18n"]:
            for code in codes:
                key, target = f"{old}_{code}", f"{new}_{code}"
                if key not in previous.by_name and target not in model.by_name:
                    moves[key] = target
    return moves


def _dropped_keys(previous: Model, model: Model, renames: Mapping[str, str], codes: list[str]) -> list[str]:
    """The stored keys of the fields the new definition drops (a key the
    new definition uses stays)."""
    used = {k for f in model.fields for k in _stored_keys(model, f["name"], f["i18n"], codes)}
    out = []
    for f in previous.fields:
        if f["name"] not in model.by_name and f["name"] not in renames:
            out += [k for k in _stored_keys(previous, f["name"], f["i18n"], codes) if k not in used]
    return out


def _in_the_way(name: str, ids: list[str], what: str) -> BadRequest:
    count = len(ids)
    shown = ", ".join(ids[:SHOWN_IDS]) + (f" and {count - SHOWN_IDS} more" if count > SHOWN_IDS else "")
    items = "item holds" if count == 1 else "items hold"
    return BadRequest(f"Field {name}: {count} stored {items} {what}: {shown}",
                      fields=[name], count=count, items=ids[:LISTED_IDS])
