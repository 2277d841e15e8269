"""Login throttling and client addresses with several workers: the real
`quire serve --workers 2` over HTTP, and the limiter used from two
processes at once. An attempt is checked and counted in one write
transaction, so concurrent wrong passwords get exactly `login_attempts`
401s and 429s after that."""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from quire.app import Quire
from quire.ratelimit import RateLimiter
from quire.store import SqliteStore
from tests.admin.conftest import PASSWORD, csrf_of
from tests.commands import run_quire
from tests.serving import quire_server

LIMIT = 5  # the default [admin] login_attempts


class Server:
    def __init__(self, base: str, key: str, log: Path) -> None:
        self.base, self.key, self.log = base, key, log


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("workers") / "data"
    env = {"QUIRE_INBOX_TRUST_FORWARDED_FOR": "true", "QUIRE_INBOX_RATE_LIMIT": "3"}  # one hop, deprecated
    for user in ("ann", "bob"):
        run_quire("users", "create", "--data", str(data), "--user", user,
                  "--email", f"{user}@example.org", "--role", "admin", stdin=PASSWORD)
    with quire_server(data, env=env) as (base, key, log):
        yield Server(base, key, log)


def _concurrent_logins(base: str, user: str, password: str, count: int,
                       headers: dict[str, str] | None = None) -> list[int]:
    """`count` logins, each from a browser of its own that has opened the
    login page, sent at the same moment."""
    clients = [httpx.Client(base_url=base, timeout=60) for _ in range(count)]
    try:
        tokens = [csrf_of(c.get("/auth/login").text) for c in clients]
        barrier = threading.Barrier(count)

        def post(n: int) -> int:
            barrier.wait(timeout=60)
            response = clients[n].post("/auth/login", data={"csrf": tokens[n], "user": user, "password": password},
                                       headers=headers or {})
            return response.status_code

        with ThreadPoolExecutor(count) as pool:
            return list(pool.map(post, range(count)))
    finally:
        for c in clients:
            c.close()


def test_concurrent_wrong_passwords_on_two_workers_get_exactly_the_limit_of_401s(server: Server) -> None:
    statuses = _concurrent_logins(server.base, "ann", "wrong password", 12, {"x-forwarded-for": "203.0.113.20"})
    assert sorted(statuses) == [401] * LIMIT + [429] * (12 - LIMIT), statuses
    # the user is locked out, even with the right password, from anywhere
    assert _concurrent_logins(server.base, "ann", PASSWORD, 1, {"x-forwarded-for": "203.0.113.21"}) == [429]


def test_spoofed_forwarded_for_does_not_escape_the_address_limit_on_two_workers(server: Server) -> None:
    statuses = []
    for n in range(20):  # the client writes an address; the proxy appends the real one
        headers = {"x-forwarded-for": f"10.7.{n}.1, 203.0.113.30"}
        statuses += _concurrent_logins(server.base, f"nobody{n}", "wrong password", 1, headers)
    assert statuses == [401] * LIMIT + [429] * (20 - LIMIT)
    assert _concurrent_logins(server.base, "bob", PASSWORD, 1, {"x-forwarded-for": "10.7.99.1, 203.0.113.30"}) == [429]
    assert _concurrent_logins(server.base, "bob", PASSWORD, 1, {"x-forwarded-for": "203.0.113.31"}) == [303]


def test_spoofed_forwarded_for_does_not_escape_the_form_limit_on_two_workers(server: Server) -> None:
    with httpx.Client(base_url=server.base, timeout=60) as http:
        form = http.post("/api/inbox/forms", json={"data": {"name": "Contact"}}, headers={"api-key": server.key})
        assert form.status_code == 200, form.text
        token = form.json()["token"]
        statuses = [
            http.post(f"/api/inbox/submit/{token}", json={"data": {"n": n}},
                      headers={"x-forwarded-for": f"1.2.{n}.4, 203.0.113.40"}).status_code
            for n in range(30)
        ]
        assert statuses == [200] * 3 + [429] * 27
        other = http.post(f"/api/inbox/submit/{token}", json={"data": {"n": 0}},
                          headers={"x-forwarded-for": "203.0.113.41"})
        assert other.status_code == 200


def test_the_deprecated_setting_is_logged_once_at_start(server: Server) -> None:
    log = server.log.read_text()
    assert len(re.findall(r"inbox\.trust_forwarded_for' is deprecated", log)) == 1, log
    assert "Traceback" not in log


# -- the limiter from two processes -------------------------------------------------


def _attempts_in_a_process(db: str, start: Any, results: Any, count: int) -> None:
    store = SqliteStore(Path(db))
    limiter = RateLimiter(store, LIMIT, 300, "system/login_failures")

    async def attempt() -> bool:
        passed = await limiter.hit_all([("login-user", "ann"), ("login-address", "203.0.113.50")]) is None
        await asyncio.sleep(0.01)  # the password check
        return passed

    async def run() -> list[bool]:
        return list(await asyncio.gather(*(attempt() for _ in range(count))))

    try:
        start.wait(30)
        results.put(asyncio.run(run()))
    finally:
        store.close()


@pytest.mark.sqlite_only
def test_two_processes_counting_at_once_pass_exactly_the_limit(quire: Quire) -> None:
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    db = str(quire.settings.db_path)
    processes = [context.Process(target=_attempts_in_a_process, args=(db, start, results, 8)) for _ in range(2)]
    for p in processes:
        p.start()
    start.set()
    passed = [results.get(timeout=60) for _ in processes]
    for p in processes:
        p.join(30)
        assert p.exitcode == 0
    assert sum(sum(flags) for flags in passed) == LIMIT, passed
    times = [doc["times"] for doc in quire.store.collection("system/login_failures").find()]
    assert sorted(len(t) for t in times) == [LIMIT, LIMIT]
