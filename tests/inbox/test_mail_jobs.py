"""E-mail as jobs across processes, against a real SMTP server (aiosmtpd on
127.0.0.1): two runner processes on one database send each message once,
and a runner killed (SIGKILL) while the server holds its DATA answer leaves
the message to be sent again once the lease ends: at least once, with the
same Message-ID. The runners are `tests/inbox/mail_runner.py` processes."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from aiosmtpd.controller import Controller

from quire.config import load_settings
from quire.inbox.mailer import EMAIL, Mailer
from quire.jobs import DONE, JOBS, RUNNING, Jobs
from quire.store import SqliteStore
from tests.inbox.test_mail import FROM, Inbox, wait_for
from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def env() -> dict[str, str]:
    # A long SMTP timeout: the runner that the test kills must still be
    # waiting for the DATA answer when it is killed.
    return {"QUIRE_SMTP_HOST": "127.0.0.1", "QUIRE_SMTP_PORT": str(free_port()), "QUIRE_SMTP_STARTTLS": "false",
            "QUIRE_SMTP_FROM": FROM, "QUIRE_SMTP_TIMEOUT_SECONDS": "60", "QUIRE_SMTP_RETRY_SECONDS": "1",
            "QUIRE_JOBS_POLL_SECONDS": "1"}


class HoldingInbox(Inbox):
    """An SMTP server that takes each message but holds its answer to DATA
    until `release()`."""

    def __init__(self) -> None:
        super().__init__()
        self.released = False

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.envelopes.append(envelope)
        while not self.released:
            await asyncio.sleep(0.02)
        return "250 Message accepted"

    def release(self) -> None:
        self.released = True


def serve(env: dict[str, str], inbox: Inbox) -> Controller:
    controller = Controller(inbox, hostname="127.0.0.1", port=int(env["QUIRE_SMTP_PORT"]))
    controller.start()
    return controller


class Sender:
    """This test's side: queues messages as Quire's submit does (a job in
    a transaction of the test's store object) and reads the jobs back."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        self.settings = load_settings(data_dir, env=env)
        self.store = SqliteStore(self.settings.db_path)
        self.jobs = Jobs(self.store, self.settings.jobs)  # no runner here unless `start`ed
        self.mailer = Mailer(self.settings.smtp, data_dir / "uploads", self.jobs, lease_seconds=2)

    def queue(self, names: list[str]) -> list[dict[str, Any]]:
        with self.store.transaction():
            return [self.mailer.queue({
                "form": "f1", "submission": name, "to": ["team@example.com"], "subject": f"Message {name}",
                "reply_to": None, "text": f"n: {name}\n", "html": f"<p>{name}</p>", "attachments": [], "cleanup": [],
            }) for name in names]

    def job(self, job_id: str) -> dict[str, Any]:
        self.store.refresh()
        doc = self.store.collection(JOBS).get(job_id)
        assert doc is not None
        return doc

    def done(self) -> int:
        self.store.refresh()
        return self.store.collection(JOBS).count({"kind": EMAIL, "state": DONE})


@pytest.fixture
def sender(data_dir: Path, env: dict[str, str]) -> Iterator[Sender]:
    made = Sender(data_dir, env)
    yield made
    made.jobs.close()
    made.store.close()


@pytest.fixture
def spawn(data_dir: Path, env: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    """Start a mail runner process (lease 2 s); stopped after the test."""
    started: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []

    def start() -> subprocess.Popen[bytes]:
        log = (tmp_path / f"runner{len(started)}.log").open("wb")
        child_env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        child = subprocess.Popen([sys.executable, "-m", "tests.inbox.mail_runner", str(data_dir), "2"], cwd=ROOT,
                                 env=child_env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log)
        started.append((child, log))
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"ready", (tmp_path / f"runner{len(started) - 1}.log").read_text()
        return child

    yield start
    for child, log in started:
        if child.poll() is None:
            assert child.stdin is not None
            child.stdin.close()  # the runner's signal to stop
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        for pipe in (child.stdin, child.stdout):
            if pipe is not None:
                pipe.close()
        log.close()


def test_two_runner_processes_send_each_message_once(env: dict[str, str], sender: Sender, spawn: Any) -> None:
    inbox = Inbox()
    controller = serve(env, inbox)
    try:
        queued = sender.queue([f"m{i}" for i in range(10)])
        runners = [spawn(), spawn()]
        queued += sender.queue([f"m{i}" for i in range(10, 30)])  # found by polling: no wake crosses processes
        inbox.wait(30, timeout=30)
        wait_for(lambda: sender.done() == 30, timeout=30)
    finally:
        controller.stop()
    ids = [str(m["Message-ID"]) for m in inbox.messages()]
    assert sorted(ids) == sorted(job["payload"]["message_id"] for job in queued)  # each one, once
    jobs = [sender.job(job["_id"]) for job in queued]
    assert {job["attempts"] for job in jobs} == {1}
    assert all(any(f":{r.pid}:" in job["holder"] for r in runners) for job in jobs)  # sent by those processes


def test_a_runner_killed_mid_send_leaves_the_message_to_go_again_after_its_lease(
        env: dict[str, str], sender: Sender, spawn: Any) -> None:
    inbox = HoldingInbox()
    controller = serve(env, inbox)
    try:
        [queued] = sender.queue(["once"])
        child = spawn()
        wait_for(lambda: len(inbox.envelopes) == 1)  # the server has the message; the runner awaits its answer
        running = sender.job(queued["_id"])
        assert (running["state"], running["attempts"]) == (RUNNING, 1) and f":{child.pid}:" in running["holder"]
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        inbox.release()
        sender.jobs.start()  # another instance's runner: it takes the job over when the lease ends
        wait_for(lambda: sender.job(queued["_id"])["state"] == DONE)
    finally:
        controller.stop()
    first, second = inbox.messages()
    assert first["Message-ID"] == second["Message-ID"] == queued["payload"]["message_id"]
    assert first["Date"] == second["Date"] and first["Subject"] == second["Subject"] == "Message once"
    done = sender.job(queued["_id"])
    assert done["attempts"] == 2 and done["holder"] == sender.jobs.holder
    assert "lease ended" in done["last_error"] and running["holder"] in done["last_error"]
