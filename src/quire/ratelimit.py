"""Attempts per (scope, client) in a sliding window, counted in the
database so that every worker process sees the same counts: form
submissions per form and address, admin logins per user name and per
address. Clients are kept as a hash: no address or name is stored."""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Sequence

from quire.store import Store

RATES = "inbox/rates"


class RateLimiter:
    def __init__(self, store: Store, limit: int, window: int, collection: str = RATES) -> None:
        self.store = store
        self.limit = limit
        self.window = window
        self.rates = store.collection(collection)
        self._hits = 0

    async def hit(self, scope: str, client: str, now: float | None = None) -> int | None:
        """Count one attempt; the seconds to wait when over the limit
        (nothing is counted then), else None. A limit of 0 turns it off."""
        return await self.hit_all([(scope, client)], now)

    async def hit_all(self, clients: Sequence[tuple[str, str]], now: float | None = None) -> int | None:
        """Count one attempt for each (scope, client), all or none: the
        seconds to wait when any of them is over the limit (nothing is
        counted then), else None. Checked and counted in one write
        transaction, which SQLite holds for one process at a time: two
        workers cannot both pass at the last free attempt."""
        if self.limit <= 0:
            return None
        now = time.time() if now is None else now
        async with self.store.atomic():  # one coroutine at a time, one process at a time
            recent = {_key(scope, client): self._recent(_key(scope, client), now) for scope, client in clients}
            full = [times for times in recent.values() if len(times) >= self.limit]
            if full:
                return max(max(1, math.ceil(times[0] + self.window - now)) for times in full)
            for key, times in recent.items():
                self.rates.replace({"_id": key, "times": [*times, now], "last": now})
            self._hits += 1
            if self._hits % 200 == 0:  # forget idle clients now and then
                self.rates.delete_many({"last": {"$lt": now - self.window}})
        return None

    async def give_back(self, scope: str, client: str, at: float) -> None:
        """Uncount the attempt counted `at` (a login that turned out right
        was counted before the password was checked)."""
        if self.limit <= 0:
            return
        key = _key(scope, client)
        async with self.store.atomic():
            doc = self.rates.get(key)
            times = list((doc or {}).get("times", []))
            if at in times:
                times.remove(at)
                self.rates.replace({**(doc or {}), "times": times})

    async def clear(self, scope: str, client: str) -> None:
        """Forget (scope, client): a successful login clears its failures."""
        async with self.store.atomic():
            self.rates.delete(_key(scope, client))

    def _recent(self, key: str, now: float) -> list[float]:
        doc = self.rates.get(key)
        return [t for t in (doc or {}).get("times", []) if t > now - self.window]


def _key(scope: str, client: str) -> str:
    return hashlib.sha256(f"{scope}|{client}".encode()).hexdigest()[:32]
