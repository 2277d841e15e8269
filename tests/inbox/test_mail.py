"""Notification e-mail of submissions, sent to a real SMTP server on
127.0.0.1 (aiosmtpd): headers, text and HTML parts, attachments, the
outbox, retries, giving up, and that a submission never waits for SMTP."""

from __future__ import annotations

import email
import email.policy
import socket
import time
from collections.abc import Callable, Iterator
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.store import SqliteStore
from tests.client import TestClient
from tests.conftest import Api
from tests.inbox.conftest import PDF, inbox_files, make_form, png, stored, submit
from tests.ports import free_port

FROM = "forms@quire.test"


class Inbox:
    """What an aiosmtpd server received."""

    def __init__(self) -> None:
        self.envelopes: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
        self.envelopes.append(envelope)
        return "250 Message accepted"

    def messages(self) -> list[EmailMessage]:
        return [email.message_from_bytes(e.content, policy=email.policy.default)  # type: ignore[misc]
                for e in self.envelopes]

    def wait(self, count: int = 1, timeout: float = 30.0) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while len(self.envelopes) < count:
            assert time.monotonic() < deadline, f"{len(self.envelopes)} of {count} messages after {timeout}s"
            time.sleep(0.02)
        return self.messages()


def start_smtp(port: int, **kw: Any) -> tuple[Controller, Inbox]:
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=port, **kw)
    controller.start()
    return controller, inbox


@pytest.fixture
def smtp_port() -> int:
    return free_port()


@pytest.fixture
def smtp_settings() -> dict[str, str]:
    """Extra [smtp] settings of a test."""
    return {}


@pytest.fixture
def inbox_env(smtp_port: int, smtp_settings: dict[str, str]) -> dict[str, str]:
    return {"QUIRE_SMTP_HOST": "127.0.0.1", "QUIRE_SMTP_PORT": str(smtp_port), "QUIRE_SMTP_STARTTLS": "false",
            "QUIRE_SMTP_FROM": FROM, "QUIRE_SMTP_RETRY_SECONDS": "1", "QUIRE_SMTP_TIMEOUT_SECONDS": "5",
            "QUIRE_INBOX_RATE_LIMIT": "0", **smtp_settings}


@pytest.fixture
def smtp(smtp_port: int) -> Iterator[Inbox]:
    controller, inbox = start_smtp(smtp_port)
    yield inbox
    controller.stop()


@pytest.fixture
def mail_form(admin: Api) -> dict[str, Any]:
    return make_form(admin, name="Contact <Sales>", emails=["sales@example.com", "boss@example.org"])


def outbox(quire: Quire) -> list[dict[str, Any]]:
    """The e-mail not sent yet: the jobs of kind "email" that are not done,
    each as its message with the job's attempts, last error and state."""
    quire.store.refresh()
    jobs = quire.store.collection("system/jobs").find({"kind": "email", "state": {"$ne": "done"}})
    return [{**job["payload"], "attempts": job["attempts"], "last_error": job["last_error"], "status": job["state"]}
            for job in jobs]


def wait_for(check: Callable[[], Any], timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.02)


def parts(message: EmailMessage) -> tuple[str, str]:
    text = message.get_body(("plain",))
    html = message.get_body(("html",))
    assert text is not None and html is not None
    return (text.get_content().replace("\r\n", "\n"),  # type: ignore[attr-defined]
            html.get_content().replace("\r\n", "\n"))  # type: ignore[attr-defined]


def test_a_submission_is_mailed_to_the_forms_addresses(client: TestClient, mail_form: dict[str, Any],
                                                       smtp: Inbox, quire: Quire) -> None:
    response = submit(client, mail_form["token"], data={
        "data[name]": "Ada <b>Lovelace</b>", "data[email]": "ada@example.com",
        "data[message]": "Grüße & thanks,\nline two", "data[topics][]": ["maths", "engines"]})
    record = response.json()["record"]
    [message] = smtp.wait()
    [envelope] = smtp.envelopes
    assert sorted(envelope.rcpt_tos) == ["boss@example.org", "sales@example.com"]
    assert envelope.mail_from == FROM
    assert message["From"] == FROM
    assert {a.strip() for a in str(message["To"]).split(",")} == {"sales@example.com", "boss@example.org"}
    assert message["Subject"] == "New submission: Contact <Sales>"
    assert message["Reply-To"] == "ada@example.com"
    assert message["Date"] and message["Message-ID"]
    text, html = parts(message)
    assert "name: Ada <b>Lovelace</b>" in text
    assert "email: ada@example.com" in text and "topics: maths, engines" in text
    assert "Grüße & thanks,\nline two" in text
    assert record["_id"] in text and record["_id"] in html
    assert "Ada &lt;b&gt;Lovelace&lt;/b&gt;" in html and "<b>Lovelace</b>" not in html
    assert "Grüße &amp; thanks" in html and "Contact &lt;Sales&gt;" in html
    assert "maths, engines" in html
    assert wait_for(lambda: outbox(quire) == [])  # sent messages leave the outbox


@pytest.mark.parametrize("where", ["query", "form", "json"])
def test_custom_subject_from_query_or_body(client: TestClient, mail_form: dict[str, Any], smtp: Inbox,
                                           where: str) -> None:
    subject = f"Callback request ({where}) – bitte"
    kw: dict[str, Any] = {
        "query": {"json": {"data": {"a": "1"}}, "params": {"subject": subject}},
        "form": {"data": {"data[a]": "1", "subject": subject}},
        "json": {"json": {"data": {"a": "1"}, "subject": subject}},
    }[where]
    assert submit(client, mail_form["token"], **kw).status_code == 200
    [message] = smtp.wait()
    assert message["Subject"] == subject


def test_subject_cannot_inject_headers(client: TestClient, mail_form: dict[str, Any], smtp: Inbox) -> None:
    response = submit(client, mail_form["token"], json={
        "data": {"a": "1"}, "subject": "Hello\r\nBcc: victim@evil.example\r\n\r\nbody"})
    assert response.status_code == 200
    [message] = smtp.wait()
    assert message["Bcc"] is None
    assert "victim@evil.example" not in smtp.envelopes[0].rcpt_tos
    assert "\n" not in str(message["Subject"]) and str(message["Subject"]).startswith("Hello")


@pytest.mark.parametrize("address", ["not-an-email", "a@b", "ada@example.com\r\nBcc: x@evil.example", None, 42])
def test_no_reply_to_without_a_valid_address(client: TestClient, mail_form: dict[str, Any], smtp: Inbox,
                                             address: Any) -> None:
    data = {"name": "x"} if address is None else {"name": "x", "email": address}
    assert submit(client, mail_form["token"], json={"data": data}).status_code == 200
    [message] = smtp.wait()
    assert message["Reply-To"] is None
    assert smtp.envelopes[0].rcpt_tos == ["sales@example.com", "boss@example.org"]


def test_attachments_are_attached(client: TestClient, mail_form: dict[str, Any], smtp: Inbox) -> None:
    image = png((9, 9, 9))
    response = submit(client, mail_form["token"], data={"data[name]": "x"},
                      files=[("data[files][]", ("photo.png", image, "image/png")),
                             ("data[files][]", ("Lebenslauf Müller.pdf", PDF, "application/pdf"))])
    assert response.status_code == 200
    [message] = smtp.wait()
    attached = {a.get_filename(): (a.get_content_type(), a.get_content()) for a in message.iter_attachments()}
    assert attached == {"photo.png": ("image/png", image), "Lebenslauf Müller.pdf": ("application/pdf", PDF)}
    text, html = parts(message)
    assert "photo.png" in text and "Lebenslauf Müller.pdf" in html


@pytest.mark.parametrize("smtp_settings", [{"QUIRE_SMTP_MAX_ATTACHMENT_BYTES": "100"}])
def test_too_large_attachments_are_listed_not_attached(client: TestClient, mail_form: dict[str, Any],
                                                       smtp: Inbox) -> None:
    response = submit(client, mail_form["token"], files={"data[cv]": ("cv.pdf", PDF + b" " * 200, "application/pdf")})
    assert response.status_code == 200
    [message] = smtp.wait()
    assert list(message.iter_attachments()) == []
    assert "cv.pdf" in parts(message)[0]


def test_no_mail_without_addresses_or_for_the_honeypot(client: TestClient, admin: Api, smtp: Inbox,
                                                       quire: Quire) -> None:
    silent = make_form(admin, name="Silent")
    trap = make_form(admin, name="Trap", emails=["a@example.com"], honeypot="website")
    assert submit(client, silent["token"], json={"data": {"a": "1"}}).status_code == 200
    assert submit(client, trap["token"], json={"data": {"a": "1", "website": "x"}}).status_code == 200
    assert outbox(quire) == []
    marker = make_form(admin, name="Marker", emails=["a@example.com"])
    submit(client, marker["token"], json={"data": {"a": "1"}})
    [message] = smtp.wait()  # the only message is the marker's
    assert message["Subject"] == "New submission: Marker"
    time.sleep(0.2)
    assert len(smtp.envelopes) == 1


def test_store_false_keeps_files_until_the_mail_is_sent(client: TestClient, admin: Api, smtp_port: int,
                                                        quire: Quire) -> None:
    form = make_form(admin, name="Private", emails=["a@example.com"], store=False)
    response = submit(client, form["token"], data={"data[name]": "x"},
                      files={"data[cv]": ("cv.pdf", PDF, "application/pdf")})
    assert response.status_code == 200
    assert stored(quire) == []
    # nothing listens yet: the file waits in the outbox's attachments
    wait_for(lambda: [m for m in outbox(quire) if m["attempts"] >= 1])
    assert len(inbox_files(quire)) == 1
    controller, inbox = start_smtp(smtp_port)
    try:
        [message] = inbox.wait()
        assert [a.get_content() for a in message.iter_attachments()] == [PDF]
        wait_for(lambda: inbox_files(quire) == [])
    finally:
        controller.stop()


def test_smtp_down_never_blocks_and_the_retry_delivers_once(client: TestClient, mail_form: dict[str, Any],
                                                            smtp_port: int, quire: Quire) -> None:
    started = time.monotonic()
    response = submit(client, mail_form["token"], json={"data": {"name": "Patient", "email": "p@example.com"}})
    assert response.status_code == 200 and time.monotonic() - started < 2
    record = response.json()["record"]
    assert stored(quire, mail_form["_id"]) == [record]
    [pending] = wait_for(lambda: [m for m in outbox(quire) if m["attempts"] >= 1 and m["last_error"]])
    assert pending["submission"] == record["_id"] and pending["status"] in ("pending", "running")
    assert pending["to"] == ["sales@example.com", "boss@example.org"]
    assert "refused" in pending["last_error"].lower() or "connect" in pending["last_error"].lower()
    controller, inbox = start_smtp(smtp_port)
    try:
        [message] = inbox.wait()
        assert message["Reply-To"] == "p@example.com"
        wait_for(lambda: outbox(quire) == [])
        time.sleep(1.5)  # a second delivery would come within the retry delay
        assert len(inbox.envelopes) == 1
    finally:
        controller.stop()


@pytest.mark.parametrize("smtp_settings", [{"QUIRE_SMTP_TIMEOUT_SECONDS": "2"}])
def test_a_hanging_smtp_server_does_not_slow_the_submission(client: TestClient, mail_form: dict[str, Any],
                                                            smtp_port: int, quire: Quire) -> None:
    with socket.socket() as silent:  # accepts connections, never greets
        silent.bind(("127.0.0.1", smtp_port))
        silent.listen(8)
        times = []
        for i in range(3):
            started = time.monotonic()
            response = submit(client, mail_form["token"], json={"data": {"n": i}})
            times.append(time.monotonic() - started)
            assert response.status_code == 200
        assert max(times) < 1.5, times
        assert len(stored(quire, mail_form["_id"])) == 3
        assert len(outbox(quire)) == 3


@pytest.mark.parametrize("smtp_settings", [{"QUIRE_SMTP_MAX_ATTEMPTS": "2"}])
def test_after_max_attempts_the_message_is_failed(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, name="Lost", emails=["a@example.com"], store=False)
    response = submit(client, form["token"], data={"data[a]": "1"}, files={"data[f]": ("a.png", png(), "image/png")})
    assert response.status_code == 200
    [failed] = wait_for(lambda: [m for m in outbox(quire) if m["status"] == "failed"])
    assert failed["attempts"] == 2 and failed["last_error"]
    # given up: the unstored form's file goes too (right after the failure is committed)
    wait_for(lambda: inbox_files(quire) == [])
    time.sleep(1.2)
    assert outbox(quire)[0]["attempts"] == 2  # no more attempts


@pytest.mark.parametrize("smtp_settings", [{"QUIRE_SMTP_STARTTLS": "true", "QUIRE_SMTP_MAX_ATTEMPTS": "1"}])
def test_starttls_setting_is_used(client: TestClient, mail_form: dict[str, Any], smtp: Inbox,
                                  quire: Quire) -> None:
    assert submit(client, mail_form["token"], json={"data": {"a": "1"}}).status_code == 200
    [failed] = wait_for(lambda: [m for m in outbox(quire) if m["status"] == "failed"])
    assert "starttls" in failed["last_error"].lower()
    assert smtp.envelopes == []  # never sent in clear text


@pytest.mark.parametrize("smtp_settings", [{"QUIRE_SMTP_USER": "mailer", "QUIRE_SMTP_PASSWORD": "s3cret"}])
def test_login_with_user_and_password(client: TestClient, mail_form: dict[str, Any], smtp_port: int) -> None:
    logins: list[tuple[bytes, bytes]] = []

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword):
            logins.append((data.login, data.password))
            return AuthResult(success=data.password == b"s3cret")
        return AuthResult(success=False)

    controller, inbox = start_smtp(smtp_port, authenticator=authenticator, auth_require_tls=False)
    try:
        assert submit(client, mail_form["token"], json={"data": {"a": "1"}}).status_code == 200
        inbox.wait()
        assert logins == [(b"mailer", b"s3cret")]
    finally:
        controller.stop()


def test_queued_mail_is_sent_after_a_restart(data_dir: Path, smtp_port: int, app_env: dict[str, str],
                                             inbox_env: dict[str, str]) -> None:
    env = {**app_env, **inbox_env}
    first = build_app(load_settings(data_dir, env=env))
    quire: Quire = first.state.quire
    admin = Api(TestClient(first), str(quire.auth.create_key("k", "admin")["key"]))
    form = make_form(admin, emails=["a@example.com"])
    assert submit(admin.client, form["token"], json={"data": {"a": "restart"}}).status_code == 200
    wait_for(lambda: [m for m in outbox(quire) if m["attempts"] >= 1])
    quire.close()
    controller, inbox = start_smtp(smtp_port)
    second = build_app(load_settings(data_dir, env=env))
    try:
        with TestClient(second):  # the start of the server wakes the sender
            [message] = inbox.wait()
            assert "restart" in parts(message)[0]
    finally:
        second.state.quire.close()
        controller.stop()


def test_two_workers_send_each_message_once(data_dir: Path, smtp: Inbox, app_env: dict[str, str],
                                            inbox_env: dict[str, str]) -> None:
    env = {**app_env, **inbox_env}
    apps = [build_app(load_settings(data_dir, env=env)) for _ in range(2)]
    try:
        clients = [TestClient(a) for a in apps]
        admin = Api(clients[0], str(apps[0].state.quire.auth.create_key("k", "admin")["key"]))
        form = make_form(admin, emails=["a@example.com"])
        for i in range(12):
            assert submit(clients[i % 2], form["token"], json={"data": {"n": f"m{i}"}}).status_code == 200
        smtp.wait(12)
        time.sleep(0.5)
        bodies = [parts(m)[0] for m in smtp.messages()]
        assert len(bodies) == 12
        assert sorted(next(line for line in b.splitlines() if line.startswith("n: ")) for b in bodies) == sorted(
            f"n: m{i}" for i in range(12))
    finally:
        for a in apps:
            a.state.quire.close()


def test_messages_left_in_the_old_outbox_move_onto_the_jobs_table(data_dir: Path, smtp: Inbox,
                                                                   inbox_env: dict[str, str]) -> None:
    """What a Quire before the jobs table left in `inbox/outbox` is sent
    (or kept as failed) by the new one, with its attempts and errors."""
    settings = load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true", **inbox_env})
    old = {"form": "f1", "to": ["a@example.com"], "reply_to": None, "html": "<p>x</p>", "attachments": [],
           "cleanup": [], "lease_until": 0, "_created": 1_700_000_000}
    store = SqliteStore(settings.db_path)
    with store.transaction():
        old_outbox = store.collection("inbox/outbox")
        old_outbox.insert({**old, "_id": "o-pending", "submission": "s1", "subject": "Left behind", "text": "left\n",
                       "attempts": 2, "next_at": 0, "status": "pending", "last_error": "ConnectionRefusedError"})
        old_outbox.insert({**old, "_id": "o-failed", "submission": "s2", "subject": "Given up", "text": "lost\n",
                       "attempts": 6, "next_at": 0, "status": "failed", "last_error": "SMTPRecipientsRefused"})
        old_outbox.insert({**old, "_id": "o-leased", "submission": "s3", "subject": "Being sent", "text": "now\n",
                       "attempts": 1, "next_at": 0, "status": "pending", "last_error": None,
                       "lease_until": time.time() + 3600})  # an old process is sending it now
    store.close()
    app = build_app(settings)
    quire: Quire = app.state.quire
    try:
        with TestClient(app):  # the start of the server starts the runner, which moves them first
            [message] = smtp.wait()
            wait_for(lambda: [m for m in outbox(quire) if m["subject"] == "Left behind"] == [])
    finally:
        quire.close()
    assert message["Subject"] == "Left behind" and message["Date"] == "Tue, 14 Nov 2023 22:13:20 -0000"
    store = SqliteStore(settings.db_path)
    try:
        assert store.collection("inbox/outbox").find() == []
        jobs = {job["payload"]["submission"]: job for job in store.collection("system/jobs").find({"kind": "email"})}
    finally:
        store.close()
    assert (jobs["s1"]["_id"], jobs["s1"]["state"], jobs["s1"]["attempts"]) == ("email:outbox:o-pending", "done", 3)
    assert jobs["s1"]["payload"]["message_id"] == message["Message-ID"]
    assert (jobs["s2"]["state"], jobs["s2"]["attempts"], jobs["s2"]["last_error"]) == ("failed", 6,
                                                                                      "SMTPRecipientsRefused")
    assert jobs["s3"]["state"] == "pending" and jobs["s3"]["run_at"] > time.time() + 3000  # after the old lease
    assert len(smtp.envelopes) == 1
