#!/usr/bin/env python3
"""Deep pages: page 1 against page 2,500 of 20, by cursor (`after=`) and by
`skip`, on the posts of the content benchmark (100,000 by default).

It reuses bench/run.py's data (same generator, same marker; `--work` for
another place), serves it with `quire serve --workers 2` and asks each
request one after another from one client, in rounds that alternate the
kinds (page 1, page 2,500 by cursor, page 2,500 by skip), so a disturbance
of the shared machine falls on all of them alike. It prints the median
latency of each kind and the ratio to page 1, for the list in creation
order, for `sort={"published":-1}` (an indexed field) and for
`sort={"_modified":-1}` (a number without an index: every page is a scan,
so it runs a tenth of the rounds), and the load average before and after.

    .venv/bin/python bench/cursor_pages.py                   # 100,000 posts
    .venv/bin/python bench/cursor_pages.py --posts 5000 --rounds 50   # a quick check
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (bench/run.py: the data and the server)

PAGE = 20
DEEP = 2_500  # the page number measured against page 1


def _get(base: str, path: str, key: str) -> tuple[float, bytes]:
    started = time.perf_counter()
    status, body = run.http_get(base + path, key)
    elapsed = (time.perf_counter() - started) * 1000
    if status != 200:
        raise RuntimeError(f"{path}: {status} {body[:200]!r}")
    return elapsed, body


def _kinds(base: str, key: str, sort: str) -> dict[str, str]:
    """The three requests of one list; the cursor of page DEEP is the
    `meta.next` of page DEEP - 1 read with skip (one request instead of a
    walk of 2,499 pages; the cursor is the same)."""
    query = f"limit={PAGE}" + (f"&sort={urllib.parse.quote(sort)}" if sort else "")
    _, body = _get(base, f"/api/content/items/posts?{query}&skip={(DEEP - 2) * PAGE}", key)
    cursor = orjson.loads(body)["meta"]["next"]
    kinds = {
        "page 1": f"/api/content/items/posts?{query}",
        f"page {DEEP:,} by cursor": f"/api/content/items/posts?{query}&after={cursor}",
        f"page {DEEP:,} by skip": f"/api/content/items/posts?{query}&skip={(DEEP - 1) * PAGE}",
    }
    _, by_cursor = _get(base, kinds[f"page {DEEP:,} by cursor"], key)
    _, by_skip = _get(base, kinds[f"page {DEEP:,} by skip"], key)
    # with skip the answer is the envelope (its total is counted once, then cached)
    if orjson.loads(by_cursor) != orjson.loads(by_skip)["data"] or len(orjson.loads(by_cursor)) != PAGE:
        raise RuntimeError(f"page {DEEP} by cursor differs from page {DEEP} by skip ({sort or 'no sort'})")
    return kinds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=run.STANDARD_POSTS)
    parser.add_argument("--authors", type=int, default=run.STANDARD_AUTHORS)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--work", type=Path, default=run.DEFAULT_WORK)
    args = parser.parse_args(argv)
    if args.posts < DEEP * PAGE:
        parser.error(f"--posts must be at least {DEEP * PAGE:,} for page {DEEP:,}")
    data = run.ensure_data(args.work, args.posts, args.authors, fresh=False)
    key = run.rotate_key(data.data_dir)
    server = run.Server(data.data_dir, run.free_port(), 2, args.work / "server-cursor.log")
    server.start()
    try:
        server.wait_ready()
        load_before = os.getloadavg()
        # creation order; an indexed field; a number field without an index (a scan on every page)
        for sort in ["", '{"published":-1}', '{"_modified":-1}']:
            kinds = _kinds(server.base, key, sort)
            times: dict[str, list[float]] = {name: [] for name in kinds}
            for _ in range(20):  # warm-up
                for path in kinds.values():
                    _get(server.base, path, key)
            # a scan of 100,000 items costs tens of ms per request: fewer rounds there
            rounds = args.rounds if sort != '{"_modified":-1}' else max(10, args.rounds // 10)
            for _ in range(rounds):
                for name, path in kinds.items():
                    times[name].append(_get(server.base, path, key)[0])
            first = statistics.median(times["page 1"])
            print(f"\n{args.posts:,} posts, limit={PAGE}, {sort and 'sort=' + sort or 'no sort (creation order)'}:")
            for name, samples in times.items():
                p50 = statistics.median(samples)
                print(f"  {name:<24} p50 {p50:7.2f} ms   {p50 / first:5.2f}x page 1")
        load_after = os.getloadavg()
        print(f"\nload average before {load_before[0]:.2f} {load_before[1]:.2f}, "
              f"after {load_after[0]:.2f} {load_after[1]:.2f} (1 and 5 min); {os.cpu_count()} CPUs")
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
