"""Automatic indexes: built from the reads a collection actually gets.

Most models declare no indexes, and a list filtered or sorted on a field
no index covers scans every document. So the store watches the *shape* of
each read: the fields it tests for equality (E), the fields it sorts on
(S), and one field it bounds with a range or `$in` (R), counting only
top-level fields of one known JSON type or the id (the hinted fields, whose
conditions compile to plain `json_extract(...) <op> ?`, which an
expression index can answer). When no index starts with those columns in
the order E, S, R (MongoDB's "equality, sort, range" rule: SQLite seeks
on E, walks S in order and stops after a page), and the shape came back
a few times on a collection big enough for a scan to cost, a thread of
the worker builds that index on a connection of its own. Reads go on
meanwhile (WAL); writes wait for the build's one transaction (a few
tenths of a second on 100,000 documents). Several workers may ask for the
same index: `CREATE INDEX IF NOT EXISTS` makes the second a no-op.

Each automatic index is named `ax:<collection>:<col+col>` and recorded in
`_quire_auto_indexes` with when it was built and last used. Uses are
counted in memory and written at most every few minutes; an index unused
for `unused_days` is dropped, and a collection keeps at most `max_per_collection`
of them (the least recently used one makes way for a new one). Declared
indexes (`ix:`) are never touched here.
"""

from __future__ import annotations

import logging
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from quire.store.query import And, Cond, Node, Path
from quire.store.sqlcompile import field_expr

log = logging.getLogger("quire.store")

AUTO = "ax:"
DECLARED = "ix:"
RANGE_OPS = frozenset(("gt", "gte", "lt", "lte", "in"))
SIGHTINGS = 3  # a shape seen this often (per worker) gets its index
FLUSH_SECONDS = 300.0  # uses are written at most this often
RECHECK_SIGHTINGS = 1000  # a shape on a small collection is looked at again after this many
BUILD_BUSY_MS = 30_000
MAX_SHAPES = 4096  # shapes counted per worker at most  # the build waits this long for other writers

REGISTRY = (
    "CREATE TABLE IF NOT EXISTS _quire_auto_indexes "
    "(name TEXT PRIMARY KEY, tbl TEXT NOT NULL, created REAL NOT NULL, used REAL NOT NULL)"
)


@dataclass(frozen=True, slots=True)
class Shape:
    """What an index must start with to answer a read: the equality
    columns (any order), then `order` (sort columns, else a range column)."""

    equal: frozenset[str]
    order: tuple[str, ...]

    def columns(self) -> tuple[str, ...]:
        return (*sorted(self.equal), *self.order)

    def served_by(self, columns: tuple[str, ...]) -> bool:
        n = len(self.equal)
        if len(columns) < n + len(self.order) or set(columns[:n]) != self.equal:
            return False
        return columns[n:n + len(self.order)] == self.order


def shape_of(node: Node, sort: list[tuple[Path, int]] | None, hints: dict[str, str]) -> Shape | None:
    """The index shape a read wants, or None when no index would help it
    (nothing filtered or sorted on a hinted field)."""
    equal: set[str] = set()
    ranges: list[str] = []
    for cond in _conjuncts(node):
        name = cond.path[0] if len(cond.path) == 1 else None
        if name is None or name not in hints:
            continue
        if hints[name] == "id" and cond.op == "eq":
            return None  # one row by its primary key
        if cond.op == "eq":
            equal.add(name)
        elif cond.op in RANGE_OPS:
            ranges.append(name)
    order: list[str] = []
    if sort:
        # `_id` too (the newest items by id): the id column can follow `_state` in an index
        names = [p[0] for p, _ in sort if len(p) == 1 and p[0] in hints]
        if len(names) == len(sort):  # a sort key computed in Python is not served by any index
            order = [n for n in names if n not in equal]
    for name in ranges:
        if name not in equal and name not in order:
            order.append(name)
            break
    if not equal and not order:
        return None
    return Shape(frozenset(equal), tuple(order))


def _conjuncts(node: Node) -> Iterable[Cond]:
    if isinstance(node, And):
        for child in node.children:
            yield from _conjuncts(child)
    elif isinstance(node, Cond):
        yield node


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def index_name(table: str, columns: Iterable[str]) -> str:
    return f"{AUTO}{table}:" + "+".join(columns)


def columns_of(name: str) -> tuple[str, ...]:
    """The columns an `ix:`/`ax:` index name lists (field names hold no `+`)."""
    rest = name.split(":", 1)[1]
    return tuple(rest.rsplit(":", 1)[1].split("+"))


class Host(Protocol):
    """What the indexer needs of its store (`SqliteStore`)."""

    def execute_read(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor: ...

    def side_connection(self, busy_ms: int) -> sqlite3.Connection: ...


class AutoIndexer:
    """The automatic indexes of one store (one per worker process)."""

    def __init__(self, store: Host, *, max_per_collection: int = 8, min_rows: int = 1000,
                 unused_days: float = 30.0) -> None:
        self.store = store
        self.max_per_collection = max_per_collection
        self.min_rows = min_rows
        self.unused_seconds = unused_days * 86_400
        # moves when indexes may have come or gone (here or in another
        # process): verdicts kept by collections are then looked at again
        self.epoch = 0
        self._indexes: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self._sightings: dict[tuple[str, Shape], int] = {}
        self._wanted: set[str] = set()
        self._used: set[str] = set()
        self._next_flush = time.monotonic() + FLUSH_SECONDS
        self._jobs: queue.Queue[Callable[[sqlite3.Connection], None]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # -- on the request path ------------------------------------------------

    def serving(self, collection: str, shape: Shape) -> str | None:
        """The name of an index that answers `shape`, if one exists."""
        indexes = self._indexes.get(collection)
        if indexes is None:
            indexes = self._indexes[collection] = self._load(collection)
        for name, columns in indexes:
            if shape.served_by(columns):
                return name
        return None

    def sighted(self, collection: str, shape: Shape) -> None:
        """A read of `shape` that no index answers: after a few, build one."""
        key = (collection, shape)
        if len(self._sightings) >= MAX_SHAPES and key not in self._sightings:
            self._sightings.clear()  # many shapes (a client trying field after field): start counting again
        seen = self._sightings.get(key, 0) + 1
        self._sightings[key] = seen
        if seen == SIGHTINGS or seen % RECHECK_SIGHTINGS == 0:
            name = index_name(collection, shape.columns())
            if name not in self._wanted:
                self._wanted.add(name)
                self._submit(lambda conn: self._build(conn, collection, shape, name))

    def used(self, name: str) -> None:
        if name.startswith(AUTO):
            self._used.add(name)
            if time.monotonic() >= self._next_flush:
                self._next_flush = time.monotonic() + FLUSH_SECONDS
                self._submit(self._flush)

    def changed(self) -> None:
        """Indexes may have changed (a schema change seen, a build done)."""
        self._indexes.clear()
        self.epoch += 1

    def _load(self, collection: str) -> list[tuple[str, tuple[str, ...]]]:
        rows = self.store.execute_read(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (collection,)
        ).fetchall()
        return [(r[0], columns_of(r[0])) for r in rows if r[0].startswith((AUTO, DECLARED))]

    # -- in the worker's index thread ---------------------------------------

    def _submit(self, job: Callable[[sqlite3.Connection], None]) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="quire-autoindex", daemon=True)
                self._thread.start()
        self._jobs.put(job)

    def _run(self) -> None:
        conn = self.store.side_connection(BUILD_BUSY_MS)
        while True:
            job = self._jobs.get()
            try:
                job(conn)
            except sqlite3.Error as exc:  # a busy database or a dropped table: tried again later
                log.warning("automatic index work failed: %s", exc)
            finally:
                self._jobs.task_done()

    def wait(self, timeout: float = 30.0) -> None:
        """Until the queued work is done (for tests and the CLI)."""
        deadline = time.monotonic() + timeout
        while self._jobs.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def _build(self, conn: sqlite3.Connection, collection: str, shape: Shape, name: str) -> None:
        try:
            rows = conn.execute(f"SELECT COUNT(*) FROM {_quote(collection)}").fetchone()[0]
            if rows < self.min_rows:
                return  # a scan of a few rows costs less than keeping an index
            autos = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND name LIKE 'ax:%'",
                (collection,))]
            conn.execute(REGISTRY)
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            try:
                if len(autos) >= self.max_per_collection:
                    oldest = conn.execute(
                        "SELECT name FROM _quire_auto_indexes WHERE tbl = ? ORDER BY used LIMIT 1", (collection,)
                    ).fetchone()
                    if oldest is None:
                        conn.execute("ROLLBACK")
                        return
                    conn.execute(f"DROP INDEX IF EXISTS {_quote(oldest[0])}")
                    conn.execute("DELETE FROM _quire_auto_indexes WHERE name = ?", (oldest[0],))
                exprs = ", ".join(field_expr((c,)) for c in shape.columns())
                conn.execute(f"CREATE INDEX IF NOT EXISTS {_quote(name)} ON {_quote(collection)} ({exprs})")
                conn.execute(
                    "INSERT INTO _quire_auto_indexes (name, tbl, created, used) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT(name) DO NOTHING", (name, collection, now, now))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            log.info("built automatic index %s in %.2f s", name, time.time() - now)
        finally:
            self._wanted.discard(name)
            self.changed()

    def _flush(self, conn: sqlite3.Connection) -> None:
        """Write down which indexes were used; drop those long unused."""
        used, self._used = self._used, set()
        now = time.time()
        conn.execute(REGISTRY)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("UPDATE _quire_auto_indexes SET used = ? WHERE name = ?", [(now, n) for n in used])
            stale = [r[0] for r in conn.execute(
                "SELECT name FROM _quire_auto_indexes WHERE used < ? OR name NOT IN "
                "(SELECT name FROM sqlite_master WHERE type = 'index')", (now - self.unused_seconds,))]
            for name in stale:
                conn.execute(f"DROP INDEX IF EXISTS {_quote(name)}")
                conn.execute("DELETE FROM _quire_auto_indexes WHERE name = ?", (name,))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if stale:
            log.info("dropped automatic indexes unused for %d days: %s",
                     self.unused_seconds // 86_400, ", ".join(stale))
            self.changed()

