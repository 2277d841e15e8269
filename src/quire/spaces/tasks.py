"""Forks and merges asked for through the API (docs/spaces.md#through-the-api):
each is a job of the jobs table (a fork copies a whole site, longer than
a request may take) with a task record that any worker answers from,
`system/space_tasks`: what was asked, by whom, its state and step, and its
outcome or error.

The work itself needs whole sites (quire.forks, above this module): the
server's app gives the spaces an `Environments` (quire.served) that runs
it, and registers the jobs' handlers. A process without one (the command
line) asks quire.forks directly."""

from __future__ import annotations

import time
from typing import Any, Protocol

from quire.ids import new_id
from quire.store import Store

TASKS = "system/space_tasks"
HINTS = {"created": "number"}
FORK_JOB = "spaces.fork"
MERGE_JOB = "spaces.merge"
LANE = "spaces"  # a fork may take minutes: never in the way of other maintenance
KEPT = 100  # tasks listed, the newest first


class Environments(Protocol):
    """What the main site asks of a space's own services (quire.served):
    a fork compared and its merge plan made; its keys listed and made."""

    def diff(self, name: str) -> dict[str, Any]: ...

    def plan(self, name: str, take: str) -> dict[str, Any]: ...

    def keys(self, name: str) -> dict[str, Any]: ...

    def create_key(self, name: str, key_name: Any, role: Any, by: str) -> dict[str, Any]: ...


def new_task(store: Store, kind: str, space: str, asked: dict[str, Any], by: str) -> dict[str, Any]:
    """A task record, in the caller's transaction."""
    doc = {"_id": new_id(), "kind": kind, "space": space, "asked": asked, "by": by, "state": "pending",
           "step": "waiting for its turn", "created": round(time.time(), 3), "ended": None, "error": None,
           "result": None}
    store.collection(TASKS, HINTS).insert(doc)
    return doc


def update(store: Store, task_id: str, **changes: Any) -> None:
    """Record a task's progress (a job's own store object, in a transaction
    of its own)."""
    with store.transaction():
        tasks = store.collection(TASKS, HINTS)
        doc = tasks.get(task_id)
        if doc is None:
            return
        doc.update(changes)
        if changes.get("state") in ("done", "failed"):
            doc["ended"] = round(time.time(), 3)
        tasks.replace(doc)


def shown(doc: dict[str, Any]) -> dict[str, Any]:
    return {"id": doc["_id"], **{k: v for k, v in doc.items() if k != "_id"}}


def listed(store: Store) -> list[dict[str, Any]]:
    tasks = store.collection(TASKS, HINTS)
    if not tasks.exists():
        return []
    return [shown(d) for d in tasks.find(sort=[(("created",), -1)], limit=KEPT)]


def one(store: Store, task_id: str) -> dict[str, Any] | None:
    tasks = store.collection(TASKS, HINTS)
    found = tasks.get(task_id) if tasks.exists() else None
    return shown(found) if found is not None else None
