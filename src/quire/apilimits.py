"""Requests per minute per API key, and per client address for calls
without a key, limited per role (`[api] rate_limits`, docs/permissions.md).

Counting every request in the database would put a write in every read;
instead each worker counts in memory and adds its counts to the shared
ones (`system/rates`, one row per key and minute) once it has counted a
twentieth of the key's limit (at most once a second), reading back what
every worker and instance counted. A key over its limit is refused in
every worker from its next share on; meanwhile each worker may let
through what it counts itself, so the limit holds to within about a
twentieth of it (or a second's requests) per worker. A key far from its
limit costs no database write. Minutes are the wall
clock's, the same in every process: a window ends for all at once.

Answers carry the IETF draft's fields (draft-ietf-httpapi-ratelimit-headers):
`RateLimit-Policy: "minute";q=<limit>;w=60` and `RateLimit:
"minute";r=<remaining>;t=<seconds to the window's end>`; a refusal is 429
with `Retry-After`."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import math
import time
from collections.abc import Callable

from quire.errors import ApiError
from quire.store import Store

log = logging.getLogger("quire.apilimits")

RATES = "system/rates"
WINDOW = 60  # seconds: limits are per minute
SYNC_SECONDS = 1.0
SHARE_PART = 20  # a worker shares its counts of a bucket after 1/20 of its limit


class TooManyRequests(ApiError):
    status = 429


class ApiLimits:
    def __init__(self, store: Store, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock
        self.rows = store.collection(RATES)
        self.window = -1
        self.local: dict[str, int] = {}  # counted here, not yet added to the shared rows
        self.shared: dict[str, int] = {}  # every worker's counts as last read (this one's added ones included)
        self._synced = 0.0
        self._syncing = False
        self._policies: dict[int, tuple[tuple[bytes, bytes], int]] = {}  # limit -> its header, when to share

    def hit(self, bucket: str, limit: int) -> list[tuple[bytes, bytes]]:
        """Count one request of `bucket` (a key's id, or `addr:<address>`)
        against `limit` per minute: the answer's rate headers; 429 when the
        minute's requests are used up (nothing is counted then)."""
        now = self.clock()
        window = int(now // WINDOW)
        if window != self.window:
            self.window, self.local, self.shared = window, {}, {}
            self._clear_old(window)
        reset = math.ceil((window + 1) * WINDOW - now) or 1
        local = self.local.get(bucket, 0)
        used = self.shared.get(bucket, 0) + local
        known = self._policies.get(limit)
        if known is None:
            known = self._policies[limit] = ((b"ratelimit-policy", f'"minute";q={limit};w={WINDOW}'.encode()),
                                             max(1, limit // SHARE_PART))
        policy, share_at = known
        if used >= limit:
            refused = TooManyRequests(f"Too many requests: at most {limit} per minute for this key (or "
                                      f"address); try again in {reset} s")
            refused.headers = {"Retry-After": str(reset), "RateLimit-Policy": policy[1].decode(),
                               "RateLimit": f'"minute";r=0;t={reset}'}
            raise refused
        self.local[bucket] = local = local + 1
        # Sharing is a write, and every write makes each worker's kept answers
        # be made again: a worker shares once it has counted a twentieth of a
        # bucket's limit (at most once a second), so a key far from its limit
        # costs no write at all.
        if local >= share_at and now - self._synced >= SYNC_SECONDS and not self._syncing:
            self._synced = now
            with contextlib.suppress(RuntimeError):  # no running loop (a test calling it directly)
                self._syncing = True
                asyncio.get_running_loop().create_task(self.sync())
        return [policy, (b"ratelimit", b'"minute";r=%d;t=%d' % (limit - used - 1, reset))]

    async def sync(self) -> None:
        """Add this worker's counts to the shared ones and read them back."""
        try:
            window, counted = self.window, self.local
            self.local = {}
            async with self.store.atomic():
                self.store.ensure_table(RATES)
                totals = {}
                for bucket, count in counted.items():
                    row_id = f"{window}:{_hashed(bucket)}"
                    row = self.rows.get(row_id)
                    total = int(row["n"]) + count if row else count
                    self.rows.replace({"_id": row_id, "w": window, "n": total})
                for bucket in set(self.shared) | set(counted):
                    row = self.rows.get(f"{window}:{_hashed(bucket)}")
                    totals[bucket] = int(row["n"]) if row else 0
            if window == self.window:  # (a minute that ended meanwhile: its counts are done with)
                self.shared.update(totals)
        except Exception:  # a busy store: the counts wait for the next sync, requests go on
            if self.window == window:
                for bucket, count in counted.items():
                    self.local[bucket] = self.local.get(bucket, 0) + count
            log.warning("could not share the API rate counts; trying again", exc_info=True)
        finally:
            self._syncing = False

    def _clear_old(self, window: int) -> None:
        """Drop the rows of minutes gone, once a minute per worker. Looked
        for first: a write, even one that changes nothing, makes this
        worker's kept answers be made again."""
        async def drop() -> None:
            with contextlib.suppress(Exception):
                old = {"w": {"$lt": window - 1}}
                if not self.rows.exists() or self.rows.find_one(old) is None:
                    return
                async with self.store.atomic():
                    self.rows.delete_many(old)
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop().create_task(drop())


def _hashed(bucket: str) -> str:
    """No key id or address is stored as it is."""
    return hashlib.sha256(bucket.encode()).hexdigest()[:32]
