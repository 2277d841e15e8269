"""One warning line per outage, not one per failed try.

Background work (the search follower's poller, the jobs runner) tries
again every round while the database is away or busy; logging each try,
or its traceback, would bury the one line an operator needs. A component
keeps an `Outage`: the first failure of a run of them is logged as a
warning, the rest are not, and the first success after them says so."""

from __future__ import annotations

import logging
import threading
import time

from quire.errors import Unavailable


class Outage:
    """Shared by a component's threads (the jobs runner's lanes): one line
    per outage whichever thread meets it."""

    def __init__(self, log: logging.Logger, component: str) -> None:
        self.log = log
        self.component = component
        self.since: float | None = None  # monotonic time of the outage's first failure
        self._lock = threading.Lock()

    def failed(self, exc: Unavailable) -> None:
        """A try failed because the database is away or busy."""
        with self._lock:
            first = self.since is None
            if first:
                self.since = time.monotonic()
        if first:
            self.log.warning("%s: postponed while the database is unavailable (%s: %s); trying again quietly",
                             self.component, type(exc).__name__, exc.message)

    def succeeded(self) -> None:
        """A try got through: the end of an outage, if there was one."""
        with self._lock:
            since, self.since = self.since, None
        if since is not None:
            self.log.warning("%s: the database answers again after %.0f s; work goes on", self.component,
                             time.monotonic() - since)
