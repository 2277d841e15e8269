#!/usr/bin/env python3
"""Benchmark of personalization (`persona`) on content lists.

Generates 10,000 published posts of a model `posts` (title, markdown body
and `hero`, a field of type `variants` holding three variants: a guest one
with `{{ name:friend }}`, a member one with `{{ name }}` and a scheduled
sale one for `member`+`sale`), written straight into the store in one
transaction. It then serves the data with `quire serve --workers 2` and
drives `GET /api/content/items/posts?limit=20&skip=<0..2000>` with wrk in
three scenarios, alternated over four rounds (A, B, C, A, B, C, ...):

- A: no persona (the containers are answered as stored);
- B: `&persona=member` (every hero resolved to one variant);
- C: `&persona=member&persona_vars[name]=Ann` (resolved, and the
  placeholders replaced).

Target (from the issue): resolution on an items page of 20 with variants
adds ≤ 15% to its median latency, i.e. p50(B) / p50(A) - 1 ≤ 15%, taken per
round against that round's A, and the median over the rounds is taken (one
round disturbed by the shared 2-core machine does not decide); C, which
also replaces variables, ≤ 10% the same way. When the target is missed (or with --profile) a
worker is sampled with py-spy during an extra run of B and the functions
taking the time are listed. Results go to stdout and, for a standard-size
run, to the "Personalization" section of docs/benchmarks.md.

The data is built once in bench/.work/persona (a marker file lets later
runs with the same size reuse it; --fresh rebuilds it). Before measuring it
waits (polling every 15 s, up to 10 minutes) until no other benchmark
(bench/run.py, bench/search.py) is running.

    .venv/bin/python bench/persona.py              # the standard run, about 2 minutes
    .venv/bin/python bench/persona.py --profile    # and profile a worker during B even if the target is met
    .venv/bin/python bench/persona.py --posts 2000 --duration 2 --warmup 1 --no-docs   # a quick check
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import (  # noqa: E402  (a sibling script, not a package)
    DEFAULT_DOCS,
    MB,
    ROOT,
    Server,
    WrkResult,
    _git_revision,
    _ms,
    _open_quire,
    _terminate,
    add_load_options,
    check_load_options,
    free_port,
    http_get,
    machine_paragraph,
    parse_wrk,
    rotate_key,
    run_wrk,
    server_log_problems,
    update_doc,
    wrk_missing,
)

BENCH = Path(__file__).resolve().parent
DEFAULT_WORK = BENCH / ".work" / "persona"
SECTION_TITLE = "Personalization"

GENERATOR_VERSION = 1  # bump when the generated data changes shape
SEED = 20260404
STANDARD_POSTS = 10_000
PAGE = 20
MAX_SKIP = 2_000
TARGET = 0.15  # p50 overhead of resolution, at most
TARGET_VARS = 0.10  # p50 overhead of resolution with variables replaced (C), at most
KEY_NAME = "bench persona"
OTHER_BENCHMARKS = ("bench/search.py", "bench/run.py")

POSTS_MODEL: dict[str, Any] = {
    "name": "posts", "label": "Posts", "type": "collection",
    "fields": [
        {"name": "title", "type": "text", "required": True},
        {"name": "body", "type": "markdown"},
        {"name": "hero", "type": "variants"},
    ],
}

TEXT = (
    "quire", "content", "page", "route", "menu", "locale", "layout", "section", "site", "news",
    "guide", "release", "team", "product", "service", "customer", "support", "price", "event",
    "partner", "search", "editor", "draft", "publish", "image", "link", "market", "city", "plan",
)


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choices(TEXT, k=rng.randint(lo, hi))).capitalize() + "."


def _hero(rng: random.Random) -> dict[str, Any]:
    return {"persona:variants": [
        {"id": "g", "active": True, "label": "Guest", "audience": [],
         "data": {"heading": "Hello {{ name:friend }}", "text": _sentence(rng, 8, 16)}},
        {"id": "m", "active": True, "label": "Member", "audience": ["member"],
         "data": {"heading": "Welcome back {{ name }}", "text": _sentence(rng, 8, 16)}},
        {"id": "s", "active": True, "label": "Sale", "audience": ["member", "sale"],
         "data": {"heading": "Sale for you, {{ name:friend }}", "text": _sentence(rng, 8, 16),
                  "cta": {"label": "Shop now", "url": "/sale"}},
         "meta": {"schedule": {"days": ["sat", "sun"], "times": {"start": "09:00", "end": "18:00"},
                               "timezone": "Europe/Berlin"}}},
    ]}


def _post(rng: random.Random, post_id: str, actor: str, now: int) -> dict[str, Any]:
    created = now - rng.randint(0, 3 * 365 * 86_400)
    title = _sentence(rng, 3, 7)[:-1]
    return {
        "_id": post_id, "title": title,
        "body": f"# {title}\n\n" + "\n\n".join(" ".join(_sentence(rng, 6, 14) for _ in range(3))
                                               for _ in range(rng.randint(2, 4))),
        "hero": _hero(rng),
        "_state": 1, "_created": created, "_modified": created + rng.randint(0, 86_400),
        "_cby": actor, "_mby": actor,
    }


@dataclass
class Dataset:
    data_dir: Path
    marker: dict[str, Any]


def ensure_data(work: Path, posts: int, fresh: bool) -> Dataset:
    data_dir = work / "data"
    marker_file = work / "marker.json"
    wanted = {"generator": GENERATOR_VERSION, "seed": SEED, "posts": posts}
    if not fresh and marker_file.exists() and (data_dir / "quire.db").exists():
        with contextlib.suppress(ValueError, OSError):
            marker = json.loads(marker_file.read_text())
            if all(marker.get(k) == v for k, v in wanted.items()):
                print(f"Reusing {data_dir} ({posts:,} posts; --fresh regenerates)")
                return Dataset(data_dir, marker)
    marker_file.unlink(missing_ok=True)
    if data_dir.exists():
        shutil.rmtree(data_dir)
    work.mkdir(parents=True, exist_ok=True)
    marker = {**wanted, **generate(data_dir, posts)}
    marker_file.write_text(json.dumps(marker, indent=2) + "\n")
    return Dataset(data_dir, marker)


def generate(data_dir: Path, posts: int) -> dict[str, Any]:
    from quire.content.models import parse_model
    from quire.ids import new_id

    started = time.perf_counter()
    print(f"Generating {posts:,} posts in {data_dir} ...", flush=True)
    rng = random.Random(SEED)
    quire = _open_quire(data_dir)
    total_bytes = 0
    try:
        quire.models.save(parse_model("posts", POSTS_MODEL))
        actor, now = new_id(), int(time.time())

        def rows() -> Any:
            nonlocal total_bytes
            for _ in range(posts):
                doc = _post(rng, new_id(), actor, now)
                data = orjson.dumps(doc).decode()
                total_bytes += len(data)
                yield doc["_id"], data

        quire.store.ensure_table("content/posts")
        with quire.store.transaction():
            quire.store._writer.executemany('INSERT INTO "content/posts" (id, data) VALUES (?, ?)', rows())
    finally:
        quire.close()
    seconds = time.perf_counter() - started
    print(f"Generated in {seconds:.1f} s; database {(data_dir / 'quire.db').stat().st_size / MB:.1f} MB", flush=True)
    return {"avg_post_bytes": round(total_bytes / max(posts, 1)),
            "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}


def wait_for_other_benchmarks(poll: float = 15, limit: float = 600) -> str:
    """Wait until no other benchmark runs; a note for the report."""
    deadline = time.monotonic() + limit
    waited = 0.0
    while True:
        busy = [name for name in OTHER_BENCHMARKS
                if subprocess.run(["pgrep", "-f", name], capture_output=True, check=False).stdout.strip()]
        if not busy:
            return f"waited {waited:.0f} s for other benchmarks" if waited else "no other benchmark was running"
        if time.monotonic() >= deadline:
            print(f"warning: still running after {limit:.0f} s: {', '.join(busy)}; measuring anyway", flush=True)
            return f"**{', '.join(busy)} was still running** after waiting {limit:.0f} s"
        print(f"Waiting for {', '.join(busy)} to finish ...", flush=True)
        time.sleep(poll)
        waited += poll


# -- scenarios ----------------------------------------------------------------


@dataclass
class Scenario:
    letter: str
    name: str
    query: str  # appended to limit=20
    heading: str | None  # expected hero heading (None: the stored container)


SCENARIOS = [
    Scenario("A", "no persona", "", None),
    Scenario("B", "`persona=member`", "&persona=member", "Welcome back {{ name }}"),
    Scenario("C", "`persona=member&persona_vars[name]=Ann`", "&persona=member&persona_vars%5Bname%5D=Ann",
             "Welcome back Ann"),
]


def prefix(sc: Scenario) -> str:
    return f"/api/content/items/posts?limit={PAGE}{sc.query}&skip="


def check(sc: Scenario, base: str, key: str, skip: int) -> tuple[str | None, int]:
    status, raw = http_get(base + prefix(sc) + str(skip), key)
    if status != 200:
        return f"answered {status}: {raw[:200]!r}", 0
    body = orjson.loads(raw)
    items = body.get("data") if isinstance(body, dict) else body
    if not isinstance(items, list) or len(items) != PAGE:
        return f"expected {PAGE} items, got {str(body)[:200]}", len(raw)
    for item in items:
        hero = item.get("hero")
        if sc.heading is None:
            if not isinstance(hero, dict) or "persona:variants" not in hero:
                return f"expected the stored container, got {hero!r}", len(raw)
        elif not isinstance(hero, dict) or hero.get("heading") != sc.heading:
            return f"expected the heading {sc.heading!r}, got {hero!r}", len(raw)
    return None, len(raw)


@dataclass
class Run:
    scenario: Scenario
    round: int
    result: WrkResult


def run_one(args: argparse.Namespace, work: Path, base: str, key: str, sc: Scenario, rnd: int) -> Run:
    script_args = [prefix(sc), str(MAX_SKIP)]
    print(f"\n[round {rnd}] {sc.letter}: {sc.name}", flush=True)
    if args.warmup > 0:
        run_wrk(args, key, base + "/", BENCH / "skip.lua", script_args, args.warmup)
    text = run_wrk(args, key, base + "/", BENCH / "skip.lua", script_args, args.duration)
    (work / f"wrk-{rnd}{sc.letter}.txt").write_text(text)
    r = parse_wrk(text)
    print(f"    {r.rps:,.0f} req/s  p50 {r.p50:.2f} ms  p99 {r.p99:.2f} ms  ({r.requests:,} requests, "
          f"non-2xx {r.non2xx}, socket errors {sum(r.socket_errors.values())})", flush=True)
    return Run(sc, rnd, r)


# -- profiling ----------------------------------------------------------------


def profile(args: argparse.Namespace, work: Path, base: str, key: str, pid: int) -> str:
    """py-spy on one worker during a run of B: collapsed stacks, then the
    shares of the samples by function (inclusive) and by leaf (self)."""
    spy = Path(sys.executable).parent / "py-spy"
    out = work / "profile-B.txt"
    seconds = max(args.duration, 5)
    sc = SCENARIOS[1]
    print(f"\n[profile] py-spy on worker {pid} during {seconds:g} s of B", flush=True)
    proc = subprocess.Popen([str(spy), "record", "--pid", str(pid), "--duration", f"{seconds:g}", "--rate", "250",
                             "--format", "raw", "--output", str(out), "--nonblocking"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    time.sleep(1)
    run_wrk(args, key, base + "/", BENCH / "skip.lua", [prefix(sc), str(MAX_SKIP)], seconds)
    log = proc.communicate(timeout=60)[0].decode(errors="replace")
    if proc.returncode != 0 or not out.exists():
        return f"py-spy failed ({proc.returncode}): {log.strip()[-300:]}"
    inclusive: collections.Counter[str] = collections.Counter()
    leaf: collections.Counter[str] = collections.Counter()
    total = 0
    for line in out.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f.split(" (")[0] + " (" + f.split(" (")[1].split(":")[0].rsplit("/", 1)[-1] + ")"
                  if " (" in f else f for f in stack.split(";")]
        total += n
        leaf[frames[-1]] += n
        for f in set(frames):
            inclusive[f] += n
    if not total:
        return "py-spy recorded no samples"
    interesting = [(f, c) for f, c in inclusive.most_common() if any(
        s in f for s in ("persona", "resolve", "_walk", "choose", "is_open", "substitute", "_eligible",
                         "zone_of", "ZoneInfo", "loads", "dumps", "list_page", "list_items", "_personalized",
                         "persona_of", "json_param", "execute", "fetch", "_moment", "_windows", "astimezone"))]
    lines = [f"py-spy, {total:,} samples of worker {pid} (250 Hz, threads py-spy sees as idle left out, {seconds:g} s of B; native calls such as orjson count as self time of the Python frame calling them); "
             f"raw stacks in {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}.", "",
             "| function (file) | inclusive | self | of `list_items` |", "|---|---:|---:|---:|"]
    handler = inclusive.get("list_items (routes.py)", 0) or total
    seen = set()
    for f, c in interesting[:25]:
        seen.add(f)
        lines.append(f"| `{f}` | {c / total:.1%} | {leaf[f] / total:.1%} | {c / handler:.0%} |")
    for f, _ in leaf.most_common(8):  # the busiest leaves elsewhere (mostly native calls below them)
        if f not in seen:
            lines.append(f"| `{f}` | {inclusive[f] / total:.1%} | {leaf[f] / total:.1%} | — |")
    return "\n".join(lines)


# -- report -------------------------------------------------------------------


def overheads(runs: list[Run], letter: str) -> list[float]:
    by_round = {(r.round, r.scenario.letter): r.result for r in runs}
    rounds = sorted({r.round for r in runs})
    return [by_round[(n, letter)].p50 / by_round[(n, "A")].p50 - 1 for n in rounds
            if (n, letter) in by_round and (n, "A") in by_round]


def render_table(runs: list[Run], sizes: dict[str, int]) -> tuple[str, bool]:
    lines = ["| scenario | req/s (rounds) | p50 (rounds) | p99 (rounds) | answer | p50 overhead vs A (rounds → median) "
             "| target | met? |", "|---|---:|---:|---:|---:|---:|---|---|"]
    met_all = True
    for sc in SCENARIOS:
        rs = [r.result for r in runs if r.scenario.letter == sc.letter]
        if not rs:
            continue
        rps = " / ".join(f"{r.rps:,.0f}" for r in rs)
        p50 = " / ".join(_ms(r.p50) for r in rs)
        p99 = " / ".join(_ms(r.p99) for r in rs)
        non2xx = sum(r.non2xx for r in rs)
        note = f" (**{non2xx:,} non-2xx**)" if non2xx else ""
        if sc.letter == "A":
            over, target, met = "—", "—", "—"
        else:
            ov = overheads(runs, sc.letter)
            middle = statistics.median(ov)
            over = " / ".join(f"{o:+.1%}" for o in ov) + f" → **{middle:+.1%}**"
            bound = TARGET if sc.letter == "B" else TARGET_VARS
            ok = middle <= bound and not non2xx
            met_all = met_all and ok
            target, met = f"≤ {bound:.0%}", "yes" if ok else "**no**"
        lines.append(f"| {sc.letter}: {sc.name}{note} | {rps} | {p50} | {p99} | "
                     f"{sizes.get(sc.letter, 0) / 1e3:.1f} KB | {over} | {target} | {met} |")
    return "\n".join(lines), met_all


def section(args: argparse.Namespace, dataset: Dataset, table: str, waited: str, met: bool, prof: str | None) -> str:
    m = dataset.marker
    text = (
        f"## {SECTION_TITLE}\n\n"
        f"`.venv/bin/python bench/persona.py` at {_git_revision()}: {args.posts:,} published posts of model "
        f"`posts` (title, markdown body, `hero` of type `variants`; ~{m.get('avg_post_bytes', 0):,} bytes of "
        "JSON each) written straight into the store. Every hero holds three variants: guest (`audience: []`, "
        "heading `Hello {{ name:friend }}`), member (`[member]`, `Welcome back {{ name }}`) and sale "
        "(`[member, sale]`, scheduled Sat–Sun 09:00–18:00 Europe/Berlin). "
        f"`quire serve --workers {args.workers}`, driven by `wrk -t{args.threads} -c{args.connections} "
        f"-d{args.duration:g}s` on the same machine after a {args.warmup:g} s warm-up per run, "
        f"`GET /api/content/items/posts?limit={PAGE}&skip=<random 0..{MAX_SKIP}>` (bench/skip.lua) with an "
        f"admin key; the scenarios alternate A, B, C over {args.rounds} rounds ({waited}). The overhead is "
        "p50 of B (or C) over p50 of A in the same round, minus one; the median over the rounds. Target (from the "
        f"issue): resolution on an items page of {PAGE} with variants adds ≤ {TARGET:.0%} to its median latency "
        f"(scenario B), and ≤ {TARGET_VARS:.0%} with variables replaced too (scenario C) — "
        f"**{'both met' if met else 'missed'}**. A page asked again is the list route's kept answer (until the "
        "next write, or the next minute for a page with a schedule), so after the warm-up most requests of "
        "every scenario are answered from it, personalized or not; what resolution costs shows in the first "
        "request of each page.\n\n{table}\n"
    )
    if prof:
        text += f"\n**Where the time goes in B:** {prof}\n"
    return text


# -- main ---------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Benchmark of personalization on content lists.")
    parser.add_argument("--posts", type=int, default=STANDARD_POSTS, help="posts to generate (default 10000)")
    add_load_options(parser, DEFAULT_WORK, SECTION_TITLE)
    parser.add_argument("--rounds", type=int, default=4, help="rounds of A, B, C (default 4)")
    parser.add_argument("--profile", action="store_true", help="profile a worker during B even if the target is met")
    parser.add_argument("--no-profile", action="store_true", help="never profile")
    parser.add_argument("--no-wait", action="store_true", help="do not wait for other benchmarks")
    args = parser.parse_args(argv)
    if args.posts < MAX_SKIP + PAGE:
        parser.error(f"--posts must be at least {MAX_SKIP + PAGE} (pages are read up to skip={MAX_SKIP})")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    check_load_options(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    if wrk_missing():
        return 2
    work: Path = args.work.resolve()
    runs: list[Run] = []
    sizes: dict[str, int] = {}
    prof: str | None = None
    try:
        dataset = ensure_data(work, args.posts, args.fresh)
        key = rotate_key(dataset.data_dir, KEY_NAME)
        waited = "other benchmarks not checked" if args.no_wait else wait_for_other_benchmarks()
        load_before = os.getloadavg()[0]
        server = Server(dataset.data_dir, free_port(), args.workers, work / "server.log")
        try:
            server.start()
            pids = server.wait_ready()
            print(f"Serving on {server.base}: worker pids {pids}", flush=True)
            for sc in SCENARIOS:
                problem, sizes[sc.letter] = check(sc, server.base, key, MAX_SKIP // 2)
                if problem:
                    print(f"error: scenario {sc.letter}: {problem}", file=sys.stderr)
                    return 1
            for rnd in range(1, args.rounds + 1):
                for sc in SCENARIOS:
                    runs.append(run_one(args, work, server.base, key, sc, rnd))
            table, met = render_table(runs, sizes)
            waited += f"; 1-minute load {load_before:.2f} before, {os.getloadavg()[0]:.2f} after the runs, on {os.cpu_count()} CPUs"
            if (args.profile or not met) and not args.no_profile:
                prof = profile(args, work, server.base, key, server.worker_pids()[0])
        finally:
            server.stop()
    except KeyboardInterrupt:
        print("\nInterrupted; the server was stopped.", file=sys.stderr)
        return 130

    print("\n" + table)
    print(f"\nTargets: resolution adds ≤ {TARGET:.0%} (B) and ≤ {TARGET_VARS:.0%} with variables (C) to p50 — "
          f"{'met' if met else 'MISSED'}")
    if prof:
        print("\n" + prof)
    problems = server_log_problems(work / "server.log")
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s) (see {work / 'server.log'}):")
        print("\n".join(problems[:10]))
    docs: Path | None = None if args.no_docs else args.docs or (DEFAULT_DOCS if args.posts == STANDARD_POSTS else None)
    if docs is not None:
        update_doc(docs, machine_paragraph(), section(args, dataset, table, waited, met, prof), SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {docs}")
    elif not args.no_docs:
        print(f"\nNot a standard-size run: {DEFAULT_DOCS.relative_to(ROOT)} left as it is (--docs PATH writes one).")
    return 1 if any(r.result.non2xx for r in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
