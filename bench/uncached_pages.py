#!/usr/bin/env python3
"""Benchmark of list pages read from the store every time (kept answers off).

Under writes, every commit drops the kept answers, so reads beside writers
take this path. The posts of the content benchmark (`bench/run.py`'s data
set, 100,000 by default, reused when generated already) are served by
`quire serve --workers 2` with `[api] kept_answers_mb = 0`, once with this
code and once with the code of `--base` (taken out with `git archive`,
served from the same virtual environment), alternated over `--rounds`; wrk
(`-t2 -c32`, 10 s after a 3 s warm-up) asks:

- the first page, `GET /api/content/items/posts?limit=20`;
- the first page with authors, `GET /api/content/items/posts?populate=1&limit=20`.

Target (issue 32): at least 10 times Cockpit 2's 851 and 586 req/s on the
same kinds (measured by the issue's probe on this machine), about 8,500 req/s.
Results go to stdout and, for a standard run, to the "Uncached pages"
section of docs/benchmarks.md.

    .venv/bin/python bench/uncached_pages.py
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed import export_commit  # noqa: E402  (a sibling script, not a package)
from run import (  # noqa: E402
    DEFAULT_DOCS,
    DEFAULT_WORK,
    STANDARD_AUTHORS,
    STANDARD_POSTS,
    Server,
    _git_revision,
    ensure_data,
    free_port,
    machine_paragraph,
    parse_wrk,
    rotate_key,
    update_doc,
)

SECTION_TITLE = "Uncached pages"
BASE = "d85992b"  # main before issue 32's work
KINDS = {"first page": "/api/content/items/posts?limit=20",
         "first page, populate=1": "/api/content/items/posts?populate=1&limit=20"}
COCKPIT = {"first page": 851, "first page, populate=1": 586}
TARGET = 10.0


def wrk(base: str, key: str, path: str, seconds: float) -> float:
    done = subprocess.run(["wrk", "-t2", "-c32", f"-d{seconds:g}s", "--latency", "-H", f"api-key: {key}", base + path],
                          capture_output=True, text=True, timeout=seconds + 60, check=True)
    result = parse_wrk(done.stdout + done.stderr)
    if result.non2xx or sum(result.socket_errors.values()):
        raise RuntimeError(f"errors while reading {path}: {done.stdout}")
    return result.rps


def measure(data_dir: Path, key: str, pythonpath: str | None, work: Path, name: str) -> dict[str, float]:
    env = {"QUIRE_API_KEPT_ANSWERS_MB": "0"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    server = Server(data_dir, free_port(), 2, work / f"uncached-{name}.log", env=env)
    server.start()
    try:
        server.wait_ready()
        out = {}
        for kind, path in KINDS.items():
            wrk(server.base, key, path, 3)
            out[kind] = wrk(server.base, key, path, 10)
        return out
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BASE)
    parser.add_argument("--posts", type=int, default=STANDARD_POSTS)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args(argv)
    work = DEFAULT_WORK / "uncached"
    work.mkdir(parents=True, exist_ok=True)
    dataset = ensure_data(DEFAULT_WORK, args.posts, STANDARD_AUTHORS, fresh=False)
    key = rotate_key(dataset.data_dir)
    base_src = str(export_commit(args.base, work))
    now = _git_revision()
    rows = []
    loads = [os.getloadavg()[0]]
    for n in range(1, args.rounds + 1):
        current = measure(dataset.data_dir, key, None, work, "now")
        older = measure(dataset.data_dir, key, base_src, work, "base")
        loads.append(os.getloadavg()[0])
        for kind in KINDS:
            rows.append((n, kind, current[kind], older[kind]))
            print(f"round {n}, {kind}: {current[kind]:,.0f} req/s (now) against {older[kind]:,.0f} ({args.base})",
                  flush=True)
        time.sleep(1)
    lines = [f"| round | kind | now (`{now}`) | before (`{args.base}`) | now / before | now / Cockpit 2 |",
             "|---|---|---|---|---|---|"]
    for n, kind, current_rps, older_rps in rows:
        lines.append(f"| {n} | {kind} | {current_rps:,.0f} | {older_rps:,.0f} | {current_rps / older_rps:.2f} | "
                     f"{current_rps / COCKPIT[kind]:.1f}× |")
    verdicts = []
    for kind in KINDS:
        best = max(r[2] for r in rows if r[1] == kind)
        ratio = best / COCKPIT[kind]
        verdicts.append(f"- {kind}: best {best:,.0f} req/s, {ratio:.1f}× Cockpit 2's {COCKPIT[kind]}: "
                        f"{'met' if ratio >= TARGET else 'NOT met'} (≥ {TARGET:.0f}×)")
    table = "\n".join(lines)
    print(table)
    print("\n".join(verdicts))
    if not args.no_docs and args.posts == STANDARD_POSTS:
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/uncached_pages.py`: {args.posts:,} posts of the content benchmark, `quire serve --workers 2` "
                   "with kept answers off (`QUIRE_API_KEPT_ANSWERS_MB=0`: every request reads the store, as reads beside "
                   f"writers do), wrk `-t2 -c32` 10 s after a 3 s warm-up, this code and `{args.base}` alternated over "
                   f"{args.rounds} rounds; 1-minute load {', '.join(f'{x:.2f}' for x in loads)} (before, after each "
                   "round). Cockpit 2's figures are the issue's, measured on this machine with the same data.\n\n"
                   f"{table}\n\n" + "\n".join(verdicts) + "\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
