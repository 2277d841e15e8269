"""Purging a CDN by tag after writes (docs/delivery.md#cdn).

A write records the tags it touched in `system/purges`, inside its own
transaction (so the record exists exactly when the write does), and makes
sure a `cdn.purge` job is queued. The job sends every recorded tag to the
configured purge address, `tags_per_request` at a time, and drops the
records it sent; a purge address that is down fails the job, which the jobs
table retries (`retry_ms`, doubling) while writes go on: nothing waits for
the CDN. Records stay until a purge took them, so none is lost to an outage
or a restart.

One job drains for many writes. The job's key carries a number kept in the
store's metadata (`cdn.drain`), which each job raises in a transaction of
its own before it reads the records: a write committed before that raise
is read by this job, one committed after it names the next number and so
queues a new job. Write transactions run one at a time, so there is no
third case."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import httpx2

from quire.config import CdnSettings
from quire.ids import new_id
from quire.jobs import DONE, FAILED, Job, Jobs
from quire.store import Store

log = logging.getLogger("quire.cdn")

PURGES = "system/purges"
HINTS = {"at": "number"}
JOB = "cdn.purge"
DRAIN_KEY = "cdn.drain"
READ = 500  # records read at once
SLICE_SECONDS = 60.0  # a job's longest run; what is left goes to the next job


class PurgeFailed(Exception):
    """The purge address answered with an error or not at all."""


class Purges:
    def __init__(self, store: Store, jobs: Jobs, settings: CdnSettings) -> None:
        self.store = store
        self.jobs = jobs
        self.settings = settings
        store.collection(PURGES, HINTS)
        jobs.handle(JOB, self.run, max_attempts=settings.max_attempts, retry_seconds=settings.retry_ms / 1000,
                    attempt_seconds=SLICE_SECONDS + settings.timeout_seconds + 30,
                    prepare=self._left_over)

    # -- in a write's transaction ------------------------------------------

    def add(self, tags: Iterable[str], store: Store | None = None) -> None:
        """Record `tags` for purging, in the caller's transaction, and
        queue the job that sends them (woken once the write commits)."""
        store = store or self.store
        if not store.in_transaction():  # a change outside any write (an alias switched): a transaction of its own
            with store.transaction():
                self.add(tags, store)
            self._wake()
            return
        store.collection(PURGES, HINTS).insert({"_id": new_id(), "at": round(time.time(), 3),
                                                "tags": sorted(set(tags))})
        self._queue(store)
        store.after_commit(self._wake)

    def _queue(self, store: Store) -> None:
        number = int(store.get_meta(DRAIN_KEY) or 0)
        job = self.jobs.enqueue(JOB, {}, key=f"drain-{number}", store=store)
        if job["state"] in (DONE, FAILED):
            # that number's job ended without raising it (it failed before it could): the number
            # moves on here, so the records of this write are not left to a job that never runs
            store.set_meta(DRAIN_KEY, str(number + 1))
            self.jobs.enqueue(JOB, {}, key=f"drain-{number + 1}", store=store)

    def _wake(self) -> None:
        self.jobs.wake(JOB)

    def _left_over(self, store: Store) -> None:
        """At start: records a job did not take (it failed for good) get one."""
        with store.transaction():
            if store.collection(PURGES, HINTS).find({}, limit=1):
                self._queue(store)

    def waiting(self) -> int:
        return self.store.collection(PURGES, HINTS).count({})

    # -- the job -------------------------------------------------------------

    def run(self, job: Job) -> None:
        store = job.store
        purges = store.collection(PURGES, HINTS)
        with store.transaction():  # writes from here on queue the next job
            store.set_meta(DRAIN_KEY, str(int(store.get_meta(DRAIN_KEY) or 0) + 1))
        started = time.monotonic()
        with httpx2.Client(timeout=self.settings.timeout_seconds, follow_redirects=False, trust_env=False) as client:
            while True:
                records = purges.find({}, [(("_id",), 1)], limit=READ)
                if not records:
                    return
                tags = sorted({tag for record in records for tag in record["tags"]})
                step = self.settings.tags_per_request
                for start in range(0, len(tags), step):
                    self._send(client, tags[start:start + step])
                with store.transaction():
                    purges.delete_many({"_id": {"$in": [r["_id"] for r in records]}})
                if time.monotonic() - started > SLICE_SECONDS:
                    with store.transaction():
                        self._queue(store)
                    return

    def _send(self, client: httpx2.Client, tags: list[str]) -> None:
        settings = self.settings
        headers = dict(settings.purge_headers)
        body: Any = None
        if settings.purge_header:
            headers[settings.purge_header] = " ".join(tags)
        else:
            body = {settings.purge_field: tags}
        try:
            answer = client.request(settings.purge_method, settings.purge_url, headers=headers, json=body)
        except httpx2.HTTPError as exc:
            # the exception's text names the address at most, never the headers (the CDN's key)
            raise PurgeFailed(f"the purge address did not answer: {type(exc).__name__}") from None
        if answer.status_code >= 300:
            raise PurgeFailed(f"the purge address answered {answer.status_code}: {answer.text[:200]}")
        log.debug("purged %d tags", len(tags))
