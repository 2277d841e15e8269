"""Bulk edit: one field set, cleared or added to across many items of a
model (the studio's list: the selected items, or every item its filter
finds). Each item is its own save, as through the API, so each gets one
revision and one event (search, webhooks, hooks); the saves run in
batches with gaps, so the API keeps answering and writing meanwhile.

Each edit is recorded with the value every item had before, so that it can
be undone: the undo writes those values back, again one save per item,
leaving alone an item changed since (it names how many)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.batches import store_in_batches
from quire.content.fields import check_value
from quire.content.models import Model
from quire.content.reads import ReadOptions
from quire.content.service import ContentService
from quire.content.transfer import value_of
from quire.content.types import FieldError
from quire.errors import ApiError, BadRequest, NotFound
from quire.ids import new_id

EDITS = "studio_bulk"  # one record per edit: model, field, operation, who, when, counts
BEFORE = "studio_bulk_items"  # per edited item: the edit, the item, its value before and its revision after
OPERATIONS = {"set": "Set", "clear": "Clear", "add": "Add to"}
BATCH = 50  # items a transaction holds: about 25 ms of work, so reads wait little behind one
READ_CHUNK = 500


@dataclass(frozen=True)
class Target:
    """A key an edit may change: a field, or one locale of a localized one."""

    key: str
    label: str
    kind: str
    multiple: bool
    field: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def addable(self) -> bool:
        return self.kind == "tags" or self.multiple


@dataclass(frozen=True)
class Edit:
    target: Target
    op: str
    value: Any = None

    def describe(self, text: str) -> str:
        if self.op == "clear":
            return f"Clear {self.target.label}"
        return f"{OPERATIONS[self.op]} {self.target.label}: {text}"


@dataclass
class Outcome:
    edit_id: str
    changed: int = 0
    unchanged: int = 0
    refused: list[str] = field(default_factory=list)  # "title: reason", one per item refused


def targets(model: Model, codes: list[str]) -> list[Target]:
    out = []
    for f in model.fields:
        label = f.get("label") or f["name"]
        out.append(Target(f["name"], label, f["type"], bool(f.get("multiple")), f))
        if f.get("i18n"):
            out += [Target(f"{f['name']}_{c}", f"{label} ({c})", f["type"], bool(f.get("multiple")), f)
                    for c in codes]
    return out


def check(model: Model, codes: list[str], key: str, op: str, text: str) -> Edit:
    """The edit as chosen, its value read as a cell of a CSV import is (a
    number, true/false, tags comma-separated, an id, JSON); 400 naming what
    is wrong."""
    target = next((t for t in targets(model, codes) if t.key == key), None)
    if target is None:
        raise BadRequest(f"{key[:60] or 'The field'} is not a field of {model.name}", fields=["field"])
    if op not in OPERATIONS:
        raise BadRequest("Choose set, clear or add to", fields=["op"])
    if op == "clear":
        return Edit(target, op)
    if op == "add" and not target.addable:
        raise BadRequest(f"{target.label} holds one value: set it instead", fields=["op"])
    try:
        value = value_of(target.kind, target.multiple, text)
    except (ValueError, orjson.JSONDecodeError) as exc:
        raise BadRequest(f"“{text[:60]}” is not a value of {target.label} ({target.kind}): {exc}",
                         fields=["value"]) from None
    if value is None:
        raise BadRequest(f"{target.label} needs a value (Clear empties it)", fields=["value"])
    if op == "add" and not isinstance(value, list):
        value = [value]
    try:  # as a save checks it, so that a value no item could hold is said here, once
        value = check_value(target.field, value)
    except FieldError as exc:
        raise BadRequest(f"{target.label} {exc}", fields=["value"]) from None
    return Edit(target, op, value)


def new_value(item: dict[str, Any], edit: Edit) -> tuple[bool, Any]:
    """(whether the item changes, the value it gets)."""
    now = item.get(edit.target.key)
    if edit.op == "clear":
        return now not in (None, "", []), None
    if edit.op == "set":
        return now != edit.value, edit.value
    current = list(now) if isinstance(now, list) else []
    added = current + [v for v in edit.value if v not in current]
    return added != current, added


def _id(item: dict[str, Any]) -> str:
    return str(item.get("_id"))


class BulkEdits:
    """Runs bulk edits and their undo, on the content service (every write
    through it), and keeps their records."""

    def __init__(self, content: ContentService) -> None:
        self.content = content
        self.store = content.store
        self.edits = self.store.collection(EDITS)
        self.before = self.store.collection(BEFORE)

    def matching_ids(self, model: Model, spec: dict[str, Any] | None, identity: Identity, limit: int) -> list[str]:
        """The ids of every item the list's filter finds (at most `limit`)."""
        page = self.content.list_page(model.name, ReadOptions(filter=spec, fields={"_id": 1}, limit=limit, skip=0,
                                                                  drafts=True), identity)
        return [orjson.loads(row)["_id"] for row in page.rows]

    async def run(self, model: Model, ids: list[str], edit: Edit, text: str, identity: Identity,
                  progress: Callable[[int, int], None] | None = None, name_of: Callable[[dict[str, Any]], str] = _id
                  ) -> Outcome:
        outcome = Outcome(new_id())
        record = {"_id": outcome.edit_id, "model": model.name, "what": edit.describe(text), "key": edit.target.key,
                  "by": identity.actor, "by_name": identity.key_name, "at": int(time.time()), "items": len(ids),
                  "undone": False}
        async with self.store.atomic():
            self.edits.insert(record)
        done = 0

        async def one(item: dict[str, Any]) -> None:
            nonlocal done
            changes, value = new_value(item, edit)
            if changes:
                try:
                    saved = await self.content.save(model.name, {"_id": item["_id"], edit.target.key: value},
                                                    identity)
                    self.before.insert({"_id": new_id(), "edit": outcome.edit_id, "item": item["_id"],
                                        "had": edit.target.key in item, "old": item.get(edit.target.key),
                                        "rev": saved.get("_rev")})
                    outcome.changed += 1
                except NotFound:
                    pass  # deleted meanwhile: nothing to edit
                except ApiError as exc:
                    _refused(outcome, item, exc, name_of)
            else:
                outcome.unchanged += 1
            done += 1
            if progress is not None:
                progress(done, len(ids))

        await store_in_batches(self.store, self._items(model, ids, identity), one, BATCH)
        async with self.store.atomic():
            self.edits.replace({**record, "changed": outcome.changed, "unchanged": outcome.unchanged,
                                "refused": len(outcome.refused)})
        return outcome

    def _items(self, model: Model, ids: list[str], identity: Identity) -> Any:
        """The items as they are now, read a chunk at a time (between the
        batches, so a chunk is never older than a few batches)."""
        for start in range(0, len(ids), READ_CHUNK):
            chunk = ids[start:start + READ_CHUNK]
            page = self.content.list_page(model.name, ReadOptions(filter={"_id": {"$in": chunk}}, limit=len(chunk),
                                                                      skip=0, drafts=True), identity)
            yield from (orjson.loads(row) for row in page.rows)

    def get(self, edit_id: str, model: str) -> dict[str, Any]:
        record = self.edits.get(edit_id)
        if record is None or record.get("model") != model:
            raise NotFound("Bulk edit not found")
        return record

    async def undo(self, model: Model, edit_id: str, identity: Identity,
                   progress: Callable[[int, int], None] | None = None, name_of: Callable[[dict[str, Any]], str] = _id
                   ) -> Outcome:
        """Each item the edit changed gets its value before back, unless it
        was changed since (its revision moved on): those are counted."""
        record = self.get(edit_id, model.name)
        if record.get("undone"):
            raise BadRequest("This edit was undone already")
        entries = self.before.find({"edit": edit_id}, [(("_id",), 1)])
        outcome = Outcome(edit_id)
        key = record["key"]
        done = 0

        async def one(entry: dict[str, Any]) -> None:
            nonlocal done
            now = None
            try:
                now = self.content.collection(model).get(entry["item"])
                if now is None or now.get("_rev") != entry["rev"]:
                    outcome.unchanged += 1  # deleted, or changed since: left as it is
                else:
                    await self.content.save(model.name, {"_id": entry["item"], key: entry["old"]}, identity)
                    outcome.changed += 1
            except ApiError as exc:
                _refused(outcome, now or {"_id": entry["item"]}, exc, name_of)
            done += 1
            if progress is not None:
                progress(done, len(entries))

        await store_in_batches(self.store, iter(entries), one, BATCH)
        async with self.store.atomic():
            self.edits.replace({**record, "undone": True})
        return outcome


def _refused(outcome: Outcome, item: dict[str, Any], exc: ApiError, name_of: Callable[[dict[str, Any]], str]) -> None:
    outcome.refused.append(f"{name_of(item)}: {exc.message}")
