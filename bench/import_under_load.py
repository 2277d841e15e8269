#!/usr/bin/env python3
"""Benchmark of an import beside API writes: is its share of the lock fair?

A server (`quire serve --workers 2`, SQLite) with model `posts`; `quire
import` of a bundle of `--items` items into it, timed, once with the server
idle and once while `--writers` clients update items one save after the
other and wrk reads the first page of posts. The API is served first (the
import commits in short batches with a pause between them), but the import
must not be starved: its time under load is reported beside its time alone,
with the saves the writers made meanwhile.

    .venv/bin/python bench/import_under_load.py            # about a minute
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mixed import FIELDS, Api, admin_key  # noqa: E402  (a sibling script, not a package)
from run import ROOT, Server, free_port  # noqa: E402


def bundle(path: Path, items: int) -> None:
    rng = random.Random(7)
    posts = [{"_id": f"{n:024x}", "_state": 1, "_created": 1_790_000_000, "_modified": 1_790_000_000,
              "title": f"Imported {n}", "summary": "A summary " * 10, "body": "Body text. " * 100,
              "rating": rng.randint(1, 5), "tags": ["a"], "category": "news"} for n in range(items)]
    fields = [f for f in FIELDS if f["type"] != "asset"]
    path.write_text(json.dumps({"quire": 1, "models": [{"name": "posts", "type": "collection", "fields": fields}],
                                "items": {"posts": posts}}))


def timed_import(data_dir: Path, path: Path) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")}
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "quire", "import", "--data", str(data_dir), str(path)], env=env,
                   check=True, capture_output=True)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=3)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "import_load")
    args = parser.parse_args(argv)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    data_dir = args.work / "data"
    key = admin_key(data_dir, None)
    path = args.work / "bundle.json"
    bundle(path, args.items)
    server = Server(data_dir, free_port(), 2, args.work / "server.log")
    server.start()
    try:
        server.wait_ready()
        alone = timed_import(data_dir, path)
        api = Api(server.base, key)
        ids = [d["_id"] for d in api.call("GET", "/api/content/items/posts?fields=%7B%22_id%22%3A1%7D")[1]]
        api.close()
        stop = threading.Event()
        saves = [0]

        def write(n: int) -> None:
            client = Api(server.base, key)
            rng = random.Random(n)
            while not stop.is_set():
                status, _ = client.call("POST", "/api/content/item/posts",
                                        {"data": {"_id": rng.choice(ids), "title": f"Edited {rng.random()}"}})
                saves[0] += status == 200
            client.close()

        writers = [threading.Thread(target=write, args=(n,)) for n in range(args.writers)]
        for thread in writers:
            thread.start()
        reads = subprocess.Popen(["wrk", "-t1", "-c2", "-d600s", "-H", f"api-key: {key}",
                                  server.base + "/api/content/items/posts?limit=20"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2)
        before = saves[0]
        loaded = timed_import(data_dir, path)
        during = saves[0] - before
        stop.set()
        reads.terminate()
        for thread in writers:
            thread.join()
    finally:
        server.stop()
    print(f"import of {args.items:,} items: alone {alone:.1f} s; beside {args.writers} writers and wrk reads "
          f"{loaded:.1f} s ({loaded / alone:.1f}x), {during:,} API saves meanwhile "
          f"({during / loaded:.0f}/s); load {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
