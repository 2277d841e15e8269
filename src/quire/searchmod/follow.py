"""How indexes follow content: a durable queue, and catching up.

A content write adds a row (index, item id) to the queue table `sx:queue`
in its own transaction: if the write commits, the row is there; if it
rolls back, so does the row. Catching up reads an index's rows past its
`applied` mark, writes the items' current state (read from content: kept
if published and matching the index's filter, removed otherwise) into the
live generation, commits the engine, and only then moves the mark and
drops the rows, in one SQLite transaction. A process killed anywhere in
between leaves the rows in the queue, and writing them again is harmless
(each row says "index this item as it is now"), so nothing is lost.

One writer per index at a time, across processes: the engine's writer
lock (the embedded engine's is a file lock, `<data>/search/<name>.lock`,
released by the system if its holder dies; PostgreSQL's an advisory lock,
across instances).
The process that made a write catches up right after its commit (so it
reads its own writes); a poller in every server process catches up within
`POLL` seconds with writes whose process could not (killed, or the lock
was busy), and a search looks for rows first whenever the database
changed since it last looked.

Marks live in `_quire_meta`: `searchmod/live/<name>` (the live
generation and its fields), `searchmod/applied/<name>` (the last queue row
written into it) and, while a build runs, `searchmod/building/<name>` (the
queue's end when it began: rows after it are kept for the new
generation).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from quire.errors import StoreBusy
from quire.searchmod.engine import Doc, Engine
from quire.store import Store
from quire.store.queue import Queue

QUEUE = "sx:queue"
BATCH = 1000
POLL = 0.3  # seconds between looks of the poller
log = logging.getLogger("quire.search")


def ensure_queue(store: Store) -> None:
    Queue(store, QUEUE).ensure()


class Marks:
    """The marks of one index in `_quire_meta`."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.name = name

    def live(self) -> dict[str, Any] | None:
        raw = self.store.get_meta(f"searchmod/live/{self.name}")
        return orjson.loads(raw) if raw else None

    def set_live(self, generation: int, fields: list[str]) -> None:
        self.store.set_meta(f"searchmod/live/{self.name}",
                            orjson.dumps({"generation": generation, "fields": fields}).decode())

    def number(self, kind: str) -> int | None:
        raw = self.store.get_meta(f"searchmod/{kind}/{self.name}")
        return int(raw) if raw else None

    def set_number(self, kind: str, value: int | None) -> None:
        key = f"searchmod/{kind}/{self.name}"
        if value is None:
            self.store.delete_meta(key)
        else:
            self.store.set_meta(key, str(value))

    def forget(self) -> None:
        self.store.delete_meta(*(f"searchmod/{k}/{self.name}" for k in ("live", "applied", "building", "progress")))
        Queue(self.store, QUEUE).trim(self.name)


def push(store: Store, name: str, item_id: str | None) -> None:
    """Queue an item (None: every document of the index goes) in the open transaction."""
    Queue(store, QUEUE).push(name, item_id)


def queue_end(store: Store) -> int:
    return Queue(store, QUEUE).end()


class Follower:
    """Catches indexes up with the queue. `docs(index, item_ids)` answers,
    per item, the documents it has now (None: it is not in the index)."""

    def __init__(self, store: Store, engine: Engine, root: Path,
                 definitions: Callable[[], list[dict[str, Any]]],
                 docs: Callable[[dict[str, Any], list[str]], dict[str, list[Doc] | None]]) -> None:
        self.store = store
        self.engine = engine
        self.root = root
        self.definitions = definitions
        self.docs = docs
        self._looked_at: int | None = None  # the store generation when the queue was last found empty

    def pending(self) -> bool:
        """Whether the database changed since the queue was last found empty
        (cheap: no query when nothing was written anywhere)."""
        return self.store.generation != self._looked_at

    def catch_up(self, only: str | None = None) -> None:
        """Write every queued row this process can (an index whose lock
        another process holds is left to it); never raises for a busy
        database, as it runs after commits and from the poller."""
        if self.store.in_transaction():
            return  # rows of an open transaction may still roll back: after its commit
        generation = self.store.generation
        done = True
        try:
            if not Queue(self.store, QUEUE).exists():
                self._looked_at = generation
                return
            for index in self.definitions():
                if only is None or index["name"] == only:
                    done = self._index(index) and done
        except StoreBusy:
            done = False
        if done and only is None:
            self._looked_at = generation

    def _index(self, index: dict[str, Any]) -> bool:
        """Rows of one index, batch by batch; False if some were left."""
        marks = Marks(self.store, index["name"])
        while True:
            live = marks.live()
            applied = marks.number("applied") or 0
            if live is None:
                return True  # not built yet: the build takes the queue's rows
            rows = Queue(self.store, QUEUE).after(index["name"], applied, BATCH)
            if not rows:
                return True
            with self.engine.writer_lock(index["name"]) as mine:
                if not mine:
                    return False  # another process writes this index: it loops until the queue is empty
                if marks.live() != live or (marks.number("applied") or 0) != applied:
                    continue  # moved while we waited: read again
                self._write(index, live, rows)
                with self.store.transaction():
                    if marks.live() == live:
                        last = rows[-1][0]
                        marks.set_number("applied", last)
                        building = marks.number("building")
                        keep_after = last if building is None else min(last, building)
                        Queue(self.store, QUEUE).trim(index["name"], keep_after)

    def _write(self, index: dict[str, Any], live: dict[str, Any], rows: list[tuple[int, str | None]]) -> None:
        writer = self.engine.writer(index["name"], live["generation"], len(live["fields"]))
        try:
            if any(item is None for _, item in rows):
                writer.clear()
            ids = list(dict.fromkeys(item for _, item in rows if item is not None))
            current = self.docs(index, ids)
            for item_id in ids:
                writer.replace(item_id, current.get(item_id) or [])
            writer.commit()
        except BaseException:
            writer.abort()
            raise
