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
`sort={"_modified":-1}` (a number no index was declared for: the first
requests scan, then an automatic index serves it; it runs a tenth of the
rounds), and the load average before and after. Kept list answers are off
(`QUIRE_API_KEPT_ANSWERS_MB=0`): every request reads the store.
A run at the standard size (100,000 posts) writes the "Deep pages" section
of docs/benchmarks.md (`--docs PATH` for another file, `--no-docs` for none).

    .venv/bin/python bench/cursor_pages.py                   # 100,000 posts
    .venv/bin/python bench/cursor_pages.py --posts 5000 --rounds 50 --no-docs   # a quick check
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
SECTION_TITLE = "Deep pages"
SORTS = {  # sort parameter -> how the table names the list
    "": "creation order (no sort)",
    '{"published":-1}': '`sort={"published":-1}` (indexed)',
    '{"_modified":-1}': '`sort={"_modified":-1}` (no declared index)',
}


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


def table(results: dict[str, dict[str, float]], rounds: dict[str, int]) -> str:
    names = ["page 1", f"page {DEEP:,} by cursor", f"page {DEEP:,} by skip"]
    lines = [f"| list (limit={PAGE}) | rounds | page 1 | page {DEEP:,} by `after` | page {DEEP:,} by `skip` (envelope) |",
             "|---|---:|---:|---:|---:|"]
    for sort, p50s in results.items():
        first = p50s[names[0]]
        cells = [f"{first:.2f} ms"] + [f"{p50s[n]:.2f} ms ({p50s[n] / first:.2f}×)" for n in names[1:]]
        lines.append(f"| {SORTS[sort]} | {rounds[sort]} | {' | '.join(cells)} |")
    return "\n".join(lines)


def section(args: argparse.Namespace, text: str, load: str) -> str:
    return (
        f"## {SECTION_TITLE}\n\n"
        f"`make bench` (bench/cursor_pages.py) at {run._git_revision()}: {args.posts:,} posts of the content "
        f"benchmark, `quire serve --workers 2`, one client asking page 1, page {DEEP:,} by cursor (`after=`, the "
        f"`meta.next` of page {DEEP - 1:,}) and page {DEEP:,} by `skip` in turn, each round once (the p50 over the "
        "rounds; the ratio to page 1 of the same list), kept list answers off. `skip` counts "
        f"{(DEEP - 1) * PAGE:,} items off the first time, then reads from the kept position of item "
        f"{(DEEP - 1) * PAGE // 1000 * 1000:,} until the next write; its envelope's total is counted once, then "
        f"cached. {load}\n\n"
        f"{text}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=run.STANDARD_POSTS)
    parser.add_argument("--authors", type=int, default=run.STANDARD_AUTHORS)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--work", type=Path, default=run.DEFAULT_WORK)
    parser.add_argument("--docs", type=Path, default=None,
                        help=f"markdown file to write the {SECTION_TITLE} section to (default docs/benchmarks.md, "
                             "but only for a run at the standard size)")
    parser.add_argument("--no-docs", action="store_true", help="do not write any markdown file")
    args = parser.parse_args(argv)
    if args.posts < DEEP * PAGE:
        parser.error(f"--posts must be at least {DEEP * PAGE:,} for page {DEEP:,}")
    data = run.ensure_data(args.work, args.posts, args.authors, fresh=False)
    key = run.rotate_key(data.data_dir)
    server = run.Server(data.data_dir, run.free_port(), 2, args.work / "server-cursor.log",
                        {"QUIRE_API_KEPT_ANSWERS_MB": "0"})
    server.start()
    results: dict[str, dict[str, float]] = {}
    counts: dict[str, int] = {}
    try:
        server.wait_ready()
        load_before = os.getloadavg()
        # creation order; a declared index; a number field no index was declared for
        for sort in SORTS:
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
            results[sort] = {name: statistics.median(samples) for name, samples in times.items()}
            counts[sort] = rounds
            print(f"\n{args.posts:,} posts, limit={PAGE}, {sort and 'sort=' + sort or 'no sort (creation order)'}:")
            for name, p50 in results[sort].items():
                print(f"  {name:<24} p50 {p50:7.2f} ms   {p50 / first:5.2f}x page 1")
        load_after = os.getloadavg()
    finally:
        server.stop()
    load = (f"Load average (1 and 5 min) {load_before[0]:.2f} {load_before[1]:.2f} before, "
            f"{load_after[0]:.2f} {load_after[1]:.2f} after, on {os.cpu_count()} CPUs.")
    print("\n" + load)
    standard = args.posts == run.STANDARD_POSTS and args.authors == run.STANDARD_AUTHORS
    docs: Path | None = None if args.no_docs else args.docs or (run.DEFAULT_DOCS if standard else None)
    if docs is not None:
        run.update_doc(docs, run.machine_paragraph(), section(args, table(results, counts), load), SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {docs}")
    elif not args.no_docs:
        print(f"\nNot a standard-size run: {run.DEFAULT_DOCS.relative_to(run.ROOT)} left as it is "
              "(--docs PATH writes one).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
