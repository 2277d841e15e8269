"""A clean start: `quire --help`, `quire demo` and `quire serve` print no
warning a user would have to learn to ignore, with Python's warnings turned
into errors (a library that warns at import fails here first)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.serving import free_port

STRICT = {**os.environ, "PYTHONWARNINGS": "error", "PYTHONUNBUFFERED": "1"}


def _quire(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-W", "error", "-m", "quire", *args],
                          capture_output=True, text=True, timeout=timeout, env=STRICT)


def _no_warnings(text: str) -> None:
    lowered = text.lower()
    assert "warning" not in lowered and "deprecat" not in lowered, text


def test_help_runs_clean() -> None:
    done = _quire("--help")
    assert done.returncode == 0, done.stderr
    _no_warnings(done.stdout + done.stderr)


def test_demo_and_serve_run_clean(tmp_path: Path) -> None:
    data = tmp_path / "demo"
    done = _quire("demo", "--data", str(data))
    assert done.returncode == 0, done.stderr
    _no_warnings(done.stdout + done.stderr)

    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-W", "error", "-m", "quire", "serve", "--data", str(data), "--port", str(port),
             "--workers", "2"], stdout=sink, stderr=subprocess.STDOUT, env=STRICT)
    try:
        deadline = time.monotonic() + 90  # a loaded machine starts two workers slowly
        while True:
            try:
                # the SSO and admin modules are imported by every worker: a login page pulls them in
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/auth/login", timeout=30) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/content/items/posts?limit=1", timeout=30) as r:
            assert r.status == 200
    finally:
        proc.terminate()
        proc.wait(15)
    _no_warnings(log.read_text())
