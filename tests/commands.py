"""`quire <command>` run in the test's own process, as the command line runs
it (argument parsing, output, exit code, standard input, environment),
answered as `subprocess.run` answers. A new Python for each command cost
the suite about 1.5 s a command; tests whose subject is the process itself
(killed, run beside a server, its start-up) still start one."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from unittest import mock

from quire.cli import main


def run_quire(*args: str, stdin: str | None = None, env: dict[str, str] | None = None,
              check: bool = True, process: bool = False) -> subprocess.CompletedProcess[str]:
    """`quire <args>` with `stdin` (none: an empty input that is not a
    terminal, as under CI) and `env` added to the environment; in a
    process of its own (`python -m quire`) with `process=True`."""
    if process:
        done = subprocess.run([sys.executable, "-m", "quire", *args], input=stdin or "", capture_output=True,
                              text=True, timeout=300, env={**os.environ, **(env or {})})
        if check:
            assert done.returncode == 0, done.stdout + done.stderr
        return done
    out, err = io.TextIOWrapper(io.BytesIO(), "utf-8"), io.TextIOWrapper(io.BytesIO(), "utf-8")
    given = io.TextIOWrapper(io.BytesIO((stdin or "").encode()), "utf-8")
    with redirect_stdout(out), redirect_stderr(err), mock.patch.object(sys, "stdin", given), \
            mock.patch.dict(os.environ, env or {}):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    texts = []
    for stream in (out, err):
        stream.flush()
        texts.append(stream.buffer.getvalue().decode())  # type: ignore[attr-defined]
    result = subprocess.CompletedProcess(["quire", *args], code, texts[0], texts[1])
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result
