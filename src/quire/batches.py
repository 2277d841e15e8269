"""Long imports in short transactions (`store_in_batches`): a bundle's
items, a Cockpit site, a CSV file. Entries are committed in batches of a
given size, and at the latest after BATCH_SECONDS, so that other writers
wait at most about that long; BATCH_GAP is the pause between batches in
which they get the lock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from quire.store import Store

BATCH_SECONDS = 0.25
# Long enough that API writers (who look for the lock every 20 ms at most)
# find it also on a busy machine: at 25 ms, with both cores saturated,
# writers met none of the 40 gaps of a 2,000-item import in 2 runs of 3.
BATCH_GAP = 0.05


async def store_in_batches(store: Store, entries: Iterator[Any], load: Callable[[Any], Awaitable[None]],
                           size: int, committed: Callable[[], None] | None = None) -> None:
    """`load` each entry inside transactions of `size` entries (or
    BATCH_SECONDS of work), with a short gap between them in which other
    writers get the lock: a long import never locks out the API.
    `committed` runs at each commit (a count read then is the batch's end)."""
    pending = next(entries, _END)
    while pending is not _END:
        # steady: after each gap the import takes its next turn as soon as
        # the writer then holding the lock is done (fair share, not starved)
        async with store.atomic(timeout=store.blocking_timeout, steady=True):
            # First of the batch's after-commit callbacks: it runs right at
            # the commit, before the events' awaits, where a Ctrl-C may land.
            if committed is not None:
                store.after_commit(committed)
            ends = time.monotonic() + BATCH_SECONDS
            for _ in range(size):
                await load(pending)
                pending = next(entries, _END)
                if pending is _END or time.monotonic() > ends:
                    break  # done, or long enough holding the lock: commit here
        # Writers of other processes poll for the lock (see
        # SqliteStore.atomic); a short gap lets them in.
        await asyncio.sleep(BATCH_GAP)



_END = object()
