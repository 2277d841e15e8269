"""The event catalogue: every event a module sends, declared once by that
module (`Module(events=[...])`), with its phase, its payload's keys,
whether its handlers must be plain functions (the write that sends it is
synchronous) and whether webhooks deliver it. Subscribers that follow
many events (webhooks) read the catalogue instead of keeping their own
lists; docs/hooks.md is checked against it (tests/test_event_catalogue.py).

An event that reports a write of a document also says which document:
its `resource` family (`content/{model}`, `pages`), the payload key that
holds it (`subject`) and whether it was stored or removed (`change`).
Followers of every write read those instead of knowing each event: the
revisions keep a history of every `versioned` one, and the audit log
records every event that declares its entry (`Audit`).

The phases, as docs/hooks.md words them:
- `BEFORE`: before the document is stored, in the write's transaction (or
  before the write begins): a handler may change what is stored, or
  `Reject` the write;
- `INSIDE`: in the write's transaction, after the document was stored: a
  handler's own writes commit with it, and a `Reject` rolls it back;
- `AFTER`: after the commit: the write has happened; a handler's error is
  logged, never raised."""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

BEFORE, INSIDE, AFTER = "before", "inside", "after"
PHASES = (BEFORE, INSIDE, AFTER)
# what a write event did to its subject: stored it (the payload carries
# `previous` or `is_update` beside it) or removed it
WRITE, REMOVE = "write", "remove"

MAX_DETAIL_ITEMS = 50  # names listed in an audit detail (changed fields, permissions); more are cut
MAX_TEXT = 200  # characters of a text kept in an audit entry (a user name tried, a reason)

Payload = dict[str, Any]


@dataclass(frozen=True)
class Audit:
    """How the audit log records an event (docs/audit.md).

    `action` names the entry (`form.save`; `item.*` becomes `item.create`
    or `item.update` by the payload's `previous` or `is_update`); the
    entry's resource and subject are the event's, unless `resource` or
    `subject_id` (a fixed id) say otherwise. `detail(payload, services)`
    gives what else the entry keeps: names and counts, never a value that
    may be secret. `author`: the payload keys that name who did it, the
    first one set (an identity, a user document or a user's id; none set
    is the public). `one_by_one=False`: the writes of `quire import` are
    not recorded each (its `import` entry stands for them)."""

    action: str
    detail: Callable[[Payload, Any], dict[str, Any]] | None = None
    author: tuple[str, ...] = ("identity",)
    one_by_one: bool = True


@dataclass(frozen=True)
class EventSpec:
    name: str
    phase: str
    payload: tuple[str, ...]
    sync: bool = False  # sent by a synchronous write: handlers are plain functions
    delivered: bool = False  # webhooks deliver it (when a webhook follows it)
    resource: str | None = None  # the family of what it writes (`{model}` is the payload's)
    subject: str | None = None  # the payload key of the document written (or of its id)
    change: str | None = None  # WRITE or REMOVE, for an event that reports one
    versioned: bool = False  # the revisions keep a history of its subject
    audit: Audit | None = None  # how the audit log records it

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"event {self.name}: phase must be one of {', '.join(PHASES)}")
        if self.change not in (None, WRITE, REMOVE):
            raise ValueError(f"event {self.name}: change must be {WRITE}, {REMOVE} or None")
        for key in (self.subject, *(self.audit.author if self.audit else ())):
            if key is not None and key not in self.payload:
                raise ValueError(f"event {self.name}: {key} is not a key of its payload")
        if (self.versioned or self.change) and not (self.resource and self.subject and self.change):
            raise ValueError(f"event {self.name}: a write event names its resource, subject and change")
        if self.versioned and self.change == WRITE and "previous" not in self.payload:
            raise ValueError(f"event {self.name}: a versioned write carries the `previous` document")

    def resource_of(self, payload: Payload) -> str:
        return (self.resource or "").format(**payload)

    def subject_of(self, payload: Payload) -> Any:
        """The id of what it wrote: a document's `_id` (else its `name`),
        or the payload's value itself when that is an id."""
        value = payload.get(self.subject) if self.subject else None
        if isinstance(value, dict):
            return value.get("_id") or value.get("name")
        return value


# The names of synchronous events declared so far (as their modules are
# imported): the event bus refuses a coroutine handler of one of them.
SYNCHRONOUS: set[str] = set()


def spec(name: str, phase: str, *payload: str, sync: bool = False, delivered: bool = False,
         resource: str | None = None, subject: str | None = None, change: str | None = None,
         versioned: bool = False, audit: Audit | str | None = None) -> EventSpec:
    """An event's declaration; `audit` may be just the entry's action."""
    if sync:
        SYNCHRONOUS.add(name)
    return EventSpec(name, phase, tuple(payload), sync, delivered, resource, subject, change, versioned,
                     Audit(audit) if isinstance(audit, str) else audit)


def catalogue(declared: Iterable[EventSpec]) -> dict[str, EventSpec]:
    """The events by name; an event declared twice is refused."""
    out: dict[str, EventSpec] = {}
    for event in declared:
        if event.name in out and out[event.name] != event:
            raise ValueError(f"event {event.name} is declared twice")
        out[event.name] = event
    return out


def matching(events: dict[str, EventSpec], pattern: str) -> list[EventSpec]:
    """The declared events a pattern (`content.*`, `*.remove`) names."""
    return [e for name, e in events.items() if fnmatch.fnmatchcase(name, pattern)]


def where(events: dict[str, EventSpec], pattern: str = "*", **facts: Any) -> list[EventSpec]:
    """The declared events a pattern names that also have these facts
    (`change=WRITE`, `versioned=True`)."""
    return [e for e in matching(events, pattern) if all(getattr(e, k) == v for k, v in facts.items())]


# -- what audit details are made of ------------------------------------------

def names(values: Any) -> list[str]:
    """A short sorted list of names for a detail: at most MAX_DETAIL_ITEMS,
    each cut to MAX_TEXT characters."""
    return sorted(str(v)[:MAX_TEXT] for v in values)[:MAX_DETAIL_ITEMS]


def text(value: Any) -> str:
    return str(value)[:MAX_TEXT]


# System fields a write always moves: not "what changed"
UNTOLD = frozenset({"_modified", "_rev", "_mby", "_cby", "_created"})


def changed(previous: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """Names of the top-level fields a write changed (every field of a new
    document), system fields every write moves left out."""
    before = previous or {}
    keys = {*before, *current} - UNTOLD
    return names(k for k in keys if before.get(k) != current.get(k))


def fields_changed(document: str) -> Callable[[Payload, Any], dict[str, Any]]:
    """A detail for `*.update` entries: the fields of `document` the write
    changed (a new document's entry has none)."""
    def detail(payload: Payload, services: Any) -> dict[str, Any]:
        previous = payload.get("previous")
        return {} if previous is None else {"fields": changed(previous, payload[document])}
    return detail
