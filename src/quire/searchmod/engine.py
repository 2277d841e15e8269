"""What the search service needs of an engine. `fts.FtsEngine` (SQLite
FTS5) is the embedded default; another engine (PostgreSQL full text, an
external server) implements these methods and nothing else changes.

Writes are called inside the store's open transaction, so an engine that
keeps its data elsewhere must make them atomic with the content write
itself (or accept and document a window)."""

from __future__ import annotations

from typing import Protocol

from quire.searchmod.fts import Doc, Hit
from quire.searchmod.query import Query
from quire.store.query import Node


class Engine(Protocol):
    def create(self, name: str, fields: list[str]) -> None:
        """(Re)create an empty index over these fields."""

    def drop(self, name: str) -> None: ...

    def upsert(self, name: str, fields: list[str], docs: list[Doc], build: int,
               known: set[str] | None = None) -> None:
        """Store documents (an item in a locale each): stored values and searchable texts."""

    def delete(self, name: str, doc_id: str) -> None: ...

    def clear(self, name: str) -> int: ...

    def rename_fields(self, name: str, renames: dict[str, str]) -> None:
        """Stored values of the documents move to the fields' new names
        (old -> new); the searchable texts stay as they are."""

    def delete_stale(self, name: str, build: int) -> int:
        """Remove documents not written by build number `build`."""

    def count(self, name: str) -> int: ...

    def search(self, name: str, query: Query, locale: str, locales: int, node: Node | None,
               weights: list[float], limit: int, offset: int, typos: bool = True) -> tuple[list[Hit], int]:
        """A page of hits, best first, and the exact total."""

    def highlight(self, name: str, columns: list[str], hits: list[Hit], query: Query, fields: list[str]) -> None:
        """Add `_formatted` to each hit's data."""
