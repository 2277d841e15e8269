#!/usr/bin/env python3
"""Benchmark of the jobs table's lanes: scheduled publishing behind slow webhooks.

One server (`quire serve --workers 2`, SQLite, `[webhooks] concurrency` 4,
timeout 3 s) with one webhook following `content.*` to a receiver in this
process. For each receiver kind, `--queued` saves (50 by default) each
queue a delivery to it, and right after them `--scheduled` unpublished items
(5) are created with `_publish_at` at T, T+2 s, T+4 s, ... (T a few seconds
ahead), while the deliveries are still queued. Two receivers:

- slow: answers 200 after 2.5 s (each delivery takes 2.5 s);
- trickle: sends its status line one byte every 2 s, so each attempt is cut
  off by the 3 s deadline (logged as timed out; retries are set an hour away).

Measured: each publish's delay, the `at` of the item's publish revision
minus its `_publish_at`, and how many deliveries the receiver had not yet
got at that moment (the backlog the publish did not wait for). Before lanes
one runner thread per process ran every kind in turn, and the issue saw
publishes 24-27 s late behind 16 deliveries to a 2.5 s receiver and 61.5 s
late behind two trickling ones.

Target: every publish within 2 s of its time. Results go to stdout and,
for a standard run, to the "Lanes" section of docs/benchmarks.md.

    .venv/bin/python bench/lanes.py                  # the standard run, about a minute
    .venv/bin/python bench/lanes.py --queued 20 --no-docs
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revisions import Client, start  # noqa: E402  (a sibling script, not a package)
from run import (  # noqa: E402
    DEFAULT_DOCS,
    ROOT,
    _git_revision,
    machine_paragraph,
    server_log_problems,
    update_doc,
)

SECTION_TITLE = "Lanes"
TARGET_SECONDS = 2.0
STANDARD = {"queued": 50, "scheduled": 5}
SLOW_SECONDS = 2.5
TRICKLE_GAP = 2.0
SETTINGS = {"QUIRE_WEBHOOKS_ALLOW_HOSTS": "127.0.0.1", "QUIRE_WEBHOOKS_RETRY_MS": "3600000",
            "QUIRE_WEBHOOKS_MAX_ATTEMPTS": "2", "QUIRE_WEBHOOKS_DISABLE_AFTER": "0",
            "QUIRE_WEBHOOKS_TIMEOUT_SECONDS": "3", "QUIRE_WEBHOOKS_CONCURRENCY": "4"}


class SlowReceiver:
    """Answers every POST with 200 after `SLOW_SECONDS`; counts arrivals."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with receiver.lock:
                    receiver.arrived.append(time.time())
                time.sleep(SLOW_SECONDS)
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def count_before(self, at: float) -> int:
        with self.lock:
            return sum(1 for t in self.arrived if t <= at)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class TrickleReceiver:
    """Reads each request, then sends its status line a byte every
    `TRICKLE_GAP` seconds until the sender gives up; counts arrivals."""

    def __init__(self) -> None:
        self.arrived: list[float] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                with self.lock:
                    self.arrived.append(time.time())
                for byte in b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n":
                    if self.stop.wait(TRICKLE_GAP):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:  # the sender cut it off
                return

    def count_before(self, at: float) -> int:
        with self.lock:
            return sum(1 for t in self.arrived if t <= at)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def phase(client: Client, receiver: SlowReceiver | TrickleReceiver, name: str, queued: int,
          scheduled: int) -> list[dict[str, Any]]:
    """Queue `queued` deliveries to `receiver`, schedule `scheduled`
    publishes 2 s apart, and measure each publish's delay and backlog."""
    status, hook = client.call("POST", "/api/webhooks", {"name": name, "url": receiver.url, "events": ["content.*"]})
    assert status == 200, (status, hook)
    for n in range(queued):
        status, item = client.call("POST", "/api/content/item/notes", {"data": {"title": f"{name} {n}"}})
        assert status == 200, (status, item)
    first = int(time.time()) + 3
    items = []
    for n in range(scheduled):
        status, item = client.call("POST", "/api/content/item/notes",
                                   {"data": {"title": f"{name} due {n}", "_state": 0, "_publish_at": first + 2 * n}})
        assert status == 200, (status, item)
        items.append((item["_id"], first + 2 * n))
    # the webhook is switched off once the last publish is due: the next phase starts on an empty queue
    while time.time() < first + 2 * (scheduled - 1) + TARGET_SECONDS + 5:
        time.sleep(0.1)
    results = []
    for item_id, due in items:
        deadline = time.time() + 120
        while True:
            status, history = client.call("GET", f"/api/revisions/content/notes/{item_id}")
            assert status == 200, (status, history)
            updates = [r for r in history["data"] if r["action"] == "update" and r["who"]["id"] == "schedule"]
            if updates or time.time() > deadline:
                break
            time.sleep(0.2)
        at = updates[-1]["at"] if updates else float("nan")
        # deliveries queued before it (its own phase's saves plus the scheduled items' own) not yet sent
        results.append({"phase": name, "due": due, "delay": at - due,
                        "backlog": queued + scheduled - receiver.count_before(at)})
    status, _ = client.call("PUT", f"/api/webhooks/{hook['_id']}", {"enabled": False})
    assert status == 200, status
    return results


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queued", type=int, default=STANDARD["queued"])
    parser.add_argument("--scheduled", type=int, default=STANDARD["scheduled"])
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "lanes")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args(argv)
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    load_before = uptime()
    started = dt.datetime.now(dt.UTC)
    server, key = start(work, "site", SETTINGS, workers=2)
    client = Client(server.base, key)
    slow, trickle = SlowReceiver(), TrickleReceiver()
    results: list[dict[str, Any]] = []
    try:
        status, _ = client.call("PUT", "/api/system/models/notes",
                                {"name": "notes", "fields": [{"name": "title", "type": "text"}]})
        assert status == 200, status
        results += phase(client, slow, f"slow ({SLOW_SECONDS:g} s answer)", args.queued, args.scheduled)
        load_mid = uptime()
        results += phase(client, trickle, f"trickle (a byte / {TRICKLE_GAP:g} s)", args.queued, args.scheduled)
    finally:
        client.close()
        server.stop()
        slow.close()
        trickle.close()
    load_after = uptime()
    problems = [p for p in server_log_problems(work / "site.log") if "webhook" not in p]
    met = all(r["delay"] <= TARGET_SECONDS for r in results)
    rows = "".join(f"| {r['phase']} | {args.queued} | {dt.datetime.fromtimestamp(r['due'], dt.UTC):%H:%M:%S} | "
                   f"{r['delay']:.2f} s | {r['backlog']} |\n" for r in results)
    table = ("| receiver | deliveries queued first | publish due (UTC) | published after | deliveries not yet "
             "sent then |\n|---|---|---|---|---|\n" + rows)
    worst = max(r["delay"] for r in results)
    summary = (f"Worst publish delay {worst:.2f} s over {len(results)} publishes (target ≤ {TARGET_SECONDS:g} s): "
               f"{'met' if met else 'MISSED'}.")
    print("\n" + table + "\n" + summary)
    print(f"\nload: before {load_before}\n      between phases {load_mid}\n      after {load_after}")
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s):\n" + "\n".join(problems[:10]))
    standard = args.queued == STANDARD["queued"] and args.scheduled == STANDARD["scheduled"]
    if standard and not args.no_docs:
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/lanes.py`, {started:%Y-%m-%d %H:%M} UTC (commit {_git_revision()}), "
                   f"`uptime` before: `{load_before}`; between the phases: `{load_mid}`; after: "
                   f"`{load_after}` (the 2 cores are shared with other engineers' test runs). One server of two "
                   "workers on SQLite; `[webhooks] concurrency` 4 (so 8 deliveries at once over both workers), "
                   "`timeout_seconds` 3, retries an hour away. Per receiver, "
                   f"{args.queued} saves queue a delivery each, then {args.scheduled} unpublished items are "
                   "created with `_publish_at` 2 s apart, the first 3 s ahead. \"Published after\" is the `at` "
                   "of the item's publish revision minus its `_publish_at`; the last column counts the "
                   "deliveries (of the saves and the scheduled items) the receiver had not yet received then. "
                   "Before lanes, one runner thread per process ran every kind in turn: the issue measured "
                   "publishes 24–27 s late behind 16 deliveries to a receiver answering in 2.5 s, and 61.5 s "
                   "late behind two trickling ones.\n\n" + table + "\n" + summary + "\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {DEFAULT_DOCS}")
    return 0 if met else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
