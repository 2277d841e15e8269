"""A bounded number of slots per event loop (a worker process serves from
one), for work too heavy to run many at once: image renders, aggregations.
A caller waits for a free slot at most a given time, sleeping on a
semaphore (nothing polls), and is then told to come back later (503 with
Retry-After).

With a `caller` (a key, or a client address) and a `share`, one caller
holds at most `share` slots at once: its further requests wait for its own
work, not for everyone's, so a single client sending slow work in
parallel cannot take every slot and leave the others with 503s."""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import weakref
from collections.abc import AsyncIterator, Callable, Hashable

from quire.errors import Unavailable


class _Shares:
    """The slots each caller holds on one loop; a caller's entry goes when
    it holds none, so the table is as large as the callers at work."""

    def __init__(self) -> None:
        self.semaphores: dict[Hashable, asyncio.Semaphore] = {}
        self.users: dict[Hashable, int] = {}

    @contextlib.asynccontextmanager
    async def held(self, caller: Hashable, share: int, wait: float,
                   busy: Callable[[int], Unavailable]) -> AsyncIterator[None]:
        semaphore = self.semaphores.get(caller)
        if semaphore is None:
            semaphore = self.semaphores[caller] = asyncio.Semaphore(share)
        self.users[caller] = self.users.get(caller, 0) + 1
        try:
            async with _acquired(semaphore, wait, busy):
                yield
        finally:
            self.users[caller] -= 1
            if not self.users[caller]:
                del self.users[caller], self.semaphores[caller]


class LoopSlots:
    def __init__(self, count: Callable[[], int]) -> None:
        self._count = count  # read when a loop first asks: settings may be set after construction
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary())
        self._shares: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Shares] = weakref.WeakKeyDictionary()

    @contextlib.asynccontextmanager
    async def taken(self, wait: float, busy: Callable[[int], Unavailable], caller: Hashable | None = None,
                    share: int | None = None) -> AsyncIterator[None]:
        """Hold a slot of the running loop; `busy(retry_after)` is raised when
        none frees within `wait` seconds (the wait for the caller's share
        included). `caller` and `share`: at most `share` slots for one caller
        (default: half of them, at least one)."""
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self._count())
        if caller is None:
            async with _acquired(slots, wait, busy):
                yield
            return
        shares = self._shares.get(loop)
        if shares is None:
            shares = self._shares[loop] = _Shares()
        share = share if share is not None else max(1, self._count() // 2)
        deadline = time.monotonic() + wait
        async with shares.held(caller, share, wait, busy), _acquired(
                slots, max(0.0, deadline - time.monotonic()), busy, math.ceil(wait)):
            yield


@contextlib.asynccontextmanager
async def _acquired(semaphore: asyncio.Semaphore, wait: float, busy: Callable[[int], Unavailable],
                    retry_after: int | None = None) -> AsyncIterator[None]:
    if semaphore.locked():
        try:
            await asyncio.wait_for(semaphore.acquire(), wait)
        except TimeoutError:
            raise busy(max(1, retry_after or math.ceil(wait))) from None
    else:
        await semaphore.acquire()  # free: taken without suspending
    try:
        yield
    finally:
        semaphore.release()
