"""Submissions per client and form in a sliding window, counted in the
database so that every worker process sees the same counts. Clients are
kept as a hash of (form, address): no address is stored."""

from __future__ import annotations

import hashlib
import math
import time

from quire.store import SqliteStore

RATES = "inbox/rates"


class RateLimiter:
    def __init__(self, store: SqliteStore, limit: int, window: int) -> None:
        self.store = store
        self.limit = limit
        self.window = window
        self.rates = store.collection(RATES)
        self._hits = 0

    async def hit(self, form_id: str, client: str, now: float | None = None) -> int | None:
        """Count one submission; the seconds to wait when over the limit
        (nothing is counted then), else None. A limit of 0 turns it off."""
        if self.limit <= 0:
            return None
        now = time.time() if now is None else now
        key = hashlib.sha256(f"{form_id}|{client}".encode()).hexdigest()[:32]
        async with self.store.atomic():  # one coroutine at a time, one process at a time
            doc = self.rates.get(key)
            times = [t for t in (doc or {}).get("times", []) if t > now - self.window]
            if len(times) >= self.limit:
                return max(1, math.ceil(times[0] + self.window - now))
            self.rates.replace({"_id": key, "times": [*times, now], "last": now})
            self._hits += 1
            if self._hits % 200 == 0:  # forget idle clients now and then
                self.rates.delete_many({"last": {"$lt": now - self.window}})
        return None
