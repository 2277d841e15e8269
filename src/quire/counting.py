"""What the metrics count, told by the code where it happens: a write's
wait for the write lock, a read of the kept answers, a webhook delivery.
`quire.metrics` listens (when `[server] metrics` is on); this module imports
nothing, so the store and the modules tell it without importing
prometheus_client, which must be imported only after the command line has
named the workers' metrics folder (quire.cli._metrics_folder)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_listeners: dict[str, list[Callable[..., None]]] = {}


def tell(what: str, *values: Any) -> None:
    """`what` happened (`lock_wait`, `kept_read`, `delivery`, `query`), with its values."""
    for listener in _listeners.get(what, ()):
        listener(*values)


def listen(what: str, listener: Callable[..., None]) -> None:
    """Call `listener(*values)` whenever `what` is told (once per listener)."""
    listeners = _listeners.setdefault(what, [])
    if listener not in listeners:
        listeners.append(listener)


def stop_listening(what: str, listener: Callable[..., None]) -> None:
    if listener in _listeners.get(what, ()):
        _listeners[what].remove(listener)
