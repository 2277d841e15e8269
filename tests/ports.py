"""Loopback ports for the servers the tests start (Quire, PostgreSQL, SMTP,
the OpenID provider, S3).

Asking the kernel for a free port (binding port 0) and handing the number
to a server that binds it a second or two later lets two test workers be
handed the same number in between; Quire's server shares its socket
between its own workers (SO_REUSEPORT), so two servers on one port once
ran side by side with the kernel dealing one test's requests out to the
other's server. Each test worker therefore takes its ports from a range
of its own, below the kernel's range for outgoing connections (32768 and
up), in turn from a random start, skipping any port in use."""

from __future__ import annotations

import itertools
import os
import random
import socket

FIRST = 20000
SPAN = 1000  # ports per test worker: 12 workers fit below 32768

_turn = itertools.count(random.randrange(SPAN))


def _first_port() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")  # "gw3"; not set without xdist
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    return FIRST + (index % 12) * SPAN


def free_port() -> int:
    """A port on 127.0.0.1 that is free now and that no other test worker
    of this run will be handed."""
    first = _first_port()
    for _ in range(SPAN):
        port = first + next(_turn) % SPAN
        with socket.socket() as probe:  # no SO_REUSEADDR: a port in TIME_WAIT is skipped too
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"no free port in {first}-{first + SPAN - 1}")
