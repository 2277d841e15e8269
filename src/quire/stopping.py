"""A worker process told to stop: its open event streams (the change feed,
the studio's session events) end at once, instead of holding the worker
until the server kills it after `cli.STOP_SECONDS` (and warns that it
"refused to gracefully stop"). A client's EventSource reconnects to a
worker that serves on. Set by the server's stop signal (app.py hears it)."""

from __future__ import annotations

import threading

_STOPPING = threading.Event()


def begin() -> None:
    """The worker is stopping (any thread may say so)."""
    _STOPPING.set()


def under_way() -> bool:
    return _STOPPING.is_set()
