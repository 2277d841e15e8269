"""Whether this instance can serve: the database answers."""

from __future__ import annotations

from quire.store import Store


class HealthService:
    def __init__(self, store: Store) -> None:
        self.store = store

    def check(self) -> None:
        """Raises when the database cannot be read (the dispatcher answers 500)."""
        self.store.get_meta("system_version")
