"""Notification e-mail for submissions, as jobs of kind "email".

A message is enqueued on the jobs table (quire.jobs) in the same
transaction as the submission it reports, so a commit never loses one and a
rollback never sends one. Its `Message-ID` and `Date` are made once, at
enqueue, and stored with it: every attempt, by any instance, sends the same
message. The runner of one instance claims it with a lease (once per
cluster), sends it over SMTP and records it done; a failure is retried later
with a doubling delay, up to `[smtp] max_attempts`. Delivery is at least
once: a runner killed after the server took the message but before "done"
was recorded leaves a lease that ends, and the message goes again, with the
same Message-ID. The HTTP request never waits for SMTP.
"""

from __future__ import annotations

import html
import logging
import smtplib
import ssl
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import formatdate, make_msgid, parseaddr
from typing import Any

from quire.config import SmtpSettings
from quire.emails import normal_email
from quire.files import Files, discard
from quire.jobs import EMAIL_LANE, Job, Jobs
from quire.store import Store

log = logging.getLogger("quire.inbox.mail")
EMAIL = "email"  # the kind of the jobs that send an e-mail
OUTBOX = "inbox/outbox"  # where messages waited before the jobs table: moved onto it at start


def compose(form: dict[str, Any], record: dict[str, Any], subject: str | None,
            uploads: Files, max_attach: int, cleanup: bool) -> dict[str, Any]:
    """The message for a submission: addresses, subject, text and HTML
    bodies, the attachments to add when sending (paths under the uploads)
    and those to delete once it is sent or given up."""
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
    return {
        "form": form["_id"], "submission": record["_id"], "to": list(form["emails"]),
        "subject": title, "reply_to": reply_to, "text": "\n".join(text) + "\n", "html": body,
        "attachments": attach, "cleanup": [a["file"] for _, a in files] if cleanup else [],
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
    """Sends e-mail as jobs of kind "email": `queue(message)` inside the
    transaction that made it, `wake()` after its commit. Without `[smtp]
    host` nothing is queued or sent."""

    def __init__(self, settings: SmtpSettings, uploads: Files, jobs: Jobs, lease_seconds: float | None = None) -> None:
        self.settings = settings
        self.uploads = uploads
        self.jobs = jobs
        self.enabled = bool(settings.host)
        if self.enabled:
            # A lease outlasts a slow send: connect, TLS and login, and the
            # data, each bounded by the timeout, and a margin.
            lease = lease_seconds if lease_seconds is not None else 3 * settings.timeout_seconds + 30
            jobs.handle(EMAIL, self.deliver, max_attempts=settings.max_attempts,
                        retry_seconds=settings.retry_seconds, lease_seconds=lease, lane=EMAIL_LANE,
                        finished=self._finished, prepare=self.move_outbox)

    def queue(self, message: dict[str, Any], store: Store | None = None, **history: Any) -> dict[str, Any]:
        """Enqueue `message` (as `compose` makes it) in the open
        transaction; its Message-ID and Date are made here, once.
        `history`: `Jobs.enqueue`'s key, run_at, attempts, last_error,
        failed (for messages moved from the old outbox)."""
        sender = parseaddr(self.settings.from_address)[1]
        payload = {**message, "message_id": make_msgid(domain=sender.rpartition("@")[2] or None),
                   "date": message.get("date") or formatdate(localtime=False)}
        return self.jobs.enqueue(EMAIL, payload, store=store, **history)

    def wake(self) -> None:
        self.jobs.wake(EMAIL)

    def deliver(self, job: Job) -> None:
        """The handler of "email" jobs: send the message (raising retries)."""
        self._send(job.payload)
        log.info("mail: sent %s (%s) to %d recipient(s)", job.id, job.payload["message_id"], len(job.payload["to"]))

    def _finished(self, job: Job, state: str) -> None:
        """Attachments of a form that does not store submissions live only
        until their e-mail is sent (or given up)."""
        discard(self.uploads, job.payload.get("cleanup") or [])

    def move_outbox(self, store: Store) -> int:
        """Move the messages an older Quire left in `inbox/outbox` onto the
        jobs table, with their attempts, errors and failures, in one
        transaction; answers how many moved. A message under a lease that
        has not ended (an older process sending it now) is due when its
        lease ends."""
        outbox = store.collection(OUTBOX)
        if not outbox.count():  # the usual case: no write transaction at all
            return 0
        moved = 0
        with store.transaction():
            for old in outbox.find():
                message = {k: old.get(k) for k in ("form", "submission", "to", "subject", "reply_to", "text", "html")}
                message["attachments"] = old.get("attachments") or []
                message["cleanup"] = old.get("cleanup") or []
                if old.get("_created"):
                    message["date"] = formatdate(float(old["_created"]), localtime=False)
                self.queue(message, store=store, key=f"outbox:{old['_id']}",
                           run_at=max(float(old.get("next_at") or 0), float(old.get("lease_until") or 0)),
                           attempts=int(old.get("attempts") or 0), last_error=old.get("last_error"),
                           failed=old.get("status") == "failed")
                outbox.delete(old["_id"])
                moved += 1
        if moved:
            log.info("mail: moved %d message(s) from %s onto the jobs table", moved, OUTBOX)
        return moved

    def build(self, message: dict[str, Any]) -> EmailMessage:
        mail = EmailMessage()
        mail["From"] = self.settings.from_address
        mail["To"] = ", ".join(message["to"])
        mail["Subject"] = message["subject"]
        mail["Date"] = message["date"]
        mail["Message-ID"] = message["message_id"]
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
