"""Stored submissions (`inbox/submissions`): listing, reading, the spam
flag, deletes (with their files), attachment downloads and CSV export; and
deleting a form with everything it received."""

from __future__ import annotations

import csv
import io
import re
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import anyio.to_thread
import orjson

from quire.auth.service import Identity
from quire.cache import Cache
from quire.errors import BadRequest, NotFound, PreconditionFailed
from quire.events import Events, refusals_as_412
from quire.files import FileInfo, Files, discard
from quire.ids import is_id
from quire.inbox.forms import MANAGE, FormService
from quire.inbox.reads import ReadState
from quire.inbox.service import ATTACHMENTS, SUBMISSION_HINTS, SUBMISSIONS
from quire.store import Store
from quire.store.query import And, Cond, Node, parse_fields, parse_filter, parse_sort

READ = "inbox/submissions"
Sort = list[tuple[tuple[str, ...], int]]
NEWEST_FIRST: Sort = [(("_created",), -1), (("_id",), -1)]
OLDEST_FIRST: Sort = [(("_created",), 1), (("_id",), 1)]
SEARCH_SAMPLE = 50  # latest submissions whose field names a search covers, for a form without `fields`
SEARCH_FIELDS = 64
# a cell starting like a formula would run in a spreadsheet
_FORMULA = ("=", "+", "-", "@", "\t", "\r")


class SubmissionService:
    def __init__(self, store: Store, cache: Cache, events: Events, forms: FormService, uploads: Files,
                 reads: ReadState) -> None:
        self.store = store
        self.reads = reads
        self.cache = cache
        self.events = events
        self.forms = forms
        self.uploads = uploads
        self.submissions = store.collection(SUBMISSIONS, SUBMISSION_HINTS)

    def query(self, form_id: str | None, spec: Any) -> Node:
        if spec is not None and not isinstance(spec, dict):
            raise BadRequest("filter must be an object")
        node = parse_filter(spec or {})
        return And([Cond(("form",), "eq", form_id), node]) if form_id else node

    def find(self, identity: Identity, form_id: str | None, spec: Any, sort: Any, limit: int | None,
             skip: int | None, fields: Any) -> tuple[list[dict[str, Any]], int | None]:
        """Newest first unless `sort` says otherwise; `spec`, `sort` and
        `fields` are the request's JSON values (filter, sort, projection)."""
        identity.require(READ)
        order = parse_sort(sort) if sort is not None else None
        projection = parse_fields(fields)
        if form_id is not None:
            self.forms.by_id(form_id)  # 404 for a form that does not exist
        node = self.query(form_id, spec)
        docs = self.submissions.find(node, order or NEWEST_FIRST, limit or None, skip, projection)  # 0: no limit
        total = self.cache.count(self.submissions, node) if limit is not None and skip is not None else None
        return docs, total

    def page(self, form: dict[str, Any], words: str, limit: int, skip: int,
             identity: Identity) -> tuple[list[dict[str, Any]], int]:
        """One page of a form's submissions, newest first, and how many
        match: those whose id, or the text of a field, holds `words`
        (case-insensitive), or all without words. The fields searched are
        the form's `fields`, else those of its latest submissions."""
        identity.require(READ)
        node = self.query(form["_id"], self.search_spec(form, words))
        docs = self.submissions.find(node, NEWEST_FIRST, limit, skip)
        if skip == 0 and len(docs) < limit:  # all there is: a search need not read every row again
            return docs, len(docs)
        return docs, self.cache.count(self.submissions, node)

    def total(self, form_id: str) -> int:
        """How many submissions a form holds (kept for the store generation)."""
        return self.cache.count(self.submissions, {"form": form_id})

    def search_spec(self, form: dict[str, Any], words: str) -> dict[str, Any] | None:
        if not words:
            return None
        names = list(form.get("fields") or [])
        if not names:
            latest = self.submissions.find({"form": form["_id"]}, NEWEST_FIRST, SEARCH_SAMPLE)
            names = list(dict.fromkeys(k for d in latest for k in (d.get("data") or {})))
        pattern = {"$regex": re.escape(words), "$options": "i"}
        found: list[dict[str, Any]] = [{f"data.{n}": pattern} for n in names if "." not in n][:SEARCH_FIELDS]
        if is_id(words.lower()):
            found.append({"_id": words.lower()})
        return {"$or": found} if found else {"_id": ""}

    def get(self, record_id: str, identity: Identity) -> dict[str, Any]:
        identity.require(READ)
        return self._get(record_id)

    def _get(self, record_id: str) -> dict[str, Any]:
        record = self.submissions.get(record_id) if is_id(record_id) else None
        if record is None:
            raise NotFound("Submission not found")
        return record

    async def update(self, record_id: str, data: Any, identity: Identity) -> dict[str, Any]:
        """Only the spam flag changes; the submitted data is evidence."""
        identity.require(READ)
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        unknown = sorted(k for k in data if k not in ("spam", "_id"))
        if unknown:
            raise BadRequest(f"Only spam can be changed, not {', '.join(unknown)}", fields=unknown)
        if "spam" in data and not isinstance(data["spam"], bool):
            raise BadRequest("spam must be true or false", fields=["spam"])
        async with self.store.atomic():
            record = self._get(record_id)
            if "spam" in data:
                record.update(spam=data["spam"], _modified=int(time.time()))
            with refusals_as_412():
                await self.events.emit("inbox.submission.save", record=record, identity=identity)
            self.submissions.replace(record)
            self.reads.spam_changed(record["_id"], bool(record.get("spam")))
        return record

    async def delete(self, record_id: str, identity: Identity) -> None:
        identity.require(READ)
        async with self.store.atomic():
            record = self._get(record_id)
            await self._remove([record], identity)

    async def _remove(self, records: list[dict[str, Any]], identity: Identity) -> None:
        """Inside a transaction: the records go now, their files after the
        commit (a rollback keeps both)."""
        for record in records:
            with refusals_as_412():
                await self.events.emit("inbox.submission.remove", record=record, identity=identity)
            self.submissions.delete(record["_id"])
        self.reads.removed([r["_id"] for r in records])
        files = [a["file"] for r in records for items in r.get("attachments", {}).values() for a in items]
        self.store.after_commit(lambda: anyio.to_thread.run_sync(discard, self.uploads, files))

    async def delete_form(self, form_id: str, identity: Identity) -> None:
        """A form goes with its submissions and their files."""
        identity.require(MANAGE)
        async with self.store.atomic():
            form = self.forms.get(form_id, identity)
            await self._remove(self.submissions.find({"form": form_id}), identity)
            self.reads.form_removed(form_id)
            with refusals_as_412():
                await self.events.emit("inbox.form.remove", form=form, identity=identity)
            self.forms.forms.delete(form_id)

    async def attachment(self, record_id: str, field: str, index: str,
                         identity: Identity) -> tuple[FileInfo, dict[str, Any]]:
        """The stored file of an attachment and its record entry; 404 when
        either is gone."""
        identity.require(READ)
        items = self._get(record_id).get("attachments", {}).get(field) or []
        n = int(index) if index.isascii() and index.isdigit() and len(index) <= 9 else -1  # "²".isdigit() too
        if not 0 <= n < len(items):
            raise NotFound("Attachment not found")
        item = items[n]
        key = item.get("file")
        # a record edited by a hook must not reach files outside the attachments
        if not isinstance(key, str) or not key.startswith(f"{ATTACHMENTS}/"):
            raise NotFound("Attachment not found")
        found = await anyio.to_thread.run_sync(self.uploads.stat, key) if self.uploads.remote else self.uploads.stat(key)
        if found is None:
            raise NotFound("Attachment not found")
        return found, item

    def export_csv(self, form_id: str | None, spec: Any, identity: Identity) -> Iterator[bytes]:
        """Submissions as CSV (UTF-8 with BOM, for spreadsheets), oldest
        first: id, date, spam, one column per field, one per attachment
        field (file names). The columns are the form's fields, then any
        other field found."""
        identity.require(READ)
        node = self.query(form_id, spec)
        fields: dict[str, None] = {}
        files: dict[str, None] = {}
        if form_id is not None:
            fields.update(dict.fromkeys(self.forms.by_id(form_id)["fields"]))
        for rows in self.submissions.stream_raw(node, OLDEST_FIRST):
            for raw in rows:
                record = orjson.loads(raw)
                files.update(dict.fromkeys(record.get("attachments") or {}))
                fields.update(dict.fromkeys(k for k in record.get("data") or {} if k not in files))
        data_columns = [f for f in fields if f not in files]
        return self._csv_rows(node, OLDEST_FIRST, data_columns, list(files))

    def _csv_rows(self, node: Node, sort: Any, fields: list[str], files: list[str]) -> Iterator[bytes]:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(["_id", "created", "spam", *(_cell(f) for f in fields), *(_cell(f) for f in files)])
        yield b"\xef\xbb\xbf" + out.getvalue().encode()
        for rows in self.submissions.stream_raw(node, sort):
            out.seek(0)
            out.truncate()
            for raw in rows:
                record = orjson.loads(raw)
                data = record.get("data") or {}
                attachments = record.get("attachments") or {}
                created = datetime.fromtimestamp(record.get("_created", 0), UTC).strftime("%Y-%m-%d %H:%M:%S")
                writer.writerow([
                    record["_id"], created, "yes" if record.get("spam") else "no",
                    *(_cell(data.get(f)) for f in fields),
                    *("; ".join(_cell(a.get("name")) for a in attachments.get(f, [])) for f in files),
                ])
            yield out.getvalue().encode()


def _cell(value: Any) -> str:
    if value is None:
        text = ""
    elif isinstance(value, list):
        text = ", ".join(_cell(v) for v in value)
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, dict):
        text = orjson.dumps(value).decode()
    else:
        text = str(value)
    return "'" + text if text.startswith(_FORMULA) else text
