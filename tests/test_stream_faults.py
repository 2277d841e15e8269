"""A worker killed while it streams a long list to slow clients: those
answers break off visibly, the server keeps serving, and the next full list
is whole."""

from __future__ import annotations

import http.client
import json
import os
import signal
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

from tests.commands import run_quire
from tests.serving import quire_server
from tests.test_import_faults import _all_ids, _bundle, _call
from tests.test_server_faults import _server_pid, _workers

COUNT = 20_000


def _connections(pid: int, port: int) -> int:
    """Established TCP connections on `port` whose socket process `pid` holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01" and fields[9] in inodes:
                count += 1
    return count


def _slow_list(base: str, key: str, results: list[tuple[str, int, int]], lock: threading.Lock,
               begun: threading.Semaphore) -> None:
    """GET every item, reading the body slowly; record how it ended.
    `begun` is released once the answer has begun (its status line read)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=60)
    outcome, status, size = "whole", 0, 0
    try:
        conn.request("GET", "/api/content/items/item", headers={"api-key": key})
        response = conn.getresponse()
        status = response.status
        begun.release()
        body = b""
        while chunk := response.read1(16384):
            body += chunk
            time.sleep(0.02)
        size = len(body)
        if len(json.loads(body)) != COUNT:
            outcome = "short"  # a 200 that looks whole but is not: must never happen
    except (OSError, http.client.HTTPException, ValueError) as error:
        outcome = f"broken off: {type(error).__name__}"
    finally:
        conn.close()
    with lock:
        results.append((outcome, status, size))


def test_a_worker_killed_while_streaming_long_lists_leaves_the_server_serving(tmp_path: Path) -> None:
    data = tmp_path / "data"
    bundle = tmp_path / "bundle.json"
    ids = _bundle(bundle, COUNT)
    run_quire("import", "--data", str(data), str(bundle))
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "1"}) as (base, key, _log):
        main = _server_pid(data.resolve())
        before = _workers(main)
        assert len(before) == 2
        results: list[tuple[str, int, int]] = []
        lock = threading.Lock()
        begun = threading.Semaphore(0)
        readers = [threading.Thread(target=_slow_list, args=(base, key, results, lock, begun)) for _ in range(6)]
        for t in readers:
            t.start()
        for _ in readers:  # every list has started (and is far from done: 20,000 items read slowly)
            assert begun.acquire(timeout=60), "a list did not begin within 60 s"
        port = int(urllib.parse.urlsplit(base).port or 0)
        victim = max(before, key=lambda pid: _connections(pid, port))
        assert _connections(victim, port) > 0
        os.kill(victim, signal.SIGKILL)
        killed_at = time.monotonic()

        healthy_after = None
        while time.monotonic() - killed_at < 10:
            if _call(base, key, "GET", "/api/system/healthcheck", timeout=2).status == 200:
                healthy_after = time.monotonic() - killed_at
                break
            time.sleep(0.1)
        assert healthy_after is not None and healthy_after < 5
        for t in readers:
            t.join(120)
        print(f"healthy {healthy_after:.2f} s after the kill; lists: {results}")

        assert len(results) == 6
        # Lists of the killed worker break off (the client sees a broken
        # answer, never a shorter list that parses); the others are whole.
        assert all(outcome == "whole" or outcome.startswith("broken off") for outcome, _, _ in results), results
        assert any(outcome.startswith("broken off") for outcome, _, _ in results), results
        assert all(status in (0, 200) for _, status, _ in results), results

        # The dead worker is replaced, and lists are whole again.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            now = _workers(main)
            if len(now) == 2 and victim not in now:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"worker not respawned: {before} -> {_workers(main)}")
        for _ in range(4):  # both workers, most likely
            assert sorted(_all_ids(base, key)) == sorted(ids)
        os.kill(main, 0)


def _settled(sample: Any, steady: float = 2.0, timeout: float = 30.0) -> Any:
    """`sample()` once it answered the same for `steady` seconds (sampled
    every quarter second), or after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    value, since = sample(), time.monotonic()
    while time.monotonic() - since < steady and time.monotonic() < deadline:
        time.sleep(0.25)
        now = sample()
        if now != value:
            value, since = now, time.monotonic()
    return value


def _database_files(pid: int, data: Path) -> int:
    """Open connections of process `pid` to the database: each has the WAL
    file open (SQLite may keep the database file's own handle of a closed
    connection while others hold locks on it)."""
    db = str(data / "quire.db-wal")
    count = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            count += os.readlink(fd) == db
        except OSError:
            continue
    return count


def test_lists_whose_clients_go_away_half_way_leave_no_connection_open(tmp_path: Path) -> None:
    data = (tmp_path / "data").resolve()
    bundle = tmp_path / "bundle.json"
    ids = _bundle(bundle, 20_000)
    run_quire("import", "--data", str(data), str(bundle))
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "1"}) as (base, key, _log):
        workers = _workers(_server_pid(data))
        assert _call(base, key, "GET", "/api/content/items/item?limit=1").status == 200
        # A worker's threads (the job lanes', search's) open their store
        # objects as they start, later on a busy machine: the baseline is
        # what the workers hold once that has settled.
        baseline = _settled(lambda: {pid: _database_files(pid, data) for pid in workers})
        port = int(urllib.parse.urlsplit(base).port or 0)
        for _ in range(6):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("GET", "/api/content/items/item", headers={"api-key": key})
            response = conn.getresponse()
            assert response.status == 200
            response.read1(65536)
            time.sleep(0.3)  # the server waits for the client to read on
            conn.close()  # gone half-way through a list of several megabytes
        # Each list's private database connection is closed.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            now = {pid: _database_files(pid, data) for pid in workers}
            if now == baseline:
                break
            time.sleep(0.1)
        assert now == baseline, (baseline, now)
        assert sorted(_all_ids(base, key)) == sorted(ids)
