"""`GET /metrics` (quire.metrics): Prometheus' text format, counted by
every worker of a real server and added up; who may read it."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.conftest import Api, put_model
from tests.serving import quire_server


def _value(text: str, name: str, **labels: str) -> float:
    """The sample of metric `name` whose labels include `labels` (0 when none)."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', line.split(" ")[0]))
        if all(found.get(k) == v for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def test_metrics_count_requests_and_read_jobs_and_queues(admin: Api, anon: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    for _ in range(3):
        admin.get("/api/content/items/posts")
    anon.get("/api/content/items/nope")
    answer = admin.get("/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    assert _value(text, "quire_requests_total", route="/api/content/items/{model}", method="GET",
                  status="200") >= 3
    assert _value(text, "quire_requests_total", route="/api/content/items/{model}", status="404") >= 1
    assert "quire_request_seconds_bucket" in text and 'route="/api/content/items/{model}"' in text
    assert "quire_jobs{" in text and 'state="pending"' in text
    assert "quire_feed_last_change" in text and "quire_search_queue_rows" in text
    assert anon.get("/metrics").status_code == 401


def test_metrics_count_write_lock_waits_kept_answers_and_their_misses(admin: Api) -> None:
    before = admin.get("/metrics").text
    put_model(admin, "notes", type="collection", fields=[{"name": "text", "type": "text"}])
    admin.post("/api/content/item/notes", json={"data": {"text": "one"}})
    for _ in range(3):  # a miss, then the answer kept
        admin.get("/api/content/items/notes", params={"limit": "5"})
    after = admin.get("/metrics").text
    waits = "quire_store_lock_wait_seconds_count"
    assert _value(after, waits, got="yes") >= _value(before, waits, got="yes") + 2  # the model, the item
    kept = "quire_kept_answers_total"
    assert _value(after, kept, region="list", result="hit") >= _value(before, kept, region="list", result="hit") + 2
    assert _value(after, kept, region="list", result="miss") >= _value(before, kept, region="list", result="miss") + 1
    assert "quire_store_lock_wait_seconds_bucket" in after
    assert _value(after, "quire_store_queries_total") > _value(before, "quire_store_queries_total")


def test_only_a_role_with_system_metrics_or_an_open_setting_reads_them(admin: Api, tmp_path: Path) -> None:
    admin.put("/api/system/roles/scraper", json={"permissions": {"system/metrics": True}})
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    scraper = admin.with_key(admin.post("/api/system/keys", json={"name": "s", "role": "scraper"}).json()["key"])
    reader = admin.with_key(admin.post("/api/system/keys", json={"name": "r", "role": "reader"}).json()["key"])
    assert scraper.get("/metrics").status_code == 200
    assert reader.get("/metrics").status_code == 403
    app = build_app(load_settings(tmp_path, env={"QUIRE_SERVER_QUIET": "1", "QUIRE_SERVER_METRICS_OPEN": "true"}))
    try:
        assert TestClient(app).get("/metrics").status_code == 200
    finally:
        app.state.quire.close()


def test_two_workers_counts_are_added_up(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        headers = {"api-key": key}
        before = httpx.get(f"{base}/metrics", headers=headers).text
        route = "/api/content/items/{model}"  # not the start-up's health checks, which may still be held back
        seen = _value(before, "quire_requests_total", route=route)
        for _ in range(30):  # new connections: the kernel spreads them over both workers
            httpx.get(f"{base}/api/content/items/nothing", headers={**headers, "connection": "close"})
        streams: list[Any] = []
        with httpx.Client(timeout=30) as http:
            for _ in range(3):
                response = http.send(http.build_request("GET", f"{base}/api/content/changes", headers={
                    **headers, "accept": "text/event-stream"}), stream=True)
                streams.append(response)
            deadline = time.monotonic() + 15  # each worker adds what it holds back within a second
            while True:
                after = httpx.get(f"{base}/metrics", headers=headers).text
                counted = _value(after, "quire_requests_total", route=route) - seen
                if counted >= 30 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert counted == 30
            assert _value(after, "quire_feed_streams") == 3
            for response in streams:
                response.close()


def test_the_command_line_names_the_metrics_folder_before_prometheus_client_is_imported(tmp_path: Path) -> None:
    """prometheus_client reads PROMETHEUS_MULTIPROC_DIR once, when imported:
    imported earlier (a module importing quire.metrics), every worker
    counted in memory and a scrape saw none of the requests."""
    import subprocess
    import sys

    code = ("import sys; from quire import cli; cli.build_parser(); cli._metrics_folder(sys.argv[1]); "
            "print('prometheus_client' in sys.modules)")  # as cli.main does it
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "False", done.stdout + done.stderr
