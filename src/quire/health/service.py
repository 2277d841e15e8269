"""Whether this instance can serve: the database answers, and the file
storage (the data folder or the bucket) does."""

from __future__ import annotations

import logging

from quire.errors import Unavailable
from quire.files import Files
from quire.store import Store

log = logging.getLogger("quire.health")

# What `checks` names by default (Cockpit's names). Quire has no separate
# memory store or session Redis, and sends mail from the jobs table with
# retries, so "memory", "redis", "smtp" and "custom" have nothing to check;
# "db" and "fs" are checked.
DEFAULT = ("db", "memory", "fs", "redis", "smtp", "custom")
PROBE = ".healthcheck"  # a key no file has: looking it up reaches the storage


class HealthService:
    def __init__(self, store: Store, files: Files | None = None) -> None:
        self.store = store
        self.files = files

    def check(self, checks: tuple[str, ...] = DEFAULT) -> None:
        """Raise when a part named in `checks` cannot be used: the database
        (`StoreUnavailable`, 503) or the file storage (503)."""
        if "db" in checks:
            self.store.get_meta("system_version")
        if "fs" in checks and self.files is not None:
            try:
                self.files.stat(PROBE)
            except Exception as exc:  # noqa: BLE001 (any failure of the storage is the answer)
                log.warning("health check: the file storage cannot be reached: %s", type(exc).__name__)
                raise Unavailable("The file storage cannot be reached; try again shortly", 1) from None
