#!/usr/bin/env python3
"""What per-key rate limits and metrics cost (`[api] rate_limits`,
docs/permissions.md; `/metrics`, docs/operations.md):
the content benchmark's items page (bench/run.py's data, 100,000 posts)
on `quire serve --workers 2`, counting nothing, and counting every request
for /metrics and against a rate limit none reaches: the servers run side
by side and take short turns (`--rounds` rounds of `--duration` s each), with
a second server counting nothing as the measure's own noise. Results go to stdout and, at the standard
sizes, to the "Rate limits and metrics: cost on the items page" section of
docs/benchmarks.md.

    .venv/bin/python bench/limits.py                 # 100,000 posts, 20 rounds of 3 s turns
    .venv/bin/python bench/limits.py --posts 2000 --rounds 2 --duration 2 --no-docs
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402
    BENCH,
    DEFAULT_DOCS,
    DEFAULT_WORK,
    MAX_SKIP,
    PAGE,
    STANDARD_AUTHORS,
    Server,
    ensure_data,
    free_port,
    is_standard,
    machine_paragraph,
    parse_wrk,
    rotate_key,
    run_wrk,
    turns_parser,
    update_doc,
)

SECTION_TITLE = "Rate limits and metrics: cost on the items page"
STANDARD = {"posts": 100_000, "rounds": 20, "duration": 3.0}  # many short turns: the machine is shared and noisy


def main() -> None:
    args = turns_parser(__doc__, STANDARD).parse_args()
    dataset = ensure_data(DEFAULT_WORK, args.posts, STANDARD_AUTHORS, False)
    key = rotate_key(dataset.data_dir)
    prefix = f"/api/content/items/posts?limit={PAGE}&skip="
    # "on": every request counted for the rate limit (never reached) and for /metrics
    # "again": a second server counting nothing, to show what two equal
    # servers differ by in the same turns (the measure's own noise).
    setups = {"off": {"QUIRE_SERVER_METRICS": "false"}, "on": {"QUIRE_API_RATE_LIMIT": "1000000000"},
              "again": {"QUIRE_SERVER_METRICS": "false"}}
    # The servers run the whole time and take short turns, in the order
    # off-on-again, again-on-off, ...: on a shared machine the load drifts by
    # more than the difference sought within minutes; each round sees one load.
    servers = {name: Server(dataset.data_dir, free_port(), 2, DEFAULT_WORK / f"limits-{name}.log", env=env)
               for name, env in setups.items()}
    results: dict[str, list[float]] = {name: [] for name in setups}
    cpu: dict[str, list[float]] = {name: [] for name in setups}  # µs of the server's CPU a request
    loads = [os.getloadavg()[0]]
    try:
        for server in servers.values():
            server.start()
            server.wait_ready()
        for server in servers.values():
            run_wrk(args, key, server.base + prefix + "0", BENCH / "skip.lua", [prefix, str(MAX_SKIP)], 3)
        for turn in range(args.rounds):
            for name in (list(setups) if turn % 2 == 0 else list(setups)[::-1]):
                server = servers[name]
                assert server.proc is not None
                before = cpu_seconds(server.proc.pid)
                out = parse_wrk(run_wrk(args, key, server.base + prefix + "0", BENCH / "skip.lua",
                                        [prefix, str(MAX_SKIP)], args.duration))
                cpu[name].append((cpu_seconds(server.proc.pid) - before) / out.requests * 1e6)
                assert out.non2xx == 0, f"{name}: {out.non2xx} answers were not 2xx"
                results[name].append(out.rps)
            if turn % 5 == 4:
                loads.append(os.getloadavg()[0])
    finally:
        for server in servers.values():
            server.stop()
    ratios = [on / off - 1 for off, on in zip(results["off"], results["on"], strict=True)]
    equal = [again / off - 1 for off, again in zip(results["off"], results["again"], strict=True)]
    off, on = statistics.median(results["off"]), statistics.median(results["on"])
    change = statistics.median(ratios)
    cpu_of = {name: statistics.median(values) for name, values in cpu.items()}
    extra = per_request_cost()
    lines = [
        f"## {SECTION_TITLE}",
        "",
        f"`bench/limits.py`: {args.posts:,} posts, three servers `quire serve --workers 2` running side by side: "
        f"one counting nothing (`QUIRE_SERVER_METRICS=false`, no rate limit), one counting every request "
        f"for its key's rate limit (`QUIRE_API_RATE_LIMIT=1000000000`, never reached) and for /metrics, and a second one counting nothing. "
        f"wrk `-t{args.threads} -c{args.connections}` on `items/posts?limit={PAGE}&skip=0..{MAX_SKIP}`, one "
        f"API key, {args.duration:g} s turns after a 3 s warm-up each; {args.rounds} rounds of turns in the "
        f"order neither-both-neither again, then backwards, ... (each round sees one load; the load drifts "
        f"by more than the difference sought over a few minutes). Load average {', '.join(f'{x:.1f}' for x in loads)}.",
        "",
        "| Server | req/s, median of the turns | slowest turn | fastest turn | server CPU a request (median) |",
        "|---|---|---|---|---|",
        f"| neither | {off:,.0f} | {min(results['off']):,.0f} | {max(results['off']):,.0f} | {cpu_of['off']:.1f} µs |",
        f"| rate limit and metrics | {on:,.0f} | {min(results['on']):,.0f} | {max(results['on']):,.0f} | "
        f"{cpu_of['on']:.1f} µs |",
        f"| neither (a second, equal server) | {statistics.median(results['again']):,.0f} | "
        f"{min(results['again']):,.0f} | {max(results['again']):,.0f} | {cpu_of['again']:.1f} µs |",
        "",
        f"Both against neither, the median of the {args.rounds} rounds' changes: **{100 * change:+.1f}%** "
        f"(target: within 5%); the rounds' changes range from {100 * min(ratios):+.1f}% to "
        f"{100 * max(ratios):+.1f}%. The second server counting nothing against the first, in the same "
        f"rounds: {100 * statistics.median(equal):+.1f}% (what the measure itself varies by). The server's "
        f"CPU time (its processes' user and system time over a turn, per request answered), which the "
        f"machine's other load moves less: {cpu_of['on'] - cpu_of['off']:+.1f} µs "
        f"({100 * (cpu_of['on'] / cpu_of['off'] - 1):+.1f}%) with both, "
        f"{cpu_of['again'] - cpu_of['off']:+.1f} µs for the equal server.",
        "",
        f"What the two add to one request, timed in this process (the rate limit's look-up and count, the "
        f"request's count and time, the kept answer's count; the key's look-up is made once either way): "
        f"{extra:.1f} µs, {100 * extra / (2e6 / off):.1f}% of a request at the rate above (2 workers).",
        "",
        "Found by this benchmark and fixed: the rate limit's once-a-minute clean-up of old counts opened a "
        "write transaction even with nothing to delete, and any write makes a worker remake every kept "
        "answer (2,000 pages here, about 2 s of a worker's CPU each minute); it now looks first. Metrics "
        "counted each request under a lock with a clock read; a request now appends to a queue that a "
        "thread adds up each second. Timed inside a server (not in a loop), the limit's count is about "
        "2.7 µs: a request's path runs with cold caches, at several times its cost in a loop, so the CPU "
        "measure above stays larger than the in-process one.",
    ]
    section = "\n".join(lines) + "\n"
    print(section)
    if is_standard(args, STANDARD):
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process and its children (the
    server's workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total, waiting = 0, [pid]
    while waiting:
        current = waiting.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:  # ended meanwhile
            continue
        total += int(fields[11]) + int(fields[12])
        waiting += [int(child) for child in children]
    return total / ticks


def per_request_cost(rounds: int = 20_000) -> float:
    """Microseconds the rate limit and the metrics add to a request, timed
    in this process: the limit's call (less the key's look-up, which the
    route makes when no limit did), the request's count and time, and the
    kept answer's count."""
    import asyncio
    import tempfile
    import timeit

    os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="quire-bench-metrics-"))
    from starlette.requests import Request

    from quire import counting, metrics
    from quire.app import api_limit, build_app
    from quire.auth.request import request_key
    from quire.config import load_settings

    app = build_app(load_settings(tempfile.mkdtemp(prefix="quire-bench-limits-"),
                                  env={"QUIRE_SERVER_QUIET": "1", "QUIRE_API_RATE_LIMIT": "1000000000"}))
    quire = app.state.quire
    try:
        key = quire.auth.create_key("bench", "admin")["key"]
        limit = api_limit(quire)
        assert limit is not None
        scope = {"type": "http", "path": "/api/content/items/posts", "method": "GET", "query_string": b"",
                 "headers": [(b"api-key", key.encode())], "app": app}

        async def limited() -> float:
            return timeit.timeit(lambda: limit(dict(scope)), number=rounds)

        limit_seconds = asyncio.run(limited())
        looked_up = timeit.timeit(lambda: quire.auth.identify(request_key(Request(dict(scope)))), number=rounds)
        observed = timeit.timeit(lambda: metrics.observe("/api/content/items/{model}", "GET", 200, 0.002),
                                 number=rounds)
        kept = timeit.timeit(lambda: counting.tell("kept_read", "list", True), number=rounds)
    finally:
        quire.close()
    return (limit_seconds - looked_up + observed + kept) / rounds * 1e6


if __name__ == "__main__":
    main()
