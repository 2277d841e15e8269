"""Translation projects: named sets of keys translated per locale.

A project is one document of collection `l10n/projects`:
`{_id, name, label, locales, keys: {key: {locale: string}}, _created, _modified}`.
Missing translations are simply absent from `keys`; readers see them as
null. Keys are stored sorted and each key's values in the order of the
project's locales, so every answer and export is stable.

The API and the CLI share every function here; HTTP stays in routes.py.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

import orjson
from babel import Locale, UnknownLocaleError
from babel.core import parse_locale

from quire.auth.service import Identity
from quire.bundleparts import BundlePart, Checked, check_named
from quire.cache import Cache
from quire.errors import BadRequest, NotFound, ValidationError
from quire.events import Events, refusals_as_412
from quire.ids import new_id
from quire.l10n import formats
from quire.store import Store

PROJECTS = "l10n/projects"
READ = "l10n/read"
MANAGE = "l10n/manage"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
MAX_KEY = 1000
GRID_KEYS_KEPT = 200_000
BODY_KEYS = {"label", "locales", "keys"}
# what a client may send back from a GET of the stored document; ignored
ECHOED_KEYS = {"name", "_id", "_created", "_modified"}


def canonical_locale(code: Any) -> str | None:
    """`pt_br` -> `pt-BR`, `zh-hant-tw` -> `zh-Hant-TW`; None when the code
    is not a locale Babel knows, or has parts the canonical form would
    drop (variants such as `en-GB-oxendict`, `@modifiers`). Aliases are
    not resolved: `zh-TW` stays `zh-TW`, it does not become `zh-Hant-TW`."""
    if not isinstance(code, str) or not code or len(code) > 64:
        return None
    text = code.replace("_", "-")
    try:
        parts = parse_locale(text, sep="-")
        Locale.parse(text, sep="-")
    except (ValueError, UnknownLocaleError):
        return None
    language, territory, script, variant = parts[:4]
    if variant or (len(parts) > 4 and parts[4]) or language == "root":  # root: CLDR's, not BCP 47
        return None
    return "-".join(p for p in (language, script, territory) if p)


@dataclass
class Export:
    body: bytes
    filename: str
    media_type: str


@dataclass
class GridPage:
    """One page of a project's keys for the studio's grid: the keys that
    match (`total`), `rows` from `skip`, and how many keys each locale
    lacks over the whole project."""

    name: str
    label: str
    locales: list[str]
    rows: list[tuple[str, dict[str, str]]]
    total: int
    keys: int
    missing: dict[str, int]


@dataclass
class Changes:
    """A checked write: what to set. None means "leave as it is"."""

    label: str | None = None
    locales: list[str] | None = None
    add_locale: str | None = None  # imports: make sure the project has it
    # key -> None (remove the key) or {locale as sent: string or None}
    keys: dict[str, dict[str, str | None] | None] | None = None


@dataclass
class _Index:
    """A project as the grid reads it: its keys in order, and per locale
    (and "*": any locale) the keys lacking a value."""

    project: dict[str, Any]
    items: list[tuple[str, dict[str, str]]]
    missing: dict[str, list[tuple[str, dict[str, str]]]]


class L10nService:
    def __init__(self, store: Store, events: Events, cache: Cache | None = None) -> None:
        self.store = store
        self.events = events
        self.projects = store.collection(PROJECTS)
        # the grid's indexes, kept while no write moves the store's
        # generation; weighed in keys
        self._indexes = cache.region("l10n-grid", GRID_KEYS_KEPT) if cache is not None else None

    # -- reads ------------------------------------------------------------

    def find(self, name: str) -> dict[str, Any] | None:
        """The stored project named `name` (no permission check: for
        server-side code)."""
        return self.projects.find_one({"name": name})

    def get(self, name: str, identity: Identity) -> dict[str, Any]:
        identity.require(READ)
        project = self.find(name)
        if project is None:
            raise NotFound(f"Project '{name}' not found")
        return project

    def list_projects(self, identity: Identity) -> list[dict[str, Any]]:
        identity.require(READ)
        found = sorted(self.projects.find(), key=lambda p: p["name"])
        return [{
            "name": p["name"], "label": p["label"], "locales": p["locales"], "keys": len(p["keys"]),
            "_created": p["_created"], "_modified": p["_modified"],
        } for p in found]

    def full(self, name: str, identity: Identity, nested: bool = False) -> dict[str, Any]:
        """Every key with every locale of the project; missing values null."""
        project = self.get(name, identity)
        locales = project["locales"]
        out = {key: {loc: values.get(loc) for loc in locales} for key, values in project["keys"].items()}
        return formats.nest(out) if nested else out

    def one_locale(self, name: str, locale: str, identity: Identity, nested: bool = False) -> dict[str, Any]:
        project = self.get(name, identity)
        out = _values(project, _configured(project, locale))
        return formats.nest(out) if nested else out

    def grid(self, name: str, identity: Identity, *, missing: str | None = None, q: str = "",
             skip: int = 0, limit: int = 50) -> GridPage:
        """A page of keys for the studio's grid: those lacking a value in
        locale `missing` (in any of the project's locales when `missing` is
        "*"), whose key or a value holds `q` (case-insensitive), in key
        order. Reads the project's index (`_index`), kept between writes."""
        identity.require(READ)
        index = self._index(name)
        project = index.project
        locales: list[str] = project["locales"]
        if missing == "*":
            found = index.missing["*"]
        elif missing:
            found = index.missing[_configured(project, missing)]
        else:
            found = index.items
        needle = q.strip().casefold()
        if needle:
            found = [(k, v) for k, v in found
                     if needle in k.casefold() or any(needle in text.casefold() for text in v.values())]
        start = max(skip, 0)
        return GridPage(project["name"], project["label"], locales, found[start:start + max(limit, 0)],
                        len(found), len(index.items), {code: len(index.missing[code]) for code in locales})

    def _index(self, name: str) -> _Index:
        """The grid's index of project `name` (404 when there is none),
        kept for the store's generation: reading a project of 5,000 keys
        and sorting out what each locale lacks costs more than a page."""
        kept = self._indexes.get(name) if self._indexes is not None else None
        if kept is not None:
            return kept
        generation = self.store.generation
        project = self.find(name)
        if project is None:
            raise NotFound(f"Project '{name}' not found")
        items = list(project["keys"].items())
        width = len(project["locales"])
        missing = {code: [(k, v) for k, v in items if code not in v] for code in project["locales"]}
        missing["*"] = [(k, v) for k, v in items if len(v) < width]
        index = _Index(project, items, missing)
        if self._indexes is not None:
            self._indexes.put(name, index, generation, weight=len(items) + 1)
        return index

    def export(self, name: str, fmt: str, locale: str | None, identity: Identity) -> Export:
        """A file of the project: `json` (the whole project), or `po` /
        `i18next` (one locale)."""
        if fmt not in formats.FORMATS:
            raise BadRequest("<format> must be json, po or i18next")
        project = self.get(name, identity)
        if fmt == "json":
            body = orjson.dumps({k: project[k] for k in ("name", "label", "locales", "keys")},
                                option=orjson.OPT_INDENT_2) + b"\n"
            return Export(body, f"{project['name']}.json", formats.JSON_TYPE)
        if not locale:
            raise BadRequest(f"<locale> parameter is required for format {fmt}")
        code = _configured(project, locale)
        values = _values(project, code)
        if fmt == "po":
            body = formats.write_po(project["name"], code, values, project["_modified"])
            return Export(body, f"{project['name']}.{code}.po", formats.PO_TYPE)
        return Export(formats.write_i18next(values), f"{project['name']}.{code}.json", formats.JSON_TYPE)

    # -- bundles ----------------------------------------------------------

    def bundle_part(self) -> BundlePart:
        """Translation projects in export/import bundles, stored as a PUT of each."""
        return BundlePart("l10n", "translation projects", self._export_bundle, _check_bundle_projects,
                          self._load_bundle)

    def _export_bundle(self) -> list[dict[str, Any]]:
        return [{k: p[k] for k in ("name", "label", "locales", "keys")}
                for p in self.projects.find(None, [(("name",), 1)])]

    async def _load_bundle(self, projects: list[dict[str, Any]], identity: Identity) -> int:
        for project in projects:
            await self.put(project["name"], project, identity)
        return len(projects)

    # -- writes -----------------------------------------------------------

    async def put(self, name: str, body: Any, identity: Identity) -> dict[str, Any]:
        """Create or replace a project."""
        identity.require(MANAGE)
        return await self._save(name, _changes(_unwrap(body), replace=True), identity, replace=True)

    async def patch(self, name: str, body: Any, identity: Identity) -> dict[str, Any]:
        """Change an existing project: label and locales replace, keys merge."""
        identity.require(MANAGE)
        return await self._save(name, _changes(_unwrap(body), replace=False), identity, replace=False)

    async def add_key(self, name: str, key: str, identity: Identity) -> dict[str, Any]:
        """Add `key` without values; 400 (field `key`) when it exists."""
        identity.require(MANAGE)
        async with self.store.atomic():
            project = self.get(name, identity)
            if key in project["keys"]:
                raise BadRequest(f"Key '{key}' exists already", fields=["key"])
            return await self._save(name, _key_changes({key: {}}), identity, replace=False)

    async def rename_key(self, name: str, old: str, new: str, identity: Identity) -> dict[str, Any]:
        """Give key `old` the name `new`, with its values, in one write; 400
        (field `key`) when `new` exists."""
        identity.require(MANAGE)
        async with self.store.atomic():
            project = self.get(name, identity)
            if old not in project["keys"]:
                raise NotFound(f"Key '{old}' not found")
            if new == old:
                return project
            if new in project["keys"]:
                raise BadRequest(f"Key '{new}' exists already", fields=["key"])
            return await self._save(name, _key_changes({old: None, new: dict(project["keys"][old])}), identity,
                                    replace=False)

    async def delete_key(self, name: str, key: str, identity: Identity) -> dict[str, Any]:
        identity.require(MANAGE)
        async with self.store.atomic():
            project = self.get(name, identity)
            if key not in project["keys"]:
                raise NotFound(f"Key '{key}' not found")
            return await self._save(name, _key_changes({key: None}), identity, replace=False)

    async def set_value(self, name: str, key: str, locale: str, value: str | None,
                        identity: Identity) -> dict[str, Any]:
        """Set (or with None or "" remove) one translation of an existing
        key; 404 when the key or the locale is not the project's."""
        identity.require(MANAGE)
        async with self.store.atomic():
            project = self.get(name, identity)
            if key not in project["keys"]:
                raise NotFound(f"Key '{key}' not found: it was renamed or deleted meanwhile")
            code = _configured(project, locale)
            return await self._save(name, _key_changes({key: {code: value or None}}), identity, replace=False)

    async def delete(self, name: str, identity: Identity) -> None:
        identity.require(MANAGE)
        async with self.store.atomic():
            project = self.find(name)
            if project is None:
                raise NotFound(f"Project '{name}' not found")
            self.projects.delete(project["_id"])
            with refusals_as_412():
                await self.events.emit("l10n.project.remove", project=project, identity=identity)

    async def import_files(
        self, files: list[tuple[str, str, bytes, str | None]], identity: Identity
    ) -> list[dict[str, Any]]:
        """`import_file` for each (project, format, raw, locale), in one
        transaction: when one file is refused, none is imported."""
        async with self.store.atomic():
            return [await self.import_file(name, fmt, raw, locale, identity) for name, fmt, raw, locale in files]

    async def import_file(
        self, name: str, fmt: str, raw: bytes, locale: str | None, identity: Identity
    ) -> dict[str, Any]:
        """Load a file: `json` replaces the project (as PUT); `po` and
        `i18next` merge one locale into it (creating the project, or adding
        the locale, when missing). An empty value in the file means "not
        translated here": the key is added, a stored value is kept."""
        identity.require(MANAGE)
        if fmt not in formats.FORMATS:
            raise BadRequest("<format> must be json, po or i18next")
        try:
            if fmt == "json":
                return await self.put(name, formats.read_json_file(raw), identity)
            if fmt == "po":
                po = formats.read_po(raw)
                code = _import_locale(locale, po.language)
                entries = po.entries
            else:
                if not locale:
                    raise BadRequest("<locale> parameter is required for format i18next")
                code = _import_locale(locale, None)
                entries = {k: v or None for k, v in formats.read_i18next(raw).items()}
        except formats.FormatError as exc:
            raise BadRequest(str(exc)) from None
        keys: dict[str, Any] = {key: {code: value} if value else {} for key, value in entries.items()}
        changes = _changes({"keys": keys}, replace=False)
        changes.add_locale = code
        return await self._save(name, changes, identity, replace=False, create=True)

    async def _save(
        self, name: str, changes: Changes, identity: Identity, *, replace: bool, create: bool = False
    ) -> dict[str, Any]:
        if replace or create:
            _check_name(name)
        now = int(time.time())
        async with self.store.atomic():
            current = self.find(name)
            if current is None and not (replace or create):
                raise NotFound(f"Project '{name}' not found")
            project = _apply(current, changes, name, now, replace)
            with refusals_as_412():
                await self.events.emit("l10n.project.save", project=project, identity=identity)
            self.projects.replace(project)
        return project


# -- helpers ---------------------------------------------------------------


def _configured(project: dict[str, Any], locale: str) -> str:
    """The project's locale matching `locale` in any spelling, or 404."""
    code = canonical_locale(locale)
    if code is None or code not in project["locales"]:
        raise NotFound(f"Locale '{locale}' not configured for this project")
    return code


def _values(project: dict[str, Any], code: str) -> dict[str, str | None]:
    return {key: values.get(code) for key, values in project["keys"].items()}


def _import_locale(sent: str | None, header: str | None) -> str:
    """The locale a file is for: the one sent, else the PO header's. When
    both are there they must agree, so a file is not loaded into the wrong
    language by mistake."""
    if sent:
        code = canonical_locale(sent)
        if code is None:
            raise BadRequest(f"<locale> '{sent}' is not a known locale", fields=["locale"])
        from_file = canonical_locale(header)
        if from_file is not None and from_file != code:
            raise BadRequest(f"The PO file is for locale {from_file}, not {code}")
        return code
    if not header:
        raise BadRequest("<locale> parameter is required: the PO file names no Language")
    code = canonical_locale(header)
    if code is None:
        raise BadRequest(f"The PO file's Language '{header}' is not a known locale")
    return code


def _check_name(name: str) -> None:
    if not NAME.match(name):
        raise BadRequest(
            "Project name must match ^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$", fields=["name"]
        )


def _unwrap(body: Any) -> Any:
    """`{"data": {...}}` is accepted as well as the bare object."""
    if isinstance(body, dict) and set(body) == {"data"} and isinstance(body["data"], dict):
        return body["data"]
    return body


def _changes(body: Any, *, replace: bool) -> Changes:
    """Check the shape of a body (types, locale codes, key names); whether a
    key's locales belong to the project is checked once that is known."""
    if body is None:
        raise BadRequest("Request body is missing: send {\"locales\": [...], \"keys\": {...}}")
    if not isinstance(body, dict):
        raise BadRequest("Body must be an object {label, locales, keys}")
    errors: dict[str, str] = {}
    for key in body:
        if key not in BODY_KEYS and key not in ECHOED_KEYS:
            errors[key] = "is not a property of a project"
    changes = Changes()
    label = body.get("label")
    if label is not None and not isinstance(label, str):
        errors["label"] = "must be a string"
    changes.label = label if isinstance(label, str) else None
    if "locales" in body or replace:
        changes.locales = _check_locales(body.get("locales"), errors)
    if "keys" in body:
        changes.keys = _check_keys(body["keys"], errors)
    if errors:
        raise ValidationError("project", errors, limit=10, keep_order=True)
    return changes


def _key_changes(keys: dict[str, Any]) -> Changes:
    """Changes of keys only, checked like a PATCH's; a bad key name is
    400 with field `key` (the one key a studio form names)."""
    if any(not key or len(key) > MAX_KEY for key in keys):
        raise BadRequest(f"A key must be 1 to {MAX_KEY:,} characters long", fields=["key"])
    return _changes({"keys": keys}, replace=False)


def _check_locales(value: Any, errors: dict[str, str]) -> list[str]:
    if not isinstance(value, list) or not value:
        errors["locales"] = "must be a non-empty list of locale codes"
        return []
    out: list[str] = []
    for i, code in enumerate(value):
        canonical = canonical_locale(code)
        if canonical is None:
            errors[f"locales[{i}]"] = "is not a known locale code (like en, de-CH or zh-Hant-TW)"
        elif canonical in out:
            errors[f"locales[{i}]"] = f"repeats {canonical}"
        else:
            out.append(canonical)
    return out


def _check_keys(value: Any, errors: dict[str, str]) -> dict[str, dict[str, str | None] | None]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors["keys"] = "must be an object {key: {locale: string}}"
        return {}
    out: dict[str, dict[str, str | None] | None] = {}
    for key, values in value.items():
        field = f"keys.{key}"
        if not key or len(key) > MAX_KEY:
            errors[field] = f"must be 1 to {MAX_KEY} characters long"
        elif values is None:
            out[key] = None
        elif not isinstance(values, dict):
            errors[field] = "must be an object {locale: string} or null"
        else:
            bad = [loc for loc, text in values.items() if text is not None and not isinstance(text, str)]
            for loc in bad:
                errors[f"{field}.{loc}"] = "must be a string or null"
            out[key] = values
    return out


def _apply(
    current: dict[str, Any] | None, changes: Changes, name: str, now: int, replace: bool
) -> dict[str, Any]:
    """The project after `changes`; 400 when a value names a locale the
    project does not have."""
    base = current if current is not None and not replace else None
    locales = list(changes.locales if changes.locales is not None else base["locales"] if base else [])
    if changes.add_locale and changes.add_locale not in locales:
        locales.append(changes.add_locale)
    keys: dict[str, dict[str, str]] = {k: dict(v) for k, v in base["keys"].items()} if base else {}
    errors: dict[str, str] = {}
    for key, values in (changes.keys or {}).items():
        if values is None:
            keys.pop(key, None)
            continue
        merged = keys.setdefault(key, {})
        seen: dict[str, str] = {}
        for sent, text in values.items():
            code = canonical_locale(sent)
            field = f"keys.{key}.{sent}"
            if code is None or code not in locales:
                errors[field] = "is not a locale of this project"
            elif code in seen:
                errors[field] = f"repeats {seen[code]}"
            else:
                seen[code] = sent
                if text:
                    merged[code] = text
                else:
                    merged.pop(code, None)  # null or "": no translation
    if errors:
        raise ValidationError("project", errors, limit=10, keep_order=True)
    label = changes.label if changes.label is not None else base["label"] if base else name
    return {
        "_id": current["_id"] if current else new_id(),
        "name": name,
        "label": label,
        "locales": locales,
        # only the project's locales, in their order; keys sorted
        "keys": {k: {loc: v[loc] for loc in locales if loc in v} for k, v in sorted(keys.items())},
        "_created": current["_created"] if current else now,
        "_modified": now,
    }


def _check_bundle_projects(value: Any, checked: Checked) -> list[dict[str, Any]]:
    return check_named(value, "l10n", "translation project")
