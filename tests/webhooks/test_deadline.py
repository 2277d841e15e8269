"""One deadline for a whole delivery attempt: a receiver that trickles its
status line, headers or body one byte at a time is cut off at
`timeout_seconds`, and so is a host name that takes too long to resolve.
With the issue's numbers (timeout 3 s, a header byte every 2 s) and two
runners on the database, each attempt sends the message once, no runner
takes the job over, and the delivery log shows each timed-out attempt."""

from __future__ import annotations

import asyncio
import logging
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from quire.cache import Cache
from quire.config import WebhooksSettings, load_settings
from quire.jobs import FAILED, JOBS, LEASE_MARGIN, OUTCOME_WAIT, Jobs
from quire.store import open_store
from quire.webhooks import deliver
from quire.webhooks.bounded import TimedOut
from quire.webhooks.deliver import Policy, Sender
from quire.webhooks.sealing import Sealer, key_text
from quire.webhooks.service import DELIVERIES, DELIVERY, WebhookService
from tests.webhooks.conftest import WEBHOOK_ENV
from tests.webhooks.trickle import Trickle


@pytest.fixture
def sender() -> Iterator[Sender]:
    made = Sender(Policy.of(False, ["127.0.0.1", "slow.example"]), 1.0)
    yield made
    made.close()


def post_timed(sender: Sender, url: str) -> float:
    started = time.monotonic()
    with pytest.raises(TimedOut) as raised:
        sender.post(url, {"webhook-id": "msg_1"}, b"{}")
    assert str(raised.value).startswith("timed out after 1 s")
    return time.monotonic() - started


def test_a_receiver_trickling_its_status_line_is_cut_off_at_the_timeout(sender: Sender) -> None:
    trickle = Trickle(gap=0.3)  # each read gets a byte well within the 1 s timeout of one operation
    try:
        elapsed = post_timed(sender, trickle.url)
    finally:
        trickle.close()
    # 40 bytes at 0.3 s would take 12 s; the bound is generous for a loaded machine
    assert 0.95 <= elapsed < 6.0


def test_a_receiver_trickling_its_body_is_cut_off_at_the_timeout(sender: Sender) -> None:
    trickle = Trickle(gap=0.7, headers_at_once=True)
    try:
        elapsed = post_timed(sender, trickle.url)
    finally:
        trickle.close()
    # cut off at the deadline (each byte came within its 1 s read timeout, so
    # no read timed out): a bound for a hang, generous for a loaded machine
    assert 0.95 <= elapsed < 6.0


def test_a_prompt_receiver_is_answered_through_the_bounded_transport(sender: Sender) -> None:
    trickle = Trickle(gap=0.0)
    try:
        answers = [sender.post(trickle.url, {"webhook-id": f"msg_{n}"}, b"{}") for n in range(3)]
    finally:
        trickle.close()
    assert [(a.status, a.body) for a in answers] == [(200, "ok")] * 3
    assert trickle.ids == ["msg_0", "msg_1", "msg_2"]


def test_resolving_a_host_counts_toward_the_deadline(sender: Sender, monkeypatch: pytest.MonkeyPatch) -> None:
    def slow_lookup(*args: Any, **kwargs: Any) -> Any:
        time.sleep(12)  # in the lookup's own thread, left to end on its own
        raise socket.gaierror("too late")

    monkeypatch.setattr(socket, "getaddrinfo", slow_lookup)
    started = time.monotonic()
    with pytest.raises(TimedOut, match=r"timed out after 1 s \(resolving slow.example\)"):
        sender.post("http://slow.example/hook", {}, b"{}")
    assert time.monotonic() - started < 6.0  # not the lookup's 12 s; generous for a loaded machine


class Instance:
    """What one Quire instance runs for webhooks: a store, a jobs table
    and the webhook service (its runner started by `jobs.start()`)."""

    def __init__(self, data_dir: Path, env: dict[str, str]) -> None:
        settings = load_settings(data_dir, env=env)
        self.store = open_store(settings.store.url, settings.db_path, 5)
        self.jobs = Jobs(self.store, settings.jobs)
        section = settings.section(WebhooksSettings)
        self.webhooks = WebhookService(self.store, Cache(self.store), section, self.jobs,
                                       Sealer(key_text(section.key, data_dir)))

    def close(self) -> None:
        self.webhooks.close()
        self.store.close()

    def job(self) -> dict[str, Any]:
        self.store.refresh()
        [job] = self.store.collection(JOBS).find({"kind": DELIVERY})
        return job


def test_a_trickling_receiver_gets_each_message_once_per_attempt_and_no_runner_takes_it_over(
        data_dir: Path, app_env: dict[str, str], caplog: pytest.LogCaptureFixture) -> None:
    env = {**app_env, **WEBHOOK_ENV, "QUIRE_WEBHOOKS_TIMEOUT_SECONDS": "3", "QUIRE_WEBHOOKS_MAX_ATTEMPTS": "2",
           "QUIRE_WEBHOOKS_DISABLE_AFTER": "0", "QUIRE_JOBS_POLL_SECONDS": "1"}
    data_dir.mkdir(parents=True, exist_ok=True)
    caplog.set_level(logging.INFO, logger="quire")
    trickle = Trickle(gap=2.0)  # the receiver: one byte of its status line every 2 s
    one, other = Instance(data_dir, env), Instance(data_dir, env)
    try:
        lease = one.jobs.kinds[DELIVERY].lease_seconds
        assert lease == 3 + 2 * OUTCOME_WAIT + LEASE_MARGIN  # the deadline, logging, recording, a margin
        asyncio.run(one.webhooks.create({"name": "slow", "url": trickle.url, "events": ["*"]}))
        with one.store.transaction():
            one.webhooks._enqueue("content.item.saved", {"item": {"_id": "x"}}, "posts")
        one.jobs.start()
        other.jobs.start()  # a second runner on the database, ready to take over a lease that ended
        deadline = time.monotonic() + 40
        while one.job()["state"] != FAILED:
            assert time.monotonic() < deadline, one.job()
            time.sleep(0.05)
        one.store.refresh()
        logged = sorted(one.store.collection(DELIVERIES).find(), key=lambda e: e["attempt"])
        job = one.job()
    finally:
        one.close()
        other.close()
        trickle.close()
    msg = job["payload"]["msg"]
    assert trickle.ids == [msg, msg]  # once per attempt, never two at once
    assert trickle.most_open == 1
    assert job["attempts"] == 2 and "lease ended" not in (job["last_error"] or "")
    assert [(e["attempt"], e["ok"], e["status"]) for e in logged] == [(1, False, None), (2, False, None)]
    assert all(e["error"].startswith("TimedOut: timed out after 3 s (reading the answer)") for e in logged)
    assert all(2900 <= e["ms"] < lease * 1000 for e in logged)
    assert trickle.times[1] > logged[0]["at"]  # the retry was sent only after the first attempt was logged
    assert not [r.message for r in caplog.records if "taking over" in r.message or "taken over" in r.message]


@pytest.fixture
def tls_files(tmp_path: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl (Debian package) is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=hooks.test",
                    "-addext", "subjectAltName=DNS:hooks.test", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


def tls_receiver(cert: Path, key: Path, gap: float) -> tuple[socket.socket, int]:
    """A TLS receiver on 127.0.0.1 answering 200 with a pause of `gap`
    seconds before each byte of its answer."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))

    def serve(conn: socket.socket) -> None:
        try:
            with context.wrap_socket(conn, server_side=True) as tls:
                data = b""
                while not data.endswith(b"\r\n\r\n{}"):  # the whole request (its body is "{}"): unread
                    chunk = tls.recv(65536)  # bytes would make the close a reset that loses the answer
                    if not chunk:
                        return
                    data += chunk
                for i, byte in enumerate(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"):
                    if gap and i:
                        time.sleep(gap)
                    tls.sendall(bytes([byte]))
        except OSError:  # the sender gave up
            pass

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    return listener, listener.getsockname()[1]


def test_the_deadline_holds_over_tls_too(tls_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    cert, key = tls_files
    trusting = ssl.create_default_context(cafile=str(cert))
    # hooks.test is the certificate's name: it resolves to the receivers here
    monkeypatch.setattr(deliver, "lookup", lambda host, port, timeout: [(socket.AF_INET, socket.SOCK_STREAM, 6, "",
                                                                          ("127.0.0.1", port))])
    sender = Sender(Policy.of(False, ["hooks.test"]), 1.0, tls=trusting)
    prompt, prompt_port = tls_receiver(cert, key, 0.0)
    slow, slow_port = tls_receiver(cert, key, 0.3)
    try:
        answer = sender.post(f"https://hooks.test:{prompt_port}/hook", {}, b"{}")
        assert (answer.status, answer.body) == (200, "ok")
        started = time.monotonic()
        with pytest.raises(TimedOut, match=r"timed out after 1 s \(reading the answer\)"):
            sender.post(f"https://hooks.test:{slow_port}/hook", {}, b"{}")
        assert time.monotonic() - started < 6.0  # 40 bytes at 0.3 s would take 12 s
        # the certificate is checked: another name than the certificate's is refused
        with pytest.raises(ssl.SSLCertVerificationError):
            Sender(Policy.of(False, ["other.test"]), 1.0, tls=trusting).post(
                f"https://other.test:{prompt_port}/hook", {}, b"{}")
    finally:
        sender.close()
        prompt.close()
        slow.close()


class KeepAlive(ThreadingHTTPServer):
    """A receiver that keeps connections open between requests and counts
    the connections it was given; `close_after_answer` closes each one
    right after its answer, without saying so (as a receiver whose idle
    timeout is shorter than ours does)."""

    daemon_threads = True

    def __init__(self, close_after_answer: bool = False) -> None:
        self.connections = 0
        self.requests: list[str] = []
        receiver = self

        class Answer(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                receiver.connections += 1

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.requests.append(self.headers.get("webhook-id", ""))
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"ok")
                if close_after_answer:
                    self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Answer)
        threading.Thread(target=self.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server_address[1]}/hook"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


def test_deliveries_to_one_receiver_share_a_kept_connection(sender: Sender) -> None:
    receiver = KeepAlive()
    try:
        answers = [sender.post(receiver.url, {"webhook-id": f"msg_{n}"}, b"{}") for n in range(5)]
    finally:
        receiver.close()
    assert [(a.status, a.body) for a in answers] == [(200, "ok")] * 5
    assert receiver.requests == [f"msg_{n}" for n in range(5)]
    assert receiver.connections == 1


def test_a_kept_connection_the_receiver_closed_is_not_used_again(sender: Sender) -> None:
    receiver = KeepAlive(close_after_answer=True)
    try:
        answers = []
        for n in range(3):
            answers.append(sender.post(receiver.url, {"webhook-id": f"msg_{n}"}, b"{}"))
            time.sleep(0.05)  # the close reaches us before the next delivery
    finally:
        receiver.close()
    assert [a.status for a in answers] == [200] * 3
    assert receiver.requests == ["msg_0", "msg_1", "msg_2"]  # each sent once
    assert receiver.connections == 3
