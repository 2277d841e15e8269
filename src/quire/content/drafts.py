"""Drafts kept beside a published item, publishing and unpublishing (now
or at `_publish_at` / `_unpublish_at`, by a job of the jobs table).

A published item's draft is a document of `drafts/<model>` under the
item's `_id`: the item as the draft would make it, its own `_rev`, `_base`
(the live revision it was started from) and `_basis` (the item's fields
then). Live reads never look at it. Publishing applies the fields the
draft changed since `_basis` to the live item, so a write made to the live
item meanwhile (another field, a tree move, a state) is kept. An item that
is not published (`_state` 0 or -1) and has no draft is its own draft: a
draft save writes it, as Cockpit's drafts are written.

The schedule belongs to the live item (`_publish_at`, `_unpublish_at`,
Unix seconds): a write that sets one enqueues a job keyed by the item and
the time, in the write's transaction. The job acts only while the item
still names that time, and clears it in the same transaction as the
change, so a job run twice (its runner killed after the commit) or a
schedule moved since changes nothing the second time."""

from __future__ import annotations

import logging
import time
from typing import Any

from quire.auth.permissions import content as perm
from quire.auth.service import Identity
from quire.content.fill import doc_rev
from quire.content.models import Model
from quire.content.schedule import (
    PUBLISH_JOB,
    SCHEDULE,
    SCHEDULER,
    UNPUBLISH_JOB,
    check_schedule,
    check_time,
    drop_cleared,
)
from quire.content.writes import ContentWriter, Expected, _check_rev, _expected, place_rev
from quire.errors import BadRequest, Conflict, NotFound, ValidationError
from quire.events import refusals_as_412
from quire.ids import is_id
from quire.jobs import PUBLISHING, GiveUp, Job, Jobs
from quire.loops import run_here
from quire.store import Collection

log = logging.getLogger("quire.content")

# what a draft holds besides the item: where it started
DRAFT_KEYS = ("_base", "_basis")
MISSING = object()
PUBLISHED, UNPUBLISHED = "publish", "unpublish"


class DraftWriter(ContentWriter):
    """The writer with drafts beside published items, publishing and
    unpublishing, now and on schedule."""

    def _live(self, model: Model, coll: Collection, item_id: str | None) -> dict[str, Any] | None:
        """The stored item; a singleton's one item, unless an id is named
        that is not its own (then none: a 404, not the singleton)."""
        if model.type == "singleton":
            found = coll.find_one({})
            return None if found is None or item_id not in (None, found["_id"]) else found
        return coll.get(item_id) if item_id is not None and is_id(item_id) else None

    # -- reading ------------------------------------------------------------

    def draft_of(self, name: str, item_id: str | None, identity: Identity) -> dict[str, Any] | None:
        """The stored draft of an item (None: it has none), for who may
        update the model."""
        model = self.models.get(name)
        identity.require(perm(name, "update"))
        coll = self.models.collection(model)
        live = self._live(model, coll, item_id)
        if live is None:
            return None
        return self.drafts(model).get(live["_id"])

    # -- writing a draft ----------------------------------------------------

    async def save_draft(self, name: str, data: Any, identity: Identity,
                         if_match: Expected = None) -> dict[str, Any]:
        """Write `data` as the item's draft: beside the live item when it
        is published, else to the item itself (a new item is created as a
        draft, `_state` 0). Answers the draft with `_draft: true`, or the
        item as a save does with `_draft: false`."""

        model = self.models.get(name)
        if not isinstance(data, dict):
            raise BadRequest("Item data is missing")
        item_id = data.get("_id")
        if item_id is not None and not isinstance(item_id, str):
            raise BadRequest("_id must be a string", fields=["_id"])
        coll = self.models.collection(model)
        drafts = self.drafts(model)
        live = self._live(model, coll, item_id)
        if live is None or not _beside(live, drafts):
            if live is None and model.type != "singleton" and item_id is not None:
                raise NotFound("Item not found")
            saved = await self.save(name, data, identity, if_match, draft=True)
            return {**saved, "_draft": False}
        identity.require(perm(name, "update"))
        clean = self.check_data(model, data, identity)
        if "_state" in clean and clean.pop("_state") != live.get("_state", 1):
            raise BadRequest("A draft has no state of its own: publish or unpublish the item "
                             "(POST /api/content/publish or /unpublish)", fields=["_state"])
        for key in ("_pid", "_o"):
            if key in clean and clean.pop(key) != live.get(key):
                raise BadRequest(f"{key}: a draft keeps the item's place; move the item to change it", fields=[key])
        schedule = {k: clean.pop(k) for k in SCHEDULE if k in clean}
        expected = _expected(data.get("_rev"), if_match)
        now = int(time.time())
        async with self.store.atomic():
            if self.recheck(model, data, clean, identity)[0] is not model:
                # the model changed while we waited for the lock: every check
                # again, against it, inside this transaction (no second wait)
                return await self.save_draft(name, data, identity, if_match)
            live = self._live(model, coll, live["_id"])
            if live is None:
                raise NotFound("Item not found")
            draft = drafts.get(live["_id"])
            if draft is None and live.get("_state", 1) != 1:
                raise Conflict("The item was unpublished meanwhile: it is its own draft now; save again",
                               rev=doc_rev(live))
            if expected is not None:
                _check_rev(expected, doc_rev(draft) if draft is not None else doc_rev(live))
            if schedule and any(live.get(k) != v for k, v in schedule.items()):
                identity.require(perm(name, "publish"))
                live = await self._reschedule(model, coll, live, schedule, identity, now)
            if draft is None:  # a new draft: a copy of the item, and what its fields were
                draft = {**live, "_base": doc_rev(live), "_basis": _fields(live)}
            doc = {**draft, **clean, "_modified": now, "_mby": identity.actor}
            place_rev(doc, doc_rev(draft) + 1)
            for key in SCHEDULE:
                doc.pop(key, None)
            drafts.replace(doc)
            with refusals_as_412():
                await self.events.emit("content.draft.saved", model=name, item=shown(doc), identity=identity)
        return {**model.filler.doc(shown(doc)), "_draft": True}

    def _check_fields(self, model: Model, item: dict[str, Any], identity: Identity) -> None:
        """The item's field values checked as a save checks them (a draft
        may hold a value its field's type no longer takes); keys of fields
        the model no longer has stay, as they do on a save."""
        try:
            self.check_data(model, _fields(item), identity)
        except ValidationError as exc:
            errors = {k: why for k, why in exc.errors.items() if why != "is not a field of this model"}
            if errors:
                raise ValidationError("item data", errors) from None

    async def _reschedule(self, model: Model, coll: Collection, live: dict[str, Any],
                          schedule: dict[str, Any], identity: Identity, now: int) -> dict[str, Any]:
        """Write a new schedule to the live item (inside the caller's
        transaction), as a save of those fields only."""

        item = {**live, **schedule, "_modified": now, "_mby": identity.actor}
        drop_cleared(item)
        check_schedule(item)
        place_rev(item, doc_rev(live) + 1)
        await self._write(model.name, coll, item, live, identity)
        return item

    async def discard_draft(self, name: str, item_id: str | None, identity: Identity) -> bool:
        """Drop the item's draft; False when it had none."""
        model = self.models.get(name)
        identity.require(perm(name, "update"))
        coll = self.models.collection(model)
        async with self.store.atomic():
            live = self._live(model, coll, item_id)
            if live is None:
                raise NotFound("Item not found")
            dropped = self.drafts(model).delete(live["_id"])
            if dropped:
                with refusals_as_412():
                    await self.events.emit("content.draft.remove", model=name, item=live, identity=identity)
        return dropped

    # -- publishing ---------------------------------------------------------

    async def publish(self, name: str, item_id: str | None, identity: Identity,
                      expected: int | None = None) -> dict[str, Any]:
        """Publish the item with `_state` 1: with a draft, the fields the
        draft changed are applied to the live item (the others keep what
        the live item holds now, written meanwhile or not), the result is
        checked as a save checks it (field values, required fields), and
        the draft is dropped. `expected`: the revision the caller saw (the
        draft's, or the item's without one): 409 when it moved on."""
        identity.require(perm(name, "update"))
        identity.require(perm(name, "publish"))
        return await self._publish(name, item_id, identity, expected=expected)

    async def _publish(self, name: str, item_id: str | None, identity: Identity, *,
                       expected: int | None = None, at: int | None = None) -> dict[str, Any]:
        model = self.models.get(name)
        coll = self.models.collection(model)
        drafts = self.drafts(model)
        now = int(time.time())
        async with self.store.atomic():
            live = self._live(model, coll, item_id)
            if live is None:
                raise NotFound("Item not found")
            if at is not None and live.get("_publish_at") != at:
                return model.filler.doc(live)  # rescheduled or cleared since: not this job's to do
            draft = drafts.get(live["_id"])
            if expected is not None:
                _check_rev(expected, doc_rev(draft) if draft is not None else doc_rev(live))
            if draft is None and live.get("_state") == 1 and "_publish_at" not in live:
                return model.filler.doc(live)  # nothing to publish
            item = dict(live) if draft is None else applied(live, draft)
            item.pop("_publish_at", None)
            item.update({"_state": 1, "_modified": now, "_mby": identity.actor})
            self._check_fields(model, item, identity)
            self._check_required(model, item)
            if draft is not None:
                drafts.delete(live["_id"])
            await self._store_state(name, coll, live, item, identity, PUBLISHED, at)
        return await self._after_state(model, item, identity)

    async def unpublish(self, name: str, item_id: str | None, identity: Identity,
                        at: int | None = None) -> dict[str, Any]:
        """Take the item off the live site (`_state` 0); its draft stays."""
        if at is None:
            identity.require(perm(name, "publish"))
        model = self.models.get(name)
        coll = self.models.collection(model)
        now = int(time.time())
        async with self.store.atomic():
            live = self._live(model, coll, item_id)
            if live is None:
                raise NotFound("Item not found")
            if at is not None and live.get("_unpublish_at") != at:
                return model.filler.doc(live)
            if live.get("_state") != 1 and "_unpublish_at" not in live:
                return model.filler.doc(live)
            item = {**live, "_state": 0, "_modified": now, "_mby": identity.actor}
            item.pop("_unpublish_at", None)
            await self._store_state(name, coll, live, item, identity, UNPUBLISHED, at)
        return await self._after_state(model, item, identity)

    async def _store_state(self, name: str, coll: Collection, live: dict[str, Any], item: dict[str, Any],
                           identity: Identity, event: str, at: int | None) -> None:
        """Store a publish or unpublish as a save of the item (revision + 1,
        its events) with its own event, inside the caller's transaction."""
        place_rev(item, doc_rev(live) + 1)
        await self._write(name, coll, item, live, identity)
        with refusals_as_412():
            if event == PUBLISHED:
                await self.events.emit("content.item.publish", model=name, item=item, identity=identity,
                                       scheduled=at is not None)
            else:
                await self.events.emit("content.item.unpublish", model=name, item=item, identity=identity,
                                       scheduled=at is not None)

    async def _after_state(self, model: Model, item: dict[str, Any], identity: Identity) -> dict[str, Any]:
        await self.events.emit_after("content.item.save.after", model=model.name, item=item, is_update=True,
                                     identity=identity)
        return model.filler.doc(item)

    # -- the schedule's jobs ------------------------------------------------

    def register_jobs(self, jobs: Jobs, lease_seconds: float = 60) -> None:
        self.jobs = jobs
        for kind in (PUBLISH_JOB, UNPUBLISH_JOB):
            jobs.handle(kind, self._scheduled, max_attempts=5, retry_seconds=10, lease_seconds=lease_seconds,
                        lane=PUBLISHING)

    def _scheduled(self, job: Job) -> None:
        """A `content.publish` / `content.unpublish` job, in the runner's
        thread: the write is the same coroutine a request awaits, run on
        the thread's own loop (`run_here`, kept for the thread's life), so
        revisions, search and webhooks follow it in its transaction."""
        payload = job.payload
        name, item_id, at = payload.get("model"), payload.get("id"), payload.get("at")
        if not isinstance(name, str) or not isinstance(item_id, str) or check_time(at) or at is None:
            raise GiveUp(f"not a schedule: {payload!r}")
        if self.models.find(name) is None:
            return  # the model is gone, and its items with it
        action = self._publish if job.kind == PUBLISH_JOB else self._unpublish_at
        try:
            run_here(action(name, item_id, SCHEDULER, at=at))
        except NotFound:
            return  # the item was deleted meanwhile
        except (BadRequest, Conflict) as exc:  # a draft that fails its checks: so would another attempt
            raise GiveUp(f"{name}/{item_id}: {exc.message}") from None

    async def _unpublish_at(self, name: str, item_id: str, identity: Identity, *,
                            at: int) -> dict[str, Any]:
        return await self.unpublish(name, item_id, identity, at=at)


def _fields(doc: dict[str, Any]) -> dict[str, Any]:
    """An item's own fields (not the system keys)."""
    return {k: v for k, v in doc.items() if not k.startswith("_")}


def _beside(live: dict[str, Any], drafts: Collection) -> bool:
    """Whether a draft save goes beside the live item: it is published, or
    a draft is kept beside it already (made while it was)."""
    return live.get("_state", 1) == 1 or drafts.get(live["_id"]) is not None


def applied(live: dict[str, Any], draft: dict[str, Any]) -> dict[str, Any]:
    """The live item with the fields the draft changed since it was
    started (its `_basis`): a field the draft left as it found it keeps the
    live item's value, whatever was written to it meanwhile."""
    basis = draft.get("_basis") or {}
    item = dict(live)
    for key in set(_fields(draft)) | set(basis):
        mine = draft.get(key, MISSING)
        if mine is basis.get(key, MISSING) or mine == basis.get(key, MISSING):
            continue
        if mine is MISSING:
            item.pop(key, None)
        else:
            item[key] = mine
    return item


def shown(draft: dict[str, Any]) -> dict[str, Any]:
    """A draft as answers show it: without its `_basis`."""
    return {k: v for k, v in draft.items() if k != "_basis"}
