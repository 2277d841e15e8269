"""What the service does, in Prometheus' text format at `GET /metrics`
(docs/operations.md), with the maintained `prometheus_client`.

Counted as requests are answered (every worker process of `quire serve`
writes its own file under `PROMETHEUS_MULTIPROC_DIR`, which the command
line sets and empties before anything imports this module, so that the
forked workers count in files, and a scrape adds them up): requests by route
and status, their latency, open change-feed streams, waits for the write
lock, reads of kept answers, webhook deliveries. Read from the
database when scraped, so every instance answers the same: jobs by kind
and state, the change log's last number and the search index's queue."""

from __future__ import annotations

import bisect
import collections
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from quire import counting as told

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

REQUESTS = Counter("quire_requests_total", "HTTP requests answered, by route (its pattern) and status",
                   ["route", "method", "status"])
LATENCY = Histogram("quire_request_seconds", "Time to answer a request (to its last byte), by route",
                    ["route"], buckets=BUCKETS)
STREAMS = Gauge("quire_feed_streams", "Open change-feed streams (GET /api/content/changes)",
                multiprocess_mode="livesum")
LOCK_WAIT = Histogram("quire_store_lock_wait_seconds",
                      "Time a write waited for the database's write lock, by whether it got it (no: a 503)",
                      ["got"], buckets=(0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0))
KEPT = Counter("quire_kept_answers_total", "Reads answered from the answers kept in memory, or not, by kind",
               ["region", "result"])
DELIVERIES = Counter("quire_webhook_deliveries_total", "Webhook delivery attempts, by outcome", ["outcome"])
QUERIES = Counter("quire_store_queries_total", "Reads sent to the database (SQL statements)")
OWN = (REQUESTS, LATENCY, STREAMS, LOCK_WAIT, KEPT, DELIVERIES, QUERIES)


def process_ended() -> None:
    """A worker stopping: its open streams stop counting."""
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.mark_process_dead(os.getpid())


# What is counted on every request waits in `_answered` and `_told` (a
# deque's append and popleft are atomic, so the event loop appends with no
# lock) and is added to the shared counters (a lock and a write to the
# worker's file per labelled child) by `flush`: each second from a thread of
# a server's worker (so a scrape may miss the other workers' last second),
# at each scrape of this process, and when FLUSH_AT wait (a process without
# the thread). Requests pay for an append; the adding up is done in one go.
FLUSH_AT = 4096
_answered: collections.deque[tuple[str, str, int, float]] = collections.deque()  # route, method, status, s
_told: collections.deque[Any] = collections.deque()  # a counter's labelled child, once per count
_counted: dict[tuple[str, str, int], Any] = {}  # labelled children, looked up once (labels() takes a lock)
_timed: dict[str, _Timing] = {}
_lock = threading.Lock()  # one flush at a time: a scrape waits for the thread's batch under way
_flusher: list[threading.Thread] = []


class _Timing:
    """A route's latencies of one flush: counts per bucket and their sum,
    added to the shared histogram at once. Reaches into the histogram's
    buckets and sum as its own `observe` does; a histogram without them
    (another prometheus_client) is given each time on its own."""

    def __init__(self, histogram: Any) -> None:
        self.histogram = histogram
        self.bounds: list[float] = list(getattr(histogram, "_upper_bounds", ()))
        self.batched = bool(self.bounds) and hasattr(histogram, "_buckets") and hasattr(histogram, "_sum")
        self.counts = [0] * len(self.bounds)
        self.total = 0.0
        self.waiting = 0

    def add(self, seconds: float) -> None:
        if not self.batched:
            self.histogram.observe(seconds)
            return
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total += seconds
        self.waiting += 1

    def flush(self) -> None:
        if not self.waiting:
            return
        counts, total = self.counts, self.total
        self.counts, self.total, self.waiting = [0] * len(self.bounds), 0.0, 0
        self.histogram._sum.inc(total)
        for bucket, count in zip(self.histogram._buckets, counts, strict=True):
            if count:
                bucket.inc(count)


def observe(route: str, method: str, status: int, seconds: float) -> None:
    """A request answered (the dispatcher's `observe`): counted and timed
    at the next flush."""
    _answered.append((route, method, status, seconds))
    if len(_answered) >= FLUSH_AT:
        flush()


def _count(child: Any) -> None:
    _told.append(child)
    if len(_told) >= FLUSH_AT:
        flush()


def _flush_each_second() -> None:
    """A server's worker: what a quiet worker holds back reaches the
    shared files within a second all the same."""
    while True:
        time.sleep(1.0)
        flush()


def flush() -> None:
    """Add what this process holds back to the shared counters."""
    with _lock:
        counts: dict[Any, int] = {}
        answered, told_, timed = _answered, _told, _timed
        while True:
            try:
                route, method, status, seconds = answered.popleft()
            except IndexError:
                break
            counter = _counted.get((route, method, status))
            if counter is None:
                counter = _counted[(route, method, status)] = REQUESTS.labels(route, method, str(status))
            counts[counter] = counts.get(counter, 0) + 1
            timer = timed.get(route)
            if timer is None:
                timer = timed[route] = _Timing(LATENCY.labels(route))
            timer.add(seconds)
        while True:
            try:
                child = told_.popleft()
            except IndexError:
                break
            counts[child] = counts.get(child, 0) + 1
        for child, count in counts.items():
            child.inc(count)
        for timing in timed.values():
            timing.flush()


_waits = {True: LOCK_WAIT.labels("yes"), False: LOCK_WAIT.labels("no")}
_on = [True]  # `[server] metrics` of this process (app.build_app)


def counting(on: bool) -> None:
    """Count (or not) lock waits, kept answers and deliveries in this
    process (quire.counting tells of them); requests are counted by the
    dispatcher when it is given `observe`."""
    _on[0] = on
    if on and os.environ.get(MULTIPROC_ENV) and not _flusher:
        _flusher.append(threading.Thread(target=_flush_each_second, name="quire-metrics", daemon=True))
        _flusher[0].start()
    if on:
        told.listen("lock_wait", lock_waited)
        told.listen("kept_read", kept)
        told.listen("delivery", delivered)
        told.listen("query", queried)


def lock_waited(seconds: float, got: bool) -> None:
    """A write's wait for the write lock (quire.store.base.LOCK_WAITS)."""
    if _on[0]:
        _waits[got].observe(seconds)


_kept: dict[tuple[str, bool], Any] = {}


def kept(region: str, hit: bool) -> None:
    """A read looked among the kept answers of `region`."""
    if not _on[0]:
        return
    child = _kept.get((region, hit))
    if child is None:
        child = _kept[(region, hit)] = KEPT.labels(region, "hit" if hit else "miss")
    _told.append(child)  # (`_count`, inline: every request counts one)
    if len(_told) >= FLUSH_AT:
        flush()


def queried() -> None:
    """A read went to the database."""
    if _on[0]:
        _count(QUERIES)


def delivered(ok: bool) -> None:
    """A webhook delivery attempt ended."""
    if _on[0]:
        DELIVERIES.labels("ok" if ok else "failed").inc()


class Sampled(Collector):
    """Gauges read from the database at each scrape: `read()` answers
    (name, help, labels, [(label values, value)])."""

    def __init__(self, read: Callable[[], Iterable[tuple[str, str, list[str], list[tuple[list[str], float]]]]]) -> None:
        self.read = read

    def collect(self) -> Iterable[Any]:
        for name, text, labels, samples in self.read():
            family = GaugeMetricFamily(name, text, labels=labels)
            for values, value in samples:
                family.add_metric(values, value)
            yield family


def _registry(sampled: Sampled | None = None) -> CollectorRegistry:
    registry = CollectorRegistry()
    if os.environ.get(MULTIPROC_ENV):
        multiprocess.MultiProcessCollector(registry)
    else:  # one process (tests, `quire` used as a library): its own counts
        for metric in OWN:
            registry.register(metric)
    if sampled is not None:
        registry.register(sampled)
    return registry


def totals() -> dict[str, Any]:
    """This server's counts since it started, added up over its workers
    (what the dashboard's charts take differences of): requests, server
    errors (5xx), the latency histogram over every route (`buckets`: upper
    bound -> count, with its `sum` and `count`), webhook deliveries."""
    flush()
    found: dict[str, Any] = {"requests": 0.0, "errors": 0.0, "latency_sum": 0.0, "latency_count": 0.0,
                             "buckets": {}, "delivered": 0.0, "undelivered": 0.0}
    for family in _registry().collect():
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, sample.value
            if name == "quire_requests_total":
                found["requests"] += value
                if labels.get("status", "").startswith("5"):
                    found["errors"] += value
            elif name == "quire_request_seconds_bucket":
                bound = labels["le"]
                found["buckets"][bound] = found["buckets"].get(bound, 0.0) + value
            elif name == "quire_request_seconds_sum":
                found["latency_sum"] += value
            elif name == "quire_request_seconds_count":
                found["latency_count"] += value
            elif name == "quire_webhook_deliveries_total":
                found["delivered" if labels.get("outcome") == "ok" else "undelivered"] += value
    return found


def scrape(sampled: Sampled | None) -> bytes:
    """The text of every metric: the workers' counts and the sampled ones."""
    flush()
    return generate_latest(_registry(sampled))
