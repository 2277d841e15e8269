"""Background work that runs once per cluster: the jobs table.

A job is a document of the collection `system/jobs`: a kind (the name a
module registered a handler under), a JSON payload, a state and the times
that drive it. A module enqueues a job inside the transaction of the change
that made it, so the job commits with that change or not at all, and
registers a handler for its kind. A runner per process (one thread, with a
store object of its own) claims due jobs of the kinds it has handlers for,
with a lease, and runs them.

Once per cluster: a claim reads and writes inside one write transaction,
and the store serialises write transactions across every process on the
database (SQLite's write lock; on PostgreSQL the store's lock), so two
runners never hold the same job at once. At least once: a runner killed
mid-job leaves the job `running` under a lease that ends; a runner then
claims it again. A handler must bear running twice for the same job (the
e-mail handler sends the same Message-ID again, so receivers can tell).

    pending ──claim──▶ running ──handler returns──▶ done      (pruned later)
       ▲                  │ ──handler raised, attempts left──▶ pending (run_at moved)
       │                  │ ──no attempt left, or GiveUp──▶ failed    (pruned later)
       └──lease ended─────┘  (claimed again as it is: its runner is gone)

See docs/architecture.md, "Jobs table".
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from quire.config import JobsSettings
from quire.ids import new_id
from quire.store import Collection, Store

log = logging.getLogger("quire.jobs")

JOBS = "system/jobs"
PENDING, RUNNING, DONE, FAILED = "pending", "running", "done", "failed"
LOST = "lost"  # an outcome, never stored: the lease was taken over, nothing recorded
# Every stored value of these fields has this one type (or is null), so
# filters on them compile to the expressions of the indexes below.
HINTS = {"kind": "text", "state": "text", "run_at": "number", "lease_until": "number", "finished": "number"}
INDEXES: list[list[tuple[str, ...]]] = [[("state",), ("run_at",)], [("state",), ("lease_until",)], [("state",), ("finished",)]]
KIND_NAME = re.compile(r"[a-z][a-z0-9_.-]{0,63}")  # no ":", which separates kind and key in an `_id`
MAX_KEY = 400
MAX_ERROR = 2000  # characters of an error kept in `last_error`
PRUNE_EVERY = 300.0  # seconds between two prunes of finished jobs by one runner
MIN_WAIT = 0.05  # a runner's shortest sleep, so a clock a little behind another host's never spins


class GiveUp(Exception):
    """Raised by a handler when another attempt cannot succeed (a refused
    address, a webhook answering 410): the job fails at once."""


@dataclass(frozen=True)
class Job:
    """A claimed job, as its handler gets it."""

    id: str
    kind: str
    payload: dict[str, Any]
    key: str | None
    attempts: int  # this attempt included
    lease: str  # this claim's token: only it may record the outcome
    store: Store  # the runner's own store object, for the handler's reads and writes


@dataclass(frozen=True)
class Kind:
    """What a module registered for one kind of job (see `Jobs.handle`)."""

    run: Callable[[Job], None]
    max_attempts: int
    retry_seconds: float
    lease_seconds: float
    finished: Callable[[Job, str], None] | None
    prepare: Callable[[Store], object] | None


class Jobs:
    """The jobs table of one process: `handle` registers a kind, `enqueue`
    adds a job in the open transaction, `wake` tells the runner to look now.

    The runner thread starts with the server (`start`) or at the first
    `wake`, and only when some kind has a handler; `close` stops it."""

    def __init__(self, store: Store, settings: JobsSettings, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.settings = settings
        # Wall-clock seconds: run_at and leases are compared across hosts,
        # so the hosts' clocks must agree (NTP); a skew lengthens or
        # shortens leases by as much.
        self.clock = clock
        self.kinds: dict[str, Kind] = {}
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{new_id()[-6:]}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False
        self._pruned = float("-inf")

    # -- registering and enqueueing ---------------------------------------

    def handle(self, kind: str, run: Callable[[Job], None], *, max_attempts: int = 5,
               retry_seconds: float = 30, lease_seconds: float = 300,
               finished: Callable[[Job, str], None] | None = None,
               prepare: Callable[[Store], object] | None = None) -> None:
        """Run jobs of `kind` with `run(job)` in this process's runner.

        `run` returning is success; raising retries after `retry_seconds`,
        doubling each time, until `max_attempts` attempts were made (then
        the job is `failed`); `GiveUp` fails it at once. `lease_seconds`
        must exceed the longest run: after it another runner may take the
        job over. `finished(job, state)` runs after "done" or "failed" was
        recorded by this runner (to drop what the job kept alive).
        `prepare(store)` runs once in the runner's thread before its first
        claim (to move work kept elsewhere onto the table)."""
        _check_kind(kind)
        if kind in self.kinds:
            raise ValueError(f"jobs of kind {kind!r} already have a handler")
        if max_attempts < 1 or retry_seconds <= 0 or lease_seconds <= 0:
            raise ValueError("max_attempts, retry_seconds and lease_seconds must be positive")
        with self._lock:
            if self._thread is not None:
                raise RuntimeError("register job handlers before the runner starts (in a module's build)")
            self.kinds[kind] = Kind(run, max_attempts, float(retry_seconds), float(lease_seconds), finished, prepare)

    def enqueue(self, kind: str, payload: dict[str, Any], *, key: str | None = None,
                run_at: float | None = None, store: Store | None = None,
                attempts: int = 0, last_error: str | None = None, failed: bool = False) -> dict[str, Any]:
        """Add a job in the caller's open transaction (or in one of its
        own) and answer its document. Call `wake()` after the commit.

        `key` makes the enqueue idempotent: the job's `_id` is
        `<kind>:<key>`, and while a job of that id is kept (not yet
        pruned), enqueueing it again answers that job and adds none.
        `run_at`: not before this time (Unix seconds; default now).
        `store`: the store object to write with (a handler's `job.store`).
        `attempts`, `last_error`, `failed`: the history of work moved here
        from an older queue."""
        _check_kind(kind)
        if not isinstance(payload, dict):
            raise TypeError("a job's payload is a JSON object (a dict)")
        if key is not None and not (isinstance(key, str) and 0 < len(key) <= MAX_KEY):
            raise ValueError(f"a job's key is a text of 1 to {MAX_KEY} characters")
        store = store or self.store
        now = self.clock()
        doc: dict[str, Any] = {
            "_id": new_id() if key is None else f"{kind}:{key}",
            "kind": kind, "key": key, "payload": payload,
            "state": FAILED if failed else PENDING, "run_at": now if run_at is None else float(run_at),
            "attempts": attempts, "lease_until": 0.0, "holder": None, "lease": None,
            "last_error": last_error, "created": now, "updated": now, "finished": now if failed else None,
        }
        jobs = _collection(store)
        with store.transaction():
            if key is not None:
                kept = jobs.get(doc["_id"])
                if kept is not None:
                    return kept
            jobs.insert(doc)
        return doc

    # -- the runner thread ------------------------------------------------

    def start(self) -> None:
        """Start this process's runner (when some kind has a handler)."""
        self._ensure_runner()

    def wake(self) -> None:
        """Look for due jobs now: after a commit that enqueued one."""
        if self._ensure_runner():
            self._wake.set()

    def close(self, timeout: float = 5.0) -> None:
        """Stop the runner: a job running now finishes (or its lease ends)."""
        with self._lock:
            self._closed = True
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _ensure_runner(self) -> bool:
        if not self.kinds:
            return False
        with self._lock:
            if self._closed:
                return False
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="quire-jobs", daemon=True)
                self._thread.start()
        return True

    def _run(self) -> None:
        # A store object of the thread's own: its transactions never mix
        # with those of the requests on the event loop.
        store = self.store.clone()
        prepared = False
        try:
            while not self._stop.is_set():
                self._wake.clear()  # before the round: a wake during it makes another round
                if not prepared:
                    try:
                        self.prepare(store)
                        prepared = True
                    except Exception:  # jobs still run; the next round tries again
                        log.exception("jobs: preparing the runner failed")
                try:
                    self.run_due(store)
                    self.prune(store)
                    wait = self.next_wait(store)
                except Exception:  # a busy or broken database must not end the thread for good
                    log.exception("jobs: a round of the runner failed")
                    wait = float(self.settings.poll_seconds)
                self._wake.wait(wait)
        finally:
            store.close()

    def prepare(self, store: Store) -> None:
        """What the runner does once before its first claim: the table's
        indexes, then each kind's `prepare`."""
        store.ensure_indexes(JOBS, INDEXES)
        for kind in self.kinds.values():
            if kind.prepare is not None:
                kind.prepare(store)

    # -- one round --------------------------------------------------------

    def run_due(self, store: Store) -> int:
        """Claim and run due jobs until none is left; answers how many ran."""
        ran = 0
        while not self._stop.is_set():
            job = self.claim(store)
            if job is None:
                break
            self.perform(job)
            ran += 1
        return ran

    def claim(self, store: Store) -> Job | None:
        """Take the next due job of a kind with a handler here, under a
        lease; None when none is due. A job whose lease ended (its runner
        stopped) is taken over, or failed when that was its last attempt."""
        kinds = list(self.kinds)
        if not kinds:
            return None
        jobs = _collection(store)
        given_up: list[Job] = []
        claimed: Job | None = None
        with store.transaction():
            now = self.clock()
            while True:
                doc = (_first(jobs, {"state": PENDING, "kind": {"$in": kinds}, "run_at": {"$lte": now}}, "run_at")
                       or _first(jobs, {"state": RUNNING, "kind": {"$in": kinds}, "lease_until": {"$lte": now}},
                                 "lease_until"))
                if doc is None:
                    break
                kind = self.kinds[doc["kind"]]
                if doc["state"] == RUNNING:
                    note = f"lease ended: runner {doc['holder']} stopped during attempt {doc['attempts']}"
                    if doc["attempts"] >= kind.max_attempts:
                        doc.update(state=FAILED, lease_until=0.0, lease=None, last_error=note, finished=now,
                                   updated=now)
                        jobs.replace(doc)
                        given_up.append(_job(doc, store, ""))
                        log.error("jobs: %s %s failed: %s, its last attempt", doc["kind"], doc["_id"], note)
                        continue
                    doc["last_error"] = note
                    log.warning("jobs: taking over %s %s (%s)", doc["kind"], doc["_id"], note)
                doc.update(state=RUNNING, attempts=doc["attempts"] + 1, lease_until=now + kind.lease_seconds,
                           holder=self.holder, lease=new_id(), updated=now)
                jobs.replace(doc)
                claimed = _job(doc, store, doc["lease"])
                break
        for job in given_up:
            self._finished(job, FAILED)
        return claimed

    def perform(self, job: Job) -> str:
        """Run a claimed job's handler and record the outcome; answers the
        state recorded (`done`, `pending` for a retry, `failed`), or `lost`
        when the lease was taken over meanwhile and nothing was recorded."""
        try:
            self.kinds[job.kind].run(job)
        except GiveUp as exc:
            return self.fail(job, exc, retry=False)
        except Exception as exc:
            return self.fail(job, exc)
        return self.finish(job)

    def finish(self, job: Job) -> str:
        """Record `job` done, if this claim still holds it."""
        with job.store.transaction():
            jobs = _collection(job.store)
            doc = jobs.get(job.id)
            if not _held(doc, job):
                log.warning("jobs: %s %s ran, but its lease was taken over: not recorded", job.kind, job.id)
                return LOST
            assert doc is not None
            now = self.clock()
            doc.update(state=DONE, lease_until=0.0, lease=None, finished=now, updated=now)
            jobs.replace(doc)
        self._finished(job, DONE)
        return DONE

    def fail(self, job: Job, exc: BaseException, retry: bool = True) -> str:
        """Record a failed attempt, if this claim still holds the job: a
        retry after a doubling delay while attempts are left, else failed."""
        kind = self.kinds[job.kind]
        error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR]
        with job.store.transaction():
            jobs = _collection(job.store)
            doc = jobs.get(job.id)
            if not _held(doc, job):
                log.warning("jobs: %s %s failed (%s), but its lease was taken over", job.kind, job.id, error)
                return LOST
            assert doc is not None
            now = self.clock()
            attempts = doc["attempts"]
            if retry and attempts < kind.max_attempts:
                delay = kind.retry_seconds * 2 ** (attempts - 1)
                doc.update(state=PENDING, run_at=now + delay, lease_until=0.0, lease=None, last_error=error,
                           updated=now)
                log.warning("jobs: %s %s failed (attempt %d), retrying in %gs: %s",
                            job.kind, job.id, attempts, delay, error)
            else:
                doc.update(state=FAILED, lease_until=0.0, lease=None, last_error=error, finished=now, updated=now)
                log.error("jobs: %s %s failed after %d attempt(s): %s", job.kind, job.id, attempts, error)
            jobs.replace(doc)
            state = str(doc["state"])
        if state == FAILED:
            self._finished(job, FAILED)
        return state

    def _finished(self, job: Job, state: str) -> None:
        callback = self.kinds[job.kind].finished
        if callback is None:
            return
        try:
            callback(job, state)
        except Exception:  # the outcome is recorded; what follows it must not undo the round
            log.exception("jobs: the finish of %s %s failed", job.kind, job.id)

    def next_wait(self, store: Store) -> float:
        """Seconds until the next job of a kind handled here is due (a
        pending one's `run_at`, a running one's lease end), at most the
        poll interval: jobs other processes enqueue are found by polling."""
        poll = float(self.settings.poll_seconds)
        kinds = list(self.kinds)
        jobs = _collection(store)
        times = []
        for state, name in ((PENDING, "run_at"), (RUNNING, "lease_until")):
            first = jobs.pick([name], {"state": state, "kind": {"$in": kinds}}, [((name,), 1)], limit=1)
            if first:
                times.append(float(first[0][name]))
        if not times:
            return poll
        return min(poll, max(MIN_WAIT, min(times) - self.clock()))

    def prune(self, store: Store, force: bool = False) -> int:
        """Delete jobs done more than `keep_done_seconds` ago and failed
        more than `keep_failed_seconds` ago (every `PRUNE_EVERY` seconds
        unless forced); answers how many went."""
        now = self.clock()
        if not force and now - self._pruned < PRUNE_EVERY:
            return 0
        self._pruned = now
        jobs = _collection(store)
        with store.transaction():
            gone = jobs.delete_many({"state": DONE, "finished": {"$lte": now - self.settings.keep_done_seconds}})
            gone += jobs.delete_many({"state": FAILED,
                                      "finished": {"$lte": now - self.settings.keep_failed_seconds}})
        return gone


def _check_kind(kind: str) -> None:
    if not isinstance(kind, str) or not KIND_NAME.fullmatch(kind):
        raise ValueError(f"a job kind is a name like \"email\" or \"webhook.delivery\", not {kind!r}")


def _collection(store: Store) -> Collection:
    return store.collection(JOBS, HINTS)


def _first(jobs: Collection, node: dict[str, Any], order: str) -> dict[str, Any] | None:
    found = jobs.find(node, [((order,), 1)], limit=1)
    return found[0] if found else None


def _job(doc: dict[str, Any], store: Store, lease: str) -> Job:
    return Job(doc["_id"], doc["kind"], doc["payload"], doc.get("key"), doc["attempts"], lease, store)


def _held(doc: dict[str, Any] | None, job: Job) -> bool:
    """Whether `job`'s claim still holds the stored job: the outcome is
    recorded only then (a claim taken over records nothing)."""
    return doc is not None and doc["state"] == RUNNING and doc.get("lease") == job.lease


DAY = 86_400


def drop_older(store: Store, name: str, hints: Any, days: int, now: float) -> int:
    """Delete the documents of collection `name` whose `at` (Unix seconds)
    is more than `days` days before `now`; none when `days` is 0."""
    if not days:
        return 0
    with store.transaction():
        return store.collection(name, hints).delete_many({"at": {"$lt": now - days * DAY}})


class Daily:
    """Work a module does once a day per cluster (dropping what it keeps
    too long): a job of `kind` keyed by the day, so however many
    instances enqueue a day's job there is one; `schedule` (at start)
    enqueues today's, and each run enqueues the next day's.

    `work(store)` runs in the runner's thread with its store object and
    answers how many documents it dropped (logged as `what`). `clock` is
    read at each call, so a module's own clock (tests move it) is the
    one counted."""

    def __init__(self, jobs: Jobs, kind: str, work: Callable[[Store], int], what: str,
                 clock: Callable[[], float] = time.time) -> None:
        self.jobs = jobs
        self.kind = kind
        self.work = work
        self.what = what
        self.clock = clock
        jobs.handle(kind, self.run, max_attempts=3, retry_seconds=600, lease_seconds=3600)

    def schedule(self) -> None:
        day = int(self.clock() // DAY)
        with self.jobs.store.transaction():
            self.jobs.enqueue(self.kind, {"day": day}, key=str(day))
        self.jobs.wake()

    def run(self, job: Job) -> None:
        dropped = self.work(job.store)
        if dropped:
            log.info("%s: dropped %d %s", self.kind, dropped, self.what)
        day = int(job.payload.get("day", 0)) + 1
        with job.store.transaction():
            self.jobs.enqueue(self.kind, {"day": day}, key=str(day), run_at=float(day * DAY), store=job.store)

