"""The document store on PostgreSQL, for sites served by several instances.

Same collection API as `sqlite.py`. A collection is a table
`(seq bigserial, id text PRIMARY KEY, body text, data jsonb)`: `body` is the
document's JSON as written (lists stream it to the client as it is, key
order and number spelling kept), `data` the same document as `jsonb` for
queries, with a GIN index (`jsonb_path_ops`) that answers equality on any
top-level field. `seq` orders ties, as SQLite's rowid does.

Filters compile as far as PostgreSQL decides MongoDB's semantics exactly
(`pgcompile.py`); the rest is decided by the reference evaluator on the
rows the SQL lets through, streamed, so results never differ from SQLite's.
Sorts on hinted fields run in SQL; other sorts in Python.

Several instances, one truth:
- Write transactions take a transaction-level advisory lock of the site
  (its schema), so one runs at a time across the cluster, as on SQLite.
- Each committed write transaction adds a row to `_quire_events` (the
  tables it touched) and sends `NOTIFY` on the site's channel in the same
  transaction. A listener thread per process moves the generation on each
  notice, so every per-process cache drops what another instance changed;
  after its connection comes back it moves the generation once more (it
  may have missed notices meanwhile), which is its catch-up.
- A lost connection answers 503 (`StoreUnavailable`) and is opened again
  on the next use, so the server recovers by itself.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import weakref
import zlib
from collections.abc import Callable, Hashable, Iterator
from decimal import Decimal
from typing import Any

import orjson
import psycopg
import psycopg.errors
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import ConnectionPool, PoolTimeout

from quire import tracing
from quire.counting import tell
from quire.errors import BadRequest, StoreBusy, StoreUnavailable
from quire.ids import new_id
from quire.store import match
from quire.store.base import RETRY_AFTER, Documents, Transactions, _in_tx
from quire.store.pgcompile import (
    Compiled,
    after_clause,
    compile_filter,
    key_fits,
    order_by,
    sort_exprs,
    typed_expr,
)
from quire.store.query import Node, Path, parse_filter
from quire.store.sqlcompile import Hints
from quire.store.sqlite import Position, sort_bytes

log = logging.getLogger("quire.store")

CONNECT_TIMEOUT = 3  # seconds: a database that went away answers 503 soon, not after a hang
STATEMENT_TIMEOUT_MS = 30_000  # no statement holds a worker longer
LOCK_SPACE = 0x51554952  # "QUIR": the advisory locks of Quire, by site
EVENTS_KEPT_SECONDS = 3600
PRUNE_EVERY = 500  # commits of a process between prunings of old events
STREAM_IDLE_MS = 300_000
IDENT_MAX = 63  # PostgreSQL's identifier length


# the tables of the collection shape `(seq, id, body, data)` of the site's schema
COLLECTION_TABLES = ("SELECT table_name FROM information_schema.columns WHERE table_schema = current_schema() "
                     "GROUP BY table_name HAVING array_agg(column_name::text ORDER BY column_name::text) "
                     "= ARRAY['body', 'data', 'id', 'seq'] ORDER BY table_name")


class PgSnapshot:
    """Reads of `PostgresStore.snapshot`: every one sees the same moment."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn

    def names(self) -> list[str]:
        """The collections (tables of the shape `(seq, id, body, data)`)."""
        return [r[0] for r in self.conn.execute(COLLECTION_TABLES)]

    def rows(self, name: str, chunk: int = 500) -> Iterator[list[bytes]]:
        """A collection's documents as stored, in insertion order, through
        a server-side cursor."""
        with self.conn.cursor(name="quire_snapshot") as cursor:
            cursor.execute(f"SELECT body FROM {ident(name)} ORDER BY seq")
            while rows := cursor.fetchmany(chunk):
                yield [r[0].encode() for r in rows]

    def meta(self) -> dict[str, str]:
        return {k: v for k, v in self.conn.execute("SELECT key, value FROM _quire_meta").fetchall()}


def raw_ident(name: str) -> str:
    """The identifier of `name`: names longer than PostgreSQL keeps are
    shortened with a digest, so two never meet."""
    raw = name.encode()
    if len(raw) > IDENT_MAX:
        digest = format(zlib.crc32(raw), "08x")
        name = raw[: IDENT_MAX - 9].decode(errors="ignore") + "~" + digest
    return name


def ident(name: str) -> str:
    """`raw_ident(name)` quoted for SQL."""
    return '"' + raw_ident(name).replace('"', '""') + '"'


def _seq(payload: str) -> int:
    try:
        return int(payload)
    except ValueError:
        return 1 << 62  # not one of ours: take it as new


def _number(value: Any) -> Any:
    """A numeric column's value as JSON has it (int or float)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


class PostgresStore(Transactions):
    """A document store in one PostgreSQL schema (the `search_path` of `url`)."""

    system = "postgresql"

    P = "%s"

    def __init__(self, url: str, lock_timeout: float = 5.0, blocking_timeout: float = 60.0,
                 listen: bool = True) -> None:
        self.url = url
        self.path = url  # what names the database in clones
        info = conninfo_to_dict(url)
        # names the database in logs, never with its password
        self.where = f"{info.get('host', 'localhost')}:{info.get('port', 5432)}/{info.get('dbname', '')}"
        self.lock_timeout = lock_timeout
        self.blocking_timeout = blocking_timeout
        self._init_transactions()
        self._conn_lock = threading.Lock()
        self._writer: psycopg.Connection[Any] | None = None
        self._reader: psycopg.Connection[Any] | None = None
        self._known_tables: set[str] = set()
        # The schema's tables and their declared indexes as the store found
        # them at its start (`_read_catalog`), so a site's start, which
        # ensures every table and index it uses, asks the server nothing
        # for those already there. Dropped whenever `_known_tables` is
        # cleared (another process's commit, a rollback).
        self._catalog: dict[str, set[str]] | None = None
        self._touched: set[str] = set()  # tables written by the open transaction
        self._remote = 0  # notices of other processes' commits (the listener's count)
        self._seen_seq = 0  # the newest events row `refresh` saw
        self._down_since: float | None = None  # when the first failure of an outage was logged
        self._commits = 0
        self.queries = 0
        self.auto = None  # automatic indexes are SQLite's (docs/query-language.md)
        self._closing = threading.Event()
        self._lent: weakref.WeakSet[psycopg.Connection[Any]] = weakref.WeakSet()  # stream connections out
        writer = self._conn("_writer")
        self.schema = str(writer.execute("SELECT current_schema()").fetchone()[0])  # type: ignore[index]
        self.channel = "quire_" + format(zlib.crc32(self.schema.encode()), "08x")
        self._lock_key = zlib.crc32(self.schema.encode()) - 2**31
        self._setup()
        self._read_catalog()
        self._streams = ConnectionPool(url, min_size=0, max_size=8, open=True, timeout=CONNECT_TIMEOUT,
                                       check=ConnectionPool.check_connection,
                                       kwargs={"connect_timeout": CONNECT_TIMEOUT},
                                       configure=self._configure, name="quire-streams")
        self.listens = listen
        if listen:
            self._listener = threading.Thread(target=self._listen, name="quire-pg-listen", daemon=True)
            self._listener.start()

    # -- connections ------------------------------------------------------

    @staticmethod
    def _configure(conn: psycopg.Connection[Any]) -> None:
        conn.autocommit = True
        conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        # a stream its reader gave up on without closing holds no snapshot for long
        conn.execute(f"SET idle_in_transaction_session_timeout = {STREAM_IDLE_MS}")
        conn.autocommit = False

    def _open_conn(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
        except psycopg.OperationalError as exc:
            raise self._down(exc) from None
        conn.execute(f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}")
        if self._down_since is not None:
            log.warning("database %s reachable again after %.0f s", self.where, time.monotonic() - self._down_since)
            self._down_since = None
        return conn

    def _conn(self, which: str) -> psycopg.Connection[Any]:
        """The reader or the writer, opened again if the server dropped it."""
        conn = getattr(self, which)
        if conn is None or conn.closed:
            with self._conn_lock:
                conn = getattr(self, which)
                if conn is None or conn.closed:
                    conn = self._open_conn()
                    setattr(self, which, conn)
        return conn

    def _down(self, exc: BaseException) -> StoreUnavailable:
        # one line per outage (every request of it fails the same way), and
        # one when a connection is made again (`_open_conn`)
        if self._down_since is None:
            self._down_since = time.monotonic()
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning("database %s unavailable: %s", self.where, reason)
        return StoreUnavailable("The database cannot be reached; try again shortly", retry_after=RETRY_AFTER)

    def _run(self, conn: psycopg.Connection[Any], sql: str, params: Any = (),
             reader: bool = False) -> psycopg.Cursor[Any]:
        """Run one statement; a read outside a transaction whose connection
        the server closed (it restarted since) runs once more on a new one."""
        try:
            return conn.execute(sql, params)
        except psycopg.errors.QueryCanceled:
            raise StoreBusy("The database took too long to answer; try again shortly",
                            retry_after=RETRY_AFTER) from None
        except psycopg.OperationalError as exc:
            if not conn.closed:
                raise
            if reader:
                try:
                    return self._conn("_reader").execute(sql, params)
                except psycopg.OperationalError:
                    pass
            raise self._down(exc) from None

    def _setup(self) -> None:
        with self.transaction():
            self._write("CREATE TABLE IF NOT EXISTS _quire_meta (key text PRIMARY KEY, value text)")
            self._write("CREATE TABLE IF NOT EXISTS _quire_events (seq bigserial PRIMARY KEY, "
                        "at double precision NOT NULL, pid integer NOT NULL, tables text[] NOT NULL)")

    def clone(self, listen: bool = True) -> PostgresStore:
        """Another store object on the same database, for a thread of its
        own. `listen=False`: no connection listening for other processes'
        commits, for a thread that reads no cache keyed by `generation`
        (the jobs runner's: a connection fewer per runner thread)."""
        return PostgresStore(self.url, self.lock_timeout, self.blocking_timeout, listen)

    def close(self) -> None:
        self._closing.set()
        for lent in list(self._lent):  # streams still open: their readers are gone
            self._discard(lent)
        self._streams.close(timeout=1)
        for conn in (self._reader, self._writer):
            if conn is not None and not conn.closed:
                conn.close()

    # -- other processes' commits -------------------------------------------

    def _listen(self) -> None:
        """Move the generation on every commit another process notifies."""
        pause = 0.1
        while not self._closing.is_set():
            try:
                with psycopg.connect(self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT) as conn:
                    conn.execute(f"LISTEN {self.channel}")
                    self._remote += 1  # catch up: notices may have been missed while away
                    pause = 0.1
                    while not self._closing.is_set():
                        own = self._writer.info.backend_pid if self._writer is not None else None
                        for notice in conn.notifies(timeout=1.0):
                            # a commit a request's look (`refresh`) saw already moved it
                            if notice.pid != own and _seq(notice.payload) > self._seen_seq:
                                self._remote += 1
            except psycopg.Error:
                if self._closing.wait(pause):
                    return
                pause = min(pause * 2, 2.0)

    @property
    def generation(self) -> int:
        if self._stale:
            self._fresh()
        return self._generation + self._remote

    @property
    def foreign_changes(self) -> int:
        if self._stale:
            self._fresh()
        return self._foreign + self._remote

    def refresh(self) -> bool:
        """Whether another process committed since the last look, by the
        newest row of the events table (once per request, as SQLite reads
        `PRAGMA data_version`): a request never answers from what was kept
        before a commit another instance made before it arrived. Writes
        commit in `seq` order (the write lock), so the newest row is enough."""
        # (not counted in `queries`: the look SQLite's data_version is)
        conn = self._conn("_writer") if _in_tx.get() else self._conn("_reader")
        row = self._run(conn, "SELECT max(seq) FROM _quire_events", reader=not _in_tx.get()).fetchone()
        seq = row[0] if row and row[0] is not None else 0
        changed = seq != self._seen_seq
        self._seen_seq = seq
        if changed:
            self._known_tables.clear()  # another process may have dropped one
            self._catalog = None
            self._seen_foreign()
        return changed

    # -- transactions (the primitives of `base.Transactions`) -------------

    def _try_begin(self, wait: float) -> bool:
        try:
            return self._begin_on(self._conn("_writer"), wait)
        except StoreUnavailable:
            # the server may have restarted since the writer's last use:
            # one more try on a new connection before answering 503
            return self._begin_on(self._conn("_writer"), wait)

    def _begin_on(self, writer: psycopg.Connection[Any], wait: float) -> bool:
        try:
            writer.execute("BEGIN")
            if wait <= 0:
                got = writer.execute("SELECT pg_try_advisory_xact_lock(%s, %s)",
                                     (LOCK_SPACE, self._lock_key)).fetchone()[0]  # type: ignore[index]
            else:
                writer.execute(f"SET LOCAL lock_timeout = {max(int(wait * 1000), 1)}")
                try:
                    writer.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, self._lock_key))
                except psycopg.errors.LockNotAvailable:
                    writer.execute("ROLLBACK")
                    return False
                writer.execute("SET LOCAL lock_timeout = 0")
                got = True
        except psycopg.OperationalError as exc:
            self._discard(writer)
            raise self._down(exc) from None
        if not got:
            writer.execute("ROLLBACK")
            return False
        self._touched.clear()
        return True

    def _discard(self, conn: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(psycopg.Error):
            conn.close()

    def _commit(self) -> None:
        writer = self._conn("_writer")
        own = None
        try:
            if self._touched:
                row = writer.execute("INSERT INTO _quire_events (at, pid, tables) VALUES "
                                     "(%s, pg_backend_pid(), %s) RETURNING seq",
                                     (time.time(), sorted(self._touched))).fetchone()
                own = row[0] if row else None
                writer.execute("SELECT pg_notify(%s, %s)", (self.channel, str(own)))
                self._commits += 1
                if self._commits % PRUNE_EVERY == 0:
                    writer.execute("DELETE FROM _quire_events WHERE at < %s", (time.time() - EVENTS_KEPT_SECONDS,))
            writer.execute("COMMIT")
            if self._touched and own == self._seen_seq + 1:
                self._seen_seq = own  # nobody else committed since the last look
        except psycopg.OperationalError as exc:
            self._discard(writer)
            raise self._down(exc) from None

    def _committed(self) -> None:
        self._touched.clear()

    def _rollback(self) -> None:
        writer = self._writer
        if writer is not None and not writer.closed:
            try:
                if writer.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    writer.execute("ROLLBACK")
            except psycopg.Error:
                self._discard(writer)
        self._after_commit.clear()
        self._known_tables.clear()  # a CREATE TABLE may have been undone
        self._catalog = None
        self._touched.clear()

    def _savepoint(self, depth: int, action: str) -> None:
        self._run(self._conn("_writer"), f"{action} s{depth}")

    def execute_read(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        self.queries += 1
        tell("query")
        if tracing.enabled():
            with tracing.span("store.read", {"db.system": "postgresql", "db.query.text": sql[:300]}):
                return self._read(sql, params)
        return self._read(sql, params)

    def _read(self, sql: str, params: Any) -> psycopg.Cursor[Any]:
        if _in_tx.get():
            return self._run(self._conn("_writer"), sql, params)
        return self._run(self._conn("_reader"), sql, params, reader=True)

    def write(self, sql: str, params: Any = ()) -> psycopg.Cursor[Any]:
        """Run SQL in the open transaction (or its own)."""
        return self._write(sql, params)

    def _write(self, sql: str, params: Any = (), table: str | None = None) -> psycopg.Cursor[Any]:
        if self._depth == 0 or not _in_tx.get():
            with self.transaction():
                return self._write(sql, params, table)
        self._touched.add(table or "_quire_meta")
        return self._run(self._conn("_writer"), sql, params)

    def writer_executemany(self, sql: str, rows: list[Any]) -> None:
        if self._depth == 0 or not _in_tx.get():
            with self.transaction():
                self.writer_executemany(sql, rows)
            return
        self._touched.add("_quire_meta")
        with self._conn("_writer").cursor() as cur:
            cur.executemany(sql, rows)

    @contextlib.contextmanager
    def open_stream_connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for a long read (`stream_raw`), closed by
        `close()` if its reader never finished."""
        try:
            with self._streams.connection() as conn:
                self._lent.add(conn)
                try:
                    yield conn
                finally:
                    self._lent.discard(conn)
        except (psycopg.OperationalError, PoolTimeout) as exc:
            raise self._down(exc) from None

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[PgSnapshot]:
        """The whole schema as it is at one moment, for a long read (a
        backup): a read-only REPEATABLE READ transaction on a connection of
        its own. Writers go on meanwhile; what they commit is not seen."""
        with self.open_stream_connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            conn.execute("SELECT 1").fetchone()  # the read that fixes the moment
            yield PgSnapshot(conn)

    # -- collections ------------------------------------------------------

    def collection(self, name: str, hints: Hints | None = None) -> PgCollection:
        return PgCollection(self, name, hints)

    def _read_catalog(self) -> None:
        """Every table of the schema with the names of its declared
        (`ix:`) indexes, in one query."""
        catalog: dict[str, set[str]] = {}
        for table, index in self.execute_read(
                "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = current_schema()"):
            names = catalog.setdefault(table, set())
            if index.startswith("ix:"):
                names.add(index)
        self._catalog = catalog

    def create_schema(self, schema: str) -> None:
        """Make another schema of this database (a space's, quire.spaces)."""
        with self.transaction():
            self._write(f"CREATE SCHEMA IF NOT EXISTS {ident(schema)}")

    def drop_schema(self, schema: str) -> None:
        """Drop another schema of this database and all in it. An extension
        installed in it (pg_trgm, by a space's first search index) serves
        every schema of the database: it moves to `public` first, not away
        with the schema."""
        with self.transaction():
            found = self.execute_read("SELECT e.extname FROM pg_extension e JOIN pg_namespace n "
                                      "ON n.oid = e.extnamespace WHERE n.nspname = %s", (schema,)).fetchall()
            for (extension,) in found:
                self._write(f"ALTER EXTENSION {ident(extension)} SET SCHEMA public")
            self._write(f"DROP SCHEMA IF EXISTS {ident(schema)} CASCADE")

    def ensure_table(self, name: str) -> None:
        self._fresh()
        if name in self._known_tables:
            return
        if self._catalog is not None and raw_ident(name) in self._catalog:
            self._known_tables.add(name)
            return
        if not self.in_transaction() and self._table_in_db(name):
            self._known_tables.add(name)  # one look, not a write transaction
            return
        table = ident(name)
        with self.transaction():
            if not self._table_in_db(name):
                self._write(f"CREATE TABLE IF NOT EXISTS {table} (seq bigserial NOT NULL, "
                            'id text COLLATE "C" PRIMARY KEY NOT NULL, body text NOT NULL, data jsonb NOT NULL)',
                            table=name)
                self._write(f"CREATE INDEX IF NOT EXISTS {ident('gin:' + name)} ON {table} "
                            "USING gin (data jsonb_path_ops)", table=name)
                self._write(f"CREATE UNIQUE INDEX IF NOT EXISTS {ident('seq:' + name)} ON {table} (seq)",
                            table=name)
        self._known_tables.add(name)

    def _table_in_db(self, name: str) -> bool:
        row = self.execute_read("SELECT 1 FROM pg_tables WHERE schemaname = current_schema() "
                                "AND tablename = %s", (raw_ident(name),)).fetchone()
        return row is not None

    def table_exists(self, name: str) -> bool:
        self._fresh()
        if name in self._known_tables:
            return True
        if self._table_in_db(name):
            self._known_tables.add(name)
            return True
        return False

    def collection_names(self) -> list[str]:
        """The tables of the collection shape `(seq, id, body, data)` of the
        site's schema (a name longer than PostgreSQL keeps appears as its
        shortened identifier). Read-only, for `quire migrate`."""
        return [r[0] for r in self.execute_read(COLLECTION_TABLES)]

    def drop_collection(self, name: str) -> None:
        self._write(f"DROP TABLE IF EXISTS {ident(name)}", table=name)
        self._known_tables.discard(name)
        if self._catalog is not None:
            self._catalog.pop(raw_ident(name), None)

    def ensure_indexes(self, name: str, indexes: list[list[Path]], hints: Hints | None = None) -> None:
        """Expression indexes over the hinted top-level fields of each
        declared index (the typed expressions queries compile to); fields
        without a hint are answered by the table's GIN index, so an index
        naming only such fields is not built. Indexes no longer wanted are
        dropped."""
        self.ensure_table(name)
        hints = hints or {}
        wanted: dict[str, list[str]] = {}
        for cols in indexes:
            exprs = [typed_expr(p[0], hints[p[0]]) for p in cols if len(p) == 1 and p[0] in hints]
            if exprs and len(exprs) == len(cols):
                wanted[raw_ident(f"ix:{name}:" + "+".join(".".join(p) for p in cols))] = exprs
        found = self._catalog.pop(raw_ident(name), None) if self._catalog is not None else None
        existing = found if found is not None else {r[0] for r in self.execute_read(
            "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = %s "
            "AND indexname LIKE 'ix:%%'", (raw_ident(name),))}
        if existing == set(wanted):
            return  # nothing to change: no write transaction (a site's start opens many collections)
        with self.transaction():
            for index in existing - set(wanted):
                self._write(f"DROP INDEX IF EXISTS {ident(index)}", table=name)
            for index, exprs in wanted.items():
                if index not in existing:
                    self._write(f"CREATE INDEX IF NOT EXISTS {ident(index)} ON {ident(name)} "
                                f"({', '.join(exprs)}, seq)", table=name)

    def indexes(self, name: str) -> list[dict[str, Any]]:
        """The declared indexes of a collection, with their size on disk."""
        rows = self.execute_read(
            "SELECT indexname, pg_relation_size(format('%%I', indexname)::regclass) FROM pg_indexes "
            "WHERE schemaname = current_schema() AND tablename = %s AND indexname LIKE 'ix:%%' "
            "ORDER BY indexname", (raw_ident(name),)).fetchall()
        return [{"name": r[0], "origin": "declared", "fields": r[0].split(":", 2)[-1].split("+"),
                 "bytes": int(r[1])} for r in rows]

    def drop_auto_indexes(self, name: str, keep: Callable[[tuple[str, ...]], bool]) -> None:
        """There are no automatic indexes on PostgreSQL (see `auto`)."""


class PgCollection(Documents):
    """Documents of one collection; every method takes the same filter AST."""

    def __init__(self, store: PostgresStore, name: str, hints: Hints | None = None) -> None:
        self.store = store
        self.name = name
        self.table = ident(name)
        self.hints: Hints = {"_id": "id", **(hints or {})}
        self._last: tuple[Node, Compiled] | None = None

    # -- reads ------------------------------------------------------------

    def _where(self, node: Node | dict[str, Any] | None) -> tuple[Node, Compiled]:
        if node is None or isinstance(node, dict):
            node = parse_filter(node or {})
        last = self._last
        if last is not None and last[0] is node:
            return node, last[1]
        compiled = compile_filter(node, self.hints)
        self._last = (node, compiled)
        return node, compiled

    def exists(self) -> bool:
        return self.store.table_exists(self.name)

    def page_key(self, node: Node | dict[str, Any] | None, sort: list[tuple[Path, int]] | None) -> Hashable:
        parsed, compiled = self._where(node)
        return (self.name, compiled.sql, tuple(compiled.params), repr(parsed), tuple(sort or ()))

    def _rows(self, node: Node | dict[str, Any] | None, sort: list[tuple[Path, int]] | None,
              columns: str = "body") -> Iterator[tuple[Any, ...]]:
        """(seq, doc or None, *columns) of the matching rows in the order
        of `sort` (Python's when SQL cannot sort), every row checked by the
        reference evaluator when the SQL alone does not decide."""
        parsed, compiled = self._where(node)
        terms = sort_exprs(sort or [], self.hints)
        order = order_by(terms) if terms is not None else "seq ASC"
        sql = f"SELECT seq, body, {columns} FROM {self.table} WHERE {compiled.sql} ORDER BY {order}"
        rows = self.store.execute_read(sql, compiled.params)
        if compiled.exact and terms is not None:
            for row in rows:
                yield (row[0], None, *row[2:])
            return
        kept = []
        for row in rows:
            doc = orjson.loads(row[1])
            if compiled.exact or match.matches(parsed, doc):
                if terms is not None:
                    yield (row[0], doc, *row[2:])
                else:
                    kept.append((row[0], doc, *row[2:]))
        if terms is None:
            yield from _python_sorted(kept, sort or [])

    def find_raw(self, node: Node | dict[str, Any] | None = None, sort: list[tuple[Path, int]] | None = None,
                 limit: int | None = None, skip: int | None = None) -> list[bytes]:
        if not self.exists():
            return []
        parsed, compiled = self._where(node)
        terms = sort_exprs(sort or [], self.hints)
        if compiled.exact and terms is not None:
            sql = f"SELECT body FROM {self.table} WHERE {compiled.sql} ORDER BY {order_by(terms)}"
            params = list(compiled.params)
            if limit is not None or skip:
                sql += " LIMIT %s OFFSET %s"
                params += [limit, skip or 0]
            return [r[0].encode() for r in self.store.execute_read(sql, params)]
        out: list[bytes] = []
        rows = self._rows(parsed, sort)
        for n, row in enumerate(rows):
            if n < (skip or 0):
                continue
            if limit is not None and len(out) >= limit:
                break
            out.append(row[2].encode())
        return out

    def find_page(self, node: Node | dict[str, Any] | None, sort: list[tuple[Path, int]] | None, limit: int,
                  after: Position | None = None, skip: int | None = None) -> tuple[list[bytes], Position | None]:
        """Up to `limit` matching documents in the order of `sort`, from the
        first or from just after a position, and the position of the last
        one when more follow (see `SqliteStore`'s). Sorted in SQL, a
        position holds the sort fields' values; sorted here, the bytes of
        MongoDB's sort keys."""
        if limit < 1:
            raise ValueError("a page has at least one row")
        if not self.exists():
            return [], None
        parsed, compiled = self._where(node)
        terms = sort_exprs(sort or [], self.hints)
        if after is not None:
            self._check_position(after, sort or [], terms is not None)
        if terms is not None:
            columns = ", ".join(["body", *(e for e, _ in terms), "seq"])
            where, params = compiled.sql, list(compiled.params)
            if after is not None:
                more, more_params = after_clause(terms, after.keys, after.rowid)
                where, params = f"{where} AND {more}", params + more_params
            sql = f"SELECT {columns} FROM {self.table} WHERE {where} ORDER BY {order_by(terms)}"
            if compiled.exact:
                rows = self.store.execute_read(sql + " LIMIT %s OFFSET %s",
                                              [*params, min(limit + 1, 2**63 - 1), skip or 0]).fetchall()
            else:
                rows = []
                left = skip or 0
                for row in self.store.execute_read(sql, params):
                    if not match.matches(parsed, orjson.loads(row[0])):
                        continue
                    if left:
                        left -= 1
                        continue
                    rows.append(row)
                    if len(rows) > limit:
                        break
            if len(rows) <= limit:
                return [r[0].encode() for r in rows], None
            last = rows[limit - 1]
            return [r[0].encode() for r in rows[:limit]], Position(tuple(_number(k) for k in last[1:-1]), last[-1])
        keyed = [(row, _sort_keys(row[1], sort or [])) for row in self._rows(parsed, sort)]
        if after is not None:
            keyed = [(row, keys) for row, keys in keyed if _comes_after(keys, row[0], after, sort or [])]
        keyed = keyed[skip or 0:]
        docs = [row[2].encode() for row, _ in keyed[:limit]]
        if len(keyed) <= limit:
            return docs, None
        row, keys = keyed[limit - 1]
        return docs, Position(tuple(keys), row[0])

    def _check_position(self, position: Position, sort: list[tuple[Path, int]], in_sql: bool) -> None:
        ok = len(position.keys) == len(sort) and isinstance(position.rowid, int) \
            and not isinstance(position.rowid, bool) and -(2**63) <= position.rowid < 2**63
        if ok and in_sql:
            ok = all(key_fits(k, self.hints[p[0]]) for k, (p, _) in zip(position.keys, sort, strict=True))
        elif ok:
            ok = all(isinstance(k, bytes) for k in position.keys)
        if not ok:
            raise BadRequest("The cursor does not fit this list's sort; start again from the first page")

    def pick(self, names: list[str], node: Node | dict[str, Any] | None = None,
             sort: list[tuple[Path, int]] | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Only the named top-level fields of the matching documents (see
        `SqliteStore`'s: objects as JSON text, booleans as 1 and 0, null and
        missing fields left out)."""
        wanted = [n for n in names if n != "_id"]
        out = []
        for text in self.find_raw(node, sort, limit):
            doc = orjson.loads(text)
            picked: dict[str, Any] = {"_id": doc["_id"]}
            for name in wanted:
                value = doc.get(name)
                if value is None:
                    continue
                if isinstance(value, dict | list):
                    value = orjson.dumps(value).decode()
                elif isinstance(value, bool):
                    value = int(value)
                picked[name] = value
            out.append(picked)
        return out

    def json_values(self, ids: list[str], names: list[str]) -> dict[str, list[str | None]]:
        out: dict[str, list[str | None]] = {}
        for doc in self.get_many(ids[:5000] if len(set(ids)) > 5000 else ids).values():
            out[doc["_id"]] = [None if name not in doc else orjson.dumps(doc[name]).decode() for name in names]
        return out

    def stream_raw(self, node: Node | dict[str, Any] | None = None, sort: list[tuple[Path, int]] | None = None,
                   limit: int | None = None, skip: int | None = None, chunk: int = 500) -> Iterator[list[bytes]]:
        """Matching documents in chunks, read through a server-side cursor on
        a connection of its own, so a long list is never held in memory."""
        if not self.exists():
            return
        parsed, compiled = self._where(node)
        terms = sort_exprs(sort or [], self.hints)
        if terms is None:  # sorted here: the matching rows are held anyway
            rows = self.find_raw(parsed, sort, limit, skip)
            for start in range(0, len(rows), chunk):
                yield rows[start:start + chunk]
            return
        sql = f"SELECT body FROM {self.table} WHERE {compiled.sql} ORDER BY {order_by(terms)}"
        params = list(compiled.params)
        if compiled.exact and (limit is not None or skip):
            sql += " LIMIT %s OFFSET %s"
            params += [limit, skip or 0]
        to_skip = 0 if compiled.exact else (skip or 0)
        left = None if compiled.exact else limit
        with self.store.open_stream_connection() as conn, conn.transaction():
            self.store.queries += 1
            with conn.cursor(name="quire_stream") as cursor:
                cursor.execute(sql, params)
                while True:
                    rows = cursor.fetchmany(chunk)
                    if not rows:
                        return
                    texts: list[str] = [str(r[0]) for r in rows]
                    if not compiled.exact:
                        texts = [t for t in texts if match.matches(parsed, orjson.loads(t))]
                        if to_skip:
                            dropped = min(to_skip, len(texts))
                            texts, to_skip = texts[dropped:], to_skip - dropped
                        if left is not None:
                            texts, left = texts[:left], left - min(left, len(texts))
                    if texts:
                        yield [t.encode() for t in texts]
                    if left == 0:
                        return

    def get_raw(self, item_id: str, published_only: bool = False) -> bytes | None:
        if not self.exists():
            return None
        state = " AND data->'_state' = '1'::jsonb" if published_only else ""
        row = self.store.execute_read(f"SELECT body FROM {self.table} WHERE id = %s{state}", (item_id,)).fetchone()
        return row[0].encode() if row else None

    def get_many(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        if not ids or not self.exists():
            return {}
        unique = list(dict.fromkeys(ids))
        out: dict[str, dict[str, Any]] = {}
        rows = self.store.execute_read(f"SELECT body FROM {self.table} WHERE id = ANY(%s)", (unique,))
        for (raw,) in rows:
            doc = orjson.loads(raw)
            out[doc["_id"]] = doc
        return out

    def counter(self, node: Node | dict[str, Any] | None = None) -> tuple[Hashable, Callable[[], int]]:
        if not self.exists():
            return ("none", self.table), lambda: 0
        parsed, compiled = self._where(node)
        key = (self.table, compiled.sql, tuple(compiled.params), None if compiled.exact else repr(parsed))

        def run() -> int:
            if compiled.exact:
                sql = f"SELECT COUNT(*) FROM {self.table} WHERE {compiled.sql}"
                return int(self.store.execute_read(sql, compiled.params).fetchone()[0])  # type: ignore[index]
            return sum(1 for _ in self._rows(parsed, None, "1"))

        return key, run

    def values_at(self, keys: list[str]) -> Iterator[tuple[str, list[Any]]]:
        if not keys or not self.exists():
            return
        rows = self.store.execute_read(f"SELECT id, body FROM {self.table} WHERE data ?| %s ORDER BY id",
                                       (keys,)).fetchall()
        for item_id, body in rows:
            doc = orjson.loads(body)
            found = [doc.get(k) for k in keys]
            if any(v is not None for v in found):
                yield item_id, found

    def count_non_empty(self, groups: dict[str, list[str]]) -> tuple[dict[str, int], int]:
        if not self.exists():
            return dict.fromkeys(groups, 0), 0
        sums = []
        for keys in groups.values():
            held = " OR ".join(f"COALESCE(data->{_lit(k)}, 'null') NOT IN ('null', '\"\"', '[]', '{{}}')"
                               for k in keys) or "FALSE"
            sums.append(f"COUNT(*) FILTER (WHERE {held})")
        sql = f"SELECT COUNT(*){''.join(', ' + s for s in sums)} FROM {self.table}"
        row = self.store.execute_read(sql).fetchone()
        return {name: int(n) for name, n in zip(groups, row[1:], strict=True)}, int(row[0])  # type: ignore[index]

    def ids(self, node: Node | dict[str, Any] | None = None) -> list[str]:
        if not self.exists():
            return []
        parsed, compiled = self._where(node)
        if compiled.exact:
            return [r[0] for r in self.store.execute_read(
                f"SELECT id FROM {self.table} WHERE {compiled.sql} ORDER BY seq", compiled.params)]
        return [r[2] for r in self._rows(parsed, None, "id")]

    # -- writes -----------------------------------------------------------

    def _exec(self, sql: str, params: Any) -> psycopg.Cursor[Any]:
        return self.store._write(sql, params, table=self.name)

    def insert(self, doc: dict[str, Any]) -> dict[str, Any]:
        self.store.ensure_table(self.name)
        if "_id" not in doc:
            doc = {"_id": new_id(), **doc}
        if not isinstance(doc["_id"], str):
            raise BadRequest("_id must be a string")
        text, data = _texts(doc)
        cur = self._exec(f"INSERT INTO {self.table} (id, body, data) VALUES (%s, %s, %s::jsonb) "
                         "ON CONFLICT (id) DO NOTHING RETURNING seq", (doc["_id"], text, data))
        if cur.fetchone() is None:  # the transaction stays usable, as SQLite's does
            raise BadRequest(f"Duplicate _id {doc['_id']}")
        return doc

    def replace(self, doc: dict[str, Any]) -> dict[str, Any]:
        self.store.ensure_table(self.name)
        text, data = _texts(doc)
        self._exec(f"INSERT INTO {self.table} (id, body, data) VALUES (%s, %s, %s::jsonb) "
                   "ON CONFLICT (id) DO UPDATE SET body = excluded.body, data = excluded.data",
                   (doc["_id"], text, data))
        return doc

    def _put(self, doc: dict[str, Any]) -> None:
        text, data = _texts(doc)
        self._exec(f"UPDATE {self.table} SET body = %s, data = %s::jsonb WHERE id = %s", (text, data, doc["_id"]))

    def update(self, item_id: str, changes: dict[str, Any]) -> dict[str, Any] | None:
        with self.store.transaction():
            current = self.get(item_id)
            if current is None:
                return None
            current.update(changes)
            current["_id"] = item_id
            self._put(current)
            return current

    def move_keys(self, moves: dict[str, str], drop: list[str] | tuple[str, ...] = (),
                  bump: str | None = None) -> int:
        """Rename and remove top-level keys in every document holding one
        (see `SqliteStore`'s); documents are rewritten here, in the open
        transaction."""
        if not (moves or drop) or not self.exists():
            return 0
        olds = [*moves, *drop]
        changed = 0
        rows = self.store.execute_read(f"SELECT body FROM {self.table} WHERE data ?| %s", (olds,)).fetchall()
        for (body,) in rows:
            doc = orjson.loads(body)
            moved = {new: doc[old] for old, new in moves.items() if old in doc}
            for key in olds:
                doc.pop(key, None)
            doc.update(moved)
            if bump is not None and isinstance(doc.get(bump), int) and not isinstance(doc.get(bump), bool):
                doc[bump] += 1
            self._put(doc)
            changed += 1
        return changed

    def delete(self, item_id: str) -> bool:
        if not self.exists():
            return False
        return self._exec(f"DELETE FROM {self.table} WHERE id = %s", (item_id,)).rowcount > 0

    def delete_many(self, node: Node | dict[str, Any] | None) -> int:
        if not self.exists():
            return 0
        parsed, compiled = self._where(node)
        if compiled.exact:
            return int(self._exec(f"DELETE FROM {self.table} WHERE {compiled.sql}", compiled.params).rowcount)
        doomed = self.ids(parsed)
        if not doomed:
            return 0
        return int(self._exec(f"DELETE FROM {self.table} WHERE id = ANY(%s)", (doomed,)).rowcount)


def _texts(doc: dict[str, Any]) -> tuple[str, str]:
    """The document's JSON text, and the text its `jsonb` copy is made
    from: `jsonb` holds no NUL character, so there (only) a NUL becomes
    U+FFFD. No filter can name a NUL (the query parser refuses it), and
    what SQL does not decide is checked on `body`, which keeps it."""
    text = orjson.dumps(doc).decode()
    if "\\u0000" not in text:
        return text, text
    return text, orjson.dumps(_without_nul(doc)).decode()


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _lit(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def _sort_keys(doc: Any, sort: list[tuple[Path, int]]) -> list[bytes]:
    return [sort_bytes(match.sort_value(doc, path, direction < 0)) for path, direction in sort]


def _python_sorted(rows: list[tuple[Any, ...]], sort: list[tuple[Path, int]]) -> list[tuple[Any, ...]]:
    """Rows in MongoDB's order of `sort`, ties by insertion in the direction
    of the last key (as SQL orders them)."""
    if not sort:
        return rows
    keyed = [(_sort_keys(row[1], sort), row) for row in rows]
    keyed.sort(key=lambda kr: kr[1][0], reverse=sort[-1][1] < 0)
    for n in range(len(sort) - 1, -1, -1):
        keyed.sort(key=lambda kr, n=n: kr[0][n], reverse=sort[n][1] < 0)  # type: ignore[misc]
    return [row for _, row in keyed]


def _comes_after(keys: list[bytes], seq: int, position: Position, sort: list[tuple[Path, int]]) -> bool:
    for key, mark, (_, direction) in zip(keys, position.keys, sort, strict=True):
        if key != mark:
            return key > mark if direction > 0 else key < mark
    return seq < position.rowid if sort and sort[-1][1] < 0 else seq > position.rowid
