"""What a module contributes to schema snapshots (see `schema.py`).

A module's part names its key in the snapshot, the key that names each of
its entries (`name`, or `i18n` for locales), and three callables that live
next to the module's service: `entries` (the site's entries as the
snapshot holds them: no ids, times, secrets or counters, so the snapshot
is the same on every environment that has the same schema), `effect`
(what changing one entry from the current to the wanted value would do to
the site's data) and `apply` (make that change through the service, with
the events an API write sends). `schema.py` only compares and orders.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

Entry = dict[str, Any]


@dataclass(frozen=True)
class Effect:
    """What a change does to the data: the documents it touches, what it
    loses (None: nothing), and why it cannot be made (None: it can)."""

    items: int = 0
    loses: str | None = None
    blocked: str | None = None


@dataclass(frozen=True)
class SchemaPart:
    key: str  # its key in the snapshot
    entries: Callable[[], list[Entry]]
    effect: Callable[[Entry | None, Entry | None], Effect]  # (current, wanted); None: absent
    apply: Callable[[Entry | None, Entry | None, Any], Awaitable[None]]  # (current, wanted, identity)
    identity: str = "name"  # the key naming an entry
    check: Callable[[Entry], Any] | None = None  # a wanted entry checked before any change (ApiError)


def without(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`doc` without `keys` (ids, times, counters: what differs between
    environments that have the same schema)."""
    return {k: v for k, v in doc.items() if k not in keys}
