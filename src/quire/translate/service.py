"""Machine translation of what is missing (docs/ai.md#machine-translation):
an item's localized fields, every item of a model, a translation project's
keys. Each runs as a job of the jobs table with a task record
(`translate/tasks`: state, done and total, errors) any worker answers from.

Machine translations are marked unreviewed: in an item, `_mt` lists the
localized values a machine wrote (`title_de`); in a project, the task's
project marks (`translate/marks`). With `[translate] hide_unreviewed`
(the default), a published item's translations go to its draft, so the
public API shows none of them until an editor publishes (reviews) it; an
item that is not published is its own draft.

An item is translated whole or not at all: every missing value of every
target locale first, then one save; a provider that fails leaves the item
as it was (the task says which item and why)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from quire.auth.permissions import content as perm
from quire.auth.service import AuthService, Identity
from quire.config import TranslateSettings
from quire.content.locales import LocaleService
from quire.content.reads import ReadOptions
from quire.content.service import ContentService
from quire.content.writes import MACHINE
from quire.errors import ApiError, BadRequest, NotFound
from quire.ids import new_id
from quire.jobs import GiveUp, Job, Jobs
from quire.l10n.service import MANAGE as L10N_MANAGE
from quire.l10n.service import L10nService
from quire.pages.service import MANAGE as PAGES_MANAGE
from quire.pages.service import PagesService
from quire.store import Store
from quire.translate.providers import TranslateError, Translator, make_translator

TASKS = "translate/tasks"
MARKS = "translate/marks"
JOB = "translate.missing"
LANE = "translate"
# the field types translated, and whether their values are HTML
TEXT_TYPES = {"text": False, "textarea": False, "markdown": False, "wysiwyg": True}
PAGE = 100  # items read at a time by a model's task
KEPT = 100  # tasks listed


class TranslateService:
    def __init__(self, store: Store, settings: TranslateSettings, content: ContentService, locales: LocaleService,
                 l10n: L10nService | None, auth: AuthService, jobs: Jobs, pages: PagesService | None = None) -> None:
        self.pages = pages
        self.store = store
        self.settings = settings
        self.content = content
        self.locales = locales
        self.l10n = l10n
        self.auth = auth
        self.jobs = jobs
        self.tasks = store.collection(TASKS, {"created": "number"})
        self.marks = store.collection(MARKS)
        # tests give a provider of their own; else made from the settings
        self.translator_for: Callable[[], Translator] = self._translator

    def _translator(self) -> Translator:
        s = self.settings
        try:
            return make_translator(s.provider, s.url, s.api_key, s.timeout_seconds)
        except TranslateError as exc:  # not set up: as single sign-on answers when it is not (404)
            raise NotFound(str(exc)) from None

    # -- asking ----------------------------------------------------------------

    async def ask(self, kind: str, name: str, item_id: str | None, body: Any, identity: Identity) -> dict[str, Any]:
        """A task: translate what is missing of one item (`item`), a model's
        items (`model`) or a project (`project`), into `locales` (every
        locale but the default for items; the project's others for a
        project). Checked now (permissions, names, locales, a provider);
        done by a job (202)."""
        if not isinstance(body, dict):
            body = {}
        self.translator_for()  # no provider set up: 404 now, not a failed task later
        if kind == "pages":
            identity.require(PAGES_MANAGE)
            if self.pages is None:
                raise NotFound("Pages are not served here")
            targets = self._targets(body.get("locales"), self.locales.codes())
        elif kind == "project":
            identity.require(L10N_MANAGE)
            if self.l10n is None:
                raise NotFound("Translation projects are not served here")
            project = self.l10n.get(name, identity)
            targets = self._targets(body.get("locales"), project["locales"][1:])
        else:
            model = self.content.readable(name, identity)
            identity.require(perm(model.name, "update"))
            name = model.name
            if kind == "item":
                self.content.item_or_draft(name, item_id, ReadOptions(), identity)  # 404 now
            targets = self._targets(body.get("locales"), self.locales.codes())
        task = {"_id": new_id(), "kind": kind, "name": name, "item": item_id, "locales": targets,
                "state": "pending", "done": 0, "total": None, "translated": 0, "errors": [],
                "by": identity.key_name or identity.key_id or identity.kind, "created": round(time.time(), 3)}
        payload = {"task": task["_id"], "role": identity.role, "actor": identity.key_id, "actor_name":
                   identity.key_name, "actor_kind": identity.kind}
        async with self.store.atomic():
            self.tasks.insert(task)
            self.jobs.enqueue(JOB, payload)
        self.jobs.wake()
        return shown(task)

    def _targets(self, asked: Any, known: list[str]) -> list[str]:
        if asked is None:
            if not known:
                raise BadRequest("There is no locale to translate into: add one first", fields=["locales"])
            return list(known)
        if not isinstance(asked, list) or not asked or not all(isinstance(c, str) for c in asked):
            raise BadRequest("locales is a list of locale codes", fields=["locales"])
        unknown = [c for c in asked if c not in known]
        if unknown:
            raise BadRequest(f"Not a locale to translate into here: {', '.join(unknown)} (known: "
                             f"{', '.join(known) or 'none'})", fields=["locales"])
        return list(dict.fromkeys(asked))

    def task(self, task_id: str) -> dict[str, Any]:
        doc = self.tasks.get(task_id) if isinstance(task_id, str) and self.tasks.exists() else None
        if doc is None:
            raise NotFound("Task not found")
        return shown(doc)

    def list_tasks(self) -> list[dict[str, Any]]:
        if not self.tasks.exists():
            return []
        return [shown(d) for d in self.tasks.find(None, [(("created",), -1)], KEPT)]

    @property
    def ready(self) -> bool:
        """Whether a provider is set up."""
        return bool(self.settings.provider)

    def translatable(self, identity: Identity) -> list[dict[str, Any]]:
        """The models with localized text fields this identity may update."""
        return [{"name": m.name, "label": m.label or m.name} for m in self.content.models.all()
                if identity.can(perm(m.name, "update"))
                and any(f.get("i18n") and f["type"] in TEXT_TYPES for f in m.fields)]

    def unreviewed(self, model: str, identity: Identity, limit: int = 10) -> tuple[list[dict[str, Any]], int]:
        """A model's items with machine translations nobody reviewed (in the
        item, or in its draft): the first `limit` (id, title-ish text,
        fields) and how many in all."""
        found = self.content.models.get(model)
        identity.require(perm(found.name, "update"))
        spec = {MACHINE: {"$exists": True, "$ne": None}}
        rows = [*self.content.models.collection(found).find(spec), *self.content.drafts(found).find(spec)]
        marked = {d["_id"]: d for d in rows if d.get(MACHINE)}
        shown_items = [{"_id": i, "fields": d[MACHINE], "title": next((str(d[f["name"]]) for f in found.fields
                                                                        if isinstance(d.get(f["name"]), str)), i)}
                       for i, d in list(marked.items())[:limit]]
        return shown_items, len(marked)

    def project_marks(self, name: str, identity: Identity) -> dict[str, list[str]]:
        """A project's values a machine wrote and nobody reviewed: key -> locales."""
        if self.l10n is not None:
            self.l10n.get(name, identity)
        doc = self.marks.get(f"l10n/{name}") if self.marks.exists() else None
        return dict(doc["keys"]) if doc else {}

    async def reviewed(self, name: str, body: Any, identity: Identity) -> dict[str, list[str]]:
        """`{"keys": {key: [locales]}}` reviewed: their marks go."""
        identity.require(L10N_MANAGE)
        if not isinstance(body, dict) or not isinstance(body.get("keys"), dict):
            raise BadRequest("The body is {\"keys\": {key: [locales]}}", fields=["keys"])
        async with self.store.atomic():
            marks = self.project_marks(name, identity)
            for key, locales in body["keys"].items():
                left = [c for c in marks.get(key, []) if not isinstance(locales, list) or c not in locales]
                marks.pop(key, None)
                if left:
                    marks[key] = left
            self._store_marks(name, marks)
        return marks

    def _store_marks(self, name: str, marks: dict[str, list[str]]) -> None:
        doc: dict[str, Any] = {"_id": f"l10n/{name}", "keys": dict(sorted(marks.items()))}
        if self.marks.get(doc["_id"]) is None:
            self.marks.insert(doc)
        else:
            self.marks.replace(doc)

    # -- the job ------------------------------------------------------------------

    async def run(self, job: Job) -> None:
        asked = job.payload
        task = self.tasks.get(asked["task"])
        if task is None:
            raise GiveUp("its task is gone")
        identity = replace(self.auth.role_identity(asked["role"], asked.get("actor") or "", asked.get("actor_name")
                                                   or ""), kind=asked.get("actor_kind") or "key")
        identity = replace(identity, key_name=f"{identity.key_name or identity.key_id} (machine translation)")
        self._update(task["_id"], state="running")
        try:
            translator = self.translator_for()
            if task["kind"] == "project":
                await self._project(task, translator, identity)
            elif task["kind"] == "pages":
                await self._pages(task, translator, identity)
            elif task["kind"] == "item":
                self._update(task["_id"], total=1)
                written = await self._item(task["name"], task["item"], task["locales"], translator, identity)
                self._update(task["_id"], done=1, translated=len(written))
            else:
                await self._model(task, translator, identity)
        except (ApiError, TranslateError) as exc:
            message = exc.message if isinstance(exc, ApiError) else str(exc)
            self._update(task["_id"], state="failed", error=message)
            raise GiveUp(message) from None
        except Exception as exc:
            self._update(task["_id"], state="failed", error=f"{type(exc).__name__}: {exc}")
            raise
        self._update(task["_id"], state="done")

    def ended(self, job: Job, state: str) -> None:
        """The jobs table's word that the task's job ended: a job failed
        without its task saying so (its runner stopped on its last attempt)
        fails the task, with the reason."""
        if state != "failed":
            return
        task = self.tasks.get(job.payload.get("task", ""))
        if task is not None and task["state"] in ("pending", "running"):
            self._update(task["_id"], state="failed", error="The worker running it stopped; what was written "
                                                               "stays: ask again to translate the rest")

    async def _model(self, task: dict[str, Any], translator: Translator, identity: Identity) -> None:
        name = task["name"]
        total = self.content.count(name, ReadOptions(drafts=True), identity)
        self._update(task["_id"], total=total)
        done = translated = 0
        errors: list[dict[str, str]] = []
        after: str | None = None
        while True:
            page = self.content.list_page(name, ReadOptions(drafts=True, limit=PAGE, fields={"_id": 1},
                                                            after=after), identity)
            for row in page.rows:
                item_id = _id_of(row)
                try:
                    translated += len(await self._item(name, item_id, task["locales"], translator, identity))
                except (ApiError, TranslateError) as exc:
                    errors.append({"item": item_id, "error": exc.message if isinstance(exc, ApiError) else str(exc)})
                    if isinstance(exc, TranslateError) and len(errors) >= 3 and translated == 0:
                        raise  # the provider fails every time: stop asking it
                done += 1
            self._update(task["_id"], done=done, translated=translated, errors=errors[-20:])
            if page.next is None:
                break
            after = page.next

    async def _item(self, name: str, item_id: str | None, targets: list[str], translator: Translator,
                    identity: Identity) -> list[str]:
        """Translate one item's missing localized values; the keys written."""
        model = self.content.readable(name, identity)
        item, rev, _ = self.content.item_or_draft(name, item_id, ReadOptions(), identity)
        written: dict[str, str] = {}
        for target in targets:
            for html in (False, True):
                wanted = [f["name"] for f in model.fields if f.get("i18n") and TEXT_TYPES.get(f["type"]) is html
                          and isinstance(item.get(f["name"]), str) and item[f["name"]].strip()
                          and not item.get(f"{f['name']}_{target}")]
                if wanted:
                    found = await translator.translate([item[n] for n in wanted], self.settings.source_language,
                                                       target, html)
                    written.update({f"{n}_{target}": text for n, text in zip(wanted, found, strict=True)})
        if not written:
            return []
        marks = sorted({*(item.get(MACHINE) or []), *written})
        data = {**written, MACHINE: marks, "_rev": rev}
        if model.type != "singleton":
            data["_id"] = item["_id"]
        if self.settings.hide_unreviewed:
            await self.content.save_draft(name, data, identity)
        else:
            await self.content.save(name, data, identity)
        return sorted(written)

    async def _pages(self, task: dict[str, Any], translator: Translator, identity: Identity) -> None:
        """Every page's missing title and SEO texts. A published page has no
        draft to hold them: with `hide_unreviewed` it is left out (said in
        the task), else written marked, as an item is."""
        assert self.pages is not None
        ids = [p["_id"] for p in self.pages.tree_order()]
        self._update(task["_id"], total=len(ids))
        translated = 0
        errors: list[dict[str, str]] = []
        for n, page_id in enumerate(ids):
            page = self.pages.stored(page_id, identity)
            if page.get("_state") == 1 and self.settings.hide_unreviewed:
                if self._page_missing(page, task["locales"]):
                    errors.append({"item": page_id, "error": "published: a page has no draft to hold "
                                   "unreviewed translations; unpublish it, or set hide_unreviewed = false"})
            else:
                written = await self._page(page, task["locales"], translator)
                if written:
                    marks = sorted({*(page.get(MACHINE) or []), *written})  # title_de, seo_de
                    await self.pages.save({**written, "_id": page_id, MACHINE: marks}, identity)
                    translated += sum(len(v) if isinstance(v, dict) else 1 for v in written.values())
            self._update(task["_id"], done=n + 1, translated=translated, errors=errors[-20:])

    def _page_missing(self, page: dict[str, Any], targets: list[str]) -> bool:
        return any(self._page_texts(page, target) for target in targets)

    @staticmethod
    def _page_texts(page: dict[str, Any], target: str) -> list[tuple[str, str, str]]:
        """(where, key, text) of a page's values missing in `target`: its
        title, and its SEO title and description."""
        out: list[tuple[str, str, str]] = []
        if isinstance(page.get("title"), str) and page["title"].strip() and not page.get(f"title_{target}"):
            out.append(("title", "title", page["title"]))
        seo, seo_target = page.get("seo") or {}, page.get(f"seo_{target}") or {}
        for key in ("title", "description"):
            if isinstance(seo.get(key), str) and seo[key].strip() and not seo_target.get(key):
                out.append(("seo", key, seo[key]))
        return out

    async def _page(self, page: dict[str, Any], targets: list[str], translator: Translator) -> dict[str, Any]:
        written: dict[str, Any] = {}
        for target in targets:
            texts = self._page_texts(page, target)
            if not texts:
                continue
            found = await translator.translate([t for _, _, t in texts], self.settings.source_language, target,
                                               False)
            for (where, key, _), text in zip(texts, found, strict=True):
                if where == "title":
                    written[f"title_{target}"] = text
                else:
                    seo = written.setdefault(f"seo_{target}", dict(page.get(f"seo_{target}") or {}))
                    seo[key] = text
        return written

    async def _project(self, task: dict[str, Any], translator: Translator, identity: Identity) -> None:
        assert self.l10n is not None
        project = self.l10n.get(task["name"], identity)
        source = project["locales"][0]
        translated = 0
        marks = self.project_marks(task["name"], identity)
        self._update(task["_id"], total=len(task["locales"]))
        for n, target in enumerate(task["locales"]):
            missing = [k for k, values in project["keys"].items()
                       if isinstance(values.get(source), str) and values[source].strip() and not values.get(target)]
            if missing:
                found = await translator.translate([project["keys"][k][source] for k in missing], source, target,
                                                   False)
                async with self.store.atomic():
                    await self.l10n.patch(task["name"], {"keys": {k: {target: t} for k, t in
                                                                  zip(missing, found, strict=True)}}, identity)
                    for k in missing:
                        marks[k] = sorted({*marks.get(k, []), target})
                    self._store_marks(task["name"], marks)
                translated += len(missing)
            self._update(task["_id"], done=n + 1, translated=translated)

    def _update(self, task_id: str, **changes: Any) -> None:
        with self.store.transaction():
            doc = self.tasks.get(task_id)
            if doc is None:
                return
            doc.update(changes)
            if changes.get("state") in ("done", "failed"):
                doc["ended"] = round(time.time(), 3)
            self.tasks.replace(doc)


def _id_of(row: bytes) -> str:
    import orjson

    return str(orjson.loads(row)["_id"])


def shown(doc: dict[str, Any]) -> dict[str, Any]:
    return {"id": doc["_id"], **{k: v for k, v in doc.items() if k != "_id"}}
