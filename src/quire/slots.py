"""A bounded number of slots per event loop (a worker process serves from
one), for work too heavy to run many at once: image renders, aggregations.
A caller waits for a free slot at most a given time, sleeping on a
semaphore (nothing polls), and is then told to come back later (503 with
Retry-After)."""

from __future__ import annotations

import asyncio
import contextlib
import math
import weakref
from collections.abc import AsyncIterator, Callable

from quire.errors import Unavailable


class LoopSlots:
    def __init__(self, count: Callable[[], int]) -> None:
        self._count = count  # read when a loop first asks: settings may be set after construction
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary())

    @contextlib.asynccontextmanager
    async def taken(self, wait: float, busy: Callable[[int], Unavailable]) -> AsyncIterator[None]:
        """Hold a slot of the running loop; `busy(retry_after)` is raised when
        none frees within `wait` seconds."""
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = asyncio.Semaphore(self._count())
        if slots.locked():
            try:
                await asyncio.wait_for(slots.acquire(), wait)
            except TimeoutError:
                raise busy(max(1, math.ceil(wait))) from None
        else:
            await slots.acquire()  # free: taken without suspending
        try:
            yield
        finally:
            slots.release()
