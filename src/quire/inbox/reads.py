"""Which submissions each user has opened (collection `inbox/reads`): one
document per user and submission, `{user, submission, form, spam}`, made
when the user first opens the submission. A user's unread count is the
count of submissions that are not spam less the count of their reads of
submissions that are not spam: two counts on indexed columns, kept by the
app's cache for the store generation, so the sidebar's badge costs two
dictionary look-ups on most pages. `spam` is copied onto the reads so the
difference stays right when a submission is marked spam; reads go with
their submission."""

from __future__ import annotations

from typing import Any

from quire.cache import Cache
from quire.ids import new_id
from quire.inbox.service import SUBMISSION_HINTS, SUBMISSIONS
from quire.store import Store

READS = "inbox/reads"


class ReadState:
    def __init__(self, store: Store, cache: Cache) -> None:
        self.store = store
        self.cache = cache
        self.reads = store.collection(READS, {"user": "text", "submission": "text", "form": "text", "spam": "bool"})
        self.submissions = store.collection(SUBMISSIONS, SUBMISSION_HINTS)
        store.ensure_indexes(READS, [[("user",), ("form",), ("spam",)], [("user",), ("spam",)],
                                     [("user",), ("submission",)], [("submission",)], [("form",)]])

    def unread(self, user: str, form_id: str | None = None) -> int:
        """Submissions (not spam) of one form, or of all, that `user` has not opened."""
        scope: dict[str, Any] = {"form": form_id} if form_id else {}
        total = self.cache.count(self.submissions, {**scope, "spam": False})
        read = self.cache.count(self.reads, {"user": user, **scope, "spam": False})
        return max(0, total - read)

    def read_ids(self, user: str, ids: list[str]) -> set[str]:
        """Those of `ids` that `user` has opened."""
        if not ids:
            return set()
        found = self.reads.pick(["submission"], {"user": user, "submission": {"$in": ids}})
        return {str(d["submission"]) for d in found}

    async def mark(self, user: str, record: dict[str, Any], read: bool = True) -> None:
        async with self.store.atomic():
            spec = {"user": user, "submission": record["_id"]}
            held = self.reads.find_one(spec)
            if read and held is None:
                self.reads.insert({"_id": new_id(), **spec, "form": record["form"],
                                   "spam": bool(record.get("spam"))})
            elif not read and held is not None:
                self.reads.delete_many(spec)

    def spam_changed(self, record_id: str, spam: bool) -> None:
        """Inside the transaction that changes the submission."""
        for doc in self.reads.find({"submission": record_id}):
            if doc.get("spam") != spam:
                self.reads.update(doc["_id"], {"spam": spam})

    def removed(self, record_ids: list[str]) -> None:
        """Inside the transaction that deletes the submissions."""
        if record_ids:
            self.reads.delete_many({"submission": {"$in": record_ids}})

    def form_removed(self, form_id: str) -> None:
        self.reads.delete_many({"form": form_id})
