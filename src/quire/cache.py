"""The app's caches of values computed from the store, with one way to
invalidate them: the store's change generation.

`SqliteStore.generation` moves on every commit of this process and, after
`refresh()`, on every commit another process made. Every cached value is
kept for the generation it was computed in and dropped when it moves, so
a change is seen by the very next read in every worker. System data
(models, roles, keys, locales, what webhooks follow) is reloaded less
often: it goes with a version stored in the database and changed in the
same transaction as the data (`bump_system`), which is read again only
when the generation moved.

One `Cache` per app (built next to the store, handed to the services that
keep values); nothing here is global to the process, so two apps in one
process share no entry. The interface is small on purpose, since a store
shared by several hosts has to make exactly these calls cluster-wide:

- `refresh()`: once per request, before dispatch: the request's first
  cached read looks for other processes' commits (`mark_stale`).
- `region(name, size)`: values valid for one generation (answers, counts,
  asset documents); `Region.get` / `put` / `fetch`.
- `system(loader)`: a value of system data, reloaded when the system
  version moved; `bump_system()` in the writing transaction.
- `count(collection, node)`: a collection count, kept for the generation.
- `memo(name, size)`: values that depend on their key alone (a row resolved
  from its stored bytes, checked against them on use), which no write makes
  stale: only bounded, never dropped by the generation.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from quire.store import Collection, Store
from quire.store.query import Node

T = TypeVar("T")
VERSION_KEY = "system_version"
COUNTS_KEPT = 1024
_MISSING: Any = object()


class Region:
    """Values computed from the store, kept while its generation stands:
    all are dropped when it moves. When their weight passes `size` (an
    entry weighs 1 unless `put` says more: answers of any length weigh
    their bytes), the oldest are dropped until half the size is left, so
    that reads spread over more entries than fit (items by id) still find
    the newer half. Keep immutable values (JSON bytes, tuples) or values no
    caller changes."""

    def __init__(self, store: Store, size: int) -> None:
        self._store = store
        self.size = size
        self._generation = -1
        self._entries: dict[Hashable, Any] = {}
        self._weights: dict[Hashable, int] = {}  # of the entries weighing more than 1
        self._weight = 0

    def _current(self) -> dict[Hashable, Any]:
        generation = self._store.generation
        if generation != self._generation:
            self._entries = {}
            self._weights = {}
            self._weight = 0
            self._generation = generation
        return self._entries

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._current().get(key, default)

    def get_many(self, keys: Iterable[Hashable]) -> dict[Any, Any]:
        """The kept values of those `keys` that have one."""
        entries = self._current()
        return {key: entries[key] for key in keys if key in entries}

    def put(self, key: Hashable, value: Any, generation: int | None = None, weight: int = 1) -> None:
        """Keep `value`; given the `generation` it was computed in, a value
        computed before the generation moved is not kept."""
        entries = self._current()
        if generation is not None and generation != self._generation:
            return
        weights = self._weights
        if key in entries:
            self._weight -= weights.pop(key, 1)
            del entries[key]  # put again: it is the newest
        entries[key] = value
        if weight != 1:
            weights[key] = weight
        self._weight += weight
        if self._weight > self.size:
            self._shrink(self.size // 2)

    def _shrink(self, target: int) -> None:
        """Drop the oldest entries (a dict keeps insertion order) until at
        most `target` weight is left; the newest entry always stays."""
        entries, weights = self._entries, self._weights
        for key in list(entries)[:-1]:
            if self._weight <= target:
                break
            del entries[key]
            self._weight -= weights.pop(key, 1)

    def fetch(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The kept value of `key`, or `compute()` kept."""
        entries = self._current()
        hit = entries.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        generation = self._generation
        value = compute()
        self.put(key, value, generation)
        return value


class Memo:
    """Values that depend on their key alone, kept until their `weight`
    (an entry counts 1 unless told) passes `size`; then all are dropped at
    once. No write makes them stale, so the generation does not drop them:
    a user checks an entry against what it was computed from."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.weight = 0
        self.entries: dict[Hashable, Any] = {}

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self.entries.get(key, default)

    def put(self, key: Hashable, value: Any, weight: int = 1) -> None:
        self.grow(weight)
        self.entries[key] = value

    def grow(self, weight: int) -> None:
        """Count `weight` more (a value kept inside another one grew)."""
        self.weight += weight
        if self.weight > self.size:
            self.entries.clear()
            self.weight = weight


class SystemValue(Generic[T]):
    """System data loaded by `loader`, reloaded when the system version moved."""

    def __init__(self, cache: Cache, loader: Callable[[], T]) -> None:
        self._cache = cache
        self._store = cache.store
        self._loader = loader
        self._generation = -1
        self._version: str | None = None
        self._value: Any = _MISSING

    def get(self) -> T:
        generation = self._store.generation
        if generation != self._generation:  # else nothing was committed: no look at the version
            version = self._cache.system_version()
            if version != self._version or self._value is _MISSING:
                self._value = self._loader()
                self._version = version
            self._generation = generation
        return self._value


class Cache:
    """The caches of one app; see the module's documentation."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._regions: dict[str, Region] = {}
        self._memos: dict[str, Memo] = {}
        self._counts = self.region("counts", COUNTS_KEPT)
        self._version_seen: tuple[int, int] | None = None  # (store's foreign changes, local bumps) read at
        self._local_bumps = 0
        self._version: str | None = None

    @property
    def generation(self) -> int:
        return self.store.generation

    def refresh(self) -> None:
        """See the commits of other processes (the store's generation moves
        if there were any). Run once per request before dispatch; the look
        itself waits for the request's first cached read (`mark_stale`)."""
        self.store.mark_stale()

    def region(self, name: str, size: int) -> Region:
        """The region `name` of this app (made on first use with `size`)."""
        found = self._regions.get(name)
        if found is None:
            found = self._regions[name] = Region(self.store, size)
        return found

    def memo(self, name: str, size: int) -> Memo:
        """The memo `name` of this app (made on first use with `size`)."""
        found = self._memos.get(name)
        if found is None:
            found = self._memos[name] = Memo(size)
        return found

    def count(self, collection: Collection, node: Node | dict[str, Any] | None = None) -> int:
        """`collection.count(node)`, kept for the generation. Inside a write
        transaction it is counted afresh: its uncommitted writes count too."""
        key, run = collection.counter(node)
        if self.store.in_transaction():
            return run()
        return self._counts.fetch(key, run)

    # -- system data --------------------------------------------------------

    def system(self, loader: Callable[[], T]) -> SystemValue[T]:
        return SystemValue(self, loader)

    def system_version(self) -> str | None:
        """The stored system version, read again only when it may have
        changed: another connection committed, a transaction rolled back,
        or this process bumped it. This process's own other commits (every
        save) leave it as it was, so they cost no query here."""
        seen = (self.store.foreign_changes, self._local_bumps)
        if seen != self._version_seen:
            self._version = self.store.get_meta(VERSION_KEY)
            self._version_seen = seen
        return self._version

    def bump_system(self) -> None:
        """Mark system data as changed, inside the writing transaction."""
        bump_system_version(self.store)
        self._local_bumps += 1
        # Values re-check at once, so later steps of the same transaction see
        # the change; a rollback moves the generation again and they re-check.
        self.store.touch()


def bump_system_version(store: Store) -> None:
    """Mark system data as changed, inside a transaction of `store`: for a
    writer with a store of its own (the jobs runner's), whose commit the
    app's caches see as another process's."""
    store.set_meta(VERSION_KEY, secrets.token_hex(8))
