"""Public submissions: the checks of a submission in their documented
order, attachments, the record, events and the notification.

Order (behaviour.md §6): form by token (404), rate limit (429), data
present (412), allowed domains (412 Not allowed), honeypot (answer success,
keep nothing), allowed fields (others dropped), field limits (400), language
(412 Precondition failed), uploads (412/413 Upload failed), the
`inbox.submit.before` event (412), the record and its e-mail in one
transaction, `inbox.submit.after`. A failure at any step leaves no record
and no file.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import anyio
import anyio.to_thread

from quire.assets import sniff
from quire.assets.service import safe_name
from quire.config import AssetSettings, InboxSettings
from quire.errors import BadRequest, PayloadTooLarge, PreconditionFailed
from quire.events import Events, Reject
from quire.files import Files, discard
from quire.ids import new_id
from quire.inbox import language
from quire.inbox.forms import FIELD_NAME
from quire.inbox.mailer import Mailer, compose
from quire.numbers import content_length
from quire.store import Store

log = logging.getLogger("quire.inbox")
SUBMISSIONS = "inbox/submissions"
ATTACHMENTS = "inbox/uploads"  # under uploads (folder or bucket); never served by /storage
LANGUAGE_MIN_CHARS = 50
# newest first per form; unread counts (not spam) per form and in all
# every submission holds these single values: filters on them compile to plain comparisons that use the indexes
SUBMISSION_HINTS = {"form": "text", "_created": "number", "spam": "bool"}
SUBMISSION_INDEXES: list[list[tuple[str, ...]]] = [[("form",), ("_created",)], [("form",), ("spam",)], [("spam",)]]


class UploadFailed(PreconditionFailed):
    def __init__(self, detail: str) -> None:
        super().__init__("Upload failed", detail=detail)


@dataclass
class FilePart:
    filename: str
    data: bytes


@dataclass
class Submission:
    """What a client sent, whatever the encoding."""

    data: dict[str, Any] = field(default_factory=dict)
    files: dict[str, list[FilePart]] = field(default_factory=dict)
    success: str | None = None
    subject: str | None = None


@dataclass
class Outcome:
    record: dict[str, Any]
    redirect: str | None


class SubmitService:
    def __init__(self, store: Store, events: Events, mailer: Mailer, uploads: Files,
                 settings: InboxSettings, asset_settings: AssetSettings) -> None:
        self.store = store
        self.events = events
        self.mailer = mailer
        self.uploads = uploads
        self.settings = settings
        self.asset_settings = asset_settings
        self.submissions = store.collection(SUBMISSIONS, SUBMISSION_HINTS)
        store.ensure_indexes(SUBMISSIONS, SUBMISSION_INDEXES)

    async def submit(self, form: dict[str, Any], sent: Submission, origin: str | None,
                     referer: str | None) -> Outcome:
        if not sent.data and not any(sent.files.values()):
            raise PreconditionFailed("Item data is missing")
        if form["domains"] and not _allowed_host(_host(origin) or _host(referer), form["domains"]):
            raise PreconditionFailed("Not allowed")
        redirect = _redirect(sent.success, form["domains"])
        record: dict[str, Any] = {"_id": new_id(), "form": form["_id"], "data": {}, "attachments": {},
                                  "spam": False, "_created": int(time.time())}
        if form["honeypot"] and (_filled(sent.data.get(form["honeypot"])) or sent.files.get(form["honeypot"])):
            record["data"] = {k: v for k, v in sent.data.items() if k != form["honeypot"]}
            return Outcome(record, redirect)  # the bot sees success; nothing is kept
        data, files = self._allowed(form, sent)
        if not data and not files:
            raise PreconditionFailed("Item data is missing")
        self._check_limits(data, files)
        self._check_language(form, data)
        record["data"] = data
        written: list[str] = []
        try:
            record["attachments"] = await self._blocking(self._store_files, form, files, written)
            await self._before(form, record)
            record = await self._save(form, record, sent.subject)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._blocking(discard, self.uploads, written)
            raise
        await self.events.emit_after("inbox.submit.after", form=form, record=record)
        if form["store"] is False and not (self.mailer.enabled and form["emails"]):
            # nothing keeps them: not the record, not an e-mail
            await self._blocking(discard, self.uploads, written)
        return Outcome(record, redirect)

    async def _blocking(self, fn: Any, *args: Any) -> Any:
        """Storage calls: inline on local disk, in a worker thread over the network."""
        return await anyio.to_thread.run_sync(fn, *args) if self.uploads.remote else fn(*args)

    def _allowed(self, form: dict[str, Any], sent: Submission) -> tuple[dict[str, Any], dict[str, list[FilePart]]]:
        """Only the form's fields (all when it lists none); empty file parts
        (a file input left empty) are no files."""
        keep = set(form["fields"]) if form["fields"] else None
        honeypot = form["honeypot"]

        def kept(name: str) -> bool:  # without a list, any plain field name
            return name != honeypot and (name in keep if keep is not None else bool(FIELD_NAME.match(name)))

        data = {k: v for k, v in sent.data.items() if kept(k)}
        files = {k: [f for f in parts if f.data or f.filename] for k, parts in sent.files.items() if kept(k)}
        return data, {k: v for k, v in files.items() if v}

    def _check_limits(self, data: dict[str, Any], files: dict[str, list[FilePart]]) -> None:
        s = self.settings
        if len(data) + len(files) > s.max_fields:
            raise BadRequest(f"Too many fields: at most {s.max_fields}")
        for name, value in data.items():
            for text in _strings(value):
                if len(text) > s.max_field_length:
                    raise BadRequest(f"Field {name} is longer than {s.max_field_length} characters",
                                     fields=[name])
        if sum(len(parts) for parts in files.values()) > s.max_files:
            raise UploadFailed(f"at most {s.max_files} files per submission")

    def _check_language(self, form: dict[str, Any], data: dict[str, Any]) -> None:
        if not form["languages"]:
            return
        for value in data.values():
            for text in _strings(value):
                long_text = len(text.strip()) > LANGUAGE_MIN_CHARS
                if long_text and language.detect(text) not in form["languages"]:
                    raise PreconditionFailed("Precondition failed")

    def _store_files(self, form: dict[str, Any], files: dict[str, list[FilePart]],
                     written: list[str]) -> dict[str, list[dict[str, Any]]]:
        """Check every file first, then write them (whole or not at all);
        `written` collects the keys to remove if anything fails."""
        checked = []
        for name, parts in files.items():
            for part in parts:
                checked.append((name, part, self._check_file(part)))
        folder = f"{ATTACHMENTS}/{form['_id']}/{datetime.now(UTC):%Y-%m}"
        out: dict[str, list[dict[str, Any]]] = {}
        for name, part, kind in checked:
            relative = f"{folder}/{safe_name(part.filename or name)}_{secrets.token_hex(8)}.{kind.ext}"
            try:
                written.append(relative)
                self.uploads.put(relative, part.data)
            except OSError as exc:
                log.error("inbox: cannot write %s: %s", relative, exc)
                raise UploadFailed("the file could not be stored") from None
            out.setdefault(name, []).append({"name": _client_name(part.filename, kind.ext), "file": relative,
                                             "size": len(part.data), "mime": kind.mime})
        return out

    def _check_file(self, part: FilePart) -> sniff.Sniffed:
        limit = self.settings.max_file_bytes
        label = part.filename or "file"
        if len(part.data) > limit:
            raise UploadFailed(f"{label} is larger than {limit} bytes")
        try:
            kind = sniff.sniff(part.data, label)
        except sniff.Refused as exc:
            raise UploadFailed(f"{label}: {exc}") from None
        if not sniff.allowed(kind.mime, self.asset_settings.allowed_types, self.asset_settings.refused_types):
            raise UploadFailed(f"{label}: type {kind.mime} is not allowed")
        return kind

    async def _before(self, form: dict[str, Any], record: dict[str, Any]) -> None:
        """Handlers run outside the write transaction (they may be slow, like
        a spam service); any exception cancels the submission."""
        try:
            await self.events.emit("inbox.submit.before", form=form, record=record)
        except Reject as exc:
            raise PreconditionFailed(exc.message) from None
        except Exception:
            log.exception("inbox.submit.before handler failed; submission to form %s rejected", form["_id"])
            raise PreconditionFailed("Submission rejected") from None
        if not isinstance(record.get("data"), dict) or not isinstance(record.get("attachments"), dict):
            log.error("inbox.submit.before handler left record without data or attachments objects")
            raise PreconditionFailed("Submission rejected")

    async def _save(self, form: dict[str, Any], record: dict[str, Any], subject: str | None) -> dict[str, Any]:
        queued = False
        async with self.store.atomic():
            if form["store"] is not False:
                self.submissions.insert(record)
            if self.mailer.enabled and form["emails"]:
                message = compose(form, record, subject, self.uploads, self.mailer.settings.max_attachment_bytes,
                                  cleanup=form["store"] is False)
                self.mailer.queue(message)
                queued = True
        if queued:
            self.mailer.wake()
        return record


def _strings(value: Any) -> list[str]:
    """Every string inside a value (JSON bodies may nest lists and objects)."""
    out, stack = [], [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return out


def _filled(value: Any) -> bool:
    return value not in (None, "", [], {})


def _host(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return (urlsplit(url).hostname or "").lower().rstrip(".") or None
    except ValueError:
        return None


def _allowed_host(host: str | None, domains: list[str]) -> bool:
    """A listed domain allows itself and its subdomains."""
    return host is not None and any(host == d or host.endswith("." + d) for d in domains)


def _redirect(url: str | None, domains: list[str]) -> str | None:
    """`success` is followed only to this site (a path) or to an allowed
    domain over http(s): never an open redirect."""
    if not url:
        return None
    if url.startswith("/") and not url.startswith(("//", "/\\")):
        return url
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and _allowed_host(_host(url), domains):
        return url
    return None


def _client_name(filename: str, ext: str) -> str:
    """The file's name as the client sent it, without any folder part."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].strip()
    return name[:200] or f"file.{ext}"


def check_request_size(declared: str | None, limit: int) -> None:
    size = content_length(declared)
    if size is not None and size > limit:
        raise PayloadTooLarge("Upload failed", detail=f"the request is larger than {limit} bytes")
