#!/usr/bin/env python3
"""What per-key rate limits and metrics cost (`[api] rate_limits`,
docs/permissions.md; `/metrics`, docs/operations.md):
the content benchmark's items page (bench/run.py's data, 100,000 posts)
on `quire serve --workers 2`, counting nothing, and counting every request
for /metrics and against a rate limit none reaches, the two servers taking turns
(`--rounds` each) in one run. Results go to stdout and, at the standard
sizes, to the "Rate limits and metrics: cost on the items page" section of
docs/benchmarks.md.

    .venv/bin/python bench/limits.py                 # 100,000 posts, 5 rounds of 10 s each way
    .venv/bin/python bench/limits.py --posts 2000 --rounds 1 --duration 3 --no-docs
"""

from __future__ import annotations

import os
import statistics
import sys
import time
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
STANDARD = {"posts": 100_000, "rounds": 5, "duration": 10.0}  # 5: the machine is shared and noisy


def main() -> None:
    args = turns_parser(__doc__, STANDARD).parse_args()
    dataset = ensure_data(DEFAULT_WORK, args.posts, STANDARD_AUTHORS, False)
    key = rotate_key(dataset.data_dir)
    prefix = f"/api/content/items/posts?limit={PAGE}&skip="
    # "on": every request counted for the rate limit (never reached) and for /metrics
    setups = {"off": {"QUIRE_SERVER_METRICS": "false"}, "on": {"QUIRE_API_RATE_LIMIT": "1000000000"}}
    results: dict[str, list[float]] = {name: [] for name in setups}
    loads = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for name, env in setups.items():
            server = Server(dataset.data_dir, free_port(), 2, DEFAULT_WORK / f"limits-{name}.log", env=env)
            server.start()
            try:
                server.wait_ready()
                run_wrk(args, key, server.base + prefix + "0", BENCH / "skip.lua", [prefix, str(MAX_SKIP)], 3)
                out = parse_wrk(run_wrk(args, key, server.base + prefix + "0", BENCH / "skip.lua",
                                        [prefix, str(MAX_SKIP)], args.duration))
                assert out.non2xx == 0, f"{name}: {out.non2xx} answers were not 2xx"
                results[name].append(out.rps)
            finally:
                server.stop()
            time.sleep(1)
        loads.append(os.getloadavg()[0])
    off, on = statistics.median(results["off"]), statistics.median(results["on"])
    extra = per_request_cost()
    lines = [
        f"## {SECTION_TITLE}",
        "",
        f"`bench/limits.py`: {args.posts:,} posts, `quire serve --workers 2`, wrk `-t{args.threads} "
        f"-c{args.connections}` {args.duration:g} s after a 3 s warm-up on `items/posts?limit={PAGE}&skip=0..{MAX_SKIP}`, "
        f"one API key; the server counting nothing (`QUIRE_SERVER_METRICS=false`, no rate limit) and the one "
        f"counting every request for its key's rate limit (`QUIRE_API_RATE_LIMIT=1000000000`) and for /metrics "
        f"take turns, {args.rounds} rounds. Load average "
        f"{', '.join(f'{x:.1f}' for x in loads)}.",
        "",
        "| Server | req/s each round | median |",
        "|---|---|---|",
        f"| neither | {', '.join(f'{x:,.0f}' for x in results['off'])} | {off:,.0f} |",
        f"| rate limit and metrics | {', '.join(f'{x:,.0f}' for x in results['on'])} | {on:,.0f} |",
        "",
        f"With both against neither: {100 * (on - off) / off:+.1f}% (target: within 5%).",
        "",
        f"What the two add to one request, timed in this process (the rate limit's look-up and count, the "
        f"request's count and time, the kept answer's count; the key's look-up is made once either way): "
        f"{extra:.1f} µs, {100 * extra / (2e6 / off):.1f}% of a request at the rate above (2 workers). The "
        f"servers' rounds above vary by more than that from one to the next on this shared machine.",
    ]
    section = "\n".join(lines) + "\n"
    print(section)
    if is_standard(args, STANDARD):
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)


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
