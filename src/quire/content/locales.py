"""Locales of the project and per-locale reading of localized fields.

A localized field `title` is stored as `title` (the default locale) and
`title_<code>` for each other locale. Reading with `locale=<code>` answers
`title` with that locale's value, falling back to the default one when it is
missing or empty, and drops every `title_*` key. Nothing resolved is ever
written back.
"""

from __future__ import annotations

import builtins
import re
from typing import Any

from quire.bundleparts import BundlePart, Checked
from quire.cache import Cache, SystemValue
from quire.content.fields import is_empty
from quire.errors import BadRequest
from quire.events import Events, refusals_as_412
from quire.store import SqliteStore

CONFIG = "system/config"
DEFAULT = "default"
_CODE = re.compile(r"^[a-zA-Z]{2,3}(?:[_-][a-zA-Z0-9]{2,8})*$")


class LocaleService:
    def __init__(self, store: SqliteStore, cache: Cache, events: Events, default_name: str = "Default") -> None:
        self.store = store
        self.cache = cache
        self.events = events
        self.default_name = default_name
        self.config = store.collection(CONFIG)
        self._locales: SystemValue[builtins.list[dict[str, str]]] = cache.system(self._load)

    def _load(self) -> builtins.list[dict[str, str]]:
        doc = self.config.get("locales")
        return list(doc["items"]) if doc else []

    def list(self) -> builtins.list[dict[str, Any]]:
        return [{"i18n": DEFAULT, "name": self.default_name, "default": True}] + [
            {**item, "default": False} for item in self._locales.get()
        ]

    def codes(self) -> builtins.list[str]:
        """Codes of the non-default locales."""
        return [item["i18n"] for item in self._locales.get()]

    def save(self, body: Any) -> builtins.list[dict[str, Any]]:
        items = self._checked(body)
        with self.store.transaction():
            self.config.replace({"_id": "locales", "items": items})
            self.cache.bump_system()
            # in the transaction: pages index their routes per locale
            with refusals_as_412():
                self.events.notify("content.locales.save", codes=[item["i18n"] for item in items])
        return self.list()

    def _checked(self, body: Any) -> builtins.list[dict[str, str]]:
        """The locales to store (the default one left out); 400 naming a bad entry."""
        if not isinstance(body, list):
            raise BadRequest('Body must be a list like [{"i18n": "de", "name": "Deutsch"}]')
        items: builtins.list[dict[str, str]] = []
        seen = set()
        for i, entry in enumerate(body):
            if not isinstance(entry, dict):
                raise BadRequest(f"locales[{i}] must be an object", fields=[f"locales[{i}]"])
            code, name = entry.get("i18n"), entry.get("name", entry.get("i18n"))
            if code == DEFAULT:
                continue  # the default locale always exists
            if not isinstance(code, str) or not _CODE.match(code):
                raise BadRequest(f"locales[{i}].i18n is not a locale code like 'de' or 'pt-BR'", fields=[f"locales[{i}].i18n"])
            if not isinstance(name, str):
                raise BadRequest(f"locales[{i}].name must be a string", fields=[f"locales[{i}].name"])
            if code in seen:
                raise BadRequest(f"Locale {code} is listed twice", fields=[f"locales[{i}].i18n"])
            seen.add(code)
            items.append({"i18n": code, "name": name})
        return items

    async def asave(self, body: Any) -> builtins.list[dict[str, Any]]:
        """`save` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.save(body)

    # -- bundles ----------------------------------------------------------

    def bundle_part(self) -> BundlePart:
        """The non-default locales in export/import bundles, checked as a PUT
        of them. A bundle without locales leaves the stored ones."""
        return BundlePart("locales", "locales", lambda: [loc for loc in self.list() if not loc["default"]],
                          self._check_bundle, self._load_bundle)

    def _check_bundle(self, value: Any, checked: Checked) -> Any:
        if value:
            self._checked(value)
        return value

    async def _load_bundle(self, value: Any, identity: Any) -> int:
        if not value:
            return 0
        self.save(value)
        return len(value)


def localize(doc: dict[str, Any], localized: list[str], codes: list[str], locale: str) -> dict[str, Any]:
    """A copy of `doc` with localized fields resolved for `locale`."""
    if not localized:
        return doc
    out = dict(doc)
    for name in localized:
        if locale in codes:
            value = doc.get(f"{name}_{locale}")
            if not is_empty(value):
                out[name] = value
        for code in codes:
            out.pop(f"{name}_{code}", None)
    return out


def rewrite_locale_keys(spec: Any) -> Any:
    """`title:de` in a filter or sort addresses the stored key `title_de`."""
    if isinstance(spec, dict):
        return {
            (_locale_key(k) if isinstance(k, str) else k): rewrite_locale_keys(v) for k, v in spec.items()
        }
    if isinstance(spec, list):
        return [rewrite_locale_keys(v) for v in spec]
    return spec


def _locale_key(key: str) -> str:
    """`title:de` -> `title_de`, in any segment of a dotted path, so
    `@author.bio:de` and `seo.title:de` work too."""
    if ":" not in key or key.startswith("$"):
        return key
    parts = []
    for segment in key.split("."):
        field, sep, code = segment.partition(":")
        parts.append(segment if not sep else field if code == DEFAULT else f"{field}_{code}")
    return ".".join(parts)
