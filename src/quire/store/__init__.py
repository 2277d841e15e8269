"""The document store. `SqliteStore` is the embedded default."""

from quire.store.query import parse_fields, parse_filter, parse_sort
from quire.store.sqlite import Collection, SqliteStore

Store = SqliteStore

__all__ = ["Collection", "SqliteStore", "Store", "parse_fields", "parse_filter", "parse_sort"]
