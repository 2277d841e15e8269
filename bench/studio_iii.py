#!/usr/bin/env python3
"""Benchmark of two Studio III paths on a real `quire serve --workers 2`
(SQLite), in a fresh data dir under bench/.work/studio_iii:

1. **Presence across workers**: two logged-in sessions of the studio. The
   first keeps its event stream (`/system/events`) open, as an open editor
   does; the second opens the same item (`POST /studio/presence`, join)
   and later leaves. Timed: from the second's request being answered to
   the first's stream delivering the `presence` event. Each of the two
   requests lands on whichever worker the kernel picks, so the event
   often crosses workers (it travels through the store).
2. **Bulk edit of `--items` items** (the studio's edit of a whole list):
   its time, while one client reads a list page over the API the whole
   time; the reads' p50 and p99 with no bulk edit running and while it
   runs, in the same run.

    .venv/bin/python bench/studio_iii.py                      # standard: 10,000 items, 40 presence rounds
    .venv/bin/python bench/studio_iii.py --items 1000 --rounds 5 --no-docs
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import shutil
import sys
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DEFAULT_DOCS, ROOT, Server, free_port, machine_paragraph, update_doc  # noqa: E402

STANDARD = {"items": 10_000, "rounds": 40}
PASSWORD = "correct horse battery"
SECTION_TITLE = "Studio III: presence and bulk edit"


class Session:
    """A logged-in browser of the studio: cookies, and the page's CSRF token."""

    def __init__(self, base: str, user: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        login = self.opener.open(base + "/auth/login", timeout=30).read().decode()
        token = re.search(r'name="csrf" value="([^"]+)"', login)
        assert token, "no token on the login form"
        self.post("/auth/login", {"user": user, "password": PASSWORD, "csrf": token.group(1), "next": "/"},
                  csrf=False)
        page = self.opener.open(base + "/studio/content", timeout=30).read().decode()
        found = re.search(r'<meta name="csrf-token" content="([^"]+)">', page)
        assert found, "no CSRF token on the studio's page"
        self.csrf = found.group(1)

    def post(self, path: str, fields: dict[str, str] | list[tuple[str, str]], csrf: bool = True,
             timeout: float = 600) -> tuple[int, bytes]:
        pairs = list(fields.items()) if isinstance(fields, dict) else list(fields)
        if csrf:
            pairs.append(("csrf", self.csrf))
        request = urllib.request.Request(self.base + path, data=urllib.parse.urlencode(pairs).encode(),
                                         headers={"origin": self.base}, method="POST")
        try:
            with self.opener.open(request, timeout=timeout) as answer:
                return answer.status, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()


def setup(data: Path, items: int) -> str:
    from quire.app import Quire
    from quire.config import load_settings
    from quire.content.models import parse_model

    quire = Quire(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
    try:
        for name in ("ann", "bob"):
            quire.users.create({"user": name, "email": f"{name}@example.org", "role": "admin", "password": PASSWORD})
        quire.models.save(parse_model("tasks", {"fields": [{"name": "title", "type": "text"},
                                                           {"name": "done", "type": "boolean"}]}))
        coll = quire.store.collection("content/tasks")
        now = int(time.time())
        for start in range(0, items, 5000):
            with quire.store.transaction():
                for i in range(start, min(start + 5000, items)):
                    coll.insert({"_id": f"{i:024x}", "_rev": 1, "_state": 1, "_created": now, "_modified": now,
                                 "title": f"Task {i}", "done": False})
        return str(quire.auth.create_key("bench reader", "admin")["key"])
    finally:
        quire.close()


def presence_rounds(base: str, rounds: int) -> list[float]:
    """Milliseconds from the second editor's join (or leave) answered to
    the first editor's stream delivering the event."""
    first, second = Session(base, "ann"), Session(base, "bob")
    resource = "content/tasks/" + f"{1:024x}"
    status, _ = first.post("/studio/presence", {"resource": resource, "action": "join"})
    assert status == 200, status
    arrived: list[float] = []
    ready = threading.Event()

    def listen() -> None:
        stream = first.opener.open(base + "/system/events", timeout=300)
        ready.set()
        for line in stream:
            if line.startswith(b"data:") and b'"presence"' in line:
                arrived.append(time.perf_counter())
                if len(arrived) >= rounds:
                    return

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    ready.wait(30)
    time.sleep(1.0)  # the stream's first poll: events from before it are replayed, none here
    took: list[float] = []
    for n in range(rounds):
        seen = len(arrived)
        action = "join" if n % 2 == 0 else "leave"
        status, _ = second.post("/studio/presence", {"resource": resource, "action": action})
        answered = time.perf_counter()
        assert status == 200, status
        deadline = time.monotonic() + 10
        while len(arrived) <= seen and time.monotonic() < deadline:
            time.sleep(0.005)
        if len(arrived) > seen:
            took.append((arrived[seen] - answered) * 1000)
        time.sleep(0.3)
    return took


class Reader:
    """One API client reading the first page of the list the whole time."""

    def __init__(self, base: str, key: str) -> None:
        self.base, self.key = base, key
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        url = self.base + "/api/content/items/tasks?limit=20&sort=%7B%22title%22%3A1%7D"
        while not self.stop.is_set():
            started = time.perf_counter()
            with urllib.request.urlopen(urllib.request.Request(url, headers={"api-key": self.key}), timeout=30) as answer:
                answer.read()
            ended = time.perf_counter()
            self.samples.append((ended, (ended - started) * 1000))


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def bulk_edit(base: str, key: str) -> dict[str, Any]:
    session = Session(base, "ann")
    reader = Reader(base, key)
    reader.thread.start()
    time.sleep(8)  # reads with no bulk edit running
    quiet_until = time.perf_counter()
    fields = [("scope", "all"), ("list", ""), ("field", "done"), ("op", "set"), ("value", "true"),
              ("token", "bench-12345")]
    started = time.perf_counter()
    status, body = session.post("/studio/content/tasks/bulk/run", fields)
    ended = time.perf_counter()
    time.sleep(1)
    reader.stop.set()
    reader.thread.join()
    assert status == 200, (status, body[:300])
    changed = re.search(rb"Changed ([\d,]+) item", body)
    quiet = [ms for at, ms in reader.samples if at <= quiet_until]
    during = [ms for at, ms in reader.samples if started <= at <= ended]
    return {"seconds": ended - started, "changed": int(changed.group(1).replace(b",", b"")) if changed else 0,
            "quiet": quiet, "during": during}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=STANDARD["items"])
    parser.add_argument("--rounds", type=int, default=STANDARD["rounds"])
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    work = ROOT / "bench" / ".work" / "studio_iii"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    data = work / "data"
    key = setup(data, args.items)
    server = Server(data, free_port(), 2, work / "serve.log")
    load = os.getloadavg()[0]
    server.start()
    try:
        server.wait_ready()
        took = presence_rounds(server.base, args.rounds)
        bulk = bulk_edit(server.base, key)
    finally:
        server.stop()
    lines = [
        f"## {SECTION_TITLE}",
        "",
        f"`bench/studio_iii.py`, {args.items:,} items, `quire serve --workers 2` (SQLite); load average "
        f"{load:.1f} at the start.",
        "",
        "| Measure | Result |",
        "|---|---|",
        f"| Presence: second editor joins or leaves, first editor's stream has the event ({len(took)} of "
        f"{args.rounds} rounds seen) | p50 {percentile(took, 0.5):.0f} ms, p99 {percentile(took, 0.99):.0f} ms, "
        f"max {max(took, default=float('nan')):.0f} ms |",
        f"| Bulk edit of every item of the list ({bulk['changed']:,} changed, one save each) | "
        f"{bulk['seconds']:.1f} s, {bulk['changed'] / bulk['seconds']:,.0f} items/s |",
        f"| API list reads, no bulk edit running ({len(bulk['quiet'])} reads) | p50 "
        f"{percentile(bulk['quiet'], 0.5):.1f} ms, p99 {percentile(bulk['quiet'], 0.99):.1f} ms |",
        f"| API list reads while it runs ({len(bulk['during'])} reads) | p50 {percentile(bulk['during'], 0.5):.1f} "
        f"ms, p99 {percentile(bulk['during'], 0.99):.1f} ms, max {max(bulk['during'], default=float('nan')):.0f} ms |",
    ]
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_docs and args.items == STANDARD["items"] and args.rounds == STANDARD["rounds"]:
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
    print(json.dumps({"presence_ms": [round(t) for t in took]}))


if __name__ == "__main__":
    main()
