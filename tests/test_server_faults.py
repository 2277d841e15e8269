"""Faults of the real server: a worker killed under load is started again
while the other keeps serving, and no acknowledged write is lost."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import httpx2

from quire.app import build_app
from quire.cli import STOP_SECONDS
from quire.config import load_settings
from quire.store import SqliteStore
from tests.admin.conftest import SESSION_COOKIE, make_user
from tests.serving import quire_server


def _call(base: str, key: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("content-type", "application/json")
    request.add_header("api-key", key)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        body = error.read()
        return error.code, json.loads(body) if body else body
    except OSError as error:  # connection reset by the dying worker: not acknowledged
        return 0, str(error)


def _server_pid(data: Path) -> int:
    """The `quire serve` process of this data directory."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in cmdline and str(data).encode() in cmdline:
            return int(entry.name)
    raise AssertionError("no server process found")


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def _workers(pid: int) -> list[int]:
    """Granian's worker processes (its children that are not helpers such as
    multiprocessing's resource tracker)."""
    out = []
    for child in _children(pid):
        try:
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
        except OSError:
            continue
        if b"resource_tracker" not in cmdline:
            out.append(child)
    return out


def test_a_killed_worker_is_respawned_and_no_acknowledged_write_is_lost(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with quire_server(data) as (base, key, _log):
        assert _call(base, key, "PUT", "/api/system/models/notes",
                     {"fields": [{"name": "text", "type": "text"}]})[0] == 200
        main = _server_pid(data.resolve())
        before = _workers(main)
        assert len(before) == 2

        acknowledged: list[str] = []
        refused: list[tuple[int, Any]] = []
        stop = threading.Event()
        lock = threading.Lock()

        def write(n: int) -> None:
            i = 0
            while not stop.is_set():
                status, item = _call(base, key, "POST", "/api/content/item/notes", {"data": {"text": f"w{n}-{i}"}})
                with lock:
                    if status == 200:
                        acknowledged.append(item["_id"])
                    else:
                        refused.append((status, item))
                i += 1

        def acknowledged_reach(count: int) -> None:
            """Wait for `count` acknowledged writes (a count, not a duration:
            a loaded machine writes fewer a second)."""
            deadline = time.monotonic() + 60
            while len(acknowledged) < count:
                assert time.monotonic() < deadline, f"{len(acknowledged)} of {count} writes acknowledged"
                time.sleep(0.05)

        writers = [threading.Thread(target=write, args=(n,)) for n in range(4)]
        for t in writers:
            t.start()
        acknowledged_reach(12)  # writes are going on when the worker dies
        os.kill(before[0], signal.SIGKILL)
        killed_at = time.monotonic()

        # The server answers health checks within a few seconds of the kill.
        healthy_after = None
        while time.monotonic() - killed_at < 10:
            status, _ = _call(base, key, "GET", "/api/system/healthcheck")
            if status == 200:
                healthy_after = time.monotonic() - killed_at
                break
            time.sleep(0.1)
        assert healthy_after is not None and healthy_after < 5

        # The dead worker is replaced; the server process lives on.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            now = _workers(main)
            if len(now) == 2 and before[0] not in now:
                break
            time.sleep(0.2)
        else:
            raise AssertionError(f"worker not respawned: {before} -> {_workers(main)}")
        acknowledged_reach(len(acknowledged) + 12)  # writes go on after the respawn
        stop.set()
        for t in writers:
            t.join(30)

        assert len(acknowledged) > 20
        # Only requests on the killed worker's connections fail, and they fail
        # as dropped connections, never as an answer that claims something.
        assert all(status == 0 for status, _ in refused), refused
        status, items = _call(base, key, "GET", "/api/content/items/notes?fields=" + urllib.parse.quote('{"_id":1}'))
        assert status == 200
        stored = {item["_id"] for item in items}
        assert set(acknowledged) <= stored
        # Each item's revision committed with it: a write the kill cut off
        # left neither, one that landed left both.
        store = SqliteStore(data / "quire.db")
        try:
            revised = [r["item"] for r in store.collection("system/revisions").find({"resource": "content/notes"})]
        finally:
            store.close()
        assert sorted(revised) == sorted(stored)
        os.kill(main, 0)  # still running


def test_stopping_the_server_with_open_event_streams_ends_them_at_once(tmp_path: Path) -> None:
    """SIGTERM ends each worker's open event streams (the studio's session
    events, the change feed) at once, so the workers stop cleanly in well
    under the stop timeout (granian waits for every connection, and killed
    a worker held by a stream after STOP_SECONDS, with a warning); the
    clients see their streams end and reconnect elsewhere."""
    data = tmp_path / "data"
    local = build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
    quire = local.state.quire
    try:
        token, _ = quire.sessions.start(make_user(quire, "ann"))
        with quire_server(data) as (base, key, log):
            main = _server_pid(data.resolve())
            with httpx2.Client(timeout=httpx2.Timeout(30.0)) as http, \
                    http.stream("GET", base + "/system/events", cookies={SESSION_COOKIE: token}) as events, \
                    http.stream("GET", base + "/api/content/changes", headers={
                        "api-key": key, "accept": "text/event-stream"}) as feed:
                opened = [events.iter_lines(), feed.iter_lines()]
                assert next(opened[0]).startswith("retry:") and next(opened[1]).startswith("retry:")
                os.kill(main, signal.SIGTERM)
                asked = time.monotonic()
                for lines in opened:
                    for _ in lines:  # to the stream's end
                        pass
                while Path(f"/proc/{main}").exists() and not _is_zombie(main):
                    assert time.monotonic() - asked < STOP_SECONDS + 10, "server still running:\n" + log.read_text()
                    time.sleep(0.05)
                took = time.monotonic() - asked
            assert took < STOP_SECONDS / 2, f"stopping took {took:.1f} s"
            assert "refused to gracefully stop" not in log.read_text()
    finally:
        quire.close()


def _is_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return False
