"""OpenTelemetry traces (quire.tracing, docs/operations.md#traces): a span
per request continuing the caller's `traceparent`, with the store's reads
and writes, template renders, jobs (linked to the request that queued them)
and outbound webhook requests (carrying the trace on) inside; exported over
OTLP/HTTP by a real server; nothing at all when off."""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from quire import tracing
from tests.admin.conftest import logged_in
from tests.conftest import Api, put_model
from tests.serving import quire_server
from tests.webhooks.conftest import WEBHOOK_ENV
from tests.webhooks.receiver import Receiver

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    assert tracing.configure("", "quire-test", 1.0, exporter=exporter)
    yield exporter
    tracing.shutdown()


@pytest.fixture
def app_env(app_env: dict[str, str]) -> dict[str, str]:
    return {**app_env, **WEBHOOK_ENV}


def _named(exporter: InMemorySpanExporter, name: str) -> list[Any]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def test_a_request_continues_the_callers_trace_with_the_stores_work_inside(
        spans: InMemorySpanExporter, admin: Api, quire: Any) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    spans.clear()
    answer = admin.get("/api/content/items/posts", params={"limit": "5", "secret": "never-in-a-span"},
                       headers={"traceparent": CALLER, "x-request-id": "req-7"})
    assert answer.status_code == 200
    (server,) = _named(spans, "GET /api/content/items/posts")
    assert format(server.context.trace_id, "032x") == TRACE_ID  # the caller's trace, continued
    assert format(server.parent.span_id, "016x") == "00f067aa0ba902b7"
    assert server.attributes["http.response.status_code"] == 200
    assert server.attributes["http.route"] == "/api/content/items/{model}"
    assert server.attributes["quire.request_id"] == "req-7"
    reads = [s for s in _named(spans, "store.read") if s.parent and s.parent.span_id == server.context.span_id]
    assert reads and reads[0].attributes["db.system"] == quire.store.system  # the run's: sqlite or postgresql
    assert "SELECT" in reads[0].attributes["db.query.text"]
    assert not any("never-in-a-span" in str(s.attributes) + s.name for s in spans.get_finished_spans())
    spans.clear()
    admin.post("/api/content/item/posts", json={"data": {"title": "traced"}})
    (write,) = _named(spans, "store.write")
    (saved,) = _named(spans, "POST /api/content/item/posts")
    assert write.parent.span_id == saved.context.span_id


def test_a_studio_page_has_its_render_span(spans: InMemorySpanExporter, app: Any) -> None:
    browser = logged_in(app)
    spans.clear()
    assert browser.get("/").status_code == 200
    (render,) = [s for s in _named(spans, "render") if s.attributes["quire.template"] == "dashboard.html"]
    (page,) = _named(spans, "GET /")
    assert render.context.trace_id == page.context.trace_id


def test_a_webhook_delivery_is_a_job_linked_to_its_request_and_carries_the_trace_on(
        spans: InMemorySpanExporter, admin: Api) -> None:
    receiver = Receiver()
    try:
        put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
        admin.post("/api/webhooks", json={"name": "build", "url": receiver.url, "events": ["content.*"]})
        spans.clear()
        admin.post("/api/content/item/posts", json={"data": {"title": "hello"}}, headers={"traceparent": CALLER})
        got = receiver.wait_for(1)[0]
        deadline = time.monotonic() + 10
        while not _named(spans, "job webhook.delivery"):
            assert time.monotonic() < deadline
            time.sleep(0.02)
        (job,) = _named(spans, "job webhook.delivery")
        (outbound,) = _named(spans, "webhook POST")
        assert [format(link.context.trace_id, "032x") for link in job.links] == [TRACE_ID]  # queued by it
        assert outbound.parent.span_id == job.context.span_id
        assert got.headers["traceparent"].split("-")[1] == format(job.context.trace_id, "032x")
        assert outbound.attributes["http.response.status_code"] == 200
    finally:
        receiver.close()


def test_with_traces_off_nothing_is_recorded(admin: Api) -> None:
    assert not tracing.enabled() and tracing.span("x") is tracing.NOTHING and tracing.carrier() == {}
    assert admin.get("/api/system/healthcheck").status_code == 200


def test_a_server_sends_its_spans_to_the_otlp_endpoint(tmp_path: Path) -> None:
    collector = Receiver()
    try:
        env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_TRACES_ENABLED": "true",
               "QUIRE_TRACES_ENDPOINT": f"http://127.0.0.1:{collector.port}/v1/traces"}
        with quire_server(tmp_path / "data", env=env) as (base, _key, _log):
            urllib.request.urlopen(base + "/api/system/healthcheck", timeout=10).read()
        # a stopping worker sends what it holds
        got = collector.wait_for(1, timeout=30)
        assert got[0].path == "/v1/traces" and got[0].headers["content-type"] == "application/x-protobuf"
        assert b"/api/system/healthcheck" in b"".join(r.body for r in got)
    finally:
        collector.close()
