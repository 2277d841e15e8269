"""A real PostgreSQL server for the tests, started from Debian's packages on
127.0.0.1: `initdb` into a temporary directory (as an unprivileged user when
the tests run as root, which CI does: PostgreSQL refuses to run as root),
then `postgres` on a free port. One server per test process; each test gets
a schema of its own (`fresh_url`), so a test starts on an empty store
without paying for a new database. A schema a test is done with is emptied
and handed to the next test (`recycle`): its tables of every site are kept
with their rows deleted, the rest dropped. Creating the tables and indexes
of a new site was most of the time of a test on PostgreSQL.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from tests.ports import free_port

SERVER_USER = "nobody"  # who runs initdb and postgres when the tests run as root


def binaries() -> Path | None:
    """The folder of Debian's PostgreSQL programs (newest version), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parent.parent.name))
    return Path(versions[-1]).parent if versions else None


def schema_of(url: str) -> str:
    """The schema of an address made by `PostgresServer.url(schema)`."""
    return url.rsplit("search_path%3D", 1)[-1]


# Ends the other sessions of the server: a connection a test left open (a
# stream never read to its end) would hold locks on the schema. The tests'
# own kept connection is the one that runs it.
_END_SESSIONS = ("PERFORM pg_terminate_backend(pid) FROM pg_stat_activity "
                 "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")


def _literal(text: str) -> str:
    """`text` as an SQL string literal (names of our own making: no quotes in them)."""
    assert "'" not in text and "\\" not in text, text
    return f"'{text}'"


class PostgresServer:
    """`initdb` + `postgres` in a temporary folder, stopped by `stop()`."""

    def __init__(self) -> None:
        bin_dir = binaries()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql)")
        self.bin = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="quire-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = "quire"
        self._as: dict[str, str] = {}
        if os.geteuid() == 0:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)
            self._as = {"user": SERVER_USER}
        self.process: subprocess.Popen[bytes] | None = None
        self._schemas = 0
        self._spare: list[str] = []  # emptied schemas, ready for another test
        self._base: set[str] | None = None  # the tables every new site has
        self._admin_conn: Any = None

    def start(self) -> PostgresServer:
        subprocess.run([str(self.bin / "initdb"), "-D", str(self.data), "-U", self.user, "-A", "trust",
                        "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"],
                       check=True, capture_output=True, cwd=self.root, **self._as)  # type: ignore[call-overload]
        self._launch()
        return self

    def _launch(self) -> None:
        self.process = subprocess.Popen(
            [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.root}",
             # the tests' data is thrown away: no waiting for the disk
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
             "-c", "max_connections=300", "-c", "shared_buffers=64MB", "-c", "log_min_messages=fatal"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=self.root, **self._as)
        self.wait_ready()

    def wait_ready(self, timeout: float = 30.0) -> None:
        import psycopg

        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url(), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                if self.process is not None and self.process.poll() is not None:
                    raise RuntimeError("postgres exited while starting") from None
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def url(self, schema: str | None = None) -> str:
        base = f"postgresql://{self.user}@127.0.0.1:{self.port}/postgres"
        if schema is None:
            return base
        return base + "?options=" + quote(f"-c search_path={schema}")

    def reused_url(self) -> str:
        """The address of a schema emptied by `recycle`, else of a new one."""
        return self._spare.pop() if self._spare else self.fresh_url()

    def fresh_url(self) -> str:
        """The address of a new, empty schema of its own."""
        self._schemas += 1
        name = f"t{os.getpid()}_{self._schemas}"
        self._admin(f'CREATE SCHEMA "{name}"')
        return self.url(name)

    def drop_schema(self, url: str) -> None:
        self._admin(f"DO $drop$ BEGIN {_END_SESSIONS}; "
                    f'DROP SCHEMA IF EXISTS "{schema_of(url)}" CASCADE; END $drop$')

    def recycle(self, url: str) -> None:
        """Empty the schema of `url` for another test: the tables every new
        site has keep their definition and lose their rows, the others go.
        Anything else in it (a view, a function) and the schema is dropped.
        One statement on a kept connection: this runs after every test."""
        import psycopg

        name = schema_of(url)
        base = "ARRAY[" + ", ".join(_literal(t) for t in sorted(self._base_tables())) + "]::text[]"
        statement = f"""DO $recycle$
DECLARE t text;
BEGIN
  {_END_SESSIONS};
  IF EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = {_literal(name)} AND c.relkind NOT IN ('r', 'i', 'S')) THEN
    RAISE EXCEPTION 'more than tables';
  END IF;
  FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = {_literal(name)} ORDER BY tablename LOOP
    IF t = ANY({base}) THEN
      EXECUTE format('DELETE FROM %I.%I', {_literal(name)}, t);
    ELSE
      EXECUTE format('DROP TABLE %I.%I CASCADE', {_literal(name)}, t);
    END IF;
  END LOOP;
END $recycle$"""
        try:
            self._admin(statement)
        except psycopg.Error:
            self.drop_schema(url)
            return
        self._spare.append(url)

    def _admin(self, statement: str) -> Any:  # the cursor
        """Run `statement` on a connection of the tests' own, kept between
        tests; opened again once if the server ended it (a restart)."""
        import psycopg

        def connection() -> Any:
            if self._admin_conn is None or self._admin_conn.closed:
                self._admin_conn = psycopg.connect(self.url(), autocommit=True)
            return self._admin_conn

        try:
            return connection().execute(statement)
        except psycopg.OperationalError:
            self._close_admin()
            return connection().execute(statement)

    def _close_admin(self) -> None:
        if self._admin_conn is not None:
            self._admin_conn.close()
            self._admin_conn = None

    def _base_tables(self) -> set[str]:
        """The tables of a site just built (learnt once, on a schema of its own)."""
        if self._base is None:
            from quire.app import build_app
            from quire.config import load_settings

            url = self.fresh_url()
            with tempfile.TemporaryDirectory() as tmp:
                # without module packages (an installed example's tables are no site's own: a
                # schema a test with them used must lose them, not keep them empty for the next)
                app = build_app(load_settings(Path(tmp) / "data", env={
                    "QUIRE_SERVER_QUIET": "true", "QUIRE_STORE_URL": url, "QUIRE_MODULES_PACKAGES": "false"}))
                app.state.quire.close()
            self._base = {r[0] for r in self._admin(
                f"SELECT tablename FROM pg_tables WHERE schemaname = {_literal(schema_of(url))}")}
            self.drop_schema(url)
        return self._base

    def stop(self) -> None:
        """Stop the server (fast shutdown: sessions are ended)."""
        self._close_admin()
        if self.process is not None and self.process.poll() is None:
            # SIGINT is PostgreSQL's fast shutdown; SIGTERM (smart) would let
            # open sessions go on and wait for them to end
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self._launch()  # the same port and data: a server that went away and came back

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
