"""Webhook deliveries across processes: a real two-worker server delivers
each event once, and a runner killed (SIGKILL) while the receiver holds its
request leaves the delivery to another runner once the lease ends: the
receiver gets the same webhook-id again (at least once), and Quire logs the
delivery once. Runners are `tests/webhooks/runner.py` processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import httpx2
import pytest

from quire.cache import Cache
from quire.config import WebhooksSettings, load_settings
from quire.jobs import DONE, JOBS, RUNNING, Jobs
from quire.store import open_store
from quire.webhooks.sealing import Sealer, key_text
from quire.webhooks.service import DELIVERIES, DELIVERY, WebhookService
from tests.serving import quire_server
from tests.webhooks.conftest import WEBHOOK_ENV
from tests.webhooks.receiver import Receiver, expected_signature

ROOT = Path(__file__).resolve().parents[2]
# A one-second timeout makes a lease of 1 + 2 × 5 + 5 = 16 seconds (jobs.lease_for).
ENV = {**WEBHOOK_ENV, "QUIRE_WEBHOOKS_TIMEOUT_SECONDS": "1", "QUIRE_JOBS_POLL_SECONDS": "1"}


def wait_for(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.05)
    return result


@pytest.fixture
def env(app_env: dict[str, str]) -> dict[str, str]:
    return {**app_env, **ENV}


def test_a_two_worker_server_delivers_each_event_once(data_dir: Path, env: dict[str, str]) -> None:
    receiver = Receiver()
    try:
        with quire_server(data_dir, env) as (base, key, _log), httpx2.Client(
                base_url=base, headers={"api-key": key}, timeout=10) as api:
            assert api.put("/api/system/models/posts", json={
                "name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]}).status_code == 200
            hook = api.post("/api/webhooks", json={"name": "b", "url": receiver.url, "events": ["*"]}).json()
            saved = [api.post("/api/content/item/posts", json={"data": {"title": f"t{n}"}}).json()["_id"]
                     for n in range(30)]
            got = receiver.wait_for(30, timeout=30)
            logged = wait_for(lambda: (r := api.get(f"/api/webhooks/{hook['_id']}/deliveries",
                                                    params={"limit": 100}).json())["total"] >= 30 and r)
            time.sleep(0.3)
        assert len(receiver.received) == 30
        assert len({g.id for g in got}) == 30  # each event once
        assert sorted(g.json["data"]["item"]["_id"] for g in got) == sorted(saved)
        assert all(g.headers["webhook-signature"] == expected_signature(hook["secret"], g) for g in got)
        assert logged["total"] == 30 and {e["attempt"] for e in logged["data"]} == {1}
    finally:
        receiver.close()


class Side:
    """This test's side: an instance that queues deliveries as a write
    would (no runner unless `jobs.start()`), and reads jobs and the log."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        settings = load_settings(data_dir, env=env)
        self.store = open_store(settings.store.url, settings.db_path, 5)
        self.jobs = Jobs(self.store, settings.jobs)
        section = settings.section(WebhooksSettings)
        sealer = Sealer(key_text(section.key, data_dir))
        self.webhooks = WebhookService(self.store, Cache(self.store), section, self.jobs, sealer)

    def close(self) -> None:
        self.jobs.close()
        self.webhooks.close()
        self.store.close()

    def job(self) -> dict[str, Any]:
        self.store.refresh()
        [job] = self.store.collection(JOBS).find({"kind": DELIVERY})
        return job

    def logged(self) -> list[dict[str, Any]]:
        self.store.refresh()
        return self.store.collection(DELIVERIES).find()


@pytest.fixture
def side(data_dir: Path, env: dict[str, str]) -> Iterator[Side]:
    data_dir.mkdir(parents=True, exist_ok=True)
    made = Side(data_dir, env)
    yield made
    made.close()


@pytest.fixture
def spawn(data_dir: Path, env: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    started: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def start() -> subprocess.Popen[bytes]:
        log = (tmp_path / f"runner{len(started)}.log").open("wb")
        child_env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        child = subprocess.Popen([sys.executable, "-m", "tests.webhooks.runner", str(data_dir)], cwd=ROOT,
                                 env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        started.append((child, log))
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready", (tmp_path / f"runner{len(started) - 1}.log").read_text()
        return child

    yield start
    for child, log in started:
        if child.poll() is None:
            assert child.stdin is not None
            child.stdin.close()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
        log.close()


def test_a_runner_killed_mid_delivery_leaves_it_to_another_after_the_lease_and_it_is_logged_once(
        side: Side, spawn: Any) -> None:
    holding = Receiver(lambda got: -1 if len(holding.received) == 0 else 200)  # holds the first request
    try:
        hook = asyncio.run(side.webhooks.create({"name": "b", "url": holding.url, "events": ["*"]}))
        with side.store.transaction():
            side.webhooks._enqueue("content.item.saved", {"item": {"_id": "x"}}, "posts")
        child = spawn()
        first = holding.wait_for(1)[0]  # the receiver has it; the runner awaits the answer
        running = side.job()
        assert (running["state"], running["attempts"]) == (RUNNING, 1) and f":{child.pid}:" in running["holder"]
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        holding.release.set()
        side.jobs.start()  # another instance: it takes the job over when the lease ends
        wait_for(lambda: side.job()["state"] == DONE)
        second = holding.wait_for(2)[1]
    finally:
        holding.close()
    assert first.id == second.id and first.body == second.body  # at least once, the same message
    assert second.headers["webhook-signature"] == expected_signature(hook["secret"], second)
    done = side.job()
    assert done["attempts"] == 2 and "lease ended" in done["last_error"]
    logged = side.logged()
    assert [(e["attempt"], e["status"], e["msg"]) for e in logged] == [(2, 200, first.id)]  # logged once
