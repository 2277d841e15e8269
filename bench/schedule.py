#!/usr/bin/env python3
"""Benchmark of scheduled publishing: many items due in the same minute.

One server (`quire serve --workers 2`, each worker with its jobs runner, the
default settings) on a new data dir. A client creates N unpublished items
(`_state` 0) with the same `_publish_at`, the start of a coming minute;
their jobs (`content.publish`) are enqueued with the saves. From that
second on the client counts the published items (`meta.total` of a list
page) until all are, then reads every item's history: each must have been
published exactly once (one `update` revision by `schedule`, besides its
`create`), and after stopping the server every job must be done after one
attempt.

Target (issue 19): 1,000 items scheduled for the same minute, all published
within 10 s of it, each once. Results go to stdout and, for a standard run,
to the "Scheduled publishing" section of docs/benchmarks.md.

    .venv/bin/python bench/schedule.py                   # the standard run, about a minute
    .venv/bin/python bench/schedule.py --items 100 --no-docs   # a quick check
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revisions import Client, pct, start  # noqa: E402  (a sibling script, not a package)
from run import (  # noqa: E402
    DEFAULT_DOCS,
    ROOT,
    _git_revision,
    machine_paragraph,
    server_log_problems,
    update_doc,
)

SECTION_TITLE = "Scheduled publishing"
TARGET_SECONDS = 10.0
STANDARD_ITEMS = 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=STANDARD_ITEMS)
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "schedule")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args(argv)
    if args.items < 1:
        parser.error("--items must be at least 1")
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    server, key = start(work, "site", {}, workers=2)
    client = Client(server.base, key)
    try:
        status, _ = client.call("PUT", "/api/system/models/notes",
                                {"name": "notes", "fields": [{"name": "title", "type": "text"}]})
        assert status == 200, status
        now = time.time()
        due = (int(now) // 60 + 1) * 60
        if due - now < 0.02 * args.items + 10:  # time to create them all before it
            due += 60
        made_started = time.perf_counter()
        ids = []
        for n in range(args.items):
            status, item = client.call("POST", "/api/content/item/notes",
                                       {"data": {"title": f"note {n}", "_state": 0, "_publish_at": due}})
            assert status == 200, (status, item)
            ids.append(item["_id"])
        made = time.perf_counter() - made_started
        print(f"{args.items} items created in {made:.1f} s, due at {dt.datetime.fromtimestamp(due, dt.UTC):%H:%M:%S} "
              f"UTC ({due - time.time():.0f} s from now)", flush=True)
        while time.time() < due:
            time.sleep(0.05)
        client.close()  # a connection kept idle that long is closed by the server: a new one
        client = Client(server.base, key)
        counts = []
        deadline = due + 120
        published = 0
        while time.time() < deadline:
            status, page = client.call("GET", "/api/content/items/notes?limit=1&skip=0&fields=%7B%22_id%22%3A1%7D")
            assert status == 200, (status, page)
            published = page["meta"]["total"]
            counts.append((time.time() - due, published))
            if published == args.items:
                break
            time.sleep(0.05)
        all_after = counts[-1][0]
        delays, once = [], 0
        for item_id in ids:
            status, history = client.call("GET", f"/api/revisions/content/notes/{item_id}")
            assert status == 200, (status, history)
            actions = [(r["action"], r["who"]["id"]) for r in history["data"]]
            if actions == [("update", "schedule"), ("create", actions[-1][1])]:
                once += 1
            delays.append(history["data"][0]["at"] - due)
    finally:
        client.close()
        server.stop()
    from quire.config import load_settings
    from quire.store import SqliteStore

    store = SqliteStore(load_settings(server.data_dir).db_path)
    try:
        jobs = store.collection("system/jobs").find({"kind": "content.publish"})
    finally:
        store.close()
    attempts = statistics.mean(job["attempts"] for job in jobs) if jobs else 0
    done = sum(1 for job in jobs if job["state"] == "done" and job["attempts"] == 1)
    holders = len({job["holder"].rsplit(":", 1)[0] for job in jobs if job.get("holder")})
    problems = server_log_problems(work / "site.log")
    met = published == args.items and once == args.items and all_after <= TARGET_SECONDS
    table = ("| Items due the same second | all published after | publish p50 | p99 | max | published once | "
             "jobs done at the 1st attempt | workers that did them |\n|---|---|---|---|---|---|---|---|\n"
             f"| {args.items} | {all_after:.2f} s | {pct(delays, 0.5):.2f} s | {pct(delays, 0.99):.2f} s | "
             f"{max(delays):.2f} s | {once} | {done} of {len(jobs)} | {holders} |\n")
    summary = (f"All {published} of {args.items} items were published {all_after:.2f} s after their minute began "
               f"(target ≤ {TARGET_SECONDS:.0f} s), {once} exactly once (mean attempts {attempts:.2f}): "
               f"{'met' if met else 'MISSED'}.")
    print("\n" + table + "\n" + summary)
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s):\n" + "\n".join(problems[:10]))
    if args.items == STANDARD_ITEMS and not args.no_docs:
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/schedule.py`, {dt.date.today().isoformat()} (commit {_git_revision()}), load "
                   f"{load_before:.2f} at the start. One server of two workers on SQLite, default settings "
                   f"(`[jobs] poll_seconds` 10); {args.items} unpublished items created one by one with the same "
                   f"`_publish_at`, the start of a coming minute ({made:.1f} s to create them), then the published "
                   "count read every 50 ms from that second. \"Publish\" times are the `at` of each item's publish "
                   "revision, after the minute began.\n\n" + table + "\n" + summary + "\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {DEFAULT_DOCS}")
    return 0 if met and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
