"""Locales of the project and per-locale reading of localized fields.

A localized field `title` is stored as `title` (the default locale) and
`title_<code>` for each other locale. Reading with `locale=<code>` answers
`title` with that locale's value, falling back to the default one when it is
missing or empty, and drops every `title_*` key. Nothing resolved is ever
written back.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from quire.bundleparts import BundlePart, Checked
from quire.cache import Cache, SystemValue
from quire.content.fields import is_empty
from quire.errors import BadRequest
from quire.events import Events, refusals_as_412
from quire.ids import new_id
from quire.store import Store

CONFIG = "system/config"
DEFAULT = "default"
log = logging.getLogger("quire.locales")
_CODE = re.compile(r"^[a-zA-Z]{2,3}(?:[_-][a-zA-Z0-9]{2,8})*$")


class LocaleService:
    def __init__(self, store: Store, cache: Cache, events: Events, default_name: str = "Default") -> None:
        self.store = store
        self.cache = cache
        self.events = events
        self.default_name = default_name
        self.config = store.collection(CONFIG)
        self._locales: SystemValue[builtins.list[dict[str, str]]] = cache.system(self._load)
        self.renamer = LocaleRenamer(self)

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
        job = self.config.get(RENAME)
        if job is not None and job["state"] == "running":
            raise BadRequest(f"Locale {job['from']} is being renamed to {job['to']}: change the locales once that is done")
        return self.save_items(items)

    def save_items(self, items: builtins.list[dict[str, str]]) -> builtins.list[dict[str, Any]]:
        """Store checked locales (what `save` does once the body passed)."""
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


def localize(doc: dict[str, Any], localized: list[str], codes: list[str], locale: str,
             inside: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of `doc` with localized fields resolved for `locale`, also
    the localized sub-fields of sets (`inside`: `Model.localized_inside`)."""
    if not localized and not inside:
        return doc
    out = dict(doc)
    for name in localized:
        if locale in codes:
            value = doc.get(f"{name}_{locale}")
            if not is_empty(value):
                out[name] = value
        for code in codes:
            out.pop(f"{name}_{code}", None)
    for name, spec in (inside or {}).items():
        for key in [name, *(f"{name}_{code}" for code in codes)]:
            value = out.get(key)
            if isinstance(value, dict):
                out[key] = localize(value, spec["fields"], codes, locale, spec["sets"])
            elif isinstance(value, list):  # a multiple set
                out[key] = [localize(v, spec["fields"], codes, locale, spec["sets"]) if isinstance(v, dict) else v
                            for v in value]
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


# -- renaming a locale code ---------------------------------------------------

RENAME = "locales.rename"  # the job's document in `system/config`
STALE = 30  # seconds without progress after which a running job counts as stopped


@dataclass(frozen=True)
class RenamePart:
    """What one module renames when a locale code changes: `units(old)`
    names the pieces of work (a model, a project, an index), each done by
    `rename(unit, old, new)` inside a write transaction together with the
    job's record of it, so a unit is done and recorded or neither. Every
    rename is idempotent (values already moved are left as they are).
    `after(unit, old, new)`, when set, runs once the unit is committed (a
    search index rebuilt); it is recorded separately and run again on a
    resume when it did not finish."""

    name: str
    units: Callable[[str], builtins.list[str]]
    rename: Callable[[str, str, str], None]
    after: Callable[[str, str, str], Awaitable[None]] | None = None


class LocaleRenamer:
    """Renames a locale code everywhere, as a job recorded in the store:
    start() records it, run() does what is left (a resume after a crash
    or a killed worker does the rest; a unit is never half done). One
    runner at a time: the runner refreshes `beat`, and another process
    takes over only once that is STALE seconds old."""

    def __init__(self, locales: LocaleService) -> None:
        self.locales = locales
        self.store = locales.store
        self.config = locales.config
        self.parts: builtins.list[RenamePart] = []
        self.me = new_id()
        self._task: asyncio.Task[None] | None = None

    def add_part(self, part: RenamePart) -> None:
        self.parts.append(part)

    def resume(self) -> None:
        """On server start: finish a rename a stopped server left running."""
        job = self.job()
        if job is not None and job["state"] == "running":
            self.launch()

    def job(self) -> dict[str, Any] | None:
        return self.config.get(RENAME)

    def running(self) -> bool:
        job = self.job()
        return job is not None and job["state"] == "running"

    def stalled(self, job: dict[str, Any]) -> bool:
        return job["state"] == "running" and time.time() - job.get("beat", 0) > STALE

    async def start(self, old: Any, new: Any) -> dict[str, Any]:
        """Record the rename of `old` to `new` (400 naming the field at
        fault); run() does the work."""
        codes = self.locales.codes()
        if not isinstance(old, str) or old not in codes:
            raise BadRequest(f"{str(old)[:40]} is not a locale of the project", fields=["from"])
        if not isinstance(new, str) or not _CODE.match(new):
            raise BadRequest("The new code is not a locale code like 'de' or 'pt-BR'", fields=["to"])
        if new == DEFAULT or new in codes:
            raise BadRequest(f"Locale {new} exists already", fields=["to"])
        async with self.store.atomic():
            if self.running():
                raise BadRequest("A locale is being renamed already: wait for it to finish", fields=["to"])
            units = [f"{p.name}:{u}" for p in self.parts for u in p.units(old)]
            job = {"_id": RENAME, "state": "running", "from": old, "to": new, "units": units, "done": {},
                   "started": int(time.time()), "beat": time.time(), "runner": None, "error": None}
            self.config.replace(job)
        return job

    def launch(self) -> None:
        """Run the job in the background of this process (once at a time)."""
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run_logged())

    async def _run_logged(self) -> None:
        try:
            await self.run()
        except Exception:  # noqa: BLE001 (recorded on the job; a resume tries again)
            log.exception("locales: the rename stopped")
            with contextlib.suppress(Exception):
                async with self.store.atomic():
                    job = self.job()
                    if job is not None and job["state"] == "running":
                        self.config.update(RENAME, {"error": "The rename stopped; resume it to finish", "beat": 0})

    async def run(self) -> bool:
        """Do what is left of the job; False when there is none or another
        runner has it."""
        async with self.store.atomic():
            job = self.job()
            if job is None or job["state"] != "running":
                return False
            if job.get("runner") not in (None, self.me) and not self.stalled(job):
                return False
            self.config.update(RENAME, {"runner": self.me, "beat": time.time(), "error": None})
        old, new = job["from"], job["to"]
        parts = {p.name: p for p in self.parts}
        for key in job["units"]:
            name, _, unit = key.partition(":")
            part = parts.get(name)
            state = job["done"].get(key)
            if part is None or state == "done":
                continue
            if state != "renamed":
                async with self.store.atomic():
                    self._claim()
                    part.rename(unit, old, new)
                    state = "renamed" if part.after else "done"
                    self._mark(key, state)
            if part.after:
                await part.after(unit, old, new)
                async with self.store.atomic():
                    self._claim()
                    self._mark(key, "done")
            job = self.job() or job
        async with self.store.atomic():
            self._claim()
            items = [{"i18n": new if i["i18n"] == old else i["i18n"], "name": i["name"]} for i in self.locales._load()]
            self.locales.save_items(items)
            self.config.update(RENAME, {"state": "done", "finished": int(time.time()), "runner": None})
        return True

    def _claim(self) -> None:
        job = self.job()
        if job is None or job["state"] != "running" or job.get("runner") != self.me:
            raise RenameTaken("Another runner took the rename over")

    def _mark(self, key: str, state: str) -> None:
        job = self.job()
        assert job is not None
        self.config.update(RENAME, {"done": {**job["done"], key: state}, "beat": time.time()})

    def progress(self) -> dict[str, Any] | None:
        """The job as the settings page shows it."""
        job = self.job()
        if job is None:
            return None
        done = sum(1 for v in job["done"].values() if v == "done")
        total = len(job["units"]) + 1
        finished = done + (1 if job["state"] == "done" else 0)
        return {"from": job["from"], "to": job["to"], "state": job["state"], "done": finished, "total": total,
                "percent": int(100 * finished / total), "error": job.get("error"), "stalled": self.stalled(job)}

    def forget(self) -> None:
        """Drop the record of a finished job (in the caller's transaction)."""
        job = self.job()
        if job is not None and job["state"] == "done":
            self.config.delete(RENAME)

    async def aforget(self) -> None:
        """`forget` in a write transaction of its own, waited for off the
        event loop (a screen's dismiss)."""
        async with self.store.atomic():
            self.forget()


class RenameTaken(Exception):
    """The job's lease went to another runner: this one stops."""


def content_rename_part(models: Any) -> RenamePart:
    """Content's part: `field_<old>` keys of every localized field, one
    model a unit (one UPDATE of its table)."""

    def units(old: str) -> builtins.list[str]:
        return sorted(m.name for m in models.all() if m.localized)

    def rename(unit: str, old: str, new: str) -> None:
        model = models.find(unit)
        if model is None:
            return
        moves = {f"{name}_{old}": f"{name}_{new}" for name in model.localized}
        models.store.collection(model.collection).move_keys(moves)

    return RenamePart("content", units, rename)


def count_in_locale(models: Any, code: str) -> dict[str, int]:
    """Per model, how many items hold a non-empty value in locale `code`."""
    out = {}
    for model in models.all():
        keys = [f"{name}_{code}" for name in model.localized]
        if keys:
            counts, _ = models.store.collection(model.collection).count_non_empty({"held": keys})
            if counts["held"]:
                out[model.name] = counts["held"]
    return out
