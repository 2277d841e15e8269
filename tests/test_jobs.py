"""The jobs table (quire.jobs): enqueue in a transaction, claims under a
lease, take-over when a lease ends, retries with a doubling delay, max
attempts, unique keys, outcomes recorded only by the claim holding the job,
pruning; and runner threads on separate store objects over one database
running each job once.

Most tests drive the runner's steps by hand (`claim`, `execute`) with a
clock they move, so nothing depends on how fast the machine is; "two
runners" are two `Jobs` on two store objects over one SQLite file, which
take the database's write lock against each other as two processes do."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import JobsSettings, load_settings
from quire.errors import StoreUnavailable
from quire.jobs import (
    DONE,
    FAILED,
    JOBS,
    LEASE_MARGIN,
    LOST,
    OUTCOME_WAIT,
    PENDING,
    RUNNING,
    GiveUp,
    Job,
    Jobs,
    lease_for,
)
from quire.loops import run_here
from quire.store import PostgresStore, SqliteStore, Store
from tests.client import TestClient
from tests.conftest import Api
from tests.inbox.conftest import make_form, submit

T0 = 1_700_000_000.0


class Clock:
    """A wall clock the test moves."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "quire.db"


@pytest.fixture(params=["sqlite", "postgresql"])
def stores(request: pytest.FixtureRequest, db: Path) -> Iterator[list[Store]]:
    """Two store objects on one database, as two processes (or instances) have."""
    opened: list[Store]
    if request.param == "postgresql":
        url = request.getfixturevalue("pg_url")
        opened = [PostgresStore(url), PostgresStore(url)]
    else:
        opened = [SqliteStore(db), SqliteStore(db)]
    yield opened
    for store in opened:
        store.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


def settings(**kw: Any) -> JobsSettings:
    return JobsSettings(**{"poll_seconds": 10, **kw})


class Recorder:
    """A handler: notes each run; raises what `fail` holds for it."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, int]] = []
        self.fail: BaseException | None = None
        self.lock = threading.Lock()

    def __call__(self, job: Job) -> None:
        with self.lock:
            self.runs.append((job.payload["n"], job.attempts))
        if self.fail is not None:
            raise self.fail


def runner(store: SqliteStore, clock: Clock, handler: Recorder | None = None, **kw: Any) -> Jobs:
    jobs = Jobs(store, settings(**kw.pop("settings", {})), clock=clock)
    jobs.handle("test", handler or Recorder(), **{"max_attempts": 3, "retry_seconds": 30, "lease_seconds": 60, **kw})
    return jobs


def stored(store: SqliteStore, job_id: str) -> dict[str, Any]:
    store.refresh()
    doc = store.collection(JOBS).get(job_id)
    assert doc is not None
    return doc


def enqueue(jobs: Jobs, n: str, **kw: Any) -> dict[str, Any]:
    with jobs.store.transaction():
        return jobs.enqueue("test", {"n": n}, **kw)


def test_a_job_commits_with_the_transaction_that_enqueued_it(stores: list[Store], clock: Clock) -> None:
    jobs = runner(stores[0], clock)
    with pytest.raises(RuntimeError), stores[0].transaction():
        stores[0].collection("things").insert({"_id": "a"})
        jobs.enqueue("test", {"n": "rolled back"})
        raise RuntimeError("the change fails")
    assert stores[0].collection(JOBS).find() == []
    with stores[0].transaction():
        stores[0].collection("things").insert({"_id": "b"})
        doc = jobs.enqueue("test", {"n": "kept"})
    assert stored(stores[1], doc["_id"])["state"] == PENDING


def test_due_jobs_are_claimed_in_run_at_order_and_future_ones_wait(stores: list[Store], clock: Clock) -> None:
    jobs = runner(stores[0], clock)
    enqueue(jobs, "later", run_at=T0 + 100)
    enqueue(jobs, "second", run_at=T0 - 5)
    enqueue(jobs, "first", run_at=T0 - 10)
    claimed = [jobs.claim(stores[0]), jobs.claim(stores[0]), jobs.claim(stores[0])]
    assert [j.payload["n"] if j else None for j in claimed] == ["first", "second", None]
    assert jobs.next_wait(stores[0]) == 10  # the poll interval, before the later job's 100 s
    clock.advance(100)
    job = jobs.claim(stores[0])
    assert job is not None and job.payload["n"] == "later"


def test_a_claim_holds_the_job_against_other_runners_until_its_lease_ends(
        stores: list[Store], clock: Clock) -> None:
    first, second = runner(stores[0], clock), runner(stores[1], clock)
    doc = enqueue(first, "one")
    job = first.claim(stores[0])
    assert job is not None and job.attempts == 1
    held = stored(stores[1], doc["_id"])
    assert (held["state"], held["holder"], held["lease_until"]) == (RUNNING, first.holder, T0 + 60)
    assert second.claim(stores[1]) is None
    clock.advance(59)
    assert second.claim(stores[1]) is None
    assert second.next_wait(stores[1]) == pytest.approx(1)  # it looks again when the lease ends


def test_a_lease_that_ends_is_taken_over_and_only_the_new_holder_records_done(
        stores: list[Store], clock: Clock) -> None:
    handler = Recorder()
    first, second = runner(stores[0], clock, handler), runner(stores[1], clock, handler)
    doc = enqueue(first, "one")
    stale = first.claim(stores[0])  # then its runner stalls (or dies) past the lease
    assert stale is not None
    clock.advance(61)
    taken = second.claim(stores[1])
    assert taken is not None and taken.id == doc["_id"] and taken.attempts == 2
    after_take_over = stored(stores[0], doc["_id"])
    assert after_take_over["holder"] == second.holder
    assert "lease ended" in after_take_over["last_error"] and first.holder in after_take_over["last_error"]
    assert first.perform(stale) == LOST  # the old holder ran it, but records nothing
    assert stored(stores[0], doc["_id"]) == after_take_over
    assert second.perform(taken) == DONE
    assert first.finish(stale) == LOST  # not even after the new holder's "done"
    done = stored(stores[0], doc["_id"])
    assert (done["state"], done["attempts"], done["finished"], done["holder"]) == (DONE, 2, T0 + 61, second.holder)
    assert handler.runs == [("one", 1), ("one", 2)]  # at least once: both ran it


def test_a_holder_whose_lease_ended_unclaimed_still_records_its_outcome(
        stores: list[Store], clock: Clock) -> None:
    jobs = runner(stores[0], clock)
    doc = enqueue(jobs, "slow")
    job = jobs.claim(stores[0])
    assert job is not None
    clock.advance(120)  # no other runner claimed it meanwhile
    assert jobs.perform(job) == DONE
    assert stored(stores[0], doc["_id"])["state"] == DONE
    assert jobs.claim(stores[0]) is None


def test_a_failure_is_retried_after_a_doubling_delay_then_fails_for_good(
        stores: list[Store], clock: Clock) -> None:
    handler = Recorder()
    finished: list[tuple[str, str]] = []
    jobs = runner(stores[0], clock, handler, max_attempts=3,
                  finished=lambda job, state: finished.append((job.payload["n"], state)))
    doc = enqueue(jobs, "flaky")
    handler.fail = ConnectionRefusedError("nobody listens")
    delays = []
    for attempt in (1, 2):
        job = jobs.claim(stores[0])
        assert job is not None and job.attempts == attempt
        assert jobs.perform(job) == PENDING
        retry = stored(stores[0], doc["_id"])
        assert retry["last_error"] == "ConnectionRefusedError: nobody listens"
        assert (retry["state"], retry["lease"], retry["lease_until"]) == (PENDING, None, 0.0)
        delays.append(retry["run_at"] - clock.now)
        clock.advance(delays[-1] - 1)
        assert jobs.claim(stores[0]) is None  # not before its delay
        clock.advance(1)
    assert delays == [30, 60]
    job = jobs.claim(stores[0])
    assert job is not None and job.attempts == 3
    assert finished == []
    assert jobs.perform(job) == FAILED
    failed = stored(stores[0], doc["_id"])
    assert (failed["state"], failed["attempts"], failed["finished"]) == (FAILED, 3, clock.now)
    assert finished == [("flaky", FAILED)]
    clock.advance(10_000)
    assert jobs.claim(stores[0]) is None  # never again
    assert len(handler.runs) == 3


def test_give_up_fails_the_job_without_retrying(stores: list[Store], clock: Clock) -> None:
    handler = Recorder()
    handler.fail = GiveUp("the address is refused for good")
    jobs = runner(stores[0], clock, handler, max_attempts=5)
    doc = enqueue(jobs, "hopeless")
    job = jobs.claim(stores[0])
    assert job is not None and jobs.perform(job) == FAILED
    assert stored(stores[0], doc["_id"])["last_error"] == "GiveUp: the address is refused for good"


def test_a_lease_that_ends_on_the_last_attempt_fails_the_job(stores: list[Store], clock: Clock) -> None:
    """A job whose runs kill their runner (a poison job) is not run forever."""
    finished: list[str] = []
    first = runner(stores[0], clock, max_attempts=1)
    second = runner(stores[1], clock, max_attempts=1, finished=lambda job, state: finished.append(state))
    doc = enqueue(first, "poison")
    assert first.claim(stores[0]) is not None  # and its process dies
    clock.advance(61)
    assert second.claim(stores[1]) is None
    failed = stored(stores[1], doc["_id"])
    assert (failed["state"], failed["attempts"]) == (FAILED, 1) and "lease ended" in failed["last_error"]
    assert finished == [FAILED]


def test_a_key_makes_the_enqueue_idempotent(stores: list[Store], clock: Clock) -> None:
    jobs = runner(stores[0], clock)
    first = enqueue(jobs, "a", key="item-1:publish")
    again = enqueue(jobs, "b", key="item-1:publish")
    other = enqueue(jobs, "c", key="item-2:publish")
    assert first["_id"] == again["_id"] == "test:item-1:publish" and again["payload"] == {"n": "a"}
    assert other["_id"] != first["_id"]
    assert len(stores[1].collection(JOBS).find()) == 2
    job = jobs.claim(stores[0])
    assert job is not None and job.key == "item-1:publish"
    assert jobs.perform(job) == DONE
    assert enqueue(jobs, "d", key="item-1:publish")["state"] == DONE  # kept: still not enqueued again


def test_only_kinds_with_a_handler_here_are_claimed(stores: list[Store], clock: Clock) -> None:
    jobs = runner(stores[0], clock)
    with stores[0].transaction():
        jobs.enqueue("webhook", {"n": "for another module"})
    assert jobs.claim(stores[0]) is None
    assert jobs.next_wait(stores[0]) == 10


def test_finished_jobs_are_pruned_after_their_keep_time(stores: list[Store], clock: Clock) -> None:
    handler = Recorder()
    jobs = runner(stores[0], clock, handler, max_attempts=1,
                  settings={"keep_done_seconds": 100, "keep_failed_seconds": 1000})
    done = enqueue(jobs, "done")
    job = jobs.claim(stores[0])
    assert job is not None and jobs.perform(job) == DONE
    handler.fail = ValueError("bad")
    failed = enqueue(jobs, "failed")
    job = jobs.claim(stores[0])
    assert job is not None and jobs.perform(job) == FAILED
    waiting = enqueue(jobs, "waiting", run_at=T0 + 10_000)
    clock.advance(100)
    assert jobs.prune(stores[0], force=True) == 1
    ids = {doc["_id"] for doc in stores[0].collection(JOBS).find()}
    assert ids == {failed["_id"], waiting["_id"]} and done["_id"] not in ids
    clock.advance(700)
    assert jobs.prune(stores[0], force=True) == 0  # the failed job is kept 1000 s
    clock.advance(200)
    assert jobs.prune(stores[0]) == 0  # due now, but the last prune was 200 s ago
    clock.advance(100)
    assert jobs.prune(stores[0]) == 1  # PRUNE_EVERY (300 s) after it
    assert {doc["_id"] for doc in stores[0].collection(JOBS).find()} == {waiting["_id"]}


def test_bad_kinds_payloads_keys_and_late_handlers_are_refused(stores: list[Store], clock: Clock) -> None:
    jobs = runner(stores[0], clock)
    for kind in ("", "Email", "a:b", "x" * 65, "has space"):
        with pytest.raises(ValueError):
            jobs.handle(kind, Recorder())
    with pytest.raises(ValueError):
        jobs.handle("test", Recorder())
    with pytest.raises(TypeError):
        jobs.enqueue("test", ["not", "an", "object"])
    with pytest.raises(ValueError):
        jobs.enqueue("test", {}, key="")
    jobs.start()
    try:
        with pytest.raises(RuntimeError):
            jobs.handle("late", Recorder())
    finally:
        jobs.close()


def wait_for(check: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while not (result := check()):
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)
    return result


def test_two_runner_threads_on_one_database_run_each_job_once(stores: list[Store]) -> None:
    handler = Recorder()
    prepared: list[SqliteStore] = []
    runners = []
    for store in stores:
        jobs = Jobs(store, settings(poll_seconds=1))
        jobs.handle("test", handler, lease_seconds=60, prepare=prepared.append)
        runners.append(jobs)
    try:
        for i in range(20):
            enqueue(runners[i % 2], f"j{i}")
        for jobs in runners:
            jobs.wake()  # starts the thread
        for i in range(20, 40):
            enqueue(runners[i % 2], f"j{i}")
            runners[i % 2].wake()
        wait_for(lambda: stores[0].refresh() is not None
                 and stores[0].collection(JOBS).count({"state": DONE}) == 40)
    finally:
        for jobs in runners:
            jobs.close()
    assert sorted(n for n, _ in handler.runs) == sorted(f"j{i}" for i in range(40))
    assert {attempts for _, attempts in handler.runs} == {1}
    # each runner prepared once, on a store object of its thread's own
    assert len(prepared) == 2 and not {id(s) for s in prepared} & {id(s) for s in stores}


HOOK = '''
from pathlib import Path


def register(events, quire):
    out = Path(quire.settings.data_dir) / "crm.txt"

    def notify(job):
        with out.open("a") as f:
            f.write(f"{job.payload['id']} {job.attempts}\\n")

    quire.jobs.handle("site.crm", notify)

    async def queue(form, record):
        async with quire.store.atomic():
            quire.jobs.enqueue("site.crm", {"id": record["_id"]}, key=record["_id"])
        quire.jobs.wake()

    events.on("inbox.submit.after", queue)
'''


def test_a_hook_registers_a_kind_and_the_jobs_it_enqueues_run(data_dir: Path) -> None:
    """The app's jobs (`quire.jobs`) as docs/hooks.md shows them: a kind
    registered in `register`, a job enqueued after a submission, run by
    the runner the server's start started."""
    (data_dir / "hooks").mkdir(parents=True)
    (data_dir / "hooks" / "crm.py").write_text(HOOK, encoding="utf-8")
    app = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true", "QUIRE_INBOX_RATE_LIMIT": "0"}))
    quire = app.state.quire
    try:
        with TestClient(app) as client:
            admin = Api(client, str(quire.auth.create_key("k", "admin")["key"]))
            form = make_form(admin)
            ids = [submit(client, form["token"], json={"data": {"n": i}}).json()["record"]["_id"] for i in range(2)]
            out = data_dir / "crm.txt"
            wait_for(lambda: out.exists() and len(out.read_text().splitlines()) == 2)
    finally:
        quire.close()
    assert sorted(out.read_text().splitlines()) == sorted(f"{i} 1" for i in ids)


class Holding:
    """A handler that holds each job until `release` is set, counting
    how many it holds at once."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.holding = 0
        self.most = 0
        self.ran = 0

    def __call__(self, job: Job) -> None:
        with self.lock:
            self.holding += 1
            self.most = max(self.most, self.holding)
        self.release.wait(20)
        with self.lock:
            self.holding -= 1
            self.ran += 1


def test_lanes_run_side_by_side_so_slow_work_never_delays_another_lanes(stores: list[Store]) -> None:
    slow, quick = Holding(), Recorder()
    prepared: list[Store] = []
    jobs = Jobs(stores[0], settings(poll_seconds=1))
    jobs.lane("slow", concurrency=3)
    jobs.handle("test.slow", slow, lease_seconds=60, lane="slow", prepare=prepared.append)
    jobs.handle("test", quick, lease_seconds=60, lane="quick")
    try:
        with stores[0].transaction():
            for n in range(8):
                jobs.enqueue("test.slow", {"n": f"s{n}"})
        jobs.wake("test.slow")
        wait_for(lambda: slow.holding == 3)  # the lane's three threads, each holding a job
        enqueue(jobs, "q")
        jobs.wake("test")
        wait_for(lambda: quick.runs == [("q", 1)])  # not behind the eight slow ones
        assert slow.holding == 3 and slow.ran == 0
        slow.release.set()
        wait_for(lambda: slow.ran == 8)
    finally:
        slow.release.set()
        jobs.close()
    assert slow.most == 3  # never more at once than the lane's concurrency
    assert len(prepared) == 1  # prepare ran once, whatever the number of threads
    assert not [t for lane in jobs.lanes.values() for t in lane.threads if t.is_alive()]  # close stopped all


def test_wake_wakes_the_lanes_of_the_kinds_named(stores: list[Store], monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = Recorder(), Recorder()
    jobs = Jobs(stores[0], settings(poll_seconds=3600))
    jobs.handle("test", first, lease_seconds=60, lane="one")
    jobs.handle("test.other", second, lease_seconds=60, lane="two")
    looked: set[tuple[str, ...]] = set()  # the lanes (their kinds) whose round has ended
    next_wait = jobs.next_wait

    def recorded(store: Store, kinds: Any = None) -> float:
        wait = next_wait(store, kinds)
        looked.add(tuple(kinds or ()))
        return wait

    monkeypatch.setattr(jobs, "next_wait", recorded)
    try:
        jobs.start()
        # both lanes looked once and sleep for the poll interval (a condition:
        # a loaded machine may take longer than any fixed pause to get there)
        wait_for(lambda: {("test",), ("test.other",)} <= looked)
        with stores[0].transaction():
            jobs.enqueue("test", {"n": "a"})
            jobs.enqueue("test.other", {"n": "b"})
        jobs.wake("test")
        wait_for(lambda: first.runs == [("a", 1)])
        time.sleep(0.3)
        assert second.runs == []  # its lane was not woken (it would find the job at its next poll)
        jobs.wake()
        wait_for(lambda: second.runs == [("b", 1)])
    finally:
        jobs.close()


def test_a_lease_shorter_than_the_longest_attempt_is_refused(stores: list[Store]) -> None:
    jobs = Jobs(stores[0], settings())
    with pytest.raises(ValueError, match="must outlast its longest attempt"):
        jobs.handle("test", Recorder(), attempt_seconds=10, lease_seconds=12)
    jobs.handle("test", Recorder(), attempt_seconds=10)
    assert jobs.kinds["test"].lease_seconds == lease_for(10) == 10 + OUTCOME_WAIT + LEASE_MARGIN
    with pytest.raises(ValueError):
        jobs.lane("Bad Lane", 1)
    with pytest.raises(ValueError):
        jobs.lane("fine", 0)


class FlakyStore(SqliteStore):
    """A SQLite store whose clones answer `StoreUnavailable` while `down` is set."""

    def __init__(self, path: Path, down: threading.Event, calls: list[int]) -> None:
        super().__init__(path)
        self.down = down
        self.calls = calls

    def clone(self, listen: bool = True) -> FlakyStore:
        return FlakyStore(Path(self.path), self.down, self.calls)

    def _check(self) -> None:
        if self.down.is_set():
            self.calls.append(1)
            raise StoreUnavailable("The database cannot be reached; try again shortly", retry_after=1)

    def ensure_indexes(self, *args: Any, **kwargs: Any) -> None:
        self._check()
        super().ensure_indexes(*args, **kwargs)

    @contextlib.contextmanager
    def transaction(self, timeout: float | None = None) -> Iterator[None]:
        self._check()
        with super().transaction(timeout):
            yield


def test_a_store_outage_is_one_warning_line_and_its_end_another(db: Path, caplog: pytest.LogCaptureFixture) -> None:
    down, calls = threading.Event(), []
    store = FlakyStore(db, down, calls)
    handler = Recorder()
    jobs = Jobs(store, settings(poll_seconds=1))
    jobs.lane("two", concurrency=2)
    jobs.handle("test", handler, lease_seconds=60, lane="two")
    jobs.handle("test.other", Recorder(), lease_seconds=60)
    caplog.set_level(logging.INFO, logger="quire.jobs")
    down.set()
    try:
        jobs.start()
        wait_for(lambda: len(calls) >= 6)  # every thread failed, and tried again
        down.clear()
        wait_for(lambda: any("answers again" in r.message for r in caplog.records))
        with store.transaction():
            jobs.enqueue("test", {"n": "after"})
        jobs.wake("test")
        wait_for(lambda: handler.runs == [("after", 1)])
    finally:
        jobs.close()
        store.close()
    lines = [r for r in caplog.records if r.name == "quire.jobs"]
    assert [r.levelname for r in lines] == ["WARNING", "WARNING"]
    assert "unavailable (StoreUnavailable: The database cannot be reached" in lines[0].message
    assert "answers again" in lines[1].message
    assert not [r for r in lines if r.exc_info]  # no traceback


def test_a_failed_prepare_is_tried_again_a_poll_later_and_jobs_run_meanwhile(
        stores: list[Store], caplog: pytest.LogCaptureFixture) -> None:
    calls: list[float] = []

    def prepare(store: Store) -> None:
        calls.append(time.monotonic())
        if len(calls) == 1:
            raise RuntimeError("not yet")

    handler = Recorder()
    jobs = Jobs(stores[0], settings(poll_seconds=1))
    jobs.lane("many", concurrency=3)
    jobs.handle("test", handler, lease_seconds=60, lane="many", prepare=prepare)
    jobs.handle("test.other", Recorder(), lease_seconds=60)
    try:
        enqueue(jobs, "a")
        jobs.wake()
        wait_for(lambda: handler.runs == [("a", 1)])  # run although prepare failed
        wait_for(lambda: len(calls) == 2)
        time.sleep(0.2)
    finally:
        jobs.close()
    assert len(calls) == 2 and calls[1] - calls[0] >= 1.0  # four threads, one retry, a poll later
    assert len([r for r in caplog.records if "preparing the runner failed" in r.message]) == 1


def test_a_handlers_outcome_writes_commit_with_the_outcome_and_only_for_the_holder(
        stores: list[Store], clock: Clock) -> None:
    def handler(job: Job) -> None:
        job.with_outcome(lambda store: store.collection("test/log").insert(
            {"_id": f"{job.payload['n']}-{job.attempts}", "state": "written"}))
        if job.payload["n"] == "bad":
            raise RuntimeError("receiver down")

    # retries far off: the only job due after the lease ends is the stalled one
    first, second = (runner(s, clock, handler, retry_seconds=1000) for s in stores)  # type: ignore[arg-type]
    enqueue(first, "ok")
    enqueue(first, "bad")
    outcomes = {}
    for _ in range(2):
        job = first.claim(stores[0])
        assert job is not None
        outcomes[job.payload["n"]] = first.perform(job)  # the log entry: in the outcome's transaction
    assert outcomes == {"ok": DONE, "bad": "pending"}
    lost = enqueue(first, "lost")
    stale = first.claim(stores[0])
    assert stale is not None and stale.id == lost["_id"]
    clock.advance(61)  # its lease ends: another runner takes a job over
    taken = second.claim(stores[1])
    assert taken is not None and taken.id == stale.id
    assert first.perform(stale) == LOST  # ran, but its claim no longer holds: nothing of it is written
    stores[0].refresh()
    written = sorted(d["_id"] for d in stores[0].collection("test/log").find())
    assert "lost-1" not in written and written[:2] == ["bad-1", "ok-1"]


def test_a_runner_claims_the_next_job_in_the_previous_ones_outcome_transaction(
        stores: list[Store], clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    handler = Recorder()
    jobs = runner(stores[0], clock, handler)
    for n in range(5):
        enqueue(jobs, f"job {n}")
    transactions: list[int] = []
    real = stores[0].transaction

    def counted(*args: Any, **kwargs: Any) -> Any:
        transactions.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(stores[0], "transaction", counted)
    assert jobs.run_due(stores[0]) == 5
    assert sorted(n for n, _ in handler.runs) == [f"job {n}" for n in range(5)]
    assert len(transactions) == 6  # the first claim, then each outcome with the next claim (was 10)
    assert {stored(stores[0], d["_id"])["state"] for d in stores[0].collection(JOBS).find()} == {DONE}


def test_a_wake_calls_one_thread_of_the_lane_not_all(stores: list[Store], monkeypatch: pytest.MonkeyPatch) -> None:
    # Every thread of the lane once woke and looked for the one job a save
    # enqueued (4 delivery threads: 4 looks, 3 finding it taken).
    handler = Recorder()
    jobs = Jobs(stores[0], settings(poll_seconds=3600))
    jobs.lane("many", concurrency=4)
    jobs.handle("test", handler, lease_seconds=60, lane="many")
    looks: list[str] = []
    rested: list[str] = []
    any_due, next_wait = jobs._any_due, jobs.next_wait

    def looking(*args: Any) -> bool:
        looks.append(threading.current_thread().name)
        return any_due(*args)

    def resting(*args: Any) -> float:
        rested.append(threading.current_thread().name)
        return next_wait(*args)

    monkeypatch.setattr(jobs, "_any_due", looking)
    monkeypatch.setattr(jobs, "next_wait", resting)
    try:
        jobs.start()
        wait_for(lambda: len(set(rested)) == 4)  # each thread looked once at start, and rests
        looks.clear()
        for n in range(3):
            enqueue(jobs, f"j{n}")
            jobs.wake("test")
            wait_for(lambda n=n: len(handler.runs) == n + 1)
        time.sleep(0.3)  # a thread woken for nothing would look meanwhile
    finally:
        jobs.close()
    # one thread per wake: it claims (a look) and, after the job, looks once more
    assert len(looks) <= 6, looks


def test_a_kind_with_a_batch_is_claimed_and_recorded_several_at_a_time(stores: list[Store], clock: Clock) -> None:
    seen: list[list[str]] = []

    def handler(job: Job) -> None:
        states = {d["payload"]["n"]: d["state"] for d in stores[1].collection(JOBS).find()}
        seen.append([n for n, state in sorted(states.items()) if state == RUNNING])
        if job.payload["n"] == "b":
            raise RuntimeError("b fails once")

    jobs = runner(stores[0], clock, handler, batch=3)  # type: ignore[arg-type]
    docs = [enqueue(jobs, n) for n in "abcde"]
    assert jobs.run_due(stores[0]) == 5
    # a, b and c were claimed in one transaction (all three running while
    # each ran), then d and e; b's retry is due later
    assert seen[:3] == [["a", "b", "c"]] * 3 and seen[3:] == [["d", "e"]] * 2
    states = [(stored(stores[1], d["_id"])["state"], stored(stores[1], d["_id"])["attempts"]) for d in docs]
    assert states == [(DONE, 1), (PENDING, 1), (DONE, 1), (DONE, 1), (DONE, 1)]
    assert "b fails once" in stored(stores[1], docs[1]["_id"])["last_error"]


def test_a_batch_gives_back_the_jobs_it_did_not_start_in_time(stores: list[Store], clock: Clock,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("quire.jobs.BATCH_SECONDS", 0.05)
    ran: list[str] = []

    def slow(job: Job) -> None:
        ran.append(job.payload["n"])
        time.sleep(0.1)  # past BATCH_SECONDS: the others of its batch are not started after it

    jobs = runner(stores[0], clock, slow, batch=4)  # type: ignore[arg-type]
    docs = [enqueue(jobs, n) for n in "abcd"]
    [batch_of_four] = [jobs._claim(stores[0], ["test"])]
    assert [j.payload["n"] for j in batch_of_four] == ["a", "b", "c", "d"]
    outcomes, unstarted = jobs._run_batch(batch_of_four)
    assert ran == ["a"] and [j.payload["n"] for j in unstarted] == ["b", "c", "d"]
    states, _ = jobs._record(stores[0], outcomes, unstarted)
    assert states == [DONE]
    after = [stored(stores[1], d["_id"]) for d in docs]
    # given back as they were: pending, the attempt not counted, no lease
    assert [(d["state"], d["attempts"], d["lease"]) for d in after[1:]] == [(PENDING, 0, None)] * 3
    assert jobs.run_due(stores[0]) == 3 and ran == list("abcd")


def test_a_server_starts_while_another_writer_holds_the_lock_and_schedules_the_daily_prunes_after(
        data_dir: Path) -> None:
    # The daily prunes were enqueued on the event loop at start, which waits
    # for the write lock 50 ms at most: a server starting beside a busy
    # writer (an import, another instance) failed to start with StoreBusy.
    app = build_app(load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true"}))
    quire = app.state.quire
    holder = sqlite3.connect(data_dir / "quire.db", timeout=30, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        with TestClient(app) as client:  # the start: no write waits for the lock on the event loop
            assert client.get("/api/system/healthcheck").status_code == 200
            time.sleep(0.3)  # the runner waits for the lock meanwhile
            holder.rollback()
            day = int(time.time() // 86_400)
            expected = {f"{kind}:{day}" for kind in ("audit.prune", "revisions.prune", "webhooks.prune")}
            jobs = quire.store.collection(JOBS)
            wait_for(lambda: expected <= {d["_id"] for d in jobs.find()}, timeout=30)
    finally:
        holder.close()
        quire.close()


def test_a_coroutine_handler_runs_on_its_runner_threads_own_loop_kept_between_jobs(stores: list[Store]) -> None:
    """A job handler may be a coroutine (a service's write, as a request
    awaits it): the runner thread runs every job on one loop of its own,
    closed when the runner stops; a failure is retried as a plain one's."""
    loops: list[asyncio.AbstractEventLoop] = []
    failed: list[str] = []

    async def handler(job: Job) -> None:
        await asyncio.sleep(0)  # it really runs on a loop
        loops.append(asyncio.get_running_loop())
        if job.payload["n"] == "bad" and not failed:
            failed.append("once")
            raise ValueError("try again")

    jobs = Jobs(stores[0], settings(poll_seconds=1))
    jobs.handle("test", handler, lease_seconds=60, retry_seconds=0.05)
    try:
        for n in ("a", "b", "bad", "c"):
            enqueue(jobs, n)
        jobs.wake()
        wait_for(lambda: stores[0].refresh() is not None
                 and stores[0].collection(JOBS).count({"state": DONE}) == 4)
    finally:
        jobs.close()
    assert len(loops) == 5 and len({id(loop) for loop in loops}) == 1 and failed == ["once"]
    wait_for(lambda: loops[0].is_closed())


def test_run_here_keeps_one_loop_per_thread_and_refuses_a_running_loop() -> None:
    async def which() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    first, second = run_here(which()), run_here(which())
    assert first is second and not first.is_running()
    other: list[asyncio.AbstractEventLoop] = []
    thread = threading.Thread(target=lambda: other.append(run_here(which())))
    thread.start()
    thread.join()
    assert other[0] is not first

    async def nested() -> None:
        with pytest.raises(RuntimeError, match="await the coroutine instead"):
            run_here(which())

    asyncio.run(nested())


def test_closing_twice_waits_for_a_running_job_no_longer_than_once(db: Path) -> None:
    """A server stopping closes the runner twice (the webhooks module first,
    then the instance); a job still running must not make it wait twice,
    or the worker outlives the server's stop timeout and is killed."""
    store = SqliteStore(db)
    started, release = threading.Event(), threading.Event()

    def slow(job: Job) -> None:
        started.set()
        release.wait(30)

    jobs = Jobs(store, settings(poll_seconds=1))
    jobs.handle("slow", slow, lease_seconds=60)
    try:
        jobs.enqueue("slow", {})
        jobs.wake()
        assert started.wait(20)
        begun = time.monotonic()
        jobs.close(timeout=1.0)
        jobs.close(timeout=1.0)
        took = time.monotonic() - begun
        assert 0.9 < took < 1.9, took  # waited for the job once, not twice
    finally:
        release.set()
        jobs.close()
        store.close()
