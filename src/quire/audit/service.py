"""The audit log: who did what to which resource, one document of
`system/audit` per action (docs/audit.md).

An entry holds when (`at`, Unix seconds), who (`who`: kind, id, name, role,
as revisions record it), what (`action`: `login`, `key.create`,
`item.update`, ...), to which resource and id, a small `detail` (names of
changed fields, a role's granted permissions; never a secret, a password,
a key or a token) and the client address (`ip`) when a request caused it.
Entries are written by the module's event handlers inside the transaction
of the change they record, so there is no change without its entry and no
entry of a change that was rolled back. A daily job drops entries older
than `[audit] keep_days`."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from quire import requestid
from quire.auth.service import Identity, who
from quire.catalogue import MAX_TEXT
from quire.config import AuditSettings
from quire.errors import BadRequest, NotFound
from quire.forwarded import current_client
from quire.ids import is_id, new_id
from quire.jobs import Daily, Job, Jobs, drop_older
from quire.store import Store
from quire.store.values import bad_text

log = logging.getLogger("quire.audit")

AUDIT = "system/audit"
# Index copies, not part of an answer (`shown`): `actor` repeats `who.id` at
# the top level (only top-level fields can be hinted and indexed, and "what
# did this key do" is asked often); `action_kind` and `resource_kind` hold
# the action up to its first "." and the resource up to its first "/", so
# the usual prefixes (`item.*`, `content/*`) are one index seek in time
# order. A range on `action` instead had to read and sort every match
# (70-270 ms for `item.*` on 100,000 entries).
HINTS = {"at": "number", "action": "text", "resource": "text", "actor": "text", "action_kind": "text",
         "resource_kind": "text"}
INDEXES: list[list[tuple[str, ...]]] = [[("at",)], [("action",), ("at",)], [("resource",), ("at",)],
                                        [("actor",), ("at",)], [("action_kind",), ("at",)],
                                        [("resource_kind",), ("at",)]]
COPIES = frozenset({"actor", "action_kind", "resource_kind"})
PRUNE = "audit.prune"


@dataclass(frozen=True)
class AuditQuery:
    """Filters of a list of entries, as the routes and the studio parse
    them: exact values, or a prefix when a value ends with `*`."""

    action: str | None = None
    resource: str | None = None
    who: str | None = None
    item: str | None = None
    start: float | None = None  # at >= start
    end: float | None = None  # at <= end

    def filter(self) -> dict[str, Any]:
        query: dict[str, Any] = {}
        for field, value, mark in (("action", self.action, "."), ("resource", self.resource, "/"),
                                   ("actor", self.who, None), ("id", self.item, None)):
            if not value or value == "*":
                continue
            head = value[:-1]
            if not value.endswith("*"):
                query[field] = value
            elif mark is not None and head.endswith(mark) and head.count(mark) == 1:
                # `item.*`: the indexed first part; not the action `item` itself
                # (`login.*` is `login.failed`, not `login`)
                query[f"{field}_kind"] = head[:-1]
                query[field] = {"$ne": head[:-1]}
            else:
                query[field] = _prefix(head)
        if self.start is not None or self.end is not None:
            at: dict[str, float] = {}
            if self.start is not None:
                at["$gte"] = self.start
            if self.end is not None:
                at["$lte"] = self.end
            query["at"] = at
        return query


def _prefix(head: str) -> dict[str, str]:
    """Texts starting with `head`, as a range an index on the field answers
    (a regular expression would read every row)."""
    last = ord(head[-1])
    if last >= 0x10FFFF:
        return {"$gte": head}
    return {"$gte": head, "$lt": head[:-1] + chr(last + 1)}


_SECONDS = re.compile(r"[0-9]{1,12}(\.[0-9]{1,6})?")
FILTERS = ("action", "resource", "who", "id")


def filter_text(name: str, value: str | None) -> str | None:
    """A text filter as sent (None or "" when absent): 400 naming `name`
    for one no entry can hold (too long, a NUL or a control character)."""
    if not value:
        return None
    if len(value) > MAX_TEXT or bad_text(value) or any(ord(c) < 32 for c in value):
        raise BadRequest(f"{name} must be a text of at most {MAX_TEXT} characters without control characters",
                         fields=[name])
    return value


def seconds(name: str, raw: str | None) -> float | None:
    """A time as Unix seconds (`1764000000`, `1764000000.5`): 400 naming
    `name` otherwise."""
    if raw is None or raw == "":
        return None
    if not _SECONDS.fullmatch(raw):
        raise BadRequest(f"{name} must be a time in Unix seconds (digits, an optional fraction)", fields=[name])
    return float(raw)


class AuditService:
    """Records entries (`record`, from the module's event handlers), lists
    them for the API and the studio, and prunes them daily."""

    def __init__(self, store: Store, settings: AuditSettings, jobs: Jobs, proxy_hops: int,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.settings = settings
        self.jobs = jobs
        self.proxy_hops = proxy_hops
        self.clock = clock
        self.entries = store.collection(AUDIT, HINTS)
        store.ensure_indexes(AUDIT, INDEXES, HINTS)
        self.daily = Daily(jobs, PRUNE, lambda store: self.prune(store=store),
                           f"audit entries older than {settings.keep_days} days", lambda: self.clock())

    # -- writing ------------------------------------------------------------

    def record(self, action: str, resource: str, item: str | None, actor: Identity | dict[str, Any],
               detail: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Write one entry: `actor` is the Identity that acted (or its `who`
        already made, for a login). Joins the transaction of the change it
        records (a transaction of its own outside of one).
        Answers the entry, or None when the audit log is off."""
        if not self.settings.enabled:
            return None
        author = actor if isinstance(actor, dict) else who(actor)
        entry = {"_id": new_id(), "at": round(self.clock(), 3), "who": author, "actor": author.get("id"),
                 "action": action, "action_kind": action.partition(".")[0], "resource": resource,
                 "resource_kind": resource.partition("/")[0], "id": item, "detail": detail or {},
                 "ip": current_client(self.proxy_hops)}
        request = requestid.current()
        if request is not None:  # the HTTP request that made the change (quire.requestid)
            entry["request"] = request
        if self.store.in_transaction():
            self.entries.insert(entry)  # the change's own transaction: no savepoint needed
        else:
            with self.store.transaction():
                self.entries.insert(entry)
        return entry

    # -- reading ------------------------------------------------------------

    def find(self, query: AuditQuery, limit: int = 50, skip: int = 0) -> tuple[list[dict[str, Any]], int]:
        """Entries matching `query`, newest first: (page, total)."""
        node = query.filter()
        page = self.entries.find(node, [(("at",), -1)], limit=limit, skip=skip)
        return [shown(entry) for entry in page], self.entries.count(node)

    def page(self, query: AuditQuery, limit: int, skip: int = 0) -> tuple[list[dict[str, Any]], bool]:
        """Entries matching `query`, newest first, without a total: (page,
        whether more follow). The studio pages this way, since counting
        every match of a broad filter over a long log costs more than the
        page itself."""
        node = query.filter()
        found = self.entries.find(node, [(("at",), -1)], limit=limit + 1, skip=skip)
        return [shown(entry) for entry in found[:limit]], len(found) > limit

    def get(self, entry_id: str) -> dict[str, Any]:
        found = self.entries.get(entry_id) if is_id(entry_id) else None
        if found is None:
            raise NotFound("Audit entry not found")
        return shown(found)

    # -- pruning ------------------------------------------------------------

    def prune(self, now: float | None = None, store: Store | None = None) -> int:
        """Drop entries older than `keep_days` (none when it is 0); with
        `store`, through that store object (the jobs runner's)."""
        return drop_older(store or self.store, AUDIT, HINTS, self.settings.keep_days,
                          self.clock() if now is None else now)

    def schedule(self) -> None:
        """Enqueue today's prune (once per cluster: the job's key is the day); a
        runner does it when it starts (`jobs.Daily`)."""
        self.daily.schedule()

    def _prune_job(self, job: Job) -> None:
        self.daily.run(job)


def shown(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as answered: without the index copies."""
    return {k: v for k, v in entry.items() if k not in COPIES}



