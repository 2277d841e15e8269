"""The change log: one record per content write, numbered in commit order,
kept for `[feed] keep_days` (docs/delivery.md).

A record is written inside the transaction of the write it tells of
(the event handlers of feed/__init__.py), so it exists exactly when the
write does. Its number comes from a counter in the store's metadata,
raised in that transaction: writes take the site's write lock one at a
time (SQLite's file lock, PostgreSQL's advisory lock), so numbers follow
commit order with no gap a reader could see and step over. A record holds
what the change was and to what, not the document: readers read the item
as it is now, as their key sees it (feed/view.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from quire.auth.service import Identity
from quire.jobs import DAY, Daily, Jobs
from quire.store import Store

CHANGES = "system/changes"
SEQ_KEY = "feed.seq"  # the number of the last record written
PRUNED_KEY = "feed.pruned"  # the number of the last record dropped by age
HINTS = {"seq": "number", "at": "number", "model": "text"}
PRUNE = "feed.prune"


def record_id(seq: int) -> str:
    """Ids sort as the numbers do (the store orders by `_id` cheaply)."""
    return f"{seq:016d}"


class ChangeLog:
    def __init__(self, store: Store, keep_days: int, jobs: Jobs, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.keep_days = keep_days
        self.clock = clock
        self.records = store.collection(CHANGES, HINTS)
        # told of each record in its write's transaction (the CDN purge): (model, id)
        self.listeners: list[Callable[[str, str], None]] = []
        store.ensure_indexes(CHANGES, [[("model",), ("_id",)]], HINTS)
        self.daily = Daily(jobs, PRUNE, lambda store: self.prune(store=store),
                           f"change records older than {keep_days} days", lambda: self.clock())

    def record(self, event: str, model: str, item_id: str, identity: Any, now_visible: bool,
               was_visible: bool) -> int:
        """Write one record inside the caller's transaction (the write's);
        answers its number. `now_visible`/`was_visible`: whether the item
        is published after and was before the change (a reader's view)."""
        seq = int(self.store.get_meta(SEQ_KEY) or 0) + 1
        self.store.set_meta(SEQ_KEY, str(seq))
        who = {"kind": identity.kind, "id": identity.key_id} if isinstance(identity, Identity) else \
            {"kind": "public", "id": None}
        self.records.insert({"_id": record_id(seq), "seq": seq, "at": round(self.clock(), 3), "event": event,
                             "model": model, "id": item_id, "who": who, "now": now_visible, "was": was_visible})
        for listener in self.listeners:
            listener(model, item_id)
        return seq

    def latest(self) -> int:
        """The number of the last record written (0: none yet)."""
        return int(self.store.get_meta(SEQ_KEY) or 0)

    def pruned(self) -> int:
        """The number of the last record dropped by age: a reader behind it
        has missed changes and must read everything again."""
        return int(self.store.get_meta(PRUNED_KEY) or 0)

    def after(self, seq: int, limit: int, models: list[str] | None = None) -> list[dict[str, Any]]:
        """Records numbered above `seq`, oldest first, at most `limit`;
        only those of `models` when given."""
        spec: dict[str, Any] = {"_id": {"$gt": record_id(seq)}}
        if models is not None:
            spec["model"] = {"$in": models}
        return self.records.find(spec, [(("_id",), 1)], limit=limit)

    def prune(self, now: float | None = None, store: Store | None = None) -> int:
        """Drop records older than `keep_days` (none when it is 0), and
        remember the last number dropped."""
        if not self.keep_days:
            return 0
        store = store or self.store
        cutoff = (self.clock() if now is None else now) - self.keep_days * DAY
        records = store.collection(CHANGES, HINTS)
        with store.transaction():
            old = records.find({"at": {"$lt": cutoff}}, [(("_id",), -1)], limit=1)
            if not old:
                return 0
            dropped = records.delete_many({"_id": {"$lte": old[0]["_id"]}})
            if old[0]["seq"] > int(store.get_meta(PRUNED_KEY) or 0):
                store.set_meta(PRUNED_KEY, str(old[0]["seq"]))
            return dropped

    def schedule(self) -> None:
        self.daily.schedule()
