"""Caches of system data (models, roles, keys, locales) shared by a process.

System writes bump a version stored in the database in the same transaction;
a cache reloads when that version moved, which it checks only after the
store saw a commit (its `generation` changed), so an idle cache costs nothing
per request and a change made by another worker process is seen at once.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Generic, TypeVar

from quire.store import SqliteStore

T = TypeVar("T")
VERSION_KEY = "system_version"


def bump_system_version(store: SqliteStore) -> None:
    store.set_meta(VERSION_KEY, secrets.token_hex(8))
    # Caches re-check at once, so later steps of the same transaction see the
    # change; a rollback moves the generation again and they re-check again.
    store.touch()


class SystemCache(Generic[T]):
    def __init__(self, store: SqliteStore, loader: Callable[[], T]) -> None:
        self.store = store
        self.loader = loader
        self._generation = -1
        self._version: str | None = None
        self._value: T | None = None

    def get(self) -> T:
        if self._generation != self.store.generation or self._value is None:
            version = self.store.get_meta(VERSION_KEY)
            if version != self._version or self._value is None:
                self._value = self.loader()
                self._version = version
            self._generation = self.store.generation
        return self._value

    def clear(self) -> None:
        self._value = None
