"""An import from Cockpit killed half-way, or interrupted, leaves whole
batches stored, and running it again completes it."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.cockpit.conftest import copy_site
from tests.cockpit.scale import scale_site

# Ctrl-C working as in a terminal, also when the suite runs in the background
INTERRUPTIBLE = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                 "sys.argv[0] = 'quire'; runpy.run_module('quire', run_name='__main__')")
ITEMS = 4_000


def _start(site: Path, data: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", INTERRUPTIBLE, "import", "--data", str(data), "--from-cockpit",
                             str(site)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "QUIRE_STORE_IMPORT_BATCH_ITEMS": "250"})


def _posts(data: Path) -> int:
    try:
        conn = sqlite3.connect(f"file:{data / 'quire.db'}?mode=ro", uri=True, timeout=30)
    except sqlite3.OperationalError:
        return 0
    try:
        return int(conn.execute('SELECT count(*) FROM "content/posts"').fetchone()[0])
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def _stop_while_storing(run: subprocess.Popen[str], data: Path, sig: int) -> tuple[int, str]:
    """Items stored once the import is stopped with `sig`, and its stderr."""
    deadline = time.monotonic() + 120
    while _posts(data) < 500:
        assert run.poll() is None, "the import ended before it could be stopped"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    run.send_signal(sig)
    _, err = run.communicate(timeout=60)
    return _posts(data), err


def test_a_killed_import_is_completed_by_running_it_again(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    scale_site(site, ITEMS)
    data = tmp_path / "data"
    stored, _ = _stop_while_storing(_start(site, data), data, signal.SIGKILL)
    assert 0 < stored < ITEMS + 5
    conn = sqlite3.connect(data / "quire.db")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    again = _start(site, data)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err
    assert f"{ITEMS + 21} items" in out
    assert _posts(data) == ITEMS + 5


def test_ctrl_c_says_how_to_finish(tmp_path: Path) -> None:
    site = copy_site(tmp_path / "cockpit")
    scale_site(site, ITEMS)
    data = tmp_path / "data"
    run = _start(site, data)
    _, err = _stop_while_storing(run, data, signal.SIGINT)
    assert run.returncode == 130
    assert "interrupted: run the same import again to complete it" in err
    assert "Traceback" not in err
