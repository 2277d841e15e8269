"""The embedded document store: SQLite in WAL mode, one table per collection.

A table is `(rowid, id TEXT PRIMARY KEY, data TEXT)`; `data` holds the whole
document, `_id` included, as compact JSON, so a list can be streamed to the
client without decoding it. Several server processes may open the same file:
SQLite's locks serialise writers across processes, an asyncio lock
serialises coroutines of one process, and `PRAGMA data_version` tells each
process when another one has committed, so its caches can be dropped.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import sqlite3
import struct
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

import orjson

from quire import tracing
from quire.counting import tell
from quire.errors import BadRequest
from quire.ids import new_id
from quire.store import match, values
from quire.store.autoindex import AUTO, AutoIndexer, columns_of, shape_of
from quire.store.base import Documents, Transactions, _in_tx
from quire.store.query import Node, Path, parse_filter
from quire.store.sqlcompile import (
    Hints,
    SortTerm,
    after_ranges,
    compile_after,
    compile_filter,
    compile_sort,
    field_expr,
    json_path,
    sort_terms,
)

log = logging.getLogger("quire.store")

# Reads in WAL mode do not wait for writers; this bounds the rare waits they
# can still meet (a checkpoint resetting the log). The writer's wait for the
# write lock is set per transaction (see `_try_begin`).
BUSY_TIMEOUT_MS = 10_000
_REGEX_CACHE_SIZE = 256


class SqliteSnapshot:
    """Reads of `SqliteStore.snapshot`: every one sees the same moment."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def names(self) -> list[str]:
        """The collections (tables of the shape `(id, data)`), by name."""
        return _collection_tables(self.conn.execute)

    def rows(self, name: str, chunk: int = 500) -> Iterator[list[bytes]]:
        """A collection's documents as stored, in insertion order."""
        cursor = self.conn.execute(f"SELECT data FROM {_table(name)} ORDER BY rowid")
        while rows := cursor.fetchmany(chunk):
            yield [r[0].encode() if isinstance(r[0], str) else r[0] for r in rows]

    def meta(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT key, value FROM _quire_meta").fetchall())


def _collection_tables(execute: Callable[..., Any]) -> list[str]:
    """The tables of the collection shape `(id, data)`, by name."""
    tables = [r[0] for r in execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
        "ORDER BY name")]
    return [name for name in tables if [r[0] for r in execute(
        "SELECT name FROM pragma_table_info(?) ORDER BY cid", (name,))] == ["id", "data"]]


def _table(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _dumps(doc: Any) -> str:
    return orjson.dumps(doc).decode()


def _qcmp(text: Any, param: str) -> int | None:
    # SQLite may evaluate this before the type test it is ANDed with, so a
    # scalar can arrive here: it simply does not compare.
    if not isinstance(text, str):
        return None
    try:
        return values.compare(orjson.loads(text), orjson.loads(param))
    except orjson.JSONDecodeError:
        return None


def _qmatch(text: Any, spec: str) -> int:
    if not isinstance(text, str):
        return 0
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        return 0
    return 1 if match.matches(_parsed_filter(spec), doc) else 0


@functools.lru_cache(maxsize=128)
def _parsed_filter(spec: str) -> Node:
    """qmatch runs per row; its filter is parsed once."""
    return parse_filter(orjson.loads(spec))


def _make_qregex() -> Any:
    cache: dict[str, Any] = {}

    def qregex(key: str, text: Any) -> int:
        if not isinstance(text, str):
            return 0
        regex = cache.get(key)
        if regex is None:
            from quire.store.query import compile_regex

            options, _, pattern = key.partition("/")
            if len(cache) >= _REGEX_CACHE_SIZE:
                cache.clear()
            regex = cache[key] = compile_regex(pattern, options)
        return 1 if regex.search(text) else 0

    return qregex


def _qsortkey(data: str, path_json: str, desc: int) -> bytes:
    doc = orjson.loads(data)
    value = match.sort_value(doc, tuple(orjson.loads(path_json)), bool(desc))
    return sort_bytes(value)


def sort_bytes(value: Any) -> bytes:
    """An order-preserving byte encoding of MongoDB's value order."""
    r = values.rank(value)
    head = bytes([r])
    if r in (values.NULL, 0):
        return head
    if r == values.BOOL:
        return head + (b"\x01" if value else b"\x00")
    if r == values.NUMBER:
        bits = struct.unpack(">Q", struct.pack(">d", float(value)))[0]
        bits = bits ^ 0xFFFFFFFFFFFFFFFF if bits >> 63 else bits | (1 << 63)
        return head + bits.to_bytes(8, "big")
    if r == values.STRING:
        return head + value.encode().replace(b"\x00", b"\x00\xff") + b"\x00\x00"
    if r == values.ARRAY:
        return head + b"".join(b"\x01" + sort_bytes(v) for v in value) + b"\x00"
    return head + b"".join(
        b"\x01" + bytes([values.rank(v)]) + k.encode() + b"\x00" + sort_bytes(v)
        for k, v in value.items()
    ) + b"\x00"


def _non_empty(path: str) -> str:
    """SQL: the value at `path` is there and not null, "", [] or {} (`->`
    answers a value's JSON text, minified, and SQL NULL when missing: one
    lookup per key instead of a type test and a value test)."""
    return f"COALESCE(data -> {path}, 'null') NOT IN ('null', '\"\"', '[]', '{{}}')"


@dataclass(frozen=True, slots=True)
class Position:
    """Where a page of a sorted list ended: the values its ORDER BY terms had
    on the last row (as SQLite compared them: a hinted field's value, or the
    bytes of a MongoDB sort key) and that row's rowid, the final tiebreaker."""

    keys: tuple[Any, ...]
    rowid: int

    def fits(self, terms: list[SortTerm]) -> bool:
        """Whether these keys can be compared with `terms` (one per term, of
        the kind the term yields): a position of another sort cannot."""
        if len(self.keys) != len(terms) or not _bindable(self.rowid) or not isinstance(self.rowid, int):
            return False
        for key, term in zip(self.keys, terms, strict=True):
            if term.keyed and not isinstance(key, bytes):
                return False
            if not term.keyed and (key is not None and not _bindable(key)):
                return False
        return True


def _bindable(value: Any) -> bool:
    """A value SQLite takes as a parameter without an error: an integer of
    64 bits, a float, text without lone surrogates (a made-up cursor may
    hold anything JSON can)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError:
            return False
        return True
    return isinstance(value, float)


class SqliteStore(Transactions):
    """A document store in one SQLite file."""

    system = "sqlite"

    def __init__(
        self, path: str | FsPath, lock_timeout: float = 5.0, blocking_timeout: float = 60.0
    ) -> None:
        self.path = str(path)
        self.lock_timeout = lock_timeout  # async writers: seconds before StoreBusy
        self.blocking_timeout = blocking_timeout  # sync writers off the event loop
        self._busy_ms = BUSY_TIMEOUT_MS
        if self.path != ":memory:":
            FsPath(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._writer = self._connect()
        self._reader = self._connect(readonly=True)
        self._init_transactions()
        self._data_version = self._read_data_version()
        self._known_tables: set[str] = set()
        self.queries = 0  # SELECTs run, for tests that count queries
        self.auto: AutoIndexer | None = None  # see `auto_indexes`
        self._schema_version = -1
        self._setup()

    # -- connections ------------------------------------------------------

    def _connect(self, readonly: bool = False) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not readonly:
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -32000")
        conn.execute("PRAGMA mmap_size = 268435456")
        if readonly:
            conn.execute("PRAGMA query_only = 1")
        conn.create_function("qcmp", 2, _qcmp, deterministic=True)
        conn.create_function("qregex", 2, _make_qregex(), deterministic=True)
        conn.create_function("qsortkey", 3, _qsortkey, deterministic=True)
        conn.create_function("qmatch", 2, _qmatch, deterministic=True)
        return conn

    def _setup(self) -> None:
        self._writer.execute(
            "CREATE TABLE IF NOT EXISTS _quire_meta (key TEXT PRIMARY KEY, value TEXT)"
        )

    def auto_indexes(self, **options: Any) -> AutoIndexer | None:
        """Build indexes for the reads collections get (`autoindex.py`);
        not for a database in memory, which no second connection sees."""
        if self.path != ":memory:":
            self.auto = AutoIndexer(self, **options)
        return self.auto

    def side_connection(self, busy_ms: int) -> sqlite3.Connection:
        """A connection of its own for work off the request path (building
        an index): its long write never holds this store's writer."""
        conn = self._connect()
        conn.execute(f"PRAGMA busy_timeout = {busy_ms}")
        return conn

    def clone(self, listen: bool = True) -> SqliteStore:
        """Another store object on the same database, for a thread of its
        own (a jobs runner's): it shares no connection with this one.
        (`listen` is PostgreSQL's; SQLite has nothing to listen to.)"""
        return SqliteStore(self.path, self.lock_timeout, self.blocking_timeout)

    def close(self) -> None:
        self._reader.close()
        self._writer.close()

    def _read_data_version(self) -> int:
        return int(self._reader.execute("PRAGMA data_version").fetchone()[0])

    def refresh(self) -> bool:
        """Move the generation when another connection committed; True if it had."""
        current = self._read_data_version()
        if current != self._data_version:
            self._data_version = current
            self._known_tables.clear()  # another process may have dropped one
            self._seen_foreign()
            if self.auto is not None:
                schema = int(self._reader.execute("PRAGMA schema_version").fetchone()[0])
                if schema != self._schema_version:  # an index came or went
                    self._schema_version = schema
                    self.auto.changed()
            return True
        return False

    def _read_conn(self) -> sqlite3.Connection:
        return self._writer if _in_tx.get() else self._reader

    def execute_read(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor:
        self.queries += 1
        tell("query")
        if tracing.enabled():
            with tracing.span("store.read", {"db.system": "sqlite", "db.query.text": sql[:300]}):
                return self._read_conn().execute(sql, params)
        return self._read_conn().execute(sql, params)

    def open_stream_connection(self) -> sqlite3.Connection:
        """A private connection for a long read, so a stream never shares a
        cursor with other requests. It maps no file and keeps a small page
        cache: a stream reads every page once, and must not pull the whole
        database into the worker's memory."""
        conn = self._connect(readonly=True)
        conn.execute("PRAGMA mmap_size = 0")
        conn.execute("PRAGMA cache_size = -2000")
        return conn

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[SqliteSnapshot]:
        """The whole database as it is at one moment, for a long read (a
        backup): a read transaction on a private connection. Writers go on
        meanwhile (WAL); what they commit is not seen."""
        conn = self.open_stream_connection()
        try:
            conn.execute("BEGIN")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # the read that fixes the moment
            yield SqliteSnapshot(conn)
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            conn.close()

    # -- transactions (the primitives of `base.Transactions`) -------------

    def _try_begin(self, wait: float) -> bool:
        """BEGIN IMMEDIATE (take SQLite's write lock), letting SQLite's busy
        handler wait up to `wait` seconds; False if another connection still
        holds the lock."""
        ms = int(wait * 1000)
        if ms != self._busy_ms:
            self._writer.execute(f"PRAGMA busy_timeout = {ms}")
            self._busy_ms = ms
        try:
            self._writer.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                return False
            raise
        return True

    def _commit(self) -> None:
        self._writer.execute("COMMIT")

    def _rollback(self) -> None:
        if self._writer.in_transaction:
            self._writer.execute("ROLLBACK")
        self._after_commit.clear()
        self._known_tables.clear()  # a CREATE TABLE may have been undone

    def _savepoint(self, depth: int, action: str) -> None:
        self._writer.execute(f"{action} s{depth}")

    def write(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor:
        """Run SQL on the writer, in the open transaction (or its own): for
        modules that keep tables of their own (search indexes)."""
        return self._write(sql, params)

    def writer_executemany(self, sql: str, rows: list[Any]) -> None:
        """`executemany` on the writer, in the open transaction (or its own)."""
        if self._depth == 0 or not _in_tx.get():
            with self.transaction():
                self._writer.executemany(sql, rows)
        else:
            self._writer.executemany(sql, rows)

    def _write(self, sql: str, params: list[Any] | tuple[Any, ...] = ()) -> sqlite3.Cursor:
        if self._depth == 0 or not _in_tx.get():
            with self.transaction():
                return self._writer.execute(sql, params)
        return self._writer.execute(sql, params)

    # -- collections ------------------------------------------------------

    def collection(self, name: str, hints: Hints | None = None) -> Collection:
        return Collection(self, name, hints)

    def ensure_table(self, name: str) -> None:
        self._fresh()
        if name in self._known_tables:
            return
        self._write(
            f"CREATE TABLE IF NOT EXISTS {_table(name)} "
            "(id TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL)"
        )
        self._known_tables.add(name)

    def table_exists(self, name: str) -> bool:
        self._fresh()
        if name in self._known_tables:
            return True
        row = self.execute_read(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        if row is not None:
            self._known_tables.add(name)  # forgotten on rollback and on others' commits
        return row is not None

    def collection_names(self) -> list[str]:
        """The tables of the collection shape `(id, data)`, by name: not the
        store's own (metadata, automatic index registry) nor other modules'
        (the search queue). Read-only, for `quire migrate`."""
        return _collection_tables(self.execute_read)

    def drop_collection(self, name: str) -> None:
        self._write(f"DROP TABLE IF EXISTS {_table(name)}")
        self._known_tables.discard(name)
        if self.auto is not None:
            self.auto.changed()

    def ensure_indexes(self, name: str, indexes: list[list[Path]], hints: Hints | None = None) -> None:
        """Expression indexes over top-level fields (one or several columns
        each); indexes no longer wanted are dropped. (`hints`: what
        PostgreSQL's typed indexes need; SQLite indexes the JSON values.)"""
        self.ensure_table(name)
        prefix = f"ix:{name}:"
        wanted = {prefix + "+".join(".".join(p) for p in cols): cols for cols in indexes}
        existing = {
            row[0]
            for row in self.execute_read(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (name,)
            )
            if row[0].startswith(prefix)
        }
        with self.transaction():
            for index in existing - set(wanted):
                self._writer.execute(f"DROP INDEX IF EXISTS {_table(index)}")
            for index, cols in wanted.items():
                if index not in existing:
                    exprs = ", ".join(field_expr(p) for p in cols)
                    self._writer.execute(
                        f"CREATE INDEX IF NOT EXISTS {_table(index)} ON {_table(name)} ({exprs})"
                    )
        if self.auto is not None:
            self.auto.changed()


    def indexes(self, name: str) -> list[dict[str, Any]]:
        """The declared (`ix:`) and automatic (`ax:`) indexes of a
        collection: name, origin, columns, bytes on disk (None where SQLite
        has no `dbstat`) and, for automatic ones, when built and last used
        (Unix seconds; uses are written down every few minutes)."""
        names = self._index_names(name)
        registry: dict[str, tuple[float, float]] = {}
        if self.table_exists("_quire_auto_indexes"):
            registry = {r[0]: (r[1], r[2]) for r in self.execute_read(
                "SELECT name, created, used FROM _quire_auto_indexes WHERE tbl = ?", (name,))}
        out = []
        for index in names:
            automatic = index.startswith(AUTO)
            entry: dict[str, Any] = {
                "name": index, "origin": "automatic" if automatic else "declared",
                "fields": list(columns_of(index)), "bytes": self._index_bytes(index),
            }
            if automatic and index in registry:
                entry["created"], entry["used"] = (int(t) for t in registry[index])
            out.append(entry)
        return out

    def _index_names(self, name: str) -> list[str]:
        return [r[0] for r in self.execute_read(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? "
            "AND (name LIKE 'ix:%' OR name LIKE 'ax:%') ORDER BY name", (name,))]

    def _index_bytes(self, index: str) -> int | None:
        try:
            row = self.execute_read("SELECT SUM(pgsize) FROM dbstat WHERE name = ?", (index,)).fetchone()
        except sqlite3.OperationalError:  # built without SQLITE_ENABLE_DBSTAT_VTAB
            return None
        return int(row[0] or 0)

    def drop_auto_indexes(self, name: str, keep: Callable[[tuple[str, ...]], bool]) -> None:
        """Drop the automatic indexes of a collection whose columns `keep`
        refuses (fields a model no longer has, or no longer of one type)."""
        doomed = [i for i in self._index_names(name) if i.startswith(AUTO) and not keep(columns_of(i))]
        if not doomed:
            return
        with self.transaction():
            for index in doomed:
                self._writer.execute(f"DROP INDEX IF EXISTS {_table(index)}")
            if self.table_exists("_quire_auto_indexes"):
                self._writer.executemany("DELETE FROM _quire_auto_indexes WHERE name = ?", [(i,) for i in doomed])
        if self.auto is not None:
            self.auto.changed()


class Collection(Documents):
    """Documents of one collection; every method takes the same filter AST."""

    def __init__(self, store: SqliteStore, name: str, hints: Hints | None = None) -> None:
        self.store = store
        self.name = name
        self.table = _table(name)
        self.hints: Hints = {"_id": "id", **(hints or {})}
        # The last filter compiled: a page and its total share one filter
        # object, and a list without a filter reuses the same constant node.
        self._last: tuple[Node, str, list[Any]] | None = None
        # per read shape (its SQL and sort): the automatic index verdict,
        # (epoch, shape, name of the index answering it)
        self._verdicts: dict[Hashable, tuple[int, Any, str | None]] = {}

    # -- reads ------------------------------------------------------------

    def _where(self, node: Node | dict[str, Any] | None) -> tuple[str, list[Any]]:
        if node is None or isinstance(node, dict):
            node = parse_filter(node or {})
        last = self._last
        if last is not None and last[0] is node:
            return last[1], list(last[2])
        sql, params = compile_filter(node, self.hints)
        self._last = (node, sql, params)
        return sql, list(params)

    def _watch(self, where: str, sort: list[tuple[Path, int]] | None) -> None:
        """Tell the automatic indexes about a read (`_last` holds its filter)."""
        auto = self.store.auto
        if auto is None or self._last is None:
            return
        key = (where, tuple(sort) if sort else ())
        verdict = self._verdicts.get(key)
        if verdict is None or verdict[0] != auto.epoch:
            if len(self._verdicts) > 1024:
                self._verdicts.clear()
            shape = shape_of(self._last[0], sort, self.hints)
            verdict = self._verdicts[key] = (auto.epoch, shape, auto.serving(self.name, shape) if shape else None)
        if verdict[2] is not None:
            auto.used(verdict[2])
        elif verdict[1] is not None:
            auto.sighted(self.name, verdict[1])

    def _select(
        self,
        node: Node | dict[str, Any] | None,
        sort: list[tuple[Path, int]] | None,
        limit: int | None,
        skip: int | None,
        columns: str = "CAST(data AS BLOB)",
    ) -> tuple[str, list[Any]]:
        where, params = self._where(node)
        self._watch(where, sort)
        order = compile_sort(sort or [], self.hints, params)
        sql = f"SELECT {columns} FROM {self.table} WHERE {where} ORDER BY {order}"
        if limit is not None or skip:
            sql += " LIMIT ? OFFSET ?"
            params += [-1 if limit is None else limit, skip or 0]
        return sql, params

    def exists(self) -> bool:
        return self.store.table_exists(self.name)

    def page_key(self, node: Node | dict[str, Any] | None, sort: list[tuple[Path, int]] | None) -> Hashable:
        """What names the list of `node` in the order of `sort` (its SQL and
        parameters), for caches of positions in it."""
        where, params = self._where(node)
        return (self.name, where, tuple(params), tuple(sort or ()))

    def find_raw(
        self,
        node: Node | dict[str, Any] | None = None,
        sort: list[tuple[Path, int]] | None = None,
        limit: int | None = None,
        skip: int | None = None,
    ) -> list[bytes]:
        """Matching documents as JSON (UTF-8 bytes, as stored), for answers
        that need no decoding."""
        if not self.exists():
            return []
        sql, params = self._select(node, sort, limit, skip)
        return [row[0] for row in self.store.execute_read(sql, params)]

    def find_page(
        self,
        node: Node | dict[str, Any] | None,
        sort: list[tuple[Path, int]] | None,
        limit: int,
        after: Position | None = None,
        skip: int | None = None,
    ) -> tuple[list[bytes], Position | None]:
        """Up to `limit` matching documents (JSON bytes as stored) in the
        order of `sort`, from the first or from just after `after`, and the
        position of the last one when more follow (None on the last page).

        Keyset paging: the rows after a position are found by comparing with
        it in SQL, never by counting rows off (as `skip` does), so when an
        index serves the sort any page costs what the first one does.
        `skip` rows are counted off (O(skip)) from the first row or from
        just after `after`."""
        if limit < 1:
            raise ValueError("a page has at least one row")
        if not self.exists():
            return [], None
        sort = sort or []
        terms = sort_terms(sort, self.hints)
        where, where_params = self._where(node)
        self._watch(where, sort)
        order_params: list[Any] = []
        order = compile_sort(sort, self.hints, order_params)
        columns = ", ".join(["CAST(data AS BLOB)", *(t.expr for t in terms), "rowid"])
        column_params = [p for t in terms for p in t.params]
        ranges: list[tuple[str, list[Any]]] = [("1", [])]
        after_sql, after_params = "1", list[Any]()
        if after is not None:
            if not after.fits(terms):
                raise BadRequest("The cursor does not fit this list's sort; start again from the first page")
            after_sql, after_params = compile_after(terms, after.keys, after.rowid)
            if terms:
                ranges = after_ranges(terms[0], after.keys[0])
        rows: list[Any] = []
        left = skip or 0
        for n, (range_sql, range_params) in enumerate(ranges):
            if left and n < len(ranges) - 1:
                # rows are counted off across the ranges: a range holding
                # no more than are left to skip is skipped whole
                held = self.store.execute_read(
                    f"SELECT COUNT(*) FROM (SELECT 1 FROM {self.table} WHERE {where} AND {range_sql} "
                    f"AND {after_sql} LIMIT ?)", [*where_params, *range_params, *after_params, left]
                ).fetchone()[0]
                if held < left:
                    left -= held
                    continue
            sql = (f"SELECT {columns} FROM {self.table} WHERE {where} AND {range_sql} AND {after_sql} "
                   f"ORDER BY {order} LIMIT ? OFFSET ?")
            params = [*column_params, *where_params, *range_params, *after_params, *order_params,
                      # one more than asked: whether a next page exists (SQLite's integers end at 2^63-1)
                      min(limit + 1 - len(rows), 2**63 - 1), left]
            left = 0
            rows += self.store.execute_read(sql, params).fetchall()
            if len(rows) > limit:
                break
        if len(rows) <= limit:
            return [r[0] for r in rows], None
        last = rows[limit - 1]
        return [r[0] for r in rows[:limit]], Position(tuple(last[1:-1]), last[-1])

    def pick(
        self,
        names: list[str],
        node: Node | dict[str, Any] | None = None,
        sort: list[tuple[Path, int]] | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """Only the named top-level fields of the matching documents, read
        in SQL without decoding the documents: for scalar fields (objects
        come back as JSON text, booleans as 1 and 0). Null and missing
        fields are left out."""
        if not self.exists():
            return []
        wanted = [n for n in names if n != "_id"]
        columns = ", ".join(["id", *(field_expr((n,)) for n in wanted)])
        sql, params = self._select(node, sort, limit, None, columns)
        out = []
        for row in self.store.execute_read(sql, params):
            doc = {"_id": row[0]}
            doc.update((n, v) for n, v in zip(wanted, row[1:], strict=True) if v is not None)
            out.append(doc)
        return out

    def json_values(self, ids: list[str], names: list[str]) -> dict[str, list[str | None]]:
        """Per document id, the JSON text of each named top-level field
        (None when the document lacks it), read in SQL without decoding
        the documents: an answer can carry the values as they are."""
        if not ids or not self.exists():
            return {}
        unique = list(dict.fromkeys(ids))[:5000]
        columns = ", ".join("data -> ?" for _ in names)
        marks = ", ".join("?" * len(unique))
        paths = ['$."' + name.replace('"', "") + '"' for name in names]
        rows = self.store.execute_read(f"SELECT id, {columns} FROM {self.table} WHERE id IN ({marks})",
                                       [*paths, *unique])
        return {row[0]: list(row[1:]) for row in rows}

    def stream_raw(
        self,
        node: Node | dict[str, Any] | None = None,
        sort: list[tuple[Path, int]] | None = None,
        limit: int | None = None,
        skip: int | None = None,
        chunk: int = 500,
    ) -> Iterator[list[bytes]]:
        """Matching documents in chunks, read on a private connection so that a
        long list is never held in memory at once."""
        if not self.exists():
            return
        sql, params = self._select(node, sort, limit, skip)
        conn = self.store.open_stream_connection()
        try:
            self.store.queries += 1
            cursor = conn.execute(sql, params)
            while True:
                rows = cursor.fetchmany(chunk)
                if not rows:
                    break
                yield [r[0] for r in rows]
        finally:
            conn.close()

    def get_raw(self, item_id: str, published_only: bool = False) -> bytes | None:
        if not self.exists():
            return None
        state = " AND json_extract(data, '$.\"_state\"') = 1" if published_only else ""
        row = self.store.execute_read(
            f"SELECT CAST(data AS BLOB) FROM {self.table} WHERE id = ?{state}", (item_id,)
        ).fetchone()
        return row[0] if row else None

    def get_many(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Documents by id in one query (for populate)."""
        if not ids or not self.exists():
            return {}
        unique = list(dict.fromkeys(ids))
        out: dict[str, dict[str, Any]] = {}
        # SQLite allows 32766 bound parameters; batch well below that.
        for start in range(0, len(unique), 5000):
            part = unique[start : start + 5000]
            marks = ", ".join("?" * len(part))
            for (raw,) in self.store.execute_read(
                f"SELECT data FROM {self.table} WHERE id IN ({marks})", part
            ):
                doc = orjson.loads(raw)
                out[doc["_id"]] = doc
        return out

    def counter(self, node: Node | dict[str, Any] | None = None) -> tuple[Hashable, Callable[[], int]]:
        """What `count(node)` runs: a key that names this count (its SQL and
        parameters), for caches of counts, and the function that counts."""
        if not self.exists():
            return ("none", self.table), lambda: 0
        where, params = self._where(node)
        self._watch(where, None)
        sql = f"SELECT COUNT(*) FROM {self.table} WHERE {where}"

        def run() -> int:
            return int(self.store.execute_read(sql, params).fetchone()[0])

        return (sql, tuple(params)), run

    def values_at(self, keys: list[str]) -> Iterator[tuple[str, list[Any]]]:
        """`(id, [value per key])` of every document holding a non-null
        value under at least one of the top-level `keys` (a missing key or a
        null reads None), in id order: what a check of stored values against
        a field definition walks, without decoding the whole documents."""
        if not keys or not self.exists():
            return
        paths = [json_path((k,)) for k in keys]
        present = " OR ".join(f"(data -> {p}) <> 'null'" for p in paths)  # NULL when missing
        picked = ", ".join(f"data -> {p}" for p in paths)
        sql = f"SELECT id, {picked} FROM {self.table} WHERE {present} ORDER BY id"
        for row in self.store.execute_read(sql).fetchall():
            yield row[0], [None if text is None else orjson.loads(text) for text in row[1:]]

    def count_non_empty(self, groups: dict[str, list[str]]) -> tuple[dict[str, int], int]:
        """Per group of top-level keys, how many documents hold a non-empty
        value (not null, "", [] or {}) under at least one of them, and the
        number of documents; one pass over the table."""
        if not self.exists():
            return dict.fromkeys(groups, 0), 0
        sums = []
        for keys in groups.values():
            held = " OR ".join(_non_empty(json_path((k,))) for k in keys) or "0"
            sums.append(f"COALESCE(SUM({held}), 0)")
        sql = f"SELECT COUNT(*){''.join(', ' + s for s in sums)} FROM {self.table}"
        row = self.store.execute_read(sql).fetchone()
        return {name: int(n) for name, n in zip(groups, row[1:], strict=True)}, int(row[0])

    def ids(self, node: Node | dict[str, Any] | None = None) -> list[str]:
        if not self.exists():
            return []
        sql, params = self._select(node, None, None, None, columns="id")
        return [row[0] for row in self.store.execute_read(sql, params)]

    # -- writes -----------------------------------------------------------

    def insert(self, doc: dict[str, Any]) -> dict[str, Any]:
        self.store.ensure_table(self.name)
        if "_id" not in doc:
            doc = {"_id": new_id(), **doc}
        if not isinstance(doc["_id"], str):
            raise BadRequest("_id must be a string")
        try:
            self.store._write(
                f"INSERT INTO {self.table} (id, data) VALUES (?, ?)", (doc["_id"], _dumps(doc))
            )
        except sqlite3.IntegrityError:
            raise BadRequest(f"Duplicate _id {doc['_id']}") from None
        return doc

    def replace(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Store `doc` under its `_id`, inserting or overwriting."""
        self.store.ensure_table(self.name)
        self.store._write(
            f"INSERT INTO {self.table} (id, data) VALUES (?, ?) "
            "ON CONFLICT(id) DO UPDATE SET data = excluded.data",
            (doc["_id"], _dumps(doc)),
        )
        return doc

    def update(self, item_id: str, changes: dict[str, Any]) -> dict[str, Any] | None:
        """Merge top-level `changes` into a document atomically; None if absent.
        A value of None is stored as null (use `unset` to remove a key)."""
        with self.store.transaction():
            current = self.get(item_id)
            if current is None:
                return None
            current.update(changes)
            current["_id"] = item_id
            self.store._writer.execute(
                f"UPDATE {self.table} SET data = ? WHERE id = ?", (_dumps(current), item_id)
            )
            return current

    def move_keys(self, moves: dict[str, str], drop: list[str] | tuple[str, ...] = (),
                  bump: str | None = None) -> int:
        """Rename top-level keys (`moves`, old -> new: the value moves, null
        included; a document without the old key gets no new one) and remove
        the keys in `drop`, in every document holding any of them, in one
        UPDATE inside the open transaction. `bump`: an integer key (a
        revision) raised by one in each document changed, where it holds an
        integer. Answers the number of documents changed. JSON functions
        rewrite the text in place: values keep their exact spelling."""
        if not (moves or drop) or not self.exists():
            return 0
        scratch = "'$.\"#moved\"'"  # never a field name: where a move of a missing key goes, then removed
        olds = [json_path((k,)) for k in [*moves, *drop]]
        pairs = []
        for old, new in moves.items():
            src = json_path((old,))
            pairs.append(f"CASE WHEN json_type(data, {src}) IS NULL THEN {scratch} ELSE {json_path((new,))} END, "
                         f"data -> {src}")
        if bump is not None:
            rev = json_path((bump,))
            pairs.append(f"CASE WHEN json_type(data, {rev}) = 'integer' THEN {rev} ELSE {scratch} END, "
                         f"json_extract(data, {rev}) + 1")
        expr = f"json_remove(data, {', '.join(olds)})"
        if pairs:
            expr = f"json_remove(json_set({expr}, {', '.join(pairs)}), {scratch})"
        where = " OR ".join(f"json_type(data, {p}) IS NOT NULL" for p in olds)
        cur = self.store._write(f"UPDATE {self.table} SET data = {expr} WHERE {where}")
        return int(cur.rowcount)

    def delete(self, item_id: str) -> bool:
        if not self.exists():
            return False
        cur = self.store._write(f"DELETE FROM {self.table} WHERE id = ?", (item_id,))
        return cur.rowcount > 0

    def delete_many(self, node: Node | dict[str, Any] | None) -> int:
        if not self.exists():
            return 0
        where, params = self._where(node)
        cur = self.store._write(f"DELETE FROM {self.table} WHERE {where}", params)
        return int(cur.rowcount)
