"""A durable queue of (name, item) rows in the store: what a module that
follows writes (the search indexes) reads back in order, by sequence
number. A row is written in the writer's open transaction, so it is there
exactly when the write that queued it committed."""

from __future__ import annotations

from typing import Any

from quire.store.postgres import PostgresStore
from quire.store.postgres import ident as pg_ident
from quire.store.sqlite import _table


class Queue:
    def __init__(self, store: Any, table: str) -> None:
        self.store = store
        self.name = table
        self.pg = isinstance(store, PostgresStore)
        self.table = pg_ident(table) if self.pg else _table(table)
        self.p = store.P

    def ensure(self) -> None:
        if self.store.table_exists(self.name):
            return
        if self.pg:
            self.store.write(f"CREATE TABLE IF NOT EXISTS {self.table} (seq bigserial PRIMARY KEY, "
                             "idx text NOT NULL, item text)")
            self.store.write(f"CREATE INDEX IF NOT EXISTS {pg_ident(self.name + ':idx')} ON {self.table} (idx, seq)")
        else:
            self.store.write(f"CREATE TABLE IF NOT EXISTS {self.table} (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
                             "idx TEXT NOT NULL, item TEXT)")
            self.store.write(f"CREATE INDEX IF NOT EXISTS {_table(self.name + ':idx')} ON {self.table} (idx, seq)")

    def exists(self) -> bool:
        return bool(self.store.table_exists(self.name))

    def push(self, name: str, item: str | None) -> None:
        """Queue `item` for `name` in the open transaction."""
        self.store.write(f"INSERT INTO {self.table} (idx, item) VALUES ({self.p}, {self.p})", (name, item))

    def end(self) -> int:
        """The sequence number of the last row queued (0 when none was)."""
        return int(self.store.execute_read(f"SELECT coalesce(max(seq), 0) FROM {self.table}").fetchone()[0])

    def waiting(self) -> int:
        """Rows queued and not yet taken (every name)."""
        return int(self.store.execute_read(f"SELECT count(*) FROM {self.table}").fetchone()[0]) if self.exists() else 0

    def after(self, name: str, seq: int, limit: int) -> list[tuple[int, str | None]]:
        """Up to `limit` rows of `name` after `seq`, in order."""
        p = self.p
        return [(r[0], r[1]) for r in self.store.execute_read(
            f"SELECT seq, item FROM {self.table} WHERE idx = {p} AND seq > {p} ORDER BY seq LIMIT {p}",
            (name, seq, limit))]

    def trim(self, name: str, upto: int | None = None) -> None:
        """Drop the rows of `name` up to `upto` (all of them without)."""
        p = self.p
        if upto is None:
            self.store.write(f"DELETE FROM {self.table} WHERE idx = {p}", (name,))
        else:
            self.store.write(f"DELETE FROM {self.table} WHERE idx = {p} AND seq <= {p}", (name, upto))
