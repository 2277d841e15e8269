"""One warning line per outage, not one per failed try.

Background work (the search follower's poller, the jobs runner) tries
again every round while the database is away or busy; logging each try,
or its traceback, would bury the one line an operator needs. A component
keeps an `Outage`: the first failure of a run of them is logged as a
warning, the rest are not, and the first success after them says so."""

from __future__ import annotations

import logging
import time

from quire.errors import Unavailable


class Outage:
    def __init__(self, log: logging.Logger, component: str) -> None:
        self.log = log
        self.component = component
        self.since: float | None = None  # monotonic time of the outage's first failure

    def failed(self, exc: Unavailable) -> None:
        """A try failed because the database is away or busy."""
        if self.since is None:
            self.since = time.monotonic()
            self.log.warning("%s: postponed while the database is unavailable (%s); trying again quietly",
                             self.component, exc.message)

    def succeeded(self) -> None:
        """A try got through: the end of an outage, if there was one."""
        if self.since is not None:
            self.log.warning("%s: the database is back after %.0f s; caught up", self.component,
                             time.monotonic() - self.since)
            self.since = None
