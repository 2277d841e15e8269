"""A clean start: `quire --help`, `quire demo` and `quire serve` print no
warning a user would have to learn to ignore, with Python's warnings turned
into errors (a library that warns at import fails here first)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.ports import free_port

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


def test_make_runs_demo_is_quiet_and_ends_with_the_login(tmp_path: Path) -> None:
    """What `make run` runs: the server's start-up lines, then the login
    (password, key, form token) last, and no line per request after it, so
    the login stays on screen; `make login` prints it again."""
    data = tmp_path / "demo"
    port = free_port()
    log = tmp_path / "run.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-W", "error", "-m", "quire", "demo", "--data", str(data), "--serve", "--make",
             "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT, env=STRICT)
    try:
        deadline = time.monotonic() + 90
        while "These again: make login" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        for path in ("/studio", "/auth/login", "/api/content/items/posts", "/nope"):
            with contextlib.suppress(urllib.error.HTTPError), \
                    urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as answer:
                answer.read()  # whole answers: this test is about the output, not clients that leave
        time.sleep(0.5)
    finally:
        proc.terminate()
        proc.wait(15)
    text = log.read_text()
    _no_warnings(text)
    lines = text.splitlines()
    assert "Serve it with" not in text and not any("/api/content" in line and " 200 " in line for line in lines)
    ready = lines.index(next(line for line in lines if line.startswith("The demo is ready at")))
    assert any("Listening at" in line for line in lines[:ready])  # the server's own lines come first
    tail = "\n".join(lines[ready:])
    password = tail.split("password ")[1].split()[0]
    # every address printed is the one served (--port), not the settings' default
    assert f"open http://127.0.0.1:{port}/ and log in" in tail and f"(POST http://127.0.0.1:{port}/api/inbox" in tail
    key = next(line for line in lines[ready:] if line.startswith("qk_"))
    again = _quire("demo", "--login", "--data", str(data))
    assert again.returncode == 0 and f"password {password}" in again.stdout
    assert again.stdout.strip().splitlines()[-1] == key  # the key stays the last line
    assert (data / "demo-login.txt").stat().st_mode & 0o077 == 0  # only its owner reads the password
