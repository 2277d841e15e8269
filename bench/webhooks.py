#!/usr/bin/env python3
"""Benchmark of webhook deliveries: from a save's commit to the receiver.

A server (`quire serve --workers 2`, SQLite) with one webhook following
`content.*` to a receiver in this process (http.server on 127.0.0.1, kept
connections, allow-listed by `[webhooks] allow_hosts`). Two phases:

1. Steady: `--events` content saves (10,000 by default) sent at a paced
   rate (`--rate` per second, one at a time on a kept connection); each
   save makes one delivery. Checked: every event arrives exactly once (one
   `webhook-id` per saved item, none twice); measured: commit to delivery,
   the receiver's arrival time minus the payload's `timestamp` (set in the
   save's transaction just before its commit), p50 and p99.
2. Outage: the receiver answers 500 for `--outage` seconds (60 by default),
   then 200. `--outage-events` saves are made at the start of the outage;
   retries back off from `[webhooks] retry_ms` (1 s here, doubling; 10
   attempts; automatic disabling off). Checked: after the outage every
   event is answered 200 exactly once.

Target (issue 19): p50 commit to delivery ≤ 200 ms; every event once, also
after the outage. Results go to stdout and, for a standard run, to the
"Webhooks" section of docs/benchmarks.md.

    .venv/bin/python bench/webhooks.py                      # the standard run, about 4 minutes
    .venv/bin/python bench/webhooks.py --events 500 --outage 5 --outage-events 50 --no-docs   # a quick check
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revisions import Client  # noqa: E402  (a sibling script, not a package)
from run import (  # noqa: E402  (a sibling script, not a package)
    DEFAULT_DOCS,
    ROOT,
    Server,
    _git_revision,
    free_port,
    machine_paragraph,
    server_log_problems,
    update_doc,
)

SECTION_TITLE = "Webhooks"
TARGET_P50_MS = 200.0
STANDARD = {"events": 10_000, "rate": 100, "outage": 60, "outage_events": 1000}
SETTINGS = {"QUIRE_WEBHOOKS_ALLOW_HOSTS": "127.0.0.1", "QUIRE_WEBHOOKS_RETRY_MS": "1000",
            "QUIRE_WEBHOOKS_MAX_ATTEMPTS": "10", "QUIRE_WEBHOOKS_DISABLE_AFTER": "0",
            "QUIRE_WEBHOOKS_TIMEOUT_SECONDS": "5", "QUIRE_JOBS_POLL_SECONDS": "1"}


class Receiver:
    """Records (webhook-id, item id, arrival, payload timestamp, status answered)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.failing = False
        self.records: list[tuple[str, str, float, float, int]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # kept connections, as a real receiver would offer

            def do_POST(self) -> None:  # noqa: N802
                arrived = time.time()
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                stamp = dt.datetime.fromisoformat(body["timestamp"].replace("Z", "+00:00")).timestamp()
                status = 500 if receiver.failing else 200
                with receiver.lock:
                    receiver.records.append((self.headers["webhook-id"], body["data"]["item"]["_id"], arrived,
                                             stamp, status))
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def snapshot(self) -> list[tuple[str, str, float, float, int]]:
        with self.lock:
            return list(self.records)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def paced_saves(client: Client, count: int, rate: float, tag: str) -> list[str]:
    """`count` new items at `rate` per second (as fast as possible if the
    server is slower); their ids."""
    ids = []
    started = time.monotonic()
    for n in range(count):
        due = started + n / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        status, item = client.call("POST", "/api/content/item/posts", {"data": {"title": f"{tag} {n}", "n": n}})
        assert status == 200, (status, item)
        ids.append(item["_id"])
    return ids


def wait_until(check: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return bool(check())


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=STANDARD["events"])
    parser.add_argument("--rate", type=float, default=STANDARD["rate"], help="saves per second in the steady phase")
    parser.add_argument("--outage", type=float, default=STANDARD["outage"], help="seconds the receiver answers 500")
    parser.add_argument("--outage-events", type=int, default=STANDARD["outage_events"])
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "webhooks")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args(argv)
    work: Path = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    data = work / "data"
    out = subprocess.run([sys.executable, "-m", "quire", "keys", "create", "--name", "bench", "--role", "admin",
                          "--data", str(data)], capture_output=True, text=True, check=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")}).stdout
    key = out.strip().splitlines()[-1]
    load_before = os.getloadavg()[0]
    receiver = Receiver()
    server = Server(data, free_port(), 2, work / "server.log", env=SETTINGS)
    server.start()
    try:
        server.wait_ready()
        client = Client(server.base, key)
        status, _ = client.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection", "fields": [
            {"name": "title", "type": "text"}, {"name": "n", "type": "number"}]})
        assert status == 200, status
        status, hook = client.call("POST", "/api/webhooks", {"name": "bench", "url": receiver.url,
                                                             "events": ["content.*"]})
        assert status == 200, hook
        paced_saves(client, 50, args.rate, "warm")  # connections and caches warm
        wait_until(lambda: len(receiver.snapshot()) >= 50, 30)
        warm = len(receiver.snapshot())

        started = time.monotonic()
        steady_ids = paced_saves(client, args.events, args.rate, "steady")
        saving = time.monotonic() - started
        wait_until(lambda: len(receiver.snapshot()) >= warm + args.events, 120)
        steady = receiver.snapshot()[warm:]
        load_steady = os.getloadavg()[0]

        # a new connection for each phase: the server drops one left idle while waiting
        client = Client(server.base, key)
        receiver.failing = True
        outage_started = time.monotonic()
        outage_ids = paced_saves(client, args.outage_events, args.rate, "outage")
        time.sleep(max(0.0, args.outage - (time.monotonic() - outage_started)))
        receiver.failing = False
        recovered_at = time.monotonic()

        def outage_done() -> bool:
            ok = {r[1] for r in receiver.snapshot() if r[4] == 200}
            return all(i in ok for i in outage_ids)

        wait_until(outage_done, 300)
        recovery = time.monotonic() - recovered_at
        time.sleep(2)  # anything sent twice would come now
        everything = receiver.snapshot()
        client = Client(server.base, key)
        status, log = client.call("GET", f"/api/webhooks/{hook['_id']}/deliveries?limit=1")
        logged = log["total"] if status == 200 else None
    finally:
        server.stop()
        receiver.close()

    # steady phase: each saved item once, with one webhook-id
    by_item = Counter(r[1] for r in steady)
    ids_seen = Counter(r[0] for r in steady)
    steady_once = (sorted(by_item) == sorted(steady_ids) and set(by_item.values()) == {1}
                   and set(ids_seen.values()) == {1})
    latencies = [(r[2] - r[3]) * 1000 for r in steady]
    # outage phase: each item answered 200 once, after some 500s
    outage_records = [r for r in everything if r[1] in set(outage_ids)]
    ok_per_item = Counter(r[1] for r in outage_records if r[4] == 200)
    failed_answers = sum(1 for r in outage_records if r[4] == 500)
    msg_per_item = {r[1]: r[0] for r in outage_records}
    same_id = all(r[0] == msg_per_item[r[1]] for r in outage_records)
    outage_once = (sorted(ok_per_item) == sorted(outage_ids) and set(ok_per_item.values()) == {1} and same_id)
    p50, p99 = pct(latencies, 0.5), pct(latencies, 0.99)
    met = steady_once and outage_once and p50 <= TARGET_P50_MS
    problems = server_log_problems(work / "server.log")
    rate_done = args.events / saving
    table = ("| Phase | events | result | commit → delivery p50 ms | p99 ms |\n|---|---|---|---|---|\n"
             f"| steady, {rate_done:.0f} saves/s | {args.events:,} | "
             f"{'each once' if steady_once else 'NOT each once'} | {p50:.1f} | {p99:.1f} |\n"
             f"| receiver 500 for {args.outage:.0f} s, then 200 | {args.outage_events:,} | "
             f"{'each once after the outage' if outage_once else 'NOT each once'} "
             f"({failed_answers:,} answers of 500 before; all delivered {recovery:.1f} s after it ended) | | |\n")
    summary = (f"Target: p50 ≤ {TARGET_P50_MS:.0f} ms and every event exactly once, also after the outage: "
               f"{'met' if met else 'MISSED'}.")
    print("\n" + table + "\n" + summary)
    print(f"(load {load_before:.2f} before, {load_steady:.2f} after the steady phase; {logged} attempts logged)")
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s):\n" + "\n".join(problems[:10]))
    standard = (args.events, args.rate, args.outage, args.outage_events) == tuple(STANDARD.values())
    if standard and not args.no_docs:
        settings = ", ".join(f"`{k.removeprefix('QUIRE_').lower().replace('_', '.', 1)} = {v}`"
                             for k, v in SETTINGS.items())
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/webhooks.py`, {dt.date.today().isoformat()} (commit {_git_revision()}), load "
                   f"{load_before:.2f} at the start and {load_steady:.2f} after the steady phase (`uptime`). "
                   "One server of 2 workers on SQLite, one webhook (`content.*`) to a receiver on 127.0.0.1 in the "
                   "benchmark's process; saves one at a time on a kept connection, paced at "
                   f"{args.rate:.0f}/s (the runner delivers one at a time per worker process). Commit → delivery is "
                   "the receiver's arrival time minus the payload's `timestamp`, which the save sets in its "
                   f"transaction just before the commit. Settings: {settings}.\n\n" + table + "\n" + summary + "\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {DEFAULT_DOCS}")
    return 0 if met and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
