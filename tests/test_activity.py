"""The dashboard's charts of the last hour (quire/system/activity.py): each
minute's differences of the server's counts, stored per server and minute,
added up per minute and drawn for those who may read the metrics."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from quire.app import Quire
from quire.content.service import ContentService
from quire.system.activity import ACTIVITY, Sampler, last_hour, quantile
from quire.system.activity_charts import charts
from tests.admin.conftest import logged_in
from tests.conftest import Api, put_model


@pytest.mark.anyio
async def test_each_minute_records_what_the_server_did_since_the_last(
        app: Any, quire: Quire, admin: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    sampler = quire.get(Sampler)
    now = time.time()
    assert await sampler.sample(now - 60) is None  # the first look: nothing to compare with
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    for n in range(7):
        admin.get("/api/content/items/posts", params={"limit": str(n + 1)})

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(ContentService, "list_page", broken)
    assert admin.get("/api/content/items/posts", params={"limit": "99"}).status_code == 500
    monkeypatch.undo()
    row = await sampler.sample(now)
    assert row is not None
    assert row["requests"] >= 9 and row["errors"] >= 1  # the model, 7 lists, the failure
    assert row["latency_ms"] > 0 and row["p95_ms"] >= row["latency_ms"] * 0 and row["jobs_failed"] == 0
    assert "quire_search_queue_rows" in row["gauges"]
    minute = last_hour(quire, now)[-1]
    assert minute["requests"] == row["requests"] and minute["errors"] == row["errors"]
    # a counter that went down (the server restarted) counts from zero again
    assert sampler.previous is not None
    sampler.previous = {**sampler.previous, "requests": sampler.previous["requests"] + 10_000}
    again = await sampler.sample(now + 60)
    # the process's whole count (other tests' requests too: the counters are the process's)
    assert again is not None and again["requests"] == sampler.previous["requests"] > 0
    assert quire.store.collection(ACTIVITY).count({}) == 2


def test_servers_rows_are_added_up_per_minute_and_gaps_stay_gaps(quire: Quire) -> None:
    now = 1_800_000_000.0
    minute = int(now // 60) - 1
    rows = quire.store.collection(ACTIVITY)
    with quire.store.transaction():
        for instance, requests, ms in (("a:1", 30, 10.0), ("b:2", 10, 50.0)):
            rows.insert({"_id": f"{minute:012d}|{instance}", "at": minute * 60, "instance": instance,
                         "requests": requests, "errors": 1, "latency_ms": ms, "p95_ms": ms * 2, "delivered": 2,
                         "undelivered": 0, "jobs_waiting": 4, "jobs_failed": 1,
                         "gauges": {"quire_search_queue_rows": 3}})
    hour = last_hour(quire, now)
    assert len(hour) == 60 and "requests" not in hour[0]  # nothing recorded then: a gap, not a zero
    last = hour[-1]
    assert (last["requests"], last["errors"], last["delivered"]) == (40, 2, 4)
    assert last["latency_ms"] == pytest.approx(20.0)  # weighted by each server's requests
    assert (last["jobs_waiting"], last["jobs_failed"], last["search_lag"], last["p95_ms"]) == (4, 1, 3, 100.0)
    drawn = charts(hour)
    assert [c.title for c in drawn] == ["Requests", "Latency", "Jobs", "Webhook deliveries", "Search index lag"]
    assert "40 requests in the last hour, 2 of them server errors" in drawn[0].summary
    assert drawn[0].top == 40 and any(s["kind"] == "rect" for s in drawn[0].shapes)
    assert any(s["kind"] == "dot" for s in drawn[1].shapes)  # one minute of latency: a dot


def test_quantiles_come_from_the_histograms_buckets() -> None:
    buckets = {"0.01": 50.0, "0.05": 90.0, "0.1": 99.0, "+Inf": 100.0}
    assert quantile(buckets, 0.5) == 0.01 and quantile(buckets, 0.95) == 0.1 and quantile({}, 0.95) is None


@pytest.mark.anyio
async def test_the_dashboard_shows_the_charts_to_admins_only(app: Any, quire: Quire, admin: Api) -> None:
    sampler = quire.get(Sampler)
    now = time.time()
    await sampler.sample(now - 60)
    for _ in range(3):
        admin.get("/api/system/healthcheck")
    await sampler.sample(now)
    page = logged_in(app).get("/")
    assert page.status_code == 200
    html = page.text
    assert "Activity, last hour" in html
    labels = re.findall(r'<svg [^>]*role="img" aria-label="([^"]+)"', html)
    assert len(labels) == 5 and labels[0].startswith("Requests: ") and "requests in the last hour" in labels[0]
    assert "The figures, minute by minute" in html
    admin.put("/api/system/roles/editor", json={"permissions": {"content/*/read": True}})
    editor = logged_in(app, "ed", "editor").get("/")
    assert editor.status_code == 200 and "Activity, last hour" not in editor.text


def test_before_any_minute_is_recorded_the_panel_says_how_it_comes(app: Any) -> None:
    html = logged_in(app).get("/").text
    assert "Nothing recorded in the last hour yet" in html and "<svg" not in html.split("Activity, last hour")[1]


@pytest.mark.anyio
async def test_one_worker_of_a_server_samples_the_others_wait_for_its_lock(
        quire: Quire, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from quire import metrics
    from quire.system import activity

    folder = tmp_path / ".metrics" / "4242"
    folder.mkdir(parents=True)
    monkeypatch.setenv(metrics.MULTIPROC_ENV, str(folder))
    monkeypatch.setattr(metrics, "totals", lambda: {"requests": time.time(), "errors": 0.0, "latency_sum": 0.0,
                                                    "latency_count": 0.0, "buckets": {}, "delivered": 0.0,
                                                    "undelivered": 0.0})
    monkeypatch.setattr(activity, "MINUTE", 0.2)  # a minute of 0.2 s
    first, second = Sampler(quire), Sampler(quire)  # two workers of server 4242
    first.start()
    second.start()
    try:
        deadline = time.monotonic() + 10
        while quire.store.collection(ACTIVITY).count({}) < 2:
            assert time.monotonic() < deadline, "nothing sampled"
            await activity.asyncio.sleep(0.05)
        rows = quire.store.collection(ACTIVITY).find({})
        assert {r["instance"] for r in rows} == {f"{activity.socket.gethostname()}:4242"}
        assert (first._lock is None) != (second._lock is None)  # one of them holds the lock
    finally:
        first.stop()
        second.stop()
