"""Background work that runs once per cluster: the jobs table.

A job is a document of the collection `system/jobs`: a kind (the name a
module registered a handler under), a JSON payload, a state and the times
that drive it. A module enqueues a job inside the transaction of the change
that made it, so the job commits with that change or not at all, and
registers a handler for its kind, in a lane. Each lane of a process has
its runner threads (one, or the lane's `concurrency`), each with a store
object of its own, claiming due jobs of the lane's kinds only, with a
lease, and running them: a slow webhook receiver holds webhook threads,
never a scheduled publish or an e-mail.

Once per cluster: a claim reads and writes inside one write transaction,
and the store serialises write transactions across every process on the
database (SQLite's write lock; on PostgreSQL the store's lock), so two
runners never hold the same job at once. At least once: a runner killed
mid-job leaves the job `running` under a lease that ends; a runner then
claims it again. A handler must bear running twice for the same job (the
e-mail handler sends the same Message-ID again, so receivers can tell).
A kind's lease must outlast its longest attempt, recording included
(`handle(attempt_seconds=...)` checks it), so a live runner is never taken
over.

    pending ──claim──▶ running ──handler returns──▶ done      (pruned later)
       ▲                  │ ──handler raised, attempts left──▶ pending (run_at moved)
       │                  │ ──no attempt left, or GiveUp──▶ failed    (pruned later)
       └──lease ended─────┘  (claimed again as it is: its runner is gone)

See docs/architecture.md, "Jobs table".
"""

from __future__ import annotations

import inspect
import logging
import os
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from quire import tracing
from quire.config import JobsSettings
from quire.errors import StoreBusy, StoreUnavailable
from quire.ids import new_id
from quire.loops import close_here, run_here
from quire.outages import Outage
from quire.store import Collection, Store

log = logging.getLogger("quire.jobs")

JOBS = "system/jobs"
TRACE_KEY = "_trace"  # in a payload: the trace that queued the job (quire.tracing)
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
# Seconds a runner waits for the write lock to record an outcome; a busy
# store past it leaves the job to its lease (retried, never stuck).
OUTCOME_WAIT = 5.0
LEASE_MARGIN = 5.0  # seconds a lease exceeds a kind's longest attempt and its recording
# A runner that claimed several jobs at once (a kind's `batch`) starts no
# new one of them after this many seconds: what it did is recorded, the
# rest given back, so a slow job never holds the others for long.
BATCH_SECONDS = 0.25
DEFAULT_LANE = "default"
# The lanes of Quire's own kinds: work of one lane never waits for another's.
PUBLISHING, EMAIL_LANE, WEBHOOKS_LANE, MAINTENANCE = "publishing", "email", "webhooks", "maintenance"


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
    # writes of the handler's own that belong with the outcome (a delivery's
    # log entry): run inside the transaction that records it, only while
    # this claim still holds the job (`with_outcome`)
    outcome_writes: list[Callable[[Store], None]] = field(default_factory=list, compare=False)

    def with_outcome(self, write: Callable[[Store], None]) -> None:
        """Run `write(store)` in the transaction that records this attempt's
        outcome (done, retry or failed), and only if this claim still holds
        the job then: one transaction instead of two, and nothing written
        by an attempt whose lease was taken over."""
        self.outcome_writes.append(write)


@dataclass(frozen=True)
class Kind:
    """What a module registered for one kind of job (see `Jobs.handle`)."""

    run: Callable[[Job], Awaitable[None] | None]
    max_attempts: int
    retry_seconds: float
    lease_seconds: float
    finished: Callable[[Job, str], None] | None
    prepare: Callable[[Store], object] | None
    lane: str
    batch: int = 1


@dataclass
class Lane:
    """The runner threads of one process that claim the jobs of `kinds`:
    `concurrency` of them. A wake calls one idle thread, not all: every
    thread that woke looked for due jobs (and most then found the one job
    taken), so a save with a webhook cost four looks per worker. A thread
    that claims a job while another is due calls the next (`call`), so
    a queue of many still gets every thread."""

    name: str
    concurrency: int = 1
    kinds: list[str] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    ready: threading.Condition = field(default_factory=threading.Condition)
    calls: int = 0  # wakes no thread has answered yet (at most `concurrency`)

    def call(self) -> None:
        """Let one thread make a round now (the next idle one, or the next
        to finish its round)."""
        with self.ready:
            self.calls = min(self.calls + 1, self.concurrency)
            self.ready.notify()

    def rest(self, seconds: float) -> None:
        """Wait for a call, at most `seconds`; a call made during the
        thread's last round is answered at once."""
        with self.ready:
            if not self.calls:
                self.ready.wait(seconds)
            if self.calls:
                self.calls -= 1

    def stop(self) -> None:
        with self.ready:
            self.ready.notify_all()


def lease_for(attempt_seconds: float) -> float:
    """The lease of a kind whose attempt takes at most `attempt_seconds`:
    room to record the outcome (`OUTCOME_WAIT`) and a margin besides."""
    return attempt_seconds + OUTCOME_WAIT + LEASE_MARGIN


class Jobs:
    """The jobs table of one process: `handle` registers a kind in a lane,
    `enqueue` adds a job in the open transaction, `wake` tells the lanes
    of some kinds (or all) to look now.

    The runner threads start with the server (`start`) or at the first
    `wake`, and only when some kind has a handler; `close` stops them."""

    def __init__(self, store: Store, settings: JobsSettings, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.settings = settings
        # Wall-clock seconds: run_at and leases are compared across hosts,
        # so the hosts' clocks must agree (NTP); a skew lengthens or
        # shortens leases by as much.
        self.clock = clock
        self.kinds: dict[str, Kind] = {}
        self.lanes: dict[str, Lane] = {}
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{new_id()[-6:]}"
        self._stop = threading.Event()
        self._started = False
        self._lock = threading.Lock()
        self._prepare_lock = threading.Lock()
        self._prepared = False
        self._prepare_failed = float("-inf")  # time.monotonic() of the last failed `prepare`
        self._closed = False
        self._close_by = 0.0  # time.monotonic() by which `close` stops waiting, however often called
        self._pruned = float("-inf")
        self.outage = Outage(log, "jobs")  # the store not answering the runners: one line, whichever lane

    # -- registering and enqueueing ---------------------------------------

    def handle(self, kind: str, run: Callable[[Job], Awaitable[None] | None], *, max_attempts: int = 5,
               retry_seconds: float = 30, lease_seconds: float | None = None,
               attempt_seconds: float | None = None, lane: str = DEFAULT_LANE,
               finished: Callable[[Job, str], None] | None = None,
               prepare: Callable[[Store], object] | None = None, batch: int = 1) -> None:
        """Run jobs of `kind` with `run(job)` in the runner threads of `lane`.
        `run` may be a coroutine function: it runs on the runner thread's
        own event loop, kept for the thread's life (`loops.run_here`), as a
        service's write runs from a request.

        `run` returning is success; raising retries after `retry_seconds`,
        doubling each time, until `max_attempts` attempts were made (then
        the job is `failed`); `GiveUp` fails it at once. `lease_seconds`
        must exceed the longest run: after it another runner may take the
        job over. A kind that knows how long an attempt can take at most
        gives `attempt_seconds`: the lease is then `lease_for(it)`, and a
        `lease_seconds` shorter than that is refused. `finished(job,
        state)` runs after "done" or "failed" was recorded by this runner
        (to drop what the job kept alive). `prepare(store)` runs once, in
        a runner thread, before the first claim of any lane (to move work
        kept elsewhere onto the table). `batch`: a runner claims up to this
        many due jobs of the kind in one transaction and records their
        outcomes in one (write transactions per job divided by as many,
        for kinds enqueued once per write, like webhook deliveries); it
        starts none of them after `BATCH_SECONDS` and gives the rest back."""
        _check_kind(kind)
        _check_lane(lane)
        if kind in self.kinds:
            raise ValueError(f"jobs of kind {kind!r} already have a handler")
        if attempt_seconds is not None:
            if attempt_seconds <= 0:
                raise ValueError("attempt_seconds must be positive")
            if lease_seconds is None:
                lease_seconds = lease_for(attempt_seconds)
            elif lease_seconds < lease_for(attempt_seconds):
                raise ValueError(f"the lease of {kind!r} ({lease_seconds:g} s) must outlast its longest attempt "
                                 f"and recording it: at least {lease_for(attempt_seconds):g} s")
        lease = 300.0 if lease_seconds is None else float(lease_seconds)
        if max_attempts < 1 or retry_seconds <= 0 or lease <= 0 or batch < 1:
            raise ValueError("max_attempts, retry_seconds, lease_seconds and batch must be positive")
        with self._lock:
            if self._started:
                raise RuntimeError("register job handlers before the runner starts (in a module's build)")
            self.kinds[kind] = Kind(run, max_attempts, float(retry_seconds), lease, finished, prepare, lane, batch)
            self.lanes.setdefault(lane, Lane(lane)).kinds.append(kind)

    def lane(self, name: str, concurrency: int) -> None:
        """Let `concurrency` runner threads of this process work lane
        `name` at once (1 unless set here), before the runner starts."""
        _check_lane(name)
        if concurrency < 1:
            raise ValueError("a lane's concurrency is at least 1")
        with self._lock:
            if self._started:
                raise RuntimeError("set up lanes before the runner starts (in a module's build)")
            self.lanes.setdefault(name, Lane(name)).concurrency = concurrency

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
        queued_by = tracing.carrier()  # traces on: the job's span links back to this one
        if queued_by:
            payload = {**payload, TRACE_KEY: queued_by}
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
        """Start this process's runner threads (when some kind has a handler)."""
        self._ensure_runner()

    def wake(self, *kinds: str) -> None:
        """Look for due jobs now: after a commit that enqueued one. Wakes
        the lanes of `kinds` (those handled here), or every lane."""
        if not self._ensure_runner():
            return
        names = {self.kinds[k].lane for k in kinds if k in self.kinds} if kinds else set(self.lanes)
        for name in names:
            self.lanes[name].call()

    def close(self, timeout: float = 3.0) -> None:
        """Stop the runner threads: a job running now finishes (or its
        lease ends); waits up to `timeout` seconds for them in all. A
        second call (the webhooks module closes the runner it shares before
        its client) waits no longer than the first: a server stopping must
        be done before its workers are killed (cli.STOP_SECONDS)."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._close_by = time.monotonic() + timeout
            deadline = self._close_by
            threads = [t for lane in self.lanes.values() for t in lane.threads]
        self._stop.set()
        for lane in self.lanes.values():
            lane.stop()
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(max(0.0, deadline - time.monotonic()))

    def _ensure_runner(self) -> bool:
        if not self.kinds:
            return False
        with self._lock:
            if self._closed:
                return False
            self._started = True
            for lane in self.lanes.values():
                if not lane.kinds:
                    continue
                lane.threads = [t for t in lane.threads if t.is_alive()]
                while len(lane.threads) < lane.concurrency:
                    thread = threading.Thread(target=self._run, args=(lane,), daemon=True,
                                              name=f"quire-jobs-{lane.name}-{len(lane.threads) + 1}")
                    lane.threads.append(thread)
                    thread.start()
        return True

    def _run(self, lane: Lane) -> None:
        # A store object of the thread's own: its transactions never mix
        # with those of the requests on the event loop, nor with another
        # runner thread's. It reads no cache, so it needs no listener for
        # other processes' commits (on PostgreSQL: a connection saved).
        store = self.store.clone(listen=False)
        poll = float(self.settings.poll_seconds)
        try:
            while not self._stop.is_set():
                try:
                    self._prepare_once(store)
                    self.run_due(store, lane.kinds)
                    self.prune(store)
                    wait = self.next_wait(store, lane.kinds)
                    self.outage.succeeded()
                except (StoreUnavailable, StoreBusy) as exc:  # an outage: one line, not a traceback a round
                    self.outage.failed(exc)
                    wait = poll
                except Exception:  # a broken round must not end the thread for good
                    log.exception("jobs: a round of the %s lane failed", lane.name)
                    wait = poll
                if not self._stop.is_set():
                    lane.rest(wait)
        finally:
            store.close()
            close_here()

    def _prepare_once(self, store: Store) -> None:
        """`prepare` before the first claim of any lane; a failure is
        logged and tried again a poll interval later, by whichever thread
        comes then (jobs still run meanwhile)."""
        with self._prepare_lock:
            if self._prepared or time.monotonic() - self._prepare_failed < self.settings.poll_seconds:
                return
            try:
                self.prepare(store)
            except (StoreUnavailable, StoreBusy):
                raise
            except Exception:
                self._prepare_failed = time.monotonic()
                log.exception("jobs: preparing the runner failed")
                return
            self._prepared = True

    def prepare(self, store: Store) -> None:
        """What the runner does once before its first claim: the table's
        indexes, then each kind's `prepare`."""
        store.ensure_indexes(JOBS, INDEXES)
        for kind in self.kinds.values():
            if kind.prepare is not None:
                kind.prepare(store)

    # -- one round --------------------------------------------------------

    def run_due(self, store: Store, kinds: Iterable[str] | None = None) -> int:
        """Claim and run due jobs (of `kinds`, default all handled here)
        until none is left; answers how many ran."""
        kinds = list(self.kinds if kinds is None else kinds)
        ran = 0
        batch = self._claim(store, kinds)
        while batch and not self._stop.is_set():
            outcomes, unstarted = self._run_batch(batch)
            ran += len(outcomes)
            # the next jobs are claimed in the transaction that records
            # these ones' outcomes: one write transaction a batch, not two
            batch = self._record(batch[0].store, outcomes, unstarted, kinds)[1]
            if not batch:  # none was due then (or the outcomes were lost): look once more
                batch = self._claim(store, kinds)
        return ran

    def claim(self, store: Store, kinds: Iterable[str] | None = None) -> Job | None:
        """Take the next due job of `kinds` (default: every kind with a
        handler here), under a lease; None when none is due. A job whose
        lease ended (its runner stopped) is taken over, or failed when that
        was its last attempt."""
        claimed = self._claim(store, kinds, one=True)
        return claimed[0] if claimed else None

    def _claim(self, store: Store, kinds: Iterable[str] | None = None, one: bool = False) -> list[Job]:
        """`claim`, of up to the first due kind's `batch` jobs (one: 1)."""
        kinds = [k for k in (self.kinds if kinds is None else kinds) if k in self.kinds]
        if not kinds:
            return []
        jobs = _collection(store)
        if not self._any_due(jobs, kinds):
            # Looked at without the write lock: every lane thread a wake
            # rouses looks, and an empty claim in a write transaction each
            # time held the lock the API's writes wait for.
            return []
        with store.transaction():
            claimed, given_up = self._claim_locked(store, kinds, one)
        for job in given_up:
            self._finished(job, FAILED)
        return claimed

    def _claim_locked(self, store: Store, kinds: list[str], one: bool = False) -> tuple[list[Job], list[Job]]:
        """The claim itself, inside the caller's write transaction: the jobs
        claimed (one, or up to the kind's `batch` of one kind: none when
        none is due), and the jobs failed on the way (whose lease ended on
        their last attempt), for `_finished` after the commit."""
        jobs = _collection(store)
        given_up: list[Job] = []
        if self._stop.is_set():  # a job claimed now would wait for its lease to end
            return [], given_up
        now = self.clock()
        most = 1 if one else max(self.kinds[k].batch for k in kinds)
        while True:
            due = jobs.find({"state": PENDING, "kind": {"$in": kinds}, "run_at": {"$lte": now}}, [(("run_at",), 1)],
                            limit=most + 1)
            if due:
                kind_name = due[0]["kind"]
                size = 1 if one else self.kinds[kind_name].batch
                taken = [d for d in due if d["kind"] == kind_name][:size]
                if len(due) > len(taken):
                    # another is due: the lane's next thread takes it meanwhile
                    self.lanes[self.kinds[kind_name].lane].call()
                # Run one after the other: the last may start BATCH_SECONDS
                # plus one whole attempt after the claim, and its outcome
                # is recorded with the first's.
                lease = self.kinds[kind_name].lease_seconds
                lease_until = now + (lease if len(taken) == 1 else 2 * lease + BATCH_SECONDS)
                claimed = []
                for entry in taken:
                    entry.update(state=RUNNING, attempts=entry["attempts"] + 1, lease_until=lease_until,
                                 holder=self.holder, lease=new_id(), updated=now)
                    jobs.replace(entry)
                    claimed.append(_job(entry, store, entry["lease"]))
                return claimed, given_up
            found = _first(jobs, {"state": RUNNING, "kind": {"$in": kinds}, "lease_until": {"$lte": now}},
                           "lease_until")
            if found is None:
                return [], given_up
            doc = found
            kind = self.kinds[doc["kind"]]
            note = f"lease ended: runner {doc['holder']} stopped during attempt {doc['attempts']}"
            if doc["attempts"] >= kind.max_attempts:
                doc.update(state=FAILED, lease_until=0.0, lease=None, last_error=note, finished=now,
                           updated=now)
                jobs.replace(doc)
                given_up.append(_job(doc, store, ""))
                log.error("jobs: %s %s failed: %s, its last attempt", doc["kind"], doc["_id"], note)
                continue
            log.warning("jobs: taking over %s %s (%s)", doc["kind"], doc["_id"], note)
            doc.update(state=RUNNING, attempts=doc["attempts"] + 1, lease_until=now + kind.lease_seconds,
                       holder=self.holder, lease=new_id(), updated=now, last_error=note)
            jobs.replace(doc)
            return [_job(doc, store, doc["lease"])], given_up

    def _any_due(self, jobs: Collection, kinds: list[str]) -> bool:
        """Whether a job of `kinds` may be due now (read outside any
        transaction; the claim checks again under the write lock)."""
        now = self.clock()
        return bool(jobs.pick(["_id"], {"state": PENDING, "kind": {"$in": kinds}, "run_at": {"$lte": now}},
                              limit=1)
                    or jobs.pick(["_id"], {"state": RUNNING, "kind": {"$in": kinds}, "lease_until": {"$lte": now}},
                                 limit=1))

    def _run_batch(self, batch: list[Job]) -> tuple[list[Ran], list[Job]]:
        """Run claimed jobs one after the other: what each did, and the
        jobs not started (after `BATCH_SECONDS`, or when stopping)."""
        started = time.monotonic()
        outcomes: list[Ran] = []
        for n, job in enumerate(batch):
            if n and (time.monotonic() - started > BATCH_SECONDS or self._stop.is_set()):
                return outcomes, batch[n:]
            try:
                with tracing.job_span(job.kind, job.payload.get(TRACE_KEY)):
                    result = self.kinds[job.kind].run(job)
                    if inspect.iscoroutine(result):  # a coroutine handler: on this thread's own loop
                        run_here(result)
            except GiveUp as exc:
                outcomes.append(Ran(job, exc, retry=False))
            except Exception as exc:
                outcomes.append(Ran(job, exc, retry=True))
            else:
                outcomes.append(Ran(job))
        return outcomes, []

    def perform(self, job: Job) -> str:
        """Run a claimed job's handler and record the outcome; answers the
        state recorded (`done`, `pending` for a retry, `failed`), or `lost`
        when the lease was taken over meanwhile and nothing was recorded."""
        outcomes, _ = self._run_batch([job])
        return self._record(job.store, outcomes, [])[0][0]

    def finish(self, job: Job) -> str:
        """Record `job` done, if this claim still holds it."""
        return self._record(job.store, [Ran(job)], [])[0][0]

    def fail(self, job: Job, exc: BaseException, retry: bool = True) -> str:
        """Record a failed attempt, if this claim still holds the job: a
        retry after a doubling delay while attempts are left, else failed."""
        return self._record(job.store, [Ran(job, exc, retry)], [])[0][0]

    def _record(self, store: Store, outcomes: list[Ran], unstarted: list[Job],
                then: list[str] | None = None) -> tuple[list[str], list[Job]]:
        """Record what the jobs of one claim did, in one transaction: each
        outcome (done, a retry after a doubling delay while attempts are
        left, failed) with the handler's `with_outcome` writes, if this
        claim still holds the job; the jobs not started given back as
        they were. With `then`, the next due jobs of those kinds are
        claimed in the same transaction. Answers each outcome's state
        (`lost` when its lease was taken over: nothing recorded) and the
        jobs claimed."""
        states: list[str] = []
        given_up: list[Job] = []
        claimed: list[Job] = []
        with store.transaction(timeout=OUTCOME_WAIT):
            jobs = _collection(store)
            now = self.clock()
            for ran in outcomes:
                states.append(self._record_one(store, jobs, ran, now))
            for job in unstarted:
                doc = jobs.get(job.id)
                if _held(doc, job):
                    assert doc is not None
                    doc.update(state=PENDING, attempts=doc["attempts"] - 1, lease_until=0.0, lease=None,
                               holder=None, updated=now)
                    jobs.replace(doc)
            if then:
                claimed, given_up = self._claim_locked(store, then)
        for ran, state in zip(outcomes, states, strict=True):
            if state in (DONE, FAILED):
                self._finished(ran.job, state)
        for other in given_up:
            self._finished(other, FAILED)
        return states, claimed

    def _record_one(self, store: Store, jobs: Collection, ran: Ran, now: float) -> str:
        job = ran.job
        doc = jobs.get(job.id)
        if not _held(doc, job):
            what = "ran" if ran.error is None else f"failed ({_error(ran.error)})"
            log.warning("jobs: %s %s %s, but its lease was taken over: not recorded", job.kind, job.id, what)
            return LOST
        assert doc is not None
        if ran.error is None:
            doc.update(state=DONE, lease_until=0.0, lease=None, finished=now, updated=now)
        else:
            error = _error(ran.error)
            attempts = doc["attempts"]
            kind = self.kinds[job.kind]
            if ran.retry and attempts < kind.max_attempts:
                delay = kind.retry_seconds * 2 ** (attempts - 1)
                doc.update(state=PENDING, run_at=now + delay, lease_until=0.0, lease=None, last_error=error,
                           updated=now)
                log.warning("jobs: %s %s failed (attempt %d), retrying in %gs: %s",
                            job.kind, job.id, attempts, delay, error)
            else:
                doc.update(state=FAILED, lease_until=0.0, lease=None, last_error=error, finished=now, updated=now)
                log.error("jobs: %s %s failed after %d attempt(s): %s", job.kind, job.id, attempts, error)
        jobs.replace(doc)
        for write in job.outcome_writes:
            write(store)
        return str(doc["state"])

    def _finished(self, job: Job, state: str) -> None:
        callback = self.kinds[job.kind].finished
        if callback is None:
            return
        try:
            callback(job, state)
        except Exception:  # the outcome is recorded; what follows it must not undo the round
            log.exception("jobs: the finish of %s %s failed", job.kind, job.id)

    def next_wait(self, store: Store, kinds: Iterable[str] | None = None) -> float:
        """Seconds until the next job of `kinds` (default: every kind
        handled here) is due (a pending one's `run_at`, a running one's
        lease end), at most the poll interval: jobs other processes
        enqueue are found by polling."""
        poll = float(self.settings.poll_seconds)
        kinds = list(self.kinds if kinds is None else kinds)
        jobs = _collection(store)
        times = []
        for state, name in ((PENDING, "run_at"), (RUNNING, "lease_until")):
            first = jobs.pick([name], {"state": state, "kind": {"$in": kinds}}, [((name,), 1)], limit=1)
            if first:
                times.append(float(first[0][name]))
        if not times:
            return poll
        return min(poll, max(MIN_WAIT, min(times) - self.clock()))

    def counts(self) -> dict[tuple[str, str], int]:
        """Jobs waiting, running and failed, by kind (for /metrics)."""
        jobs = self.store.collection(JOBS, HINTS)
        stored = jobs.exists()
        return {(kind, state): jobs.count({"kind": kind, "state": state}) if stored else 0
                for kind in sorted(self.kinds) for state in (PENDING, RUNNING, FAILED)}

    def prune(self, store: Store, force: bool = False) -> int:
        """Delete jobs done more than `keep_done_seconds` ago and failed
        more than `keep_failed_seconds` ago (every `PRUNE_EVERY` seconds
        unless forced); answers how many went."""
        now = self.clock()
        with self._lock:  # one of the runner threads prunes
            if not force and now - self._pruned < PRUNE_EVERY:
                return 0
            self._pruned = now
        jobs = _collection(store)
        with store.transaction():
            gone = jobs.delete_many({"state": DONE, "finished": {"$lte": now - self.settings.keep_done_seconds}})
            gone += jobs.delete_many({"state": FAILED,
                                      "finished": {"$lte": now - self.settings.keep_failed_seconds}})
        return gone


@dataclass(frozen=True)
class Ran:
    """What running a claimed job came to: no error (done), or the error
    raised and whether another attempt may follow."""

    job: Job
    error: BaseException | None = None
    retry: bool = True


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_ERROR]


def _check_kind(kind: str) -> None:
    if not isinstance(kind, str) or not KIND_NAME.fullmatch(kind):
        raise ValueError(f"a job kind is a name like \"email\" or \"webhook.delivery\", not {kind!r}")


def _check_lane(lane: str) -> None:
    if not isinstance(lane, str) or not KIND_NAME.fullmatch(lane):
        raise ValueError(f"a lane is a name like \"webhooks\", not {lane!r}")


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
    instances enqueue a day's job there is one; `schedule` enqueues
    today's, once per process when its runner starts (the kind's
    `prepare`, in a runner thread: at a server's start, on its event loop,
    a write lock held elsewhere for 50 ms failed the start), and each run
    enqueues the next day's.

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
        jobs.handle(kind, self.run, max_attempts=3, retry_seconds=600, lease_seconds=3600, lane=MAINTENANCE,
                    prepare=self.schedule)

    def schedule(self, store: Store | None = None) -> None:
        """Enqueue today's job (none if it is there), with `store` (the
        runner thread's) or the jobs table's own."""
        store = store or self.jobs.store
        day = int(self.clock() // DAY)
        with store.transaction():
            self.jobs.enqueue(self.kind, {"day": day}, key=str(day), store=store)
        self.jobs.wake(self.kind)

    def run(self, job: Job) -> None:
        dropped = self.work(job.store)
        if dropped:
            log.info("%s: dropped %d %s", self.kind, dropped, self.what)
        day = int(job.payload.get("day", 0)) + 1
        with job.store.transaction():
            self.jobs.enqueue(self.kind, {"day": day}, key=str(day), run_at=float(day * DAY), store=job.store)

