"""The event catalogue: every event a module sends, declared once by that
module (`Module(events=[...])`), with its phase, its payload's keys,
whether its handlers must be plain functions (the write that sends it is
synchronous) and whether webhooks deliver it. Subscribers that follow
many events (webhooks) read the catalogue instead of keeping their own
lists; docs/hooks.md is checked against it (tests/test_event_catalogue.py).

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
from collections.abc import Iterable
from dataclasses import dataclass

BEFORE, INSIDE, AFTER = "before", "inside", "after"
PHASES = (BEFORE, INSIDE, AFTER)


@dataclass(frozen=True)
class EventSpec:
    name: str
    phase: str
    payload: tuple[str, ...]
    sync: bool = False  # sent by a synchronous write: handlers are plain functions
    delivered: bool = False  # webhooks deliver it (when a webhook follows it)

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ValueError(f"event {self.name}: phase must be one of {', '.join(PHASES)}")


# The names of synchronous events declared so far (as their modules are
# imported): the event bus refuses a coroutine handler of one of them.
SYNCHRONOUS: set[str] = set()


def spec(name: str, phase: str, *payload: str, sync: bool = False, delivered: bool = False) -> EventSpec:
    if sync:
        SYNCHRONOUS.add(name)
    return EventSpec(name, phase, tuple(payload), sync, delivered)


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
