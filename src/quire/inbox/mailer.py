"""Notification e-mail for submissions, through an outbox.

A message is written to the collection `inbox/outbox` in the same
transaction as the submission it reports, so a commit never loses one and a
rollback never sends one. A sender thread (one per process, with its own
database connections) claims due messages with a lease, so two worker
processes never send the same message at once, sends them over SMTP and
deletes them; a failure is retried later with a growing delay, up to
`[smtp] max_attempts`. The HTTP request never waits for SMTP.
"""

from __future__ import annotations

import html
import logging
import smtplib
import ssl
import threading
import time
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from pathlib import Path
from typing import Any

from quire.config import SmtpSettings
from quire.emails import normal_email
from quire.files import Files, discard
from quire.ids import new_id
from quire.store import SqliteStore, Store

log = logging.getLogger("quire.inbox.mail")
OUTBOX = "inbox/outbox"
IDLE_WAIT = 30.0  # seconds between looks at the outbox when nothing is due


def compose(form: dict[str, Any], record: dict[str, Any], subject: str | None,
            uploads: Files, max_attach: int, cleanup: bool) -> dict[str, Any]:
    """The outbox document for a submission: addresses, subject, text and
    HTML bodies, and the attachments to add when sending."""
    title = _one_line(subject) or f"New submission: {form['name']}"
    reply_to = normal_email(record["data"].get("email"))
    rows = [(name, _text(value)) for name, value in record["data"].items()]
    files = [(field, a) for field, items in record["attachments"].items() for a in items]
    when = datetime.fromtimestamp(record["_created"], UTC).strftime("%Y-%m-%d %H:%M UTC")
    text = [f"New submission to the form {form['name']}", ""]
    text += [f"{name}:\n{value}\n" if "\n" in value else f"{name}: {value}" for name, value in rows]
    if files:
        text += ["", "Attachments:"] + [f"- {field}: {a['name']} ({_size(a['size'])})" for field, a in files]
    text += ["", f"Submission {record['_id']}, {when}"]
    cells = "".join(
        f'<tr><th style="text-align:left;vertical-align:top;padding:4px 12px 4px 0">{html.escape(name)}</th>'
        f'<td style="white-space:pre-wrap;padding:4px 0">{html.escape(value)}</td></tr>'
        for name, value in rows
    )
    listed = "".join(f"<li>{html.escape(field)}: {html.escape(a['name'])} ({_size(a['size'])})</li>" for field, a in files)
    body = (f"<p>New submission to the form <strong>{html.escape(form['name'])}</strong></p>"
            f"<table>{cells}</table>" + (f"<p>Attachments:</p><ul>{listed}</ul>" if files else "")
            + f"<p style=\"color:#666\">Submission {html.escape(record['_id'])}, {when}</p>")
    total = sum(a["size"] for _, a in files)
    attach = [{"file": a["file"], "name": a["name"], "mime": a["mime"]} for _, a in files] if total <= max_attach else []
    now = time.time()
    return {
        "_id": new_id(), "form": form["_id"], "submission": record["_id"], "to": list(form["emails"]),
        "subject": title, "reply_to": reply_to, "text": "\n".join(text) + "\n", "html": body,
        "attachments": attach, "cleanup": [a["file"] for _, a in files] if cleanup else [],
        "attempts": 0, "next_at": now, "lease_until": 0, "status": "pending", "last_error": None,
        "_created": int(now),
    }


def _one_line(text: str | None) -> str:
    return " ".join((text or "").split())[:200]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(_text(v) for v in value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.0f} KB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MB"


class Mailer:
    """Sends the outbox. `wake()` after a commit that queued mail; the
    thread starts on first use and stops with `close()`."""

    def __init__(self, settings: SmtpSettings, db_path: Path, uploads: Files) -> None:
        self.settings = settings
        self.db_path = db_path
        self.uploads = uploads
        self.enabled = bool(settings.host)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._run, name="quire-mailer", daemon=True)
                self._thread.start()
        self._wake.set()

    def close(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _run(self) -> None:
        store = SqliteStore(self.db_path)
        try:
            while not self._stop.is_set():
                try:
                    self.deliver_due(store)
                    wait = self._next_wait(store)
                except Exception:  # a broken database must not kill the thread for good
                    log.exception("outbox: delivery round failed")
                    wait = IDLE_WAIT
                self._wake.wait(wait)
                self._wake.clear()
        finally:
            store.close()

    def _next_wait(self, store: Store) -> float:
        pending = store.collection(OUTBOX).pick(["next_at", "lease_until"], {"status": "pending"},
                                                 [(("next_at",), 1)], limit=1)
        if not pending:
            return IDLE_WAIT
        due = max(pending[0].get("next_at", 0), pending[0].get("lease_until", 0))
        return min(IDLE_WAIT, max(0.05, due - time.time()))

    def deliver_due(self, store: Store) -> int:
        """Send every message that is due now; answers how many were sent."""
        sent = 0
        while not self._stop.is_set():
            message = self._claim(store)
            if message is None:
                return sent
            try:
                self._send(message)
            except Exception as exc:  # SMTP, network, TLS: all retried
                self._failed(store, message, exc)
            else:
                self._done(store, message)
                sent += 1
        return sent

    def _claim(self, store: Store) -> dict[str, Any] | None:
        now = time.time()
        outbox = store.collection(OUTBOX)
        with store.transaction():
            due = outbox.find({"status": "pending", "next_at": {"$lte": now}, "lease_until": {"$lte": now}},
                              [(("next_at",), 1)], limit=1)
            if not due:
                return None
            message = due[0]
            message["attempts"] += 1
            message["lease_until"] = now + 3 * self.settings.timeout_seconds + 30
            outbox.replace(message)
        return message

    def _done(self, store: Store, message: dict[str, Any]) -> None:
        with store.transaction():
            store.collection(OUTBOX).delete(message["_id"])
        self._cleanup(message)
        log.info("outbox: sent %s to %d recipient(s)", message["_id"], len(message["to"]))

    def _failed(self, store: Store, message: dict[str, Any], exc: Exception) -> None:
        attempts = message["attempts"]
        error = f"{type(exc).__name__}: {exc}"
        if attempts >= self.settings.max_attempts:
            message.update(status="failed", last_error=error, lease_until=0)
            log.error("outbox: giving up on %s after %d attempts: %s", message["_id"], attempts, error)
            self._cleanup(message)
        else:
            delay = self.settings.retry_seconds * 2 ** (attempts - 1)
            message.update(next_at=time.time() + delay, lease_until=0, last_error=error)
            log.warning("outbox: %s failed (attempt %d), retrying in %ds: %s", message["_id"], attempts, delay, error)
        with store.transaction():
            store.collection(OUTBOX).replace(message)

    def _cleanup(self, message: dict[str, Any]) -> None:
        """Attachments of a form that does not store submissions live only
        until their e-mail is sent (or given up)."""
        discard(self.uploads, message.get("cleanup") or [])

    def build(self, message: dict[str, Any]) -> EmailMessage:
        mail = EmailMessage()
        mail["From"] = self.settings.from_address
        mail["To"] = ", ".join(message["to"])
        mail["Subject"] = message["subject"]
        mail["Date"] = formatdate(localtime=False)
        sender = parseaddr(self.settings.from_address)[1]
        mail["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
        if message.get("reply_to"):
            mail["Reply-To"] = message["reply_to"]
        mail.set_content(message["text"])
        mail.add_alternative(message["html"], subtype="html")
        for item in message["attachments"]:
            try:
                data = self.uploads.read(item["file"])
            except FileNotFoundError:  # the submission may have been deleted since
                continue
            maintype, _, subtype = item["mime"].partition("/")
            mail.add_attachment(data, maintype=maintype, subtype=subtype or "octet-stream", filename=item["name"])
        return mail

    def _send(self, message: dict[str, Any]) -> None:
        s = self.settings
        mail = self.build(message)
        timeout = s.timeout_seconds
        client: smtplib.SMTP
        if s.ssl:
            client = smtplib.SMTP_SSL(s.host, s.port, timeout=timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(s.host, s.port, timeout=timeout)
        with client:
            if s.starttls:
                client.starttls(context=ssl.create_default_context())
            if s.user:
                client.login(s.user, s.password)
            client.send_message(mail)
