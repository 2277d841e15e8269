"""What the search service needs of an engine. `index.TantivyEngine` is
the embedded one; another engine (PostgreSQL full text, an external
server) implements these methods and nothing else changes.

An engine keeps no copy of the content: a hit is an item id and a score,
and the service reads the hit's values from the content store (by
primary key, the page's items in one query). Each built index is a *generation* (a number that grows with every build):
a build writes a new generation beside the live one, so searches keep
answering from the old one until the new one is switched in.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from quire.searchmod.query import Query


@dataclass
class Hit:
    id: str
    score: float


@dataclass
class Doc:
    """One item in one locale: the searchable text of each of the index's
    fields, in order."""

    id: str
    locale: str
    texts: list[str]


class Writer(Protocol):
    def add(self, docs: list[Doc]) -> None:
        """Documents of items not in the index yet (a fresh build)."""

    def replace(self, item_id: str, docs: list[Doc]) -> None:
        """The item's documents (every locale) become `docs` (none: it leaves)."""

    def clear(self) -> None: ...

    def commit(self) -> None:
        """Make the writes visible, durably, at once or not at all."""

    def abort(self) -> None:
        """Give up the writes not committed (after a failure), freeing the writer."""


class Engine(Protocol):
    def writer(self, name: str, generation: int, fields: int, fresh: bool = False) -> Writer:
        """A writer for one generation of an index (`fresh`: a new, empty
        one); only one process may hold it at a time (the caller's lock)."""

    def writer_lock(self, name: str) -> AbstractContextManager[bool]:
        """The index's writer lock if it is free (True), without waiting:
        held by one process of every one that shares the index."""

    def drop(self, name: str, keep: int | None = None) -> None:
        """Remove the index's generations but `keep` (all when None)."""

    def count(self, name: str, generation: int, locale: str) -> int:
        """Items in the index (their documents in `locale`)."""

    def search(self, name: str, generation: int, query: Query, locale: str | None, weights: list[float],
               limit: int, offset: int, typos: bool = True) -> tuple[list[Hit], int]:
        """A page of hits, best first, and the exact total; `locale` None:
        the index has one locale, every document is searched."""

    def variants(self, name: str, generation: int, fields: int, word: str) -> list[str]:
        """Words of the index a typo away from `word` (for highlighting)."""
