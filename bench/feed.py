#!/usr/bin/env python3
"""Benchmark of the change feed (docs/delivery.md) on a real `quire serve
--workers 2` (SQLite), in a fresh data dir under bench/.work/feed:
`--subscribers` streams of `GET /api/content/changes` stay open (one
asyncio client process, plain sockets), then `--writes` items are saved
one at a time through the API, spaced out. Timed for each write and each
subscriber: from the write request being sent to the change arriving at
the subscriber (the write's own time included). Memory: the workers'
resident size with the streams open minus before, per subscriber.

    .venv/bin/python bench/feed.py                       # standard: 1,000 subscribers, 40 writes
    .venv/bin/python bench/feed.py --subscribers 100 --writes 10 --no-docs
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import DEFAULT_DOCS, ROOT, Server, free_port, machine_paragraph, update_doc  # noqa: E402

STANDARD = {"subscribers": 1000, "writes": 40}
SECTION_TITLE = "Change feed: commit to subscriber"


def setup(data: Path) -> str:
    from quire.app import Quire
    from quire.config import load_settings
    from quire.content.models import parse_model

    quire = Quire(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
    try:
        quire.models.save(parse_model("news", {"fields": [{"name": "title", "type": "text"}]}))
        return str(quire.auth.create_key("bench", "admin")["key"])
    finally:
        quire.close()


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


async def subscriber(port: int, key: str, arrivals: dict[str, list[float]], opened: asyncio.Event,
                     count: list[int], want: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /api/content/changes?models=news HTTP/1.1\r\nHost: bench\r\napi-key: {key}\r\n"
                 "Accept: text/event-stream\r\n\r\n".encode())
    await writer.drain()
    status = await reader.readline()
    assert b" 200 " in status, status
    count[0] += 1
    if count[0] == want:
        opened.set()
    while True:
        line = await reader.readline()
        if not line:
            return
        if line.startswith(b"data: {"):
            at = time.perf_counter()
            change = json.loads(line[6:])
            arrivals.setdefault(change["id"], []).append(at)


def post(base: str, key: str, title: str) -> str:
    body = json.dumps({"data": {"title": title, "_state": 1}}).encode()
    request = urllib.request.Request(base + "/api/content/item/news", data=body, method="POST",
                                     headers={"api-key": key, "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return str(json.loads(answer.read())["_id"])


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


async def drive(server: Server, pids: list[int], key: str, subscribers: int, writes: int) -> dict[str, object]:
    port = server.port
    arrivals: dict[str, list[float]] = {}
    opened, count = asyncio.Event(), [0]
    before = rss_kb(pids)
    tasks = [asyncio.create_task(subscriber(port, key, arrivals, opened, count, subscribers))
             for _ in range(subscribers)]
    await asyncio.wait_for(opened.wait(), 120)
    await asyncio.sleep(2)
    with_streams = rss_kb(pids)
    sent: dict[str, float] = {}
    loop = asyncio.get_running_loop()
    for n in range(writes):
        started = time.perf_counter()
        item = await loop.run_in_executor(None, post, server.base, key, f"News {n}")
        sent[item] = started
        await asyncio.sleep(0.5)
    await asyncio.sleep(3)
    for task in tasks:
        task.cancel()
    latencies = [(at - sent[item]) * 1000 for item, ats in arrivals.items() if item in sent for at in ats]
    delivered = sum(len(arrivals.get(item, [])) for item in sent)
    return {"latencies": latencies, "delivered": delivered, "expected": writes * subscribers,
            "kb_per_subscriber": (with_streams - before) / subscribers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--subscribers", type=int, default=STANDARD["subscribers"])
    parser.add_argument("--writes", type=int, default=STANDARD["writes"])
    parser.add_argument("--no-docs", action="store_true")
    args = parser.parse_args()
    work = ROOT / "bench" / ".work" / "feed"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    data = work / "data"
    key = setup(data)
    env = {"QUIRE_FEED_STREAMS_PER_KEY": str(args.subscribers + 10)}
    server = Server(data, free_port(), 2, work / "serve.log", env=env)
    load = os.getloadavg()[0]
    server.start()
    try:
        pids = server.wait_ready()
        result = asyncio.run(drive(server, pids, key, args.subscribers, args.writes))
    finally:
        server.stop()
    took = result["latencies"]
    assert isinstance(took, list)
    lines = [
        f"## {SECTION_TITLE}",
        "",
        f"`bench/feed.py`: {args.subscribers:,} open streams of `GET /api/content/changes` on `quire serve "
        f"--workers 2` (SQLite, `[feed] poll_ms` 100), {args.writes} items saved one at a time through the API, "
        f"0.5 s apart; the client is one asyncio process on the same machine. Load average {load:.1f} at the start.",
        "",
        "| Measure | Result |",
        "|---|---|",
        f"| Changes delivered | {result['delivered']:,} of {result['expected']:,} |",
        f"| Write request sent to change at each subscriber | p50 {percentile(took, 0.5):.0f} ms, p99 "
        f"{percentile(took, 0.99):.0f} ms, max {max(took, default=float('nan')):.0f} ms |",
        f"| Workers' memory per open stream | {result['kb_per_subscriber']:.0f} KB |",
    ]
    section = "\n".join(lines) + "\n"
    print(section)
    if not args.no_docs and args.subscribers == STANDARD["subscribers"] and args.writes == STANDARD["writes"]:
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)


if __name__ == "__main__":
    main()
