"""Item ids: 24 lowercase hex characters, time-ordered, ObjectId-compatible."""

from __future__ import annotations

import os
import re
import threading
import time

_ID_RE = re.compile(r"^[0-9a-f]{24}$")
_lock = threading.Lock()
_counter = int.from_bytes(os.urandom(3), "big")
_process = os.urandom(5)
_pid = os.getpid()


def new_id() -> str:
    """A new id: 4 bytes seconds, 5 bytes per-process random, 3 bytes counter."""
    global _counter, _process, _pid
    with _lock:
        if os.getpid() != _pid:  # forked worker: must not share the random part
            _pid = os.getpid()
            _process = os.urandom(5)
        _counter = (_counter + 1) & 0xFFFFFF
        count = _counter
    return (int(time.time()).to_bytes(4, "big") + _process + count.to_bytes(3, "big")).hex()


def is_id(value: object) -> bool:
    return isinstance(value, str) and bool(_ID_RE.match(value))
