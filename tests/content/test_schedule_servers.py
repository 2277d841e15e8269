"""Scheduled publishing on a real server of two worker processes (each
with its jobs runner): every scheduled item is published once, and a
worker killed in the middle of publishing leaves the job to the other
worker once its lease ends, still published once."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

from quire.config import load_settings
from quire.store import SqliteStore
from tests.serving import quire_server
from tests.test_server_faults import _call

ENV = {"QUIRE_JOBS_POLL_SECONDS": "1", "QUIRE_CONTENT_PUBLISH_LEASE_SECONDS": "3"}
FIELDS = {"fields": [{"name": "title", "type": "text"}]}

# A hook that holds the first publish of a marked item inside its
# transaction until the test kills the worker doing it.
SLOW_HOOK = '''
import os, time

def register(events):
    def hold(model, item, **_):
        marker = os.environ.get("QUIRE_TEST_HOLD")
        if marker and item.get("title") == "held" and not os.path.exists(marker + ".released"):
            with open(marker, "a") as f:
                f.write(f"{os.getpid()}\\n")
            time.sleep(60)
    events.on("content.item.publish", hold)
'''


def _wait(check: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _history(base: str, key: str, item_id: str) -> list[dict[str, Any]]:
    status, answer = _call(base, key, "GET", f"/api/revisions/content/notes/{item_id}")
    assert status == 200, answer
    return answer["data"]  # type: ignore[no-any-return]


def test_two_workers_publish_each_scheduled_item_once(tmp_path: Path) -> None:
    with quire_server(tmp_path / "data", env=ENV) as (base, key, _log):
        assert _call(base, key, "PUT", "/api/system/models/notes", FIELDS)[0] == 200
        at = int(time.time()) + 2
        ids = []
        for i in range(30):
            status, item = _call(base, key, "POST", "/api/content/item/notes",
                                 {"data": {"title": f"n{i}", "_state": 0, "_publish_at": at}})
            assert status == 200, item
            ids.append(item["_id"])
        assert _call(base, key, "GET", "/api/content/items/notes")[1] == []
        _wait(lambda: len(_call(base, key, "GET", "/api/content/items/notes")[1]) == 30)
        for item_id in ids:
            history = _history(base, key, item_id)
            assert [r["action"] for r in history] == ["update", "create"]  # published once
            assert history[0]["who"]["id"] == "schedule" and history[0]["at"] >= at


def test_a_worker_killed_mid_publish_leaves_the_job_to_the_other_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    (data / "hooks").mkdir(parents=True)
    (data / "hooks" / "hold.py").write_text(SLOW_HOOK)
    marker = tmp_path / "held"
    with quire_server(data, env={**ENV, "QUIRE_TEST_HOLD": str(marker)}) as (base, key, _log):
        assert _call(base, key, "PUT", "/api/system/models/notes", FIELDS)[0] == 200
        status, item = _call(base, key, "POST", "/api/content/item/notes",
                             {"data": {"title": "held", "_state": 0, "_publish_at": int(time.time())}})
        assert status == 200, item
        _wait(lambda: marker.exists() and marker.read_text().strip() != "")
        holder = int(marker.read_text().split()[0])
        os.kill(holder, signal.SIGKILL)  # in the middle of the publish's transaction
        Path(str(marker) + ".released").touch()
        _wait(lambda: _call(base, key, "GET", f"/api/content/item/notes/{item['_id']}")[0] == 200, timeout=40)
        history = _history(base, key, item["_id"])
        assert [r["action"] for r in history] == ["update", "create"], history  # published once
        status, shown = _call(base, key, "GET", f"/api/content/item/notes/{item['_id']}")
        assert shown["_state"] == 1 and "_publish_at" not in shown
    store = SqliteStore(load_settings(data).db_path)
    try:
        [job] = store.collection("system/jobs").find({"kind": "content.publish"})
    finally:
        store.close()
    assert job["state"] == "done" and job["attempts"] == 2 and "lease ended" in job["last_error"]
