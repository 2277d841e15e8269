"""The event bus: `on(name, handler)` and `emit(name, **payload)`.

Handlers may be plain functions or coroutines. A handler of a `*.before` event
can change the payload in place or refuse the operation by raising `Reject`.
"""

from __future__ import annotations

import inspect
import logging
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from quire.catalogue import SYNCHRONOUS
from quire.errors import PreconditionFailed

log = logging.getLogger("quire.events")

Handler = Callable[..., Any]


class Reject(Exception):
    """Raised by a before-handler to cancel the operation with a message."""

    def __init__(self, message: str = "Rejected") -> None:
        super().__init__(message)
        self.message = message


@contextmanager
def refusals_as_412(prefix: str = "") -> Iterator[None]:
    """Around a before-event: a handler's `Reject` answers 412 with its
    message (after `prefix`, naming the document of a bulk write)."""
    try:
        yield
    except Reject as exc:
        raise PreconditionFailed(prefix + exc.message) from None


class Events:
    def __init__(self) -> None:
        self._handlers: dict[str, list[Handler]] = defaultdict(list)
        self.emitted: set[str] = set()

    def on(self, name: str, handler: Handler) -> Handler:
        # events of synchronous writes (declared `sync` in the catalogue) are
        # sent with `notify` inside their transaction: plain functions only
        if name in SYNCHRONOUS and inspect.iscoroutinefunction(handler):
            raise TypeError(f"a handler of {name} must be a plain function, not a coroutine: "
                            "the write that sends it is synchronous")
        self._handlers[name].append(handler)
        return handler

    def off(self, name: str, handler: Handler) -> None:
        if handler in self._handlers.get(name, []):
            self._handlers[name].remove(handler)

    def has(self, name: str) -> bool:
        return bool(self._handlers.get(name))

    async def emit(self, name: str, **payload: Any) -> None:
        """Call every handler of `name` in registration order; errors propagate."""
        self.emitted.add(name)
        for handler in list(self._handlers.get(name, ())):
            result = handler(**payload)
            if inspect.isawaitable(result):
                await result

    def notify(self, name: str, **payload: Any) -> None:
        """For events of synchronous writes (inside their transaction):
        handlers are plain functions, called in registration order; errors
        propagate and roll the write back."""
        self.emitted.add(name)
        for handler in list(self._handlers.get(name, ())):
            handler(**payload)

    async def emit_after(self, name: str, **payload: Any) -> None:
        """For after-commit events: a failing handler is logged, never raised,
        because the write it reports on has already happened."""
        try:
            await self.emit(name, **payload)
        except Exception:
            log.exception("handler of %s failed", name)
