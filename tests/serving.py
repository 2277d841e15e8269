"""Start the real server (`quire serve --workers 2`) on a free loopback
port for end-to-end tests, with an admin key, and stop it afterwards."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.commands import run_quire
from tests.ports import free_port


@contextlib.contextmanager
def quire_server(data: Path, env: dict[str, str] | None = None,
                 port: int | None = None) -> Iterator[tuple[str, str, Path]]:
    """(base URL, admin key, log file) of a server on `data` (on `port`, or a free one)."""
    out = run_quire("keys", "create", "--name", "e2e", "--role", "admin", "--data", str(data), env=env).stdout
    key = out.strip().splitlines()[-1]
    proc, base, log = start_server(data, env, port)
    try:
        yield base, key, log
    finally:
        stop_process(proc)


def start_server(data: Path, env: dict[str, str] | None = None, port: int | None = None,
                 own_group: bool = False) -> tuple[subprocess.Popen[Any], str, Path]:
    """`quire serve --workers 2` on `data`, once it answers: (process, base
    URL, log file). `own_group`: in a process group of its own, which a
    test may kill whole (`os.killpg(proc.pid, SIGKILL)`: the server and its
    workers, as a machine that dies)."""
    port = port or free_port()
    log = data.parent / f"server-{port}.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "quire", "serve", "--data", str(data), "--port", str(port), "--workers", "2"],
            stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            start_new_session=own_group,
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/api/system/healthcheck", timeout=2) as r:
                if r.status == 200:
                    return proc, base, log
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                stop_process(proc)
                raise RuntimeError("server did not start:\n" + log.read_text()) from None
            time.sleep(0.1)


def stop_process(proc: subprocess.Popen[Any], seconds: float = 15) -> None:
    """SIGTERM, and SIGKILL if it has not ended after `seconds`."""
    proc.terminate()
    try:
        proc.wait(seconds)
    except subprocess.TimeoutExpired:
        proc.kill()
