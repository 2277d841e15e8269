#!/usr/bin/env python3
"""Benchmark of revisions: what recording one costs a content save.

Two servers (`quire serve --workers 1`), one with revisions on (the
default) and one with `[revisions] enabled = false`, each on a data dir of
its own holding the same model `posts` (ten fields) and the same 200 items.
A client updates items through the API (`POST /api/content/item/posts` with
`_id`, two fields changed: a save that writes a revision with a diff and the
whole previous item), one request at a time on a kept connection, A and B
alternated over rounds (A, B, A, B, ...), so the shared machine's noise
falls on both alike.

Target (issue 19): p50 of a save with revisions on at most 25% above the
same save with revisions off, in the same run: p50(on) / p50(off) - 1 ≤ 25%,
per round, the median over the rounds taken. Results go to stdout and, for
a standard run, to the "Revisions" section of docs/benchmarks.md.

    .venv/bin/python bench/revisions.py                 # the standard run, about a minute
    .venv/bin/python bench/revisions.py --saves 200 --rounds 2 --no-docs   # a quick check
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
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

SECTION_TITLE = "Revisions"
TARGET = 0.25
ITEMS = 200
STANDARD = {"saves": 1000, "rounds": 4}
FIELDS = [{"name": "title", "type": "text"}, {"name": "slug", "type": "text"}, {"name": "summary", "type": "longtext"},
          {"name": "body", "type": "markdown"}, {"name": "rating", "type": "number"},
          {"name": "featured", "type": "boolean"}, {"name": "tags", "type": "tags"},
          {"name": "category", "type": "select", "opts": {"options": ["news", "guides", "notes"]}},
          {"name": "published", "type": "date"}, {"name": "meta", "type": "object"}]


class Client:
    """One kept connection to a server, with an admin key."""

    def __init__(self, base: str, key: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)
        self.key = key

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
             content_type: str = "application/json") -> tuple[int, Any]:
        """`body` as JSON, or `raw` bytes of `content_type`; the answer
        decoded when it is JSON, else its bytes."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        self.conn.request(method, path, body=data, headers={"api-key": self.key, "content-type": content_type})
        response = self.conn.getresponse()
        text = response.read()
        try:
            return response.status, json.loads(text) if text else None
        except ValueError:
            return response.status, text

    def close(self) -> None:
        self.conn.close()


def _item(rng: random.Random, n: int) -> dict[str, Any]:
    words = ["quire", "content", "model", "revision", "history", "draft", "field", "editor", "site", "page"]
    text = " ".join(rng.choice(words) for _ in range(60))
    return {"title": f"Post {n}", "slug": f"post-{n}", "summary": text[:200], "body": "# Heading\n\n" + text * 4,
            "rating": rng.randint(1, 5), "featured": rng.random() < 0.2, "tags": rng.sample(words, 3),
            "category": rng.choice(["news", "guides", "notes"]), "published": "2026-05-01",
            "meta": {"source": "bench", "n": n}}


def start(work: Path, name: str, env: dict[str, str], workers: int = 1) -> tuple[Server, str]:
    """A server on a new data dir with an admin key (made before it starts)."""
    data = work / name
    shutil.rmtree(data, ignore_errors=True)
    out = subprocess.run([sys.executable, "-m", "quire", "keys", "create", "--name", "bench", "--role", "admin",
                          "--data", str(data)], capture_output=True, text=True, check=True).stdout
    key = out.strip().splitlines()[-1]
    server = Server(data, free_port(), workers, work / f"{name}.log", env=env)
    server.start()
    server.wait_ready()
    return server, key


def seed(client: Client) -> list[str]:
    status, _ = client.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection", "fields": FIELDS})
    assert status == 200, status
    rng = random.Random(7)
    ids = []
    for n in range(ITEMS):
        status, item = client.call("POST", "/api/content/item/posts", {"data": _item(rng, n)})
        assert status == 200, (status, item)
        ids.append(item["_id"])
    return ids


def saves(client: Client, ids: list[str], count: int, rng: random.Random) -> list[float]:
    """`count` updates of random items: two fields changed each; ms each."""
    times = []
    for i in range(count):
        item_id = rng.choice(ids)
        body = {"data": {"_id": item_id, "title": f"Post {item_id[-4:]} v{i}", "rating": rng.randint(1, 5)}}
        started = time.perf_counter()
        status, _ = client.call("POST", "/api/content/item/posts", body)
        times.append((time.perf_counter() - started) * 1000)
        assert status == 200, status
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--saves", type=int, default=STANDARD["saves"], help="saves per server per round")
    parser.add_argument("--rounds", type=int, default=STANDARD["rounds"])
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "revisions")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = parser.parse_args(argv)
    if args.saves < 1 or args.rounds < 1:
        parser.error("--saves and --rounds must be at least 1")
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()[0]
    on, on_key = start(work, "on", {})
    off, off_key = start(work, "off", {"QUIRE_REVISIONS_ENABLED": "false"})
    clients = {"on": Client(on.base, on_key), "off": Client(off.base, off_key)}
    try:
        ids = {name: seed(client) for name, client in clients.items()}
        for name, client in clients.items():  # warm both
            saves(client, ids[name], 100, random.Random(1))
        rounds: list[dict[str, list[float]]] = []
        for r in range(args.rounds):
            timed = {}
            for name in ("off", "on") if r % 2 else ("on", "off"):
                timed[name] = saves(clients[name], ids[name], args.saves, random.Random(100 + r))
            rounds.append(timed)
            print(f"round {r + 1}: p50 on {statistics.median(timed['on']):.2f} ms, "
                  f"off {statistics.median(timed['off']):.2f} ms", flush=True)
        status, history = clients["on"].call("GET", f"/api/revisions/content/posts/{ids['on'][0]}?limit=1")
        kept = history["total"] if status == 200 else None
    finally:
        for client in clients.values():
            client.close()
        on.stop()
        off.stop()
    problems = server_log_problems(work / "on.log") + server_log_problems(work / "off.log")
    ratios = [statistics.median(t["on"]) / statistics.median(t["off"]) - 1 for t in rounds]
    overall = statistics.median(ratios)
    every = {name: [x for t in rounds for x in t[name]] for name in ("on", "off")}
    met = overall <= TARGET
    table = ("| Save (update of 2 fields, 1 worker, sequential) | p50 ms | p99 ms |\n|---|---|---|\n"
             + "".join(f"| revisions {name} | {pct(every[name], 0.5):.2f} | {pct(every[name], 0.99):.2f} |\n"
                       for name in ("off", "on")))
    summary = (f"Revisions on cost a save {overall:+.1%} at p50 (median of {args.rounds} rounds: "
               f"{', '.join(f'{x:+.1%}' for x in ratios)}); target ≤ +{TARGET:.0%}: {'met' if met else 'MISSED'}.")
    print("\n" + table + "\n" + summary)
    if kept is not None:
        print(f"(an item's history after the run: {kept} revisions kept, `keep` = 50)")
    if problems:
        print(f"\nThe servers logged {len(problems)} problem line(s):\n" + "\n".join(problems[:10]))
    standard = args.saves == STANDARD["saves"] and args.rounds == STANDARD["rounds"]
    if standard and not args.no_docs:
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/revisions.py`, {dt.date.today().isoformat()} (commit {_git_revision()}), load "
                   f"{load_before:.2f} at the start. Two servers of one worker each on SQLite, the same model "
                   f"(ten fields) and {ITEMS} items; {args.saves} updates per server per round, one at a time "
                   f"on a kept connection, servers alternated over {args.rounds} rounds. Each update changes "
                   "two fields, so a revision (its diff and the whole previous item, about 2 KB of JSON) is written "
                   "in the save's transaction.\n\n" + table + "\n" + summary + "\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {DEFAULT_DOCS}")
    return 0 if met and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
