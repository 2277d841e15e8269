"""What both stores share: write transactions (one writer at a time, nested
calls as savepoints, waiting without blocking the event loop), callbacks
after commit, the change generation caches are keyed by, and the metadata
table. A backend gives the few primitives: begin a transaction holding the
write lock, commit, roll back, savepoints, and running one statement.

SQLite's write lock is the database file's; PostgreSQL's is an advisory
lock taken by every write transaction of a site (`postgres.py`), so on both
backends one write transaction runs at a time across every process: a
check-then-write inside one transaction (a unique slug, a job's claim)
holds for the whole cluster.
"""

from __future__ import annotations

import abc
import asyncio
import contextlib
import contextvars
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Hashable, Iterator
from typing import Any

import orjson

from quire import tracing
from quire.counting import tell
from quire.errors import StoreBusy
from quire.store import match
from quire.store.query import Node, Path, Projection

ON_LOOP_WAIT = 0.05  # a sync write on an event loop blocks every request meanwhile
FIRST_PAUSE = 0.002  # atomic(): first pause between tries for the write lock
MAX_PAUSE = 0.02  # and the longest, short enough to find gaps between import batches
RETRY_AFTER = 1  # seconds, in the 503 answered when the lock could not be had

_in_tx: contextvars.ContextVar[bool] = contextvars.ContextVar("quire_in_tx", default=False)


def on_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True



def _waited(seconds: float, got: bool) -> None:
    """A wait for the write lock ended (counted by quire.metrics)."""
    tell("lock_wait", seconds, got)

class Transactions(abc.ABC):
    """Write transactions over a backend's primitives (see the module doc)."""

    system = ""  # what traces call the database: "sqlite", "postgresql"

    P = "?"  # the backend's parameter mark, for the SQL written here

    lock_timeout: float
    blocking_timeout: float

    def _init_transactions(self) -> None:
        self._wlock = threading.RLock()
        self._alocks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._depth = 0
        self._after_commit: list[Any] = []
        self._generation = 0
        # Moves when data may have changed other than by this object's own
        # commits: another connection's commit seen (`refresh`), a rollback.
        # What this object commits itself, its caller knows (`Cache.bump_system`).
        self._foreign = 0
        self._stale = False  # `mark_stale`: look for others' commits before the next cached read

    # -- the backend's part -----------------------------------------------

    @abc.abstractmethod
    def _try_begin(self, wait: float) -> bool:
        """Begin a write transaction holding the write lock, waiting for the
        lock up to `wait` seconds; False (nothing begun) if it stays held."""
        ...

    @abc.abstractmethod
    def _commit(self) -> None:
        ...

    @abc.abstractmethod
    def _rollback(self) -> None:
        """Roll back the open transaction (if any) and forget what it did."""
        ...

    @abc.abstractmethod
    def _savepoint(self, depth: int, action: str) -> None:
        """`action`: "SAVEPOINT", "RELEASE" or "ROLLBACK TO" savepoint `depth`."""
        ...

    @abc.abstractmethod
    def _write(self, sql: str, params: Any = ()) -> Any:
        ...

    @abc.abstractmethod
    def execute_read(self, sql: str, params: Any = ()) -> Any:
        ...

    @abc.abstractmethod
    def refresh(self) -> bool:
        ...

    def _committed(self) -> None:  # noqa: B027 (optional: a backend may have nothing to do here)
        """After a commit of this process (before the generation moves)."""

    # -- generation -------------------------------------------------------

    def mark_stale(self) -> None:
        """Other processes may have committed since: the next read of
        `generation` (or of which tables exist) looks first. Called once per
        request, it costs an attribute; an answer that reads no cached data
        (the health check) never pays for the look."""
        self._stale = True

    def _fresh(self) -> None:
        if self._stale:
            self._stale = False
            self.refresh()

    def _bump(self) -> None:
        self._generation += 1

    @property
    def foreign_changes(self) -> int:
        """A count that moves whenever data may have changed other than by
        this store object's own commits (another connection's commit, a
        rollback): the system version needs reading again only then, or
        after this process changed it (`Cache.system_version`)."""
        if self._stale:
            self._fresh()
        return self._foreign

    def _seen_foreign(self) -> None:
        """Another connection committed (found by `refresh`)."""
        self._foreign += 1
        self._bump()

    def touch(self) -> None:
        """Mark data as changed now (caches re-check), inside a transaction too."""
        self._bump()

    @property
    def generation(self) -> int:
        """Changes whenever any data may have changed (this or another
        process): what every cache of `quire.cache` is keyed by."""
        if self._stale:
            self._fresh()
        return self._generation

    def in_transaction(self) -> bool:
        """True inside a write transaction of the calling task."""
        return _in_tx.get()

    # -- transactions -----------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[None]:
        """A write transaction (nested calls become savepoints).

        Sync callers: off an event loop (the CLI, the mailer's thread) this
        waits for the write lock up to `blocking_timeout` (or `timeout`
        seconds, when given: the jobs runner bounds how long recording an
        outcome may take); on an event loop thread it waits at most
        `ON_LOOP_WAIT` seconds, since every request of the worker waits
        with it, and then raises `StoreBusy`. Async code writes with
        `atomic()`, which waits without blocking the loop."""
        with self._wlock:
            depth = self._depth
            if depth and not _in_tx.get():
                # Another task on this thread holds the transaction (it awaits
                # inside `atomic()`): joining it would commit or roll back
                # these writes with that task's.
                raise RuntimeError("a write transaction of another task is open: "
                                   "write with `async with store.atomic()` in async code")
            if depth == 0:
                wait = ON_LOOP_WAIT if on_event_loop() else self.blocking_timeout
                if timeout is not None:
                    wait = min(wait, timeout)
                started = time.monotonic()
                got = self._try_begin(wait)
                _waited(time.monotonic() - started, got)
                if not got:
                    raise self._busy()
            else:
                self._savepoint(depth, "SAVEPOINT")
            with self._open(depth):
                yield

    @contextlib.contextmanager
    def _open(self, depth: int) -> Iterator[None]:
        """The body of a transaction whose BEGIN (or SAVEPOINT) has run:
        commit or roll back at its end."""
        self._depth += 1
        token = _in_tx.set(True)
        traced = tracing.span("store.write", {"db.system": self.system}) if depth == 0 and tracing.enabled() \
            else tracing.NOTHING
        try:
            with traced:
                yield
        except BaseException:
            self._foreign += 1  # undone: what was read or kept inside may be gone
            if depth == 0:
                self._rollback()
            else:
                self._savepoint(depth, "ROLLBACK TO")
                self._savepoint(depth, "RELEASE")
            raise
        else:
            if depth == 0:
                try:
                    self._commit()
                except BaseException:
                    self._foreign += 1
                    self._rollback()  # never leave the writer inside a transaction
                    raise
                self._committed()
            else:
                self._savepoint(depth, "RELEASE")
        finally:
            self._depth -= 1
            _in_tx.reset(token)
            if depth == 0:
                self._bump()

    def _busy(self) -> StoreBusy:
        return StoreBusy("The database is busy with another write; try again shortly",
                         retry_after=RETRY_AFTER)

    async def _begin(self, timeout: float, steady: bool = False) -> None:
        """Take the write lock for `atomic()` without blocking the event
        loop: try without waiting, sleep (asyncio) with a growing pause, and
        give up with `StoreBusy` after `timeout` seconds. The threading lock
        is taken the same way, so a transaction of another thread is waited
        for without blocking this one's loop either. `steady`: the pause
        stays `FIRST_PAUSE` instead of growing (see `atomic`)."""
        started = time.monotonic()
        deadline = started + timeout
        pause = FIRST_PAUSE
        while True:
            if self._wlock.acquire(blocking=False):
                try:
                    if self._try_begin(0):
                        _waited(time.monotonic() - started, True)
                        return  # the caller releases _wlock after the transaction
                except BaseException:
                    self._wlock.release()
                    raise
                self._wlock.release()
            left = deadline - time.monotonic()
            if left <= 0:
                _waited(time.monotonic() - started, False)
                raise self._busy()
            await asyncio.sleep(min(pause, left))
            if not steady:
                pause = min(pause * 2, MAX_PAUSE)

    @contextlib.asynccontextmanager
    async def atomic(self, timeout: float | None = None, steady: bool = False) -> AsyncIterator[None]:
        """A write transaction for async code: one coroutine at a time.

        Waiting for the write lock (held by another process, or by another
        thread of this one) never blocks the event loop; after `timeout`
        seconds (default `lock_timeout`) it raises `StoreBusy` (503).
        `steady`: look for the lock every `FIRST_PAUSE` however long the
        wait, for a writer that yields the lock on its own between short
        transactions (an import's batches): with a growing pause it found
        the lock free only by luck while API writers kept taking it, and a
        2,000-item import under steady writes took ten times as long."""
        if _in_tx.get():
            with self.transaction():
                yield
            return
        # One asyncio lock per event loop (a lock belongs to one loop); the
        # threading lock orders loops of other threads.
        loop = asyncio.get_running_loop()
        alock = self._alocks.get(loop)
        if alock is None:
            alock = self._alocks[loop] = asyncio.Lock()
        async with alock:
            await self._begin(self.lock_timeout if timeout is None else timeout, steady)
            try:
                with self._open(0):
                    yield
            finally:
                self._wlock.release()
            pending, self._after_commit = self._after_commit, []
        for callback in pending:
            result = callback()
            if hasattr(result, "__await__"):
                await result

    def after_commit(self, callback: Any) -> None:
        """Run `callback` (sync, or returning an awaitable) once the current
        `atomic()` block has committed; dropped if it rolls back."""
        self._after_commit.append(callback)

    # -- metadata ---------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        row = self.execute_read(f"SELECT value FROM _quire_meta WHERE key = {self.P}", (key,)).fetchone()
        return row[0] if row else None

    def meta_items(self) -> dict[str, str]:
        """Every metadata key and its value (read-only; `quire migrate`
        copies the keys that are data)."""
        return {row[0]: row[1] for row in self.execute_read("SELECT key, value FROM _quire_meta ORDER BY key")}

    def delete_meta(self, *keys: str) -> None:
        self._write(f"DELETE FROM _quire_meta WHERE key IN ({', '.join(self.P for _ in keys)})", keys)

    def set_meta(self, key: str, value: str) -> None:
        self._write(
            f"INSERT INTO _quire_meta (key, value) VALUES ({self.P}, {self.P}) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, value),
        )


class Documents(abc.ABC):
    """What a collection of either backend answers from its own primitives
    (`find_raw`, `get_raw`, `counter`): decoded documents, one document,
    counts, subtrees."""

    @abc.abstractmethod
    def find_raw(self, node: Node | dict[str, Any] | None = None, sort: list[tuple[Path, int]] | None = None,
                 limit: int | None = None, skip: int | None = None) -> list[bytes]:
        ...

    @abc.abstractmethod
    def get_raw(self, item_id: str, published_only: bool = False) -> bytes | None:
        ...

    @abc.abstractmethod
    def counter(self, node: Node | dict[str, Any] | None = None) -> tuple[Hashable, Callable[[], int]]:
        ...

    def find(self, node: Node | dict[str, Any] | None = None, sort: list[tuple[Path, int]] | None = None,
             limit: int | None = None, skip: int | None = None,
             projection: Projection | None = None) -> list[dict[str, Any]]:
        docs = [orjson.loads(text) for text in self.find_raw(node, sort, limit, skip)]
        return [match.project(d, projection) for d in docs] if projection else docs

    def find_one(self, node: Node | dict[str, Any] | None = None,
                 sort: list[tuple[Path, int]] | None = None) -> dict[str, Any] | None:
        docs = self.find(node, sort, limit=1)
        return docs[0] if docs else None

    def get(self, item_id: str) -> dict[str, Any] | None:
        raw = self.get_raw(item_id)
        return orjson.loads(raw) if raw is not None else None

    def count(self, node: Node | dict[str, Any] | None = None) -> int:
        return self.counter(node)[1]()

    def subtree(self, root: dict[str, Any]) -> list[dict[str, Any]]:
        """`root` and every document below it by `_pid`, parents first (one
        query per level)."""
        found = [root]
        frontier = [root["_id"]]
        while frontier:
            kids = self.find({"_pid": {"$in": frontier}})
            found += kids
            frontier = [k["_id"] for k in kids]
        return found
