#!/usr/bin/env python3
"""Benchmark of `quire backup` and `quire restore`: the content benchmark's
100,000 posts with `--gigabytes` of files in the uploads (incompressible,
4 MB each), served by `quire serve --workers 2` (SQLite). One client saves
posts one after the other the whole time; its save latency is measured in
windows without a backup and while `quire backup` runs, alternated over
`--rounds`. Then the archive is restored into an empty folder, timed.

    .venv/bin/python bench/backup.py                    # about 3 minutes
    .venv/bin/python bench/backup.py --gigabytes 0.1 --rounds 1 --no-docs
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed import admin_key  # noqa: E402  (sibling scripts, not a package)
from revisions import Client  # noqa: E402
from run import (  # noqa: E402
    DEFAULT_DOCS,
    DEFAULT_WORK,
    Server,
    ensure_data,
    free_port,
    machine_paragraph,
    update_doc,
)

SECTION_TITLE = "Backups"
FILE_MB = 4
STANDARD = {"gigabytes": 1.0, "rounds": 2, "window": 10.0}


class Saver:
    """One client saving random posts one after the other; each save's
    latency with the time it ended."""

    def __init__(self, base: str, key: str, ids: list[str]) -> None:
        self.base, self.key, self.ids = base, key, ids
        self.samples: list[tuple[float, float]] = []  # (ended at, milliseconds)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        client = Client(self.base, self.key)
        rng = random.Random(5)
        while not self.stop.is_set():
            started = time.perf_counter()
            status, _ = client.call("POST", "/api/content/item/posts",
                                    {"data": {"_id": rng.choice(self.ids), "title": f"Saved {rng.random()}"}})
            ended = time.perf_counter()
            if status == 200:
                self.samples.append((ended, (ended - started) * 1000))
        client.close()

    def between(self, start: float, end: float) -> list[float]:
        return [ms for at, ms in self.samples if start <= at <= end]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def add_files(uploads: Path, gigabytes: float) -> int:
    folder = uploads / "bench-backup"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    count = max(1, int(gigabytes * 1024 / FILE_MB))
    for n in range(count):
        (folder / f"blob-{n:05d}.bin").write_bytes(os.urandom(FILE_MB * 1024 * 1024))
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=100_000)
    parser.add_argument("--gigabytes", type=float, default=STANDARD["gigabytes"])
    parser.add_argument("--rounds", type=int, default=STANDARD["rounds"])
    parser.add_argument("--window", type=float, default=STANDARD["window"], help="seconds of a window without a backup")
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK / "backup")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args(argv)
    dataset = ensure_data(DEFAULT_WORK, args.posts, 200, fresh=False)
    shutil.rmtree(args.work, ignore_errors=True)
    data_dir = args.work / "data"
    data_dir.mkdir(parents=True)
    shutil.copy2(dataset.data_dir / "quire.db", data_dir / "quire.db")
    files = add_files(data_dir / "uploads", args.gigabytes)
    ids = dataset.ids_file.read_text().split()
    key = admin_key(data_dir, None)
    server = Server(data_dir, free_port(), 2, args.work / "server.log")
    server.start()
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")}
    rows = []
    backups: list[float] = []
    archive = args.work / "site.tar"
    try:
        server.wait_ready()
        saver = Saver(server.base, key, ids)
        saver.thread.start()
        time.sleep(2)  # warm
        for n in range(args.rounds):
            start = time.perf_counter()
            time.sleep(args.window)
            quiet = saver.between(start, time.perf_counter())
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "quire", "backup", "--data", str(data_dir), str(archive)],
                           env=env, check=True, capture_output=True)
            took = time.perf_counter() - start
            busy = saver.between(start, time.perf_counter())
            backups.append(took)
            load = os.getloadavg()[0]
            rows.append(f"| {n + 1} | {len(quiet)} | {percentile(quiet, 0.5):.1f} | {percentile(quiet, 0.99):.1f} | "
                        f"{took:.1f} s | {len(busy)} | {percentile(busy, 0.5):.1f} | {percentile(busy, 0.99):.1f} | "
                        f"{percentile(busy, 0.99) / percentile(quiet, 0.99):.2f} | {load:.2f} |")
            print(rows[-1], flush=True)
        saver.stop.set()
        saver.thread.join()
    finally:
        server.stop()
    size = archive.stat().st_size
    restored = args.work / "restored"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "quire", "restore", "--data", str(restored), str(archive)],
                   env=env, check=True, capture_output=True)
    restore_took = time.perf_counter() - start
    print(f"archive {size / 1e9:.2f} GB; restore {restore_took:.1f} s")
    table = ("| round | saves without | p50 ms | p99 ms | backup took | saves during | p50 ms | p99 ms | "
             "p99 during / without | load (1 min) |\n|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows))
    print(table)
    standard = all(getattr(args, k) == v for k, v in STANDARD.items()) and args.posts == 100_000
    if standard and not args.no_docs:
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/backup.py`: the content benchmark's {args.posts:,} posts and {files} files of "
                   f"{FILE_MB} MB ({args.gigabytes:g} GB, incompressible) in the uploads, served by `quire serve "
                   "--workers 2` (SQLite). One client saves random posts one after the other all the time; its "
                   f"save latency in a {args.window:g} s window without a backup and while `quire backup` runs, "
                   f"alternated over {args.rounds} rounds. Target (issue 35): p99 during a backup at most 2x "
                   "the p99 without.\n\n"
                   f"{table}\n\nThe archive: {size / 1e9:.2f} GB. `quire restore` of it into an empty folder "
                   f"(store, files, indexes and search built again): {restore_took:.1f} s.\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
    shutil.rmtree(args.work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
