"""Publishing at a set time: `_publish_at` and `_unpublish_at` (Unix
seconds) on a live item, checked here, and the jobs a write that sets them
enqueues in its transaction (carried out by `drafts.DraftWriter`)."""

from __future__ import annotations

from typing import Any

from quire.auth.service import Identity
from quire.errors import BadRequest
from quire.jobs import Jobs

SCHEDULE = ("_publish_at", "_unpublish_at")
PUBLISH_JOB = "content.publish"
UNPUBLISH_JOB = "content.unpublish"
# the latest time a schedule may name: 9999-12-31T23:59:59Z
LATEST = 253_402_300_799
# who publishes on schedule, in revisions, the audit log and `_mby`
SCHEDULER = Identity("admin", key_id="schedule", key_name="Scheduled publishing", kind="system")


def check_time(value: Any) -> str | None:
    """Why `value` is no schedule time (None: it is one, or null)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= LATEST:
        return "must be a time in whole seconds since 1970 (Unix seconds), or null to clear it"
    return None


def check_schedule(item: dict[str, Any]) -> None:
    publish, unpublish = item.get("_publish_at"), item.get("_unpublish_at")
    if publish is not None and unpublish is not None and unpublish <= publish:
        raise BadRequest("_unpublish_at must come after _publish_at", fields=["_unpublish_at"])


def drop_cleared(item: dict[str, Any]) -> None:
    """A schedule sent as null is removed, not stored as null."""
    for key in SCHEDULE:
        if key in item and item[key] is None:
            del item[key]


def enqueue_schedule(jobs: Jobs | None, model: str, item: dict[str, Any], previous: dict[str, Any] | None) -> bool:
    """Enqueue the jobs of the times the write set (in its transaction);
    True when one was enqueued (wake the runner after the commit)."""
    if jobs is None:
        return False
    added = False
    for key, kind in (("_publish_at", PUBLISH_JOB), ("_unpublish_at", UNPUBLISH_JOB)):
        at = item.get(key)
        if at is not None and (previous is None or previous.get(key) != at):
            jobs.enqueue(kind, {"model": model, "id": item["_id"], "at": at},
                         key=f"{model}/{item['_id']}@{at}", run_at=float(at))
            added = True
    return added
