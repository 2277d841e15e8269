"""Bulk work at a lower CPU priority (quire.processes.lower_priority,
`[server] batch_niceness`): a command's whole process, a job's thread."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from quire.processes import lower_priority


def test_a_thread_lowers_its_own_priority_and_no_other() -> None:
    seen: dict[str, int] = {}

    def bulk() -> None:
        before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        lower_priority(5)
        seen["bulk"] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) - before

    main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    thread = threading.Thread(target=bulk)
    thread.start()
    thread.join()
    assert seen["bulk"] == 5
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_before


def test_a_command_lowers_its_process_by_the_setting() -> None:
    code = ("import os; from quire.processes import lower_priority; lower_priority(7, whole_process=True); "
            "lower_priority(0, whole_process=True); print(os.getpriority(os.PRIO_PROCESS, 0))")
    base = os.getpriority(os.PRIO_PROCESS, 0)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) == min(19, base + 7)


def test_the_setting_is_checked(tmp_path: Path) -> None:
    from tests.commands import run_quire

    refused = run_quire("keys", "list", "--data", str(tmp_path / "data"), env={"QUIRE_SERVER_BATCH_NICENESS": "40"},
                        check=False)
    assert refused.returncode != 0 and "batch_niceness" in refused.stderr
