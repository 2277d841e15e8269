"""Running a service's coroutine from code that is not on an event loop:
a job runner's thread, the command line, a test.

Writes of the async services (content, pages, assets, forms) are
coroutines, and so are their events' handlers; a caller outside any loop
runs them with `run_here`, on an event loop of its thread's own, made the
first time and kept for the thread's life. A loop per call
(`asyncio.run`) was made and torn down for every scheduled publish and
left the store an asyncio lock per loop it had seen."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

class _Loop:
    """A thread's loop; closed with the thread (its local goes), if the
    thread did not close it first (`close_here`)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        if not self.loop.is_closed() and not self.loop.is_running():
            self.loop.close()


_here = threading.local()


def _loop() -> asyncio.AbstractEventLoop:
    held: _Loop | None = getattr(_here, "held", None)
    if held is None or held.loop.is_closed():
        held = _here.held = _Loop()
    return held.loop


def run_here(work: Coroutine[Any, Any, T]) -> T:
    """Run `work` to its end on this thread's own loop and answer its
    result (its exception propagates). Code on an event loop awaits
    instead: a loop cannot wait for another on its own thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        work.close()
        raise RuntimeError("run_here was called on an event loop: await the coroutine instead")
    return _loop().run_until_complete(work)


def close_here() -> None:
    """Close this thread's loop (a runner thread that stops): what it
    still had scheduled is cancelled and its executor shut down."""
    held: _Loop | None = getattr(_here, "held", None)
    if held is None or held.loop.is_closed():
        return
    loop = held.loop
    try:
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()
        _here.held = None
