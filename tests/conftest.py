"""Shared fixtures: an app on a fresh temporary data dir, an in-process client,
and keys for the built-in roles."""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import quire.auth.users
from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient
from tests.storage import ON_S3, S3_SUITES

logging.getLogger("absl").setLevel(logging.ERROR)

# The suite tests Quire's own modules: the example module package that `make
# dev` installs (examples/redirects) is left out of every app and server the
# tests start, but those of tests/examples/, which turn it on.
os.environ["QUIRE_MODULES_PACKAGES"] = "false"

# Bulk commands (import, fork, merge, backup) lower their CPU priority for
# good (`[server] batch_niceness`), and run_quire runs commands inside the
# test worker: the suite's workers must not lower their own. Tested apart
# (tests/test_priority.py).
os.environ["QUIRE_SERVER_BATCH_NICENESS"] = "0"

# Passwords the tests set are hashed with argon2's cheapest parameters: the
# product's (64 MiB, three passes: about 0.1 s a hash, more on a busy
# machine) would be paid by every test that makes a user and logs in. A
# hash names its parameters, so a server the tests start verifies these as
# cheaply, and still as argon2.
quire.auth.users.PasswordHasher = functools.partial(  # type: ignore[misc]
    quire.auth.users.PasswordHasher, time_cost=1, memory_cost=8, parallelism=1)


class Api:
    """A test client bound to one API key (or none)."""

    def __init__(self, client: TestClient, key: str | None) -> None:
        self.client = client
        self.key = key

    def _headers(self, headers: dict[str, str] | None) -> dict[str, str]:
        out = dict(headers or {})
        if self.key:
            out.setdefault("api-key", self.key)
        return out

    def get(self, url: str, **kw: Any) -> Any:
        return self.client.get(url, headers=self._headers(kw.pop("headers", None)), **kw)

    def post(self, url: str, **kw: Any) -> Any:
        return self.client.post(url, headers=self._headers(kw.pop("headers", None)), **kw)

    def put(self, url: str, **kw: Any) -> Any:
        return self.client.put(url, headers=self._headers(kw.pop("headers", None)), **kw)

    def delete(self, url: str, **kw: Any) -> Any:
        return self.client.delete(url, headers=self._headers(kw.pop("headers", None)), **kw)

    def request(self, method: str, url: str, **kw: Any) -> Any:
        return self.client.request(method, url, headers=self._headers(kw.pop("headers", None)), **kw)

    def with_key(self, key: str | None) -> Api:
        return Api(self.client, key)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def events() -> Events:
    return Events()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backend", choices=["sqlite", "postgresql"],
                     default=os.environ.get("QUIRE_TEST_BACKEND", "sqlite"),
                     help="the store the apps of the tests run on (QUIRE_TEST_BACKEND)")


def backend(config: pytest.Config) -> str:
    return str(config.getoption("--backend"))


@pytest.fixture
def app_env(request: pytest.FixtureRequest) -> dict[str, str]:
    """The environment settings of the test's app: on `--backend
    postgresql`, a schema of its own on the test process's server; with
    QUIRE_TEST_STORAGE=s3, the files of an asset or form test in a bucket
    of its own (tests/storage.py)."""
    env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_MODULES_PACKAGES": "false"}
    if backend(request.config) == "postgresql":
        env["QUIRE_STORE_URL"] = request.getfixturevalue("pg_url")
    if ON_S3 and request.node.nodeid.startswith(S3_SUITES):
        env.update(request.getfixturevalue("s3_env"))
    return env


@pytest.fixture(autouse=True)
def _cli_backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """On `--backend postgresql`, the test's commands (`quire ...` in
    process or as a subprocess) use the test's schema too."""
    if backend(request.config) == "postgresql" and "data_dir" in request.fixturenames:
        env = request.getfixturevalue("app_env")
        monkeypatch.setenv("QUIRE_STORE_URL", env["QUIRE_STORE_URL"])


# The fixtures through which a test runs on the store of the run (`--backend`);
# a test that asks for `pg_server` or `pg_url` itself is about PostgreSQL and
# runs in every pass as it is.
STORE_FIXTURES = {"app_env", "data_dir", "any_store"}


# Module-scoped fixtures that start servers or a browser. The tests of a
# module using one are kept on one worker (`pytest -n 2 --dist loadgroup`),
# so they are started once, not once per worker.
STARTED_PER_MODULE = {"browser", "chromium", "studio", "stack", "relay", "server", "served",
                      "cluster", "demo_site", "seeded"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test parametrised over the backends (`[sqlite]`, `[postgresql]`)
    runs the backend of the run; on `--backend postgresql`, tests about
    SQLite itself (marked `sqlite_only`) are left out. Tests sharing a
    started module fixture form an xdist group."""
    for item in items:
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(name in STARTED_PER_MODULE and d[-1].scope == "module" for name, d in defs.items()):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))
    run = backend(config)
    other = "postgresql" if run == "sqlite" else "sqlite"
    kept, dropped = [], []
    for item in items:
        (dropped if other in _backends(item) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    if run != "postgresql":
        return
    # A test whose store is not the run's (its app or server is built on a
    # folder of its own, not on `app_env`/`data_dir`, or it starts its own
    # PostgreSQL) ran as it is in the SQLite pass: this pass leaves it out.
    kept, elsewhere = [], []
    for item in items:
        on_store = STORE_FIXTURES & set(getattr(item, "fixturenames", ())) or run in _backends(item)
        (kept if on_store else elsewhere).append(item)
    if elsewhere:
        config.hook.pytest_deselected(items=elsewhere)
        items[:] = kept
    skip = pytest.mark.skip(reason="about the SQLite store (this run is on PostgreSQL)")
    for item in items:
        if item.get_closest_marker("sqlite_only"):
            item.add_marker(skip)


def _backends(item: pytest.Item) -> set[str]:
    """The backends a parametrised test names (`params=BACKENDS` of
    tests/store/conftest.py): empty for a test not parametrised so."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return set()
    return {v for v in callspec.params.values() if isinstance(v, str) and v in ("sqlite", "postgresql")}


@pytest.fixture
def app(data_dir: Path, events: Events, app_env: dict[str, str]) -> Iterator[Any]:
    application = build_app(load_settings(data_dir, env=app_env), events)
    yield application
    application.state.quire.close()


@pytest.fixture
def quire(app: Any) -> Quire:
    return app.state.quire  # type: ignore[no-any-return]


@pytest.fixture
def client(app: Any) -> TestClient:
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def admin_key(quire: Quire) -> str:
    return str(quire.auth.create_key("test admin", "admin")["key"])


@pytest.fixture
def admin(client: TestClient, admin_key: str) -> Api:
    """A client that sends an admin key."""
    return Api(client, admin_key)


@pytest.fixture
def anon(client: TestClient) -> Api:
    """A client that sends no key (the public role)."""
    return Api(client, None)


def etag_rev(response: Any) -> int:
    """The revision an item answer's ETag names: `"7"` (a save's answer) or
    `"7-<digest of its bytes>"` (a read's, quire.conditional)."""
    return int(response.headers["etag"].strip('"').split("-", 1)[0])


def put_model(admin: Api, name: str, **definition: Any) -> dict[str, Any]:
    response = admin.put(f"/api/system/models/{name}", json={"name": name, **definition})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def create_item(admin: Api, model: str, data: dict[str, Any]) -> dict[str, Any]:
    response = admin.post(f"/api/content/item/{model}", json={"data": data})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def role_key(admin: Api, role: str, permissions: dict[str, bool]) -> Api:
    """A client whose key has a new role with exactly `permissions`."""
    response = admin.put(f"/api/system/roles/{role}", json={"permissions": permissions})
    assert response.status_code == 200, response.text
    response = admin.post("/api/system/keys", json={"name": f"{role} key", "role": role})
    assert response.status_code == 200, response.text
    return admin.with_key(response.json()["key"])


def hold_write_lock(quire: Any, seconds: float) -> threading.Thread:
    """Another connection (as another process's import would) takes the
    write lock now and releases it after `seconds`."""
    holder = sqlite3.connect(quire.store.path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")

    def release() -> None:
        time.sleep(seconds)
        holder.rollback()
        holder.close()

    thread = threading.Thread(target=release)
    thread.start()
    return thread


# -- PostgreSQL ---------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """A real PostgreSQL server for this test process (tests/postgres.py)."""
    from tests.postgres import PostgresServer, binaries
    from tests.sso.provider import unavailable

    if binaries() is None:
        unavailable("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    server = PostgresServer().start()
    yield server
    server.destroy()


@pytest.fixture
def pg_url(pg_server: Any) -> Iterator[str]:
    """The address of an empty schema of the test's own on `pg_server`."""
    url = pg_server.reused_url()
    yield url
    pg_server.recycle(url)


# -- S3 (files in a bucket) -------------------------------------------------------


@pytest.fixture(scope="session")
def s3_server() -> Iterator[Any]:
    """moto's S3 server on 127.0.0.1 for this test process (tests/storage.py)."""
    from tests.storage import S3Server

    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_bucket(s3_server: Any) -> str:
    """A new, empty bucket of the test's own."""
    return str(s3_server.new_bucket())


@pytest.fixture
def s3_env(s3_server: Any, s3_bucket: str) -> dict[str, str]:
    """The QUIRE_* settings that put an app's files in `s3_bucket`."""
    return dict(s3_server.env(s3_bucket))
