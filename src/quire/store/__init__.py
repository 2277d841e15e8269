"""The document store. `SqliteStore` is the embedded default;
`PostgresStore` serves several instances from one database."""

from pathlib import Path

from quire.store.postgres import PgCollection, PostgresStore
from quire.store.query import parse_fields, parse_filter, parse_sort
from quire.store.sqlite import Collection as SqliteCollection
from quire.store.sqlite import SqliteStore

Store = SqliteStore | PostgresStore
Collection = SqliteCollection | PgCollection


def open_store(url: str, sqlite_path: Path, lock_timeout: float) -> Store:
    """The store `[store] url` names: PostgreSQL for a postgresql:// (or
    postgres://) address, else the SQLite file at `sqlite_path`."""
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url, lock_timeout=lock_timeout)
    return SqliteStore(sqlite_path, lock_timeout=lock_timeout)


__all__ = ["Collection", "PostgresStore", "SqliteStore", "Store", "open_store", "parse_fields", "parse_filter",
           "parse_sort"]
