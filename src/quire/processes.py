"""Other processes of this machine, by pid (imports nothing of Quire: the
command line asks before anything else is imported)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether process `pid` runs (one of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lower_priority(niceness: int, whole_process: bool = False) -> None:
    """Run the calling thread (or, `whole_process`, the process) at a CPU
    priority `niceness` lower (`[server] batch_niceness`): bulk work (an import, a fork, a merge, a backup) beside a
    server then leaves the CPU to the requests first, on a machine with few
    cores. Only ever lowered (no privilege needed); a system that refuses
    leaves it as it was."""
    if niceness <= 0:
        return
    try:
        if whole_process:
            os.nice(niceness)
        else:  # Linux: a thread's own priority, by its id
            import threading

            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                           min(19, os.getpriority(os.PRIO_PROCESS, 0) + niceness))
    except (OSError, AttributeError):
        pass
