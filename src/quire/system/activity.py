"""The dashboard's figures of the last hour (docs/operations.md#the-dashboard):
once a minute one worker of each server (the one holding the lock file in
the server's metrics folder) takes the differences of the server's counts
since the minute before (requests, server errors, latency, webhook
deliveries, quire.metrics) and reads the jobs table and the modules'
gauges (the search index's queue), and stores one row of `system/activity`
per server and minute, kept two days. The dashboard adds the servers'
rows up per minute and draws them (activity_charts.py).

On the event loop of that worker: a sample is a few reads and one small
write, once a minute, so no thread needs a store object of its own."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import socket
import time
from pathlib import Path
from typing import IO, Any

from quire import metrics
from quire.jobs import FAILED, JOBS, PENDING
from quire.jobs import HINTS as JOB_HINTS
from quire.modules import Services

log = logging.getLogger("quire.activity")

ACTIVITY = "system/activity"
HINTS = {"at": "number"}
KEEP_SECONDS = 2 * 86_400
MINUTE = 60.0
GAUGES = ("quire_search_queue_rows", "quire_cdn_purges_waiting")  # kept per minute, as read


def quantile(buckets: dict[str, float], q: float) -> float | None:
    """The upper bound (seconds) below which a share `q` of the counted
    requests fell, from a histogram's cumulative buckets; None when empty."""
    bounds = sorted(((float(b), n) for b, n in buckets.items()), key=lambda pair: pair[0])
    total = bounds[-1][1] if bounds else 0.0
    if total <= 0:
        return None
    for bound, count in bounds:
        if count >= q * total:
            return bound
    return bounds[-1][0]


class Sampler:
    def __init__(self, services: Services) -> None:
        self.services = services
        self.store = services.store
        self.instance = f"{socket.gethostname()}:{os.getpid()}"
        self.previous: dict[str, Any] | None = None
        self._lock: IO[str] | None = None
        self._task: asyncio.Task[None] | None = None

    # -- in a server ---------------------------------------------------------

    def start(self) -> None:
        """In a worker of `quire serve` (its metrics folder is set): sample
        once a minute while this worker holds the server's lock file."""
        folder = os.environ.get(metrics.MULTIPROC_ENV)
        if not folder or self._task is not None or self.services.space_name is not None:
            return  # the server's figures are recorded by the main site, whatever its spaces serve
        self.instance = f"{socket.gethostname()}:{Path(folder).name}"  # the server's pid: its workers are one
        with contextlib.suppress(RuntimeError):  # no loop: a command, not a server
            self._task = asyncio.get_running_loop().create_task(self._run(Path(folder) / "activity.lock"))

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _holds(self, path: Path) -> bool:
        """Whether this worker samples for its server (the lock is kept
        while it lives; a worker started after its death takes it over)."""
        if self._lock is not None:
            return True
        handle = open(path, "a")  # noqa: SIM115 (held open: the lock lives as long as it)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return False
        self._lock = handle
        return True

    async def _run(self, lock_path: Path) -> None:
        while True:
            await asyncio.sleep(MINUTE - time.time() % MINUTE + 0.5)  # just after each minute starts
            try:
                if self._holds(lock_path):
                    await self.sample()
            except Exception:  # a busy store or a bad minute: the next one tries again
                log.warning("could not record this minute's activity", exc_info=True)

    # -- one minute ----------------------------------------------------------

    async def sample(self, now: float | None = None) -> dict[str, Any] | None:
        """Record the minute that just ended (None the first time: there is
        nothing to take a difference from yet)."""
        now = time.time() if now is None else now
        totals = metrics.totals()
        previous, self.previous = self.previous, totals
        if previous is None:
            return None

        def change(name: str) -> float:
            # a counter that went down was reset (the server restarted): all of it is new
            return float(totals[name] - previous[name] if totals[name] >= previous[name] else totals[name])

        buckets = {b: n - previous["buckets"].get(b, 0.0) for b, n in totals["buckets"].items()}
        if any(n < 0 for n in buckets.values()):
            buckets = dict(totals["buckets"])
        timed = change("latency_count")
        p95 = quantile(buckets, 0.95)
        minute = int(now // MINUTE) - 1  # the minute that ended
        jobs = self.store.collection(JOBS, JOB_HINTS)
        stored = jobs.exists()
        row: dict[str, Any] = {"_id": f"{minute:012d}|{self.instance}", "at": minute * MINUTE, "instance": self.instance,
               "requests": change("requests"), "errors": change("errors"),
               "latency_ms": round(change("latency_sum") / timed * 1000, 2) if timed else None,
               "p95_ms": round(p95 * 1000, 2) if p95 is not None and timed else None,
               "delivered": change("delivered"), "undelivered": change("undelivered"),
               "jobs_waiting": jobs.count({"state": PENDING}) if stored else 0,
               "jobs_failed": jobs.count({"state": FAILED}) if stored else 0,
               "gauges": self._gauges()}
        rows = self.store.collection(ACTIVITY, HINTS)
        async with self.store.atomic():
            rows.replace(row) if rows.get(row["_id"]) else rows.insert(row)
            rows.delete_many({"at": {"$lt": now - KEEP_SECONDS}})
        return row

    def _gauges(self) -> dict[str, float]:
        found: dict[str, float] = {}
        for module in self.services.modules:
            if module.gauges is None:
                continue
            for name, _help, labels, samples in module.gauges(self.services):
                if name in GAUGES and not labels and samples:
                    found[name] = float(samples[0][1])
        return found


def last_hour(services: Services, now: float | None = None) -> list[dict[str, Any]]:
    """The last 60 minutes, oldest first, the servers' rows added up per
    minute (a minute with no row: nothing was recorded, drawn as a gap)."""
    now = time.time() if now is None else now
    last = int(now // MINUTE) - 1
    first = last - 59
    rows = services.store.collection(ACTIVITY, HINTS)
    found = rows.find({"at": {"$gte": first * MINUTE}}) if rows.exists() else []
    minutes: dict[int, dict[str, Any]] = {}
    for row in found:
        minute = int(row["at"] // MINUTE)
        into = minutes.setdefault(minute, {"requests": 0.0, "errors": 0.0, "delivered": 0.0, "undelivered": 0.0,
                                           "jobs_waiting": 0, "jobs_failed": 0, "search_lag": 0.0,
                                           "latency": [], "p95_ms": None})
        for name in ("requests", "errors", "delivered", "undelivered"):
            into[name] += row.get(name) or 0
        # read from the shared database: every server saw the same, so the largest, not the sum
        into["jobs_waiting"] = max(into["jobs_waiting"], row.get("jobs_waiting") or 0)
        into["jobs_failed"] = max(into["jobs_failed"], row.get("jobs_failed") or 0)
        into["search_lag"] = max(into["search_lag"], (row.get("gauges") or {}).get("quire_search_queue_rows", 0))
        if row.get("latency_ms") is not None:
            into["latency"].append((row["latency_ms"], row.get("requests") or 0))
        if row.get("p95_ms") is not None:
            into["p95_ms"] = max(into["p95_ms"] or 0.0, row["p95_ms"])
    hour = []
    for minute in range(first, last + 1):
        got = minutes.get(minute)
        if got is not None:
            weight = sum(n for _, n in got["latency"])
            got["latency_ms"] = (sum(ms * n for ms, n in got["latency"]) / weight if weight else
                                 (got["latency"][0][0] if got["latency"] else None))
            del got["latency"]
        hour.append({"at": minute * MINUTE, **(got or {})})
    return hour
