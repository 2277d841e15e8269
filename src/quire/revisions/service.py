"""The history of documents: every write of an item (or a page, or the
pages' settings) records a revision in `system/revisions`, inside the
write's transaction, so a revision exists exactly when the write does.

A revision holds who wrote (`who`: kind, id, name), when (`at`, Unix
seconds), what kind of write it was (`action`), what changed (`diff`, see
diff.py) and the whole document before the write (`previous`; null for a
creation). Revisions of one document are numbered 1, 2, ... (`n`); the
document as revision n left it is `apply(previous, diff)` (null after a
deletion). Older revisions are dropped as newer ones are written (`keep`
per document) and by a daily job (`keep_days`); see docs/revisions.md."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

from quire.auth.service import Identity, who
from quire.config import RevisionsSettings
from quire.content.service import ContentService
from quire.errors import BadRequest, NotFound
from quire.ids import new_id
from quire.jobs import Daily, Job, Jobs, drop_older
from quire.pages.menus import MenuService
from quire.pages.service import MANAGE, PagesService
from quire.revisions.diff import apply, changed_fields, diff, renamed
from quire.store import Store

log = logging.getLogger("quire.revisions")

REVISIONS = "system/revisions"
HINTS = {"resource": "text", "item": "text", "n": "number", "at": "number"}
INDEXES: list[list[tuple[str, ...]]] = [[("resource",), ("item",), ("n",)], [("at",)]]
PAGES, SETTINGS = "pages", "pages/settings"  # the resources of pages and of the pages' settings
PRUNE = "revisions.prune"
ACTIONS = ("create", "update", "delete", "restore")

# The action of the writes made while it is set: a restore writes through
# the ordinary save path, whose event handler records the revision.
_action: contextvars.ContextVar[str | None] = contextvars.ContextVar("quire_revision_action", default=None)


class RevisionService:
    """Records, lists, compares and prunes revisions; the modules whose
    documents have a history call `record` from their write events."""

    def __init__(self, store: Store, settings: RevisionsSettings, jobs: Jobs, content: ContentService,
                 pages: PagesService, menus: MenuService, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.content = content
        self.pages = pages
        self.menus = menus
        self.settings = settings
        self.jobs = jobs
        self.clock = clock
        self.revisions = store.collection(REVISIONS, HINTS)
        store.ensure_indexes(REVISIONS, INDEXES, HINTS)
        self.daily = Daily(jobs, PRUNE, lambda store: self.prune(store=store),
                           f"revisions older than {settings.keep_days} days", lambda: self.clock())

    # -- writing ------------------------------------------------------------

    @contextlib.contextmanager
    def acting(self, action: str) -> Iterator[None]:
        """Writes made inside record `action` (a restore) instead of
        create/update."""
        token = _action.set(action)
        try:
            yield
        finally:
            _action.reset(token)

    def record(self, resource: str, item_id: str, previous: dict[str, Any] | None,
               current: dict[str, Any] | None, identity: Identity) -> dict[str, Any] | None:
        """Record a write of `item_id` of `resource` (inside the write's
        transaction): `previous` is the document before it (None: created),
        `current` after it (None: deleted). Answers the revision, or None
        when revisions are off."""
        if not self.settings.enabled:
            return None
        if current is None:
            action = "delete"
        else:
            action = _action.get() or ("update" if previous is not None else "create")
        last = self.last(resource, item_id)
        n = (last["n"] if last else 0) + 1
        revision = {"_id": new_id(), "resource": resource, "item": item_id, "n": n,
                    "at": round(self.clock(), 3), "action": action, "who": who(identity),
                    "diff": diff(previous, current), "previous": previous}
        self.revisions.insert(revision)
        if n > self.settings.keep:
            self.revisions.delete_many({"resource": resource, "item": item_id, "n": {"$lte": n - self.settings.keep}})
        return revision

    def renamed(self, resource: str, keys: dict[str, str]) -> None:
        """Fields of a model were renamed (`keys`: every stored key that
        moved, old -> new, localized ones included): its revisions name
        them by their new names, so a restore keeps their values. In the
        rename's transaction, a batch at a time."""
        last = ""
        while True:
            batch = self.revisions.find({"resource": resource, "_id": {"$gt": last}}, [(("_id",), 1)], limit=500)
            for revision in batch:
                previous, changes = renamed(revision["previous"], revision["diff"], keys)
                if previous != revision["previous"] or changes != revision["diff"]:
                    self.revisions.replace({**revision, "previous": previous, "diff": changes})
            if len(batch) < 500:
                return
            last = batch[-1]["_id"]

    def forget(self, resource: str) -> int:
        """Drop every revision of `resource` (a removed model): answers how many."""
        return self.revisions.delete_many({"resource": resource})

    # -- reading ------------------------------------------------------------

    def history(self, resource: str, item_id: str, limit: int = 50, skip: int = 0) -> tuple[list[dict[str, Any]], int]:
        """The revisions of one document, newest first, without the stored
        documents: (page, total)."""
        query = {"resource": resource, "item": item_id}
        page = self.revisions.find(query, [(("n",), -1)], limit=limit, skip=skip)
        return [summary(r) for r in page], self.revisions.count(query)

    def get(self, resource: str, item_id: str, n: int) -> dict[str, Any]:
        """Revision `n` with the document as it left it (`doc`; null after a
        deletion). 404 when it is not kept."""
        found = self.revisions.find_one({"resource": resource, "item": item_id, "n": n})
        if found is None:
            raise NotFound(f"Revision {n} of {item_id} is not kept")
        return {**summary(found), "diff": found["diff"], "previous": found["previous"], "doc": state_after(found)}

    def state(self, resource: str, item_id: str, n: int) -> dict[str, Any] | None:
        """The document as revision `n` left it; 0: before the first kept
        revision's write."""
        if n == 0:
            first = self.revisions.find_one({"resource": resource, "item": item_id}, [(("n",), 1)])
            if first is None:
                raise NotFound(f"{item_id} has no revisions")
            return first["previous"]
        return self.get(resource, item_id, n)["doc"]

    def compare(self, resource: str, item_id: str, a: int, b: int) -> list[dict[str, Any]]:
        """The changes from the document as revision `a` left it to the one
        revision `b` left."""
        after = self.state(resource, item_id, b)
        return diff(self.state(resource, item_id, a), after)

    def last(self, resource: str, item_id: str) -> dict[str, Any] | None:
        return self.revisions.find_one({"resource": resource, "item": item_id}, [(("n",), -1)])

    # -- restoring ----------------------------------------------------------

    async def restore_item(self, model: str, item_id: str, n: int, identity: Identity) -> dict[str, Any]:
        """Write item `item_id` of `model` back as revision `n` left it
        (`ContentWriter.restore`: checks, permissions, events), recorded as
        a `restore`; answers the item."""
        resource = f"content/{model}"
        state = self.get(resource, item_id, _restorable(n))["doc"]
        if state is None:
            raise BadRequest(f"Revision {n} records the item's deletion: restore one before it")
        last = self.last(resource, item_id) or {}
        last_rev = int((last.get("previous") or {}).get("_rev") or 0)
        with self.acting("restore"):
            return await self.content.restore(model, state, identity, last_rev)

    async def restore_page(self, page_id: str, n: int, identity: Identity) -> dict[str, Any]:
        """Write page `page_id` back as revision `n` left it, whole (fields
        the old version lacked are emptied), through the pages' own save
        (checks, routes, events); a deleted page comes back with its id."""
        identity.require(MANAGE)
        state = self.get(PAGES, page_id, _restorable(n))["doc"]
        if state is None:
            raise BadRequest(f"Revision {n} records the page's deletion: restore one before it")
        current = self.pages.collection().get(page_id)
        with self.acting("restore"):
            if current is not None:
                emptied = {k: None for k in current if k not in state and not k.startswith("_")}
                return await self.pages.save({**state, **emptied, "_id": page_id}, identity)
            async with self.store.atomic():
                await self.pages.load([{**state, "_modified": int(self.clock()), "_mby": identity.actor}],
                                      identity)
        return self.pages.collection().get(page_id) or {}

    async def restore_settings(self, n: int, identity: Identity) -> dict[str, Any]:
        """Write the pages' settings back as revision `n` left them, whole."""
        identity.require(MANAGE)
        state = self.get(SETTINGS, "settings", _restorable(n))["doc"] or {}
        current = self.menus.settings_coll.get("settings") or {}
        data = {k: v for k, v in state.items() if not k.startswith("_")}
        data.update({k: None for k in current if k not in state and not k.startswith("_")})
        with self.acting("restore"):
            return await self.menus.save_settings(data, identity)

    # -- pruning ------------------------------------------------------------

    def prune(self, now: float | None = None, store: Store | None = None) -> int:
        """Drop revisions older than `keep_days` (none when it is 0); with
        `store`, through that store object (the jobs runner's)."""
        return drop_older(store or self.store, REVISIONS, HINTS, self.settings.keep_days,
                          self.clock() if now is None else now)

    def schedule(self) -> None:
        """Enqueue today's prune (once per cluster: the job's key is the day); a
        runner does it when it starts (`jobs.Daily`)."""
        self.daily.schedule()

    def _prune_job(self, job: Job) -> None:
        self.daily.run(job)


def summary(revision: dict[str, Any]) -> dict[str, Any]:
    """A revision as a history lists it: who, when, what, which fields."""
    return {"n": revision["n"], "at": revision["at"], "action": revision["action"], "who": revision["who"],
            "fields": changed_fields(revision["diff"])}


def state_after(revision: dict[str, Any]) -> dict[str, Any] | None:
    if revision["action"] == "delete":
        return None
    return apply(revision["previous"], revision["diff"])


def _restorable(n: int) -> int:
    if n < 1:
        raise BadRequest("Revisions are numbered from 1: name the one to restore", fields=["revision"])
    return n


def check_number(raw: str, name: str = "revision") -> int:
    """A revision number of a path or parameter: 400 unless a whole number
    >= 0 in ASCII digits (`isdigit` alone takes "²" and "١")."""
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        raise BadRequest(f"{name} must be a revision number (a whole number)", fields=[name])
    return int(raw)
