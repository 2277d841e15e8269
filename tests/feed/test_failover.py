"""Two instances of one site (one data folder), a subscriber on the first,
and the first killed whole (the server and its workers, as a machine that
dies): the subscriber resumes on the second with its Last-Event-ID and gets
every change made meanwhile, once, in order."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx2 as httpx

from tests.commands import run_quire
from tests.feed.test_stream import ENV, Events, _save
from tests.serving import start_server, stop_process


def test_a_subscriber_of_a_killed_instance_resumes_on_another_without_a_gap(tmp_path: Path) -> None:
    data = tmp_path / "data"
    key = run_quire("keys", "create", "--name", "e2e", "--role", "admin", "--data", str(data)).stdout.split()[-1]
    first, base_a, _ = start_server(data, ENV, own_group=True)
    second, base_b, _ = start_server(data, ENV)
    try:
        httpx.put(f"{base_a}/api/system/models/posts", headers={"api-key": key}, json={
            "name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]}).raise_for_status()
        stream = Events(base_a, key, models="posts")
        seen = []
        for n in range(3):
            _save(base_b, key, f"before {n}")  # written on the other instance
            seen.append(stream.next())
        assert [e[2]["item"]["title"] for e in seen] == ["before 0", "before 1", "before 2"]
        last = seen[-1][0]
        assert last is not None

        os.killpg(first.pid, signal.SIGKILL)  # the instance dies with its workers
        first.wait(10)
        assert stream.next()[1] == "closed"
        stream.close()
        for n in range(3):
            _save(base_b, key, f"meanwhile {n}")

        resumed = Events(base_b, key, last_id=last, models="posts")
        try:
            got = [resumed.next() for _ in range(3)]
            assert [e[2]["item"]["title"] for e in got] == ["meanwhile 0", "meanwhile 1", "meanwhile 2"]
            numbers = [int(e[0] or 0) for e in got]
            assert numbers == [int(last) + 1, int(last) + 2, int(last) + 3]  # no gap, no repeat
            _save(base_b, key, "live")
            assert resumed.next()[2]["item"]["title"] == "live"  # and on it goes, live
        finally:
            resumed.close()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
        stop_process(second)
