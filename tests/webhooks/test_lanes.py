"""Lanes of the jobs table: deliveries to slow receivers never hold back
a scheduled publish. Fifty deliveries queued for a receiver that takes
2.5 s to answer (about 31 s of work at four at once), and an item due at
T is published by T + 2 s all the same."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from quire.app import Quire
from quire.content.schedule import PUBLISH_JOB
from quire.jobs import DONE, JOBS
from quire.webhooks.service import DELIVERY
from tests.conftest import Api, create_item, put_model
from tests.webhooks.receiver import Receiver

SLOW_SECONDS = 2.5
QUEUED = 50
# The bound the issue asks for. On a loaded machine the publish thread may
# be scheduled late; the measured delay (bench/lanes.py) is ~0.1 s idle.
ON_TIME = 2.0


@pytest.fixture
def app_env(app_env: dict[str, str]) -> dict[str, str]:
    # answers within the timeout: the deliveries succeed, slowly
    return {**app_env, "QUIRE_WEBHOOKS_TIMEOUT_SECONDS": "10", "QUIRE_WEBHOOKS_RETRY_MS": "600000"}


@pytest.fixture
def slow() -> Iterator[Receiver]:
    def answer(_: object) -> int:
        time.sleep(SLOW_SECONDS)
        return 200

    running = Receiver(answer)
    yield running
    running.close()


def test_a_publish_due_at_t_is_done_by_t_plus_2_s_with_50_slow_deliveries_queued(
        admin: Api, quire: Quire, slow: Receiver) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    made = admin.post("/api/webhooks", json={"name": "slow", "url": slow.url, "events": ["content.*"]})
    assert made.status_code == 200, made.text
    for n in range(QUEUED):
        create_item(admin, "posts", {"title": f"t{n}"})  # a delivery each, to the slow receiver
    due = int(time.time()) + 2
    item = create_item(admin, "posts", {"title": "Later", "_state": 0, "_publish_at": due})
    jobs = quire.store.collection(JOBS)
    key = f"{PUBLISH_JOB}:posts/{item['_id']}@{due}"
    deadline = time.monotonic() + 60  # generous: the assertion is on the recorded time, not on this wait
    while (job := jobs.get(key)) is None or job["state"] != DONE:
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
        quire.store.refresh()
    waiting = jobs.count({"kind": DELIVERY, "state": {"$ne": DONE}})
    assert job["finished"] - due < ON_TIME, job["finished"] - due
    assert waiting >= QUEUED - 20  # the slow deliveries were still queued when it was published
    assert len(slow.received) < QUEUED
