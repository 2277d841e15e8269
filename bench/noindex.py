#!/usr/bin/env python3
"""No declared indexes: the posts of the content benchmark (bench/run.py)
with a model that declares no `indexes`, at 1,000 and at 100,000 posts.

What it measures, all in one run (see bench/README.md):

- seven kinds of read at both sizes: single-client p50 (sequential
  requests over one keep-alive connection) and wrk req/s;
- the cost of a save on the 100,000 posts with automatic indexes on and off
  (`QUIRE_STORE_AUTO_INDEXES=0`), the two servers taking turns;
- the disk the posts' indexes take, by origin (`ax:` automatic, `ix:`
  declared, others), read from the SQLite file with dbstat after the run;
- a save every 20 ms on a fresh copy of the 100,000 posts while a query of
  a shape never seen before is sent three times (an automatic index of it
  may then be built in the background): the longest save and read meanwhile.

Every server runs on a copy of the generated data (`run`, `off`, `build`
beside it), so each run starts without automatic indexes. Results go to
stdout and, for a run at the standard sizes, to the "No declared indexes"
section of docs/benchmarks.md.

    .venv/bin/python bench/noindex.py                      # 1,000 and 100,000 posts, about 10 minutes
    .venv/bin/python bench/noindex.py --sizes 500,5000 --requests 50 --saves 50 \\
        --duration 2 --warmup 1 --no-docs                  # a quick check
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import http.client
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run  # noqa: E402  (bench/run.py: the data, the server, wrk and the docs)

BENCH = Path(__file__).resolve().parent
DEFAULT_WORK = BENCH / ".work" / "noindex"
SECTION_TITLE = "No declared indexes"
VARIANT = 1  # bump when the model or the hook below change the data
STANDARD_SIZES = (1_000, 100_000)
AUTHORS = 1_000
PAGE = 20
DEEP_SKIP = 5_000
SKIP_SPREAD = 100  # kind (b) asks skip=DEEP_SKIP..DEEP_SKIP+SKIP_SPREAD-1
VIEWS_TOP = 30  # kind (d) asks views >= N - VIEWS_TOP - r, r in 0..VIEWS_TOP-1
SAVE_EVERY = 0.02
KEY_NAME = "bench noindex"
TABLE = "content/posts"
ITEMS = "/api/content/items/posts"
AUTO_OFF = {"QUIRE_STORE_AUTO_INDEXES": "0"}
# every request reads the store: kept list answers (`[api] kept_answers_mb`)
# would answer a repeated page from memory and hide what the store costs
NO_KEPT = {"QUIRE_API_KEPT_ANSWERS_MB": "0"}
P50_BOUND_MS = 3.0
GROWTH_BOUND = 2.0  # p50 at the largest size over p50 at the smallest, at most
POPULATE_SHARE = 0.7  # (g) req/s over (a) req/s at the same size, at least
WRITE_BOUND = 1.5  # save p50 with automatic indexes over without, at most
BLOCK_BOUND_MS = 1_000.0
# A scan of 100,000 posts under 32 connections waits seconds for its turn:
# wrk's 2 s default would drop them all as timeouts and report 0 req/s.
WRK_TIMEOUT = 30.0
MIN_SAMPLES = 30  # one-client requests timed at least, even past --kind-seconds
MIN_WARM = 10  # and warm-up ones
BUILD_WAIT = 20.0  # seconds to wait for an automatic index after the third query of the new shape


def models() -> list[dict[str, Any]]:
    """The content benchmark's models without `indexes`, the posts with a
    number field `views`."""
    out = []
    for definition in run.MODELS:
        definition = copy.deepcopy(definition)
        definition.pop("indexes", None)
        if definition["name"] == "posts":
            definition["fields"].append({"name": "views", "type": "number"})
        out.append(definition)
    return out


def views_hook(posts: int) -> run.PostHook:
    """`views` of post n: a shuffle of 0..N-1 (own seed: the posts are
    otherwise those of bench/run.py), so exactly 30 posts have N-30 or more."""
    order = list(range(posts))
    random.Random(run.SEED + 1).shuffle(order)

    def hook(n: int, doc: dict[str, Any]) -> None:
        doc["views"] = order[n]

    return hook


def dataset(work: Path, size: int, fresh: bool) -> run.Dataset:
    return run.ensure_data(work / str(size), size, AUTHORS, fresh, models=models(), post_hook=views_hook(size),
                           variant={"variant": "noindex", "variant_version": VARIANT})


def fresh_copy(data: run.Dataset, name: str) -> Path:
    """A copy of the generated data dir, for one server (the generated one
    is never served: it stays without automatic indexes)."""
    target = data.data_dir.parent / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(data.data_dir, target)
    return target


def _q(value: Any) -> str:
    return urllib.parse.quote(json.dumps(value, separators=(",", ":")), safe="")


# -- the machine --------------------------------------------------------------


class Machine:
    """The load average at the start and end of each part, and the CPU time
    other processes (not this one, its servers or wrk) used during the run."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.cpu = run.process_cpu()
        self.busy = run.busy_seconds()
        self.times = os.times()
        self.ours: set[int] = {os.getpid()}
        self.loads: list[tuple[str, float, float]] = []

    @contextlib.contextmanager
    def part(self, name: str) -> Iterator[None]:
        before = os.getloadavg()[0]
        try:
            yield
        finally:
            self.loads.append((name, before, os.getloadavg()[0]))

    def own(self, server: run.Server) -> None:
        if server.proc is not None:
            self.ours.update([server.proc.pid, *run.descendants(server.proc.pid)])

    def text(self) -> str:
        seconds = time.monotonic() - self.started
        used: dict[str, float] = {}
        for pid, (name, cpu) in run.process_cpu().items():
            if pid in self.ours or name.startswith("wrk "):
                continue
            short = name if len(name) <= 70 else name[:67] + "..."
            used[short] = used.get(short, 0.0) + cpu - self.cpu.get(pid, (name, 0.0))[1]
        top = [(n, c) for n, c in sorted(used.items(), key=lambda kv: -kv[1]) if c >= 1.0][:3]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        # all busy CPU but this process and its children (the servers, whose
        # workers they wait for, and wrk): also counts processes gone meanwhile
        now = os.times()
        own = sum(now[:4]) - sum(self.times[:4])
        others = max(0.0, run.busy_seconds() - self.busy - own) / max(seconds, 1e-9) / cores
        loads = "; ".join(f"{name} {a:.2f} → {b:.2f}" for name, a, b in self.loads)
        busiest = ", ".join(f"`{n}` {c:.0f} s" for n, c in top) or "none over 1 s"
        return (f"1-minute load average per part: {loads}. Over the {seconds / 60:.1f} minutes of the run, other "
                f"processes used {others:.0%} of the {cores} CPUs (busiest: {busiest}).")


def _cpu_seconds(pids: list[int]) -> float:
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def settle(server: run.Server, limit: float = 90.0) -> float:
    """Wait until the server's workers are idle (under 5% of a CPU over
    half a second): wrk stops with requests still queued, and scans of
    100,000 posts left behind would slow the next measurement. Seconds
    waited."""
    started = time.monotonic()
    pids = server.worker_pids()
    while time.monotonic() - started < limit:
        before = _cpu_seconds(pids)
        time.sleep(0.5)
        if _cpu_seconds(pids) - before < 0.025:
            break
    return time.monotonic() - started


# -- one client, one request at a time ---------------------------------------


class Client:
    """Requests one after another over one keep-alive connection."""

    def __init__(self, base: str, key: str) -> None:
        parsed = urllib.parse.urlsplit(base)
        self.host, self.port = parsed.hostname or "127.0.0.1", parsed.port or 80
        self.key = key
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)

    def call(self, method: str, path: str, body: bytes | None = None) -> tuple[float, int, bytes]:
        """(milliseconds, status, body); one reconnect if the server closed
        the idle connection."""
        headers = {"api-key": self.key}
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            started = time.perf_counter()
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                return (time.perf_counter() - started) * 1000, response.status, data
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.conn.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.conn.close()


def one_shot(base: str, key: str, method: str, path: str, body: bytes | None = None) -> tuple[float, int, bytes]:
    """A request on a new connection (so that several land on every worker)."""
    client = Client(base, key)
    try:
        return client.call(method, path, body)
    except OSError as exc:
        return 0.0, 0, str(exc).encode()
    finally:
        client.close()


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


# -- the reads ----------------------------------------------------------------


@dataclass
class Kind:
    letter: str
    name: str
    paths: Callable[[int], list[str]]  # per size: the requests, one picked at random each time
    check: Callable[[int, Any], str | None]  # per size: what the first answer must be


def _list(body: Any, count: int) -> str | None:
    if not isinstance(body, list):
        return f"expected a bare list, got {type(body).__name__}: {str(body)[:200]}"
    return None if len(body) == count else f"expected {count} items, got {len(body)}"


def _envelope(body: Any, size: int, count: int) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("data"), list):
        return f"expected {{data, meta}}, got {str(body)[:200]}"
    if len(body["data"]) != count:
        return f"expected {count} items, got {len(body['data'])}"
    total = (body.get("meta") or {}).get("total")
    return None if total == size else f"meta.total is {total}, expected {size}"


def kinds(newest: dict[int, str]) -> list[Kind]:
    def check_views(size: int, body: Any) -> str | None:
        problem = _list(body, min(PAGE, size))
        if problem is None and any(d.get("views", -1) < size - VIEWS_TOP for d in body):  # first path: r = 0
            return "an item with fewer views than asked came back"
        return problem

    def check_featured(size: int, body: Any) -> str | None:
        if not isinstance(body, list) or not body:
            return f"expected a list of featured posts, got {str(body)[:200]}"
        if any(d.get("featured") is not True for d in body):
            return "an item that is not featured came back"
        views = [d.get("views") for d in body]
        return None if views == sorted(views, reverse=True) else "items are not sorted by views, most first"

    def check_newest(size: int, body: Any) -> str | None:
        got = body.get("_id") if isinstance(body, dict) else None
        return None if got == newest[size] else f"expected the item {newest[size]}, got {got}"

    def check_populated(size: int, body: Any) -> str | None:
        problem = _list(body, min(PAGE, size))
        author = body[0].get("author") if not problem and body else None
        return problem or (None if isinstance(author, dict) and "name" in author else f"author not populated: {author!r}")

    return [
        Kind("a", f"`limit={PAGE}`", lambda n: [f"{ITEMS}?limit={PAGE}"],
             lambda n, b: _list(b, min(PAGE, n))),
        Kind("b", f"`limit={PAGE}&skip={DEEP_SKIP:,}..{DEEP_SKIP + SKIP_SPREAD - 1:,}` (with total)",
             lambda n: [f"{ITEMS}?limit={PAGE}&skip={DEEP_SKIP + r}" for r in range(SKIP_SPREAD)],
             # the first request checked is skip=DEEP_SKIP (an empty page when there are fewer posts)
             lambda n, b: _envelope(b, n, max(0, min(PAGE, n - DEEP_SKIP)))),
        Kind("c", "newest item by id (`item/posts?sort={\"_id\":-1}`)",
             lambda n: [f"/api/content/item/posts?sort={_q({'_id': -1})}"], check_newest),
        Kind("d", f"`filter={{\"views\":{{\"$gte\":N-{VIEWS_TOP}-r}}}}&limit={PAGE}` (r in 0..{VIEWS_TOP - 1})",
             lambda n: [f"{ITEMS}?filter={_q({'views': {'$gte': max(0, n - VIEWS_TOP - r)}})}&limit={PAGE}"
                        for r in range(VIEWS_TOP)], check_views),
        Kind("e", f"`filter={{\"featured\":true}}&sort={{\"views\":-1}}&limit={PAGE}`",
             lambda n: [f"{ITEMS}?filter={_q({'featured': True})}&sort={_q({'views': -1})}&limit={PAGE}"],
             check_featured),
        Kind("f", f"`limit={PAGE}&skip=0` (with total)", lambda n: [f"{ITEMS}?limit={PAGE}&skip=0"],
             lambda n, b: _envelope(b, n, min(PAGE, n))),
        Kind("g", f"`populate=1&limit={PAGE}`", lambda n: [f"{ITEMS}?populate=1&limit={PAGE}"], check_populated),
    ]


@dataclass
class Reading:
    kind: Kind
    size: int
    samples: list[float] = field(default_factory=list)
    wrk: run.WrkResult | None = None
    new_indexes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def p50(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")


def auto_indexes(data_dir: Path) -> dict[str, str]:
    """Automatic indexes (`ax:`) of the posts table: name -> SQL, read from
    the file read-only."""
    uri = f"file:{data_dir / 'quire.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=5)) as db:
        rows = db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?",
                          (TABLE,)).fetchall()
    return {name: sql or "" for name, sql in rows if name.startswith("ax:")}


def measure_kind(args: argparse.Namespace, work: Path, server: run.Server, key: str, kind: Kind, size: int,
                 rng: random.Random, data_dir: Path) -> Reading:
    reading = Reading(kind, size)
    paths = kind.paths(size)
    before = auto_indexes(data_dir)
    print(f"\n[{kind.letter}] {size:,} posts: {kind.name}", flush=True)
    client = Client(server.base, key)
    try:
        _, status, raw = client.call("GET", paths[0])
        if status != 200:
            reading.error = f"answered {status}: {raw[:200]!r}"
            return reading
        reading.error = kind.check(size, orjson.loads(raw))
        if reading.error:
            return reading
        # a scan costs up to seconds a request: the warm-up stops after half
        # of --kind-seconds (10 requests at least), the timed part after all
        # of it (MIN_SAMPLES at least), so the run stays bounded
        warm_until = time.monotonic() + args.kind_seconds / 2
        for n in range(args.warm_requests):
            if n >= MIN_WARM and time.monotonic() > warm_until:
                break
            ms, status, raw = client.call("GET", rng.choice(paths))
            if status != 200:
                reading.error = f"answered {status}: {raw[:200]!r}"
                return reading
        deadline = time.monotonic() + args.kind_seconds
        for _ in range(args.requests):
            if len(reading.samples) >= MIN_SAMPLES and time.monotonic() > deadline:
                break
            ms, status, raw = client.call("GET", rng.choice(paths))
            if status != 200:
                reading.error = f"answered {status}: {raw[:200]!r}"
                return reading
            reading.samples.append(ms)
    finally:
        client.close()
    print(f"    one client: p50 {reading.p50:.2f} ms, p99 {_pct(reading.samples, 0.99):.2f} ms "
          f"({len(reading.samples)} requests)", flush=True)
    if len(paths) > 1:
        paths_file = work / f"paths-{kind.letter}-{size}.txt"
        paths_file.write_text("\n".join(paths) + "\n")
        url, script, script_args = server.base + "/", BENCH / "ids.lua", ["", str(paths_file)]
    else:
        url, script, script_args = server.base + paths[0], None, []
    if args.warmup > 0:
        run.run_wrk(args, key, url, script, script_args, args.warmup, WRK_TIMEOUT)
        settle(server)
    text = run.run_wrk(args, key, url, script, script_args, args.duration, WRK_TIMEOUT)
    waited = settle(server)
    if waited > 1:
        print(f"    the workers were busy {waited:.1f} s more with requests wrk had left", flush=True)
    (work / f"wrk-{kind.letter}-{size}.txt").write_text(text)
    reading.wrk = r = run.parse_wrk(text)
    print(f"    wrk: {r.rps:,.0f} req/s  p50 {r.p50:.2f} ms  p99 {r.p99:.2f} ms  ({r.requests:,} requests, "
          f"non-2xx {r.non2xx}, socket errors {sum(r.socket_errors.values())})", flush=True)
    reading.new_indexes = sorted(set(auto_indexes(data_dir)) - set(before))
    if reading.new_indexes:
        print(f"    automatic indexes built meanwhile: {', '.join(reading.new_indexes)}", flush=True)
    return reading


# -- the writes ---------------------------------------------------------------


def author_id(base: str, key: str) -> str:
    _, status, raw = one_shot(base, key, "GET", "/api/content/items/authors?limit=1")
    body = orjson.loads(raw) if status == 200 else None
    if not isinstance(body, list) or not body:
        raise RuntimeError(f"no author to link new posts to: {status} {raw[:200]!r}")
    return str(body[0]["_id"])


def new_post(tag: str, n: int, author: str) -> bytes:
    return orjson.dumps({"data": {
        "title": f"Saved post {tag} {n}", "slug": f"saved-post-{tag}-{n}", "category": "news",
        "published": "2026-07-01", "featured": n % 20 == 0, "views": n, "tags": ["bench"],
        "author": {"_model": "authors", "_id": author}, "body": "Saved while measuring.",
    }})


@dataclass
class WriteCost:
    on: list[float]
    off: list[float]

    @property
    def ratio(self) -> float:
        return statistics.median(self.on) / statistics.median(self.off)


def write_cost(args: argparse.Namespace, on: run.Server, off: run.Server, key_on: str, key_off: str) -> WriteCost:
    """Saves of new posts, the two servers taking turns (a disturbance of the
    shared machine falls on both)."""
    print(f"\n[writes] {args.warm_requests} + {args.saves} saves each, automatic indexes on and off in turn",
          flush=True)
    clients = {"on": Client(on.base, key_on), "off": Client(off.base, key_off)}
    authors = {"on": author_id(on.base, key_on), "off": author_id(off.base, key_off)}
    samples: dict[str, list[float]] = {"on": [], "off": []}
    try:
        for n in range(args.warm_requests + args.saves):
            for which, client in clients.items():
                ms, status, raw = client.call("POST", "/api/content/item/posts", new_post(which, n, authors[which]))
                if status != 200:
                    raise RuntimeError(f"save ({which}) answered {status}: {raw[:200]!r}")
                if n >= args.warm_requests:
                    samples[which].append(ms)
    finally:
        for client in clients.values():
            client.close()
    cost = WriteCost(samples["on"], samples["off"])
    print(f"    on: p50 {statistics.median(cost.on):.2f} ms; off: p50 {statistics.median(cost.off):.2f} ms; "
          f"ratio {cost.ratio:.2f}", flush=True)
    return cost


# -- disk use -----------------------------------------------------------------


def index_disk(data_dir: Path) -> dict[str, Any]:
    """Bytes of the posts table and of its indexes by origin, from dbstat,
    with the file opened read-only."""
    uri = f"file:{data_dir / 'quire.db'}?mode=ro"
    with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=30)) as db:
        sizes = dict(db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name").fetchall())
        indexes = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ?", (TABLE,)).fetchall()]
    out: dict[str, Any] = {"table": sizes.get(TABLE, 0), "ax": 0, "ix": 0, "other": 0, "names": {}}
    for name in indexes:
        origin = "ax" if name.startswith("ax:") else "ix" if name.startswith("ix:") else "other"
        out[origin] += sizes.get(name, 0)
        out["names"].setdefault(origin, []).append(name)
    return out


# -- an index built while saving ----------------------------------------------


@dataclass
class Timed:
    at: float  # monotonic seconds when the request was sent
    ms: float
    ok: bool


class Loop:
    """Runs a request every `every` seconds in a thread, recording each."""

    def __init__(self, name: str, every: float, request: Callable[[int], tuple[float, int, bytes]]) -> None:
        self.name = name
        self.every = every
        self.request = request
        self.times: list[Timed] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        n = 0
        next_at = time.monotonic()
        while not self._stop.is_set():
            at = time.monotonic()
            ms, status, _ = self.request(n)
            self.times.append(Timed(at, ms if status else (time.monotonic() - at) * 1000, status == 200))
            n += 1
            # no catching up after a slow one: a blocked save is followed by one save, not a burst
            next_at = max(next_at + self.every, time.monotonic())
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def __enter__(self) -> Loop:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=180)

    def within(self, start: float, end: float) -> list[Timed]:
        """The requests under way at some moment between start and end."""
        return [t for t in self.times if t.at <= end and t.at + t.ms / 1000 >= start]

    def started(self, start: float, end: float) -> list[Timed]:
        """The requests sent between start and end: what a build going on
        then makes wait (one under way before may have waited for a scan of
        the shape's first queries, which holds up its worker)."""
        return [t for t in self.times if start <= t.at <= end]


@dataclass
class Window:
    name: str
    saves: list[Timed]
    reads: list[Timed]

    @staticmethod
    def worst(timed: list[Timed]) -> float:
        return max((t.ms for t in timed), default=0.0)

    @property
    def failed(self) -> int:
        return sum(not t.ok for t in self.saves + self.reads)

    @property
    def met(self) -> bool:
        return (self.failed == 0 and self.worst(self.saves) <= BLOCK_BOUND_MS
                and self.worst(self.reads) <= BLOCK_BOUND_MS)


@dataclass
class Build:
    index: str | None  # the automatic index that appeared, if any
    seconds: float  # from the first query of the new shape to the index (or to the end of the wait)
    before: Window  # the 2 s before the first query
    whole: Window  # from the first query of the shape on (its scans included)
    alone: Window  # from the answer to the third query on: the build alone
    shape_ms: list[float]
    after_ms: list[float]

    @property
    def met(self) -> bool | None:
        """The target applies to a build: none, no verdict."""
        return self.alone.met if self.index else None


@dataclass
class Hold:
    """A build measured in process: how long writes of another connection
    waited while a thread built the index (its transaction holds SQLite's
    write lock), without the requests a busy worker holds up."""

    index: str | None
    build_seconds: float
    waits_ms: list[float]


def build_hold(data_dir: Path) -> Hold:
    """On a fresh copy: a writer commits a row every 5 ms on a connection of
    its own while a sort never seen before is read three times and the
    automatic index for it is built; every write's wait for the lock."""
    quire = run._open_quire(data_dir)
    waits: list[float] = []
    stop = threading.Event()
    db = str(data_dir / "quire.db")

    def writes() -> None:
        conn = sqlite3.connect(db, isolation_level=None, timeout=60)
        conn.execute("CREATE TABLE IF NOT EXISTS bench_writes (at REAL)")
        conn.execute("PRAGMA synchronous = NORMAL")  # as Quire's own connections
        while not stop.is_set():
            started = time.perf_counter()
            conn.execute("BEGIN IMMEDIATE")
            # the wait for the lock alone: a commit may also checkpoint the
            # build's pages into the file, which is no wait for the lock
            waits.append((time.perf_counter() - started) * 1000)
            conn.execute("INSERT INTO bench_writes VALUES (?)", (started,))
            conn.execute("COMMIT")
            time.sleep(0.005)
        conn.close()

    try:
        coll = quire.models.collection(quire.models.get("posts"))
        known = set(auto_indexes(data_dir))
        writer = threading.Thread(target=writes, daemon=True)
        writer.start()
        time.sleep(1.0)
        started = time.perf_counter()
        for _ in range(3):
            coll.find_page({"_state": 1}, [(("title",), 1)], PAGE)
        assert quire.store.auto is not None
        quire.store.auto.wait(120)
        seconds = time.perf_counter() - started
        time.sleep(0.5)
        stop.set()
        writer.join()
    finally:
        quire.close()
    new = sorted(set(auto_indexes(data_dir)) - known)
    return Hold(new[0] if new else None, seconds, waits)


def build_block(server: run.Server, key: str, data_dir: Path, size: int) -> Build:
    """Saves every SAVE_EVERY s and reads as often, on new connections (so they
    reach both workers); meanwhile a query of a new shape three times, then a
    wait for an automatic index of the posts."""
    print(f"\n[build] a save every {SAVE_EVERY * 1000:.0f} ms and a read as often on {size:,} posts; "
          "a query of a new shape three times", flush=True)
    author = author_id(server.base, key)
    def shape_path(n: int) -> str:
        """A range of views (a tenth of them, another each time), newest first."""
        low = (n * 7_919) % max(1, size // 2)
        views = {"views": {"$gte": low, "$lt": low + max(1, size // 10)}}
        return f"{ITEMS}?filter={_q(views)}&sort={_q({'published': -1})}&limit={PAGE}"

    def save(n: int) -> tuple[float, int, bytes]:
        return one_shot(server.base, key, "POST", "/api/content/item/posts", new_post("build", n, author))

    def read(n: int) -> tuple[float, int, bytes]:
        return one_shot(server.base, key, "GET", f"{ITEMS}?limit={PAGE}")

    known = set(auto_indexes(data_dir))
    client = Client(server.base, key)
    index: str | None = None
    try:
        with Loop("saves", SAVE_EVERY, save) as saves, Loop("reads", SAVE_EVERY, read) as reads:
            time.sleep(2.0)  # the saves before: what a save costs without a build
            started = time.monotonic()
            shape_ms = []
            for n in range(3):
                ms, status, raw = client.call("GET", shape_path(n))
                if status != 200:
                    raise RuntimeError(f"the query of the new shape answered {status}: {raw[:200]!r}")
                shape_ms.append(ms)
            answered = time.monotonic()
            deadline = time.monotonic() + BUILD_WAIT
            while time.monotonic() < deadline:
                new = sorted(set(auto_indexes(data_dir)) - known)
                if new:
                    index = new[0]
                    break
                time.sleep(0.05)
            ended = time.monotonic()
            time.sleep(1.0)
        after_ms = [client.call("GET", shape_path(n))[0] for n in range(3, 8)]
    finally:
        client.close()
    # a request under way at `started` began before: it belongs to the 2 s before
    build = Build(index, ended - started,
                  Window("before", saves.within(started - 2.0, started), reads.within(started - 2.0, started)),
                  Window("whole", saves.within(started, ended), reads.within(started, ended)),
                  Window("alone", saves.started(answered, ended), reads.started(answered, ended)),
                  shape_ms, after_ms)
    print(f"    index: {index or 'none appeared'} after {build.seconds:.1f} s", flush=True)
    for w in (build.before, build.whole, build.alone):
        print(f"    {w.name}: {len(w.saves)} saves, longest {w.worst(w.saves):.1f} ms; {len(w.reads)} reads, "
              f"longest {w.worst(w.reads):.1f} ms; {w.failed} failed", flush=True)
    return build


# -- report -------------------------------------------------------------------


def _ms(value: float) -> str:
    return "—" if value != value else run._ms(value)  # NaN: not measured


def _size(n: int) -> str:
    return f"{n // 1000:,}k" if n % 1000 == 0 else f"{n:,}"


def kind_targets(readings: list[Reading], sizes: list[int]) -> list[tuple[Kind, dict[int, Reading], bool, str]]:
    small, large = sizes[0], sizes[-1]
    by = {(r.kind.letter, r.size): r for r in readings}
    out = []
    for kind in {r.kind.letter: r.kind for r in readings}.values():
        at = {size: by[(kind.letter, size)] for size in sizes if (kind.letter, size) in by}
        a, b = at.get(small), at.get(large)
        notes = []
        met = bool(a and b and not a.error and not b.error)
        if a and b and met:
            ratio = b.p50 / a.p50
            met = ratio <= GROWTH_BOUND and b.p50 <= P50_BOUND_MS
            if kind.letter == "g":
                for size in sizes:
                    plain, pop = by.get(("a", size)), at.get(size)
                    if plain and pop and plain.wrk and pop.wrk:
                        share = pop.wrk.rps / plain.wrk.rps
                        notes.append(f"{share:.0%} of (a) at {_size(size)}")
                        met = met and share >= POPULATE_SHARE
            met = met and not any(r.wrk is None or r.wrk.non2xx for r in at.values())
        out.append((kind, at, met, "; ".join(notes)))
    return out


def reads_table(readings: list[Reading], sizes: list[int]) -> str:
    small, large = sizes[0], sizes[-1]
    head = (f"| kind | p50 at {_size(small)} | p50 at {_size(large)} | ratio | req/s at {_size(small)} | "
            f"req/s at {_size(large)} | target | met? |")
    lines = [head, "|---|---:|---:|---:|---:|---:|---|---|"]
    for kind, at, met, note in kind_targets(readings, sizes):
        errors = [f"{_size(s)}: {r.error}" for s, r in at.items() if r.error]
        a, b = at.get(small), at.get(large)
        target = f"{_size(large)} p50 ≤ {GROWTH_BOUND:g}× {_size(small)} and ≤ {P50_BOUND_MS:g} ms"
        if kind.letter == "g":
            target += f"; req/s ≥ {POPULATE_SHARE:.0%} of (a)"
        if errors or a is None or b is None:
            lines.append(f"| ({kind.letter}) {kind.name} | — | — | — | — | — | {target} | **error**: "
                         f"{'; '.join(errors) or 'not measured'} |")
            continue
        rps = [f"{r.wrk.rps:,.0f}" if r.wrk else "—" for r in (a, b)]
        lines.append(f"| ({kind.letter}) {kind.name} | {_ms(a.p50)} | {_ms(b.p50)} | {b.p50 / a.p50:.1f}× | "
                     f"{rps[0]} | {rps[1]} | {target} | {run._met(met, note)} |")
    return "\n".join(lines)


def details_table(readings: list[Reading]) -> str:
    lines = ["| kind | posts | one client: requests | p99 | wrk p50 | wrk p99 | wrk requests | non-2xx | socket errors "
             "| automatic indexes new after it |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in readings:
        if r.wrk is None:
            continue
        w = r.wrk
        nan = float("nan")  # no latency when no request was answered within the run
        p50, p99 = (w.p50, w.p99) if w.requests else (nan, nan)
        lines.append(f"| ({r.kind.letter}) | {r.size:,} | {len(r.samples)} | {_ms(_pct(r.samples, 0.99))} | {_ms(p50)} | {_ms(p99)} | "
                     f"{w.requests:,} | {w.non2xx:,} | {sum(w.socket_errors.values()):,} | "
                     f"{', '.join(f'`{n}`' for n in r.new_indexes) or '—'} |")
    return "\n".join(lines)


def writes_text(cost: WriteCost | None, size: int) -> str:
    if cost is None:
        return "Writes: not measured."
    on, off = statistics.median(cost.on), statistics.median(cost.off)
    met = cost.ratio <= WRITE_BOUND
    return ("| save of a new post | p50 | p99 | max |\n|---|---:|---:|---:|\n"
            f"| automatic indexes on (the {size:,} posts after the reads) | {_ms(on)} | {_ms(_pct(cost.on, 0.99))} | "
            f"{_ms(max(cost.on))} |\n"
            f"| automatic indexes off (`QUIRE_STORE_AUTO_INDEXES=0`, a fresh copy) | {_ms(off)} | "
            f"{_ms(_pct(cost.off, 0.99))} | {_ms(max(cost.off))} |\n\n"
            f"On over off: **{cost.ratio:.2f}×** (target ≤ {WRITE_BOUND:g}×: {run._met(met)}).")


def disk_table(disks: dict[int, dict[str, Any]]) -> str:
    mb = 1024 * 1024
    lines = ["| posts | table | `ax:` (automatic) | `ix:` (declared) | others | index names |",
             "|---:|---:|---:|---:|---:|---|"]
    for size, d in disks.items():
        names = "; ".join(f"{o}: " + ", ".join(f"`{n}`" for n in ns) for o, ns in d["names"].items()) or "—"
        lines.append(f"| {size:,} | {d['table'] / mb:.1f} MB | {d['ax'] / mb:.2f} MB | {d['ix'] / mb:.2f} MB | "
                     f"{d['other'] / mb:.2f} MB | {names} |")
    return "\n".join(lines)


def build_text(build: Build | None, size: int) -> str:
    if build is None:
        return "Index build: not measured."
    if build.index:
        what = (f"the automatic index `{build.index}` appeared {build.seconds:.1f} s after the first query of the "
                "shape")
        verdict = run._met(build.met)
    else:
        what = (f"no automatic index appeared within {BUILD_WAIT:g} s of the third query (the rows cover those "
                f"{build.seconds:.1f} s)")
        verdict = "— (no index was built)"
    after = statistics.median(build.after_ms) if build.after_ms else float("nan")

    def p50(timed: list[Timed]) -> str:
        return _ms(statistics.median([t.ms for t in timed]) if timed else float("nan"))

    rows = [("2 s before the first query of the shape", build.before, "—", "—"),
            ("from the first query of the shape (its scans too) to the index", build.whole, "—", "—"),
            ("sent from the answer to the third query until the index is there: the build", build.alone,
             f"≤ {BLOCK_BOUND_MS / 1000:g} s", "never blocked")]
    lines = ["| window | saves | p50 | longest | target | reads `limit=20` | p50 | longest | target | failed |",
             "|---|---:|---:|---:|---|---:|---:|---:|---|---:|"]
    for name, w, save_target, read_target in rows:
        lines.append(f"| {name} | {len(w.saves)} | {p50(w.saves)} | {_ms(w.worst(w.saves))} | {save_target} | "
                     f"{len(w.reads)} | {p50(w.reads)} | {_ms(w.worst(w.reads))} | {read_target} | {w.failed} |")
    return (
        "\n".join(lines) + "\n\n"
        f"On a fresh copy of the {size:,} posts, a save every {SAVE_EVERY * 1000:.0f} ms and a read as often, each "
        f"on a new connection; {what}. The query "
        f"(`filter={{\"views\":{{\"$gte\":A,\"$lt\":B}}}}&sort={{\"published\":-1}}&limit={PAGE}`) took "
        f"{', '.join(_ms(m) for m in build.shape_ms)} the first three times and {_ms(after)} (p50 of 5) afterwards. "
        f"Target (the build's window): {verdict}."
    )


def hold_text(hold: Hold | None, size: int) -> str:
    if hold is None or not hold.waits_ms:
        return "The build in process: not measured."
    worst = max(hold.waits_ms)
    met = hold.index is not None and worst <= BLOCK_BOUND_MS
    return (f"**The build alone, in process** (another fresh copy of the {size:,} posts): a thread committed a row "
            "every 5 ms on a connection of its own while a sort never seen before (`_state` = 1, by `title`) was "
            f"read three times; the automatic index `{hold.index}` was there {hold.build_seconds:.2f} s after the "
            f"first read. Of {len(hold.waits_ms):,} writes (each timed from `BEGIN IMMEDIATE` until it has the lock), "
            f"p50 {_ms(statistics.median(hold.waits_ms))}, the longest waited **{_ms(worst)}** for the lock (target ≤ {BLOCK_BOUND_MS / 1000:g} s: {run._met(met)}). "
            "Over HTTP (above), a request can also wait behind the first queries' scans on its worker, which "
            "answers one request at a time while SQLite scans.")


def section(args: argparse.Namespace, sizes: list[int], readings: list[Reading], cost: WriteCost | None,
            disks: dict[int, dict[str, Any]], build: Build | None, hold: Hold | None, machine: Machine,
            autos: dict[int, dict[str, str]], avg_bytes: int) -> str:
    large = sizes[-1]
    present = "; ".join(f"{_size(s)}: " + (", ".join(f"`{n}`" for n in a) or "none") for s, a in autos.items())
    return (
        f"## {SECTION_TITLE}\n\n"
        f"`make bench` (bench/noindex.py) at {run._git_revision()}: the posts of the content benchmark (same "
        f"generator, ~{avg_bytes:,} bytes of JSON each, {AUTHORS:,} authors) with a model that declares **no "
        f"`indexes`**, and a number field `views` (a shuffle of 0..N-1), at {' and '.join(f'{s:,}' for s in sizes)} "
        f"posts, each served from a fresh copy by `quire serve --workers {args.workers}` (both up at once, the sizes "
        f"measured in turn per kind). One client: {args.requests} sequential requests over one keep-alive connection "
        f"after {args.warm_requests} warm-up ones (fewer when they take over {args.kind_seconds:g} s, resp. "
        f"{args.kind_seconds / 2:g} s: at least {MIN_SAMPLES}, resp. {MIN_WARM}; see the details), the parameter varied per request where the kind says so; then "
        f"`wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s --timeout {WRK_TIMEOUT:g}s` after a "
        f"{args.warmup:g} s warm-up. Admin key; kept list answers off (`QUIRE_API_KEPT_ANSWERS_MB=0`), so that "
        "every request reads the store. `featured` is the posts' boolean (about 5% true): their `published` is a date.\n\n"
        f"{reads_table(readings, sizes)}\n\n{details_table(readings)}\n\n"
        f"Automatic indexes on the posts after the reads: {present}.\n\n"
        f"**Cost of a save** on the {large:,} posts ({args.saves} new posts per server after "
        f"{args.warm_requests} warm-up ones, one client each, the servers taking turns):\n\n"
        f"{writes_text(cost, large)}\n\n"
        "**Disk used by the posts' indexes** after the run (dbstat, file opened read-only; \"others\" is SQLite's "
        "index of the primary key `id`):\n\n"
        f"{disk_table(disks)}\n\n"
        f"**An index built while writing:**\n\n{build_text(build, large)}\n\n"
        f"{hold_text(hold, large)}\n\n"
        f"{machine.text()}\n"
    )


# -- main ---------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="No declared indexes: reads, writes, index disk use and "
                                                 "builds (see bench/README.md).")
    parser.add_argument("--sizes", default=",".join(str(s) for s in STANDARD_SIZES),
                        help="two post counts, small then large (default 1000,100000)")
    parser.add_argument("--requests", type=int, default=300, help="timed one-client requests per kind (default 300)")
    parser.add_argument("--warm-requests", type=int, default=50, help="one-client warm-up requests (default 50)")
    parser.add_argument("--kind-seconds", type=float, default=60,
                        help=f"stop the one-client requests of a kind after this many seconds, once "
                             f"{MIN_SAMPLES} are timed (default 60)")
    parser.add_argument("--saves", type=int, default=300, help="timed saves per server (default 300)")
    run.add_load_options(parser, DEFAULT_WORK, SECTION_TITLE)
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    try:
        args.size_list = sorted(int(s) for s in args.sizes.split(","))
    except ValueError:
        parser.error("--sizes takes two numbers, e.g. 1000,100000")
    if len(args.size_list) != 2 or args.size_list[0] < PAGE or args.size_list[0] == args.size_list[1]:
        parser.error(f"--sizes takes two different numbers of at least {PAGE}")
    if args.requests < 1 or args.saves < 1 or args.warm_requests < 0:
        parser.error("--requests and --saves must be at least 1, --warm-requests at least 0")
    run.check_load_options(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, run._terminate)
    if run.wrk_missing():
        return 2
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    sizes: list[int] = args.size_list
    large = sizes[-1]
    machine = Machine()
    readings: list[Reading] = []
    cost: WriteCost | None = None
    build: Build | None = None
    disks: dict[int, dict[str, Any]] = {}
    autos: dict[int, dict[str, str]] = {}
    logs: list[Path] = []
    rng = random.Random(run.SEED)

    def serve(stack: contextlib.ExitStack, data_dir: Path, name: str, env: dict[str, str] | None = None) -> run.Server:
        log = work / f"server-{name}.log"
        logs.append(log)
        server = run.Server(data_dir, run.free_port(), args.workers, log, NO_KEPT | (env or {}))
        stack.callback(server.stop)
        server.start()
        server.wait_ready()
        machine.own(server)
        return server

    try:
        with machine.part("data"):
            data = {size: dataset(work, size, args.fresh) for size in sizes}
        newest = {size: max(data[size].ids_file.read_text().split()) for size in sizes}
        run_dirs = {size: fresh_copy(data[size], "run") for size in sizes}
        keys = {size: run.rotate_key(run_dirs[size], KEY_NAME) for size in sizes}
        with contextlib.ExitStack() as stack, machine.part("reads"):
            servers = {size: serve(stack, run_dirs[size], f"reads-{size}") for size in sizes}
            for kind in kinds(newest):
                for size in sizes:
                    readings.append(measure_kind(args, work, servers[size], keys[size], kind, size, rng,
                                                 run_dirs[size]))
        autos = {size: auto_indexes(run_dirs[size]) for size in sizes}
        off_dir = fresh_copy(data[large], "off")
        key_off = run.rotate_key(off_dir, KEY_NAME)
        with contextlib.ExitStack() as stack, machine.part("writes"):
            on = serve(stack, run_dirs[large], "writes-on")
            off = serve(stack, off_dir, "writes-off", AUTO_OFF)
            cost = write_cost(args, on, off, keys[large], key_off)
        build_dir = fresh_copy(data[large], "build")
        key_build = run.rotate_key(build_dir, KEY_NAME)
        with contextlib.ExitStack() as stack, machine.part("build"):
            build = build_block(serve(stack, build_dir, "build"), key_build, build_dir, large)
        with machine.part("build in process"):
            hold = build_hold(fresh_copy(data[large], "hold"))
        print(f"    in process: {hold.index} in {hold.build_seconds:.2f} s; longest write wait "
              f"{max(hold.waits_ms, default=0):.1f} ms", flush=True)
        disks = {size: index_disk(run_dirs[size]) for size in sizes}
    except KeyboardInterrupt:
        print("\nInterrupted; the servers were stopped.", file=sys.stderr)
        return 130

    text = section(args, sizes, readings, cost, disks, build, hold, machine, autos,
                   int(data[large].marker.get("avg_post_bytes", 0)))
    print("\n" + text)
    problems = [line for log in logs for line in run.server_log_problems(log)]
    if problems:
        print(f"\nThe servers logged {len(problems)} problem line(s) (see {work}/server-*.log):")
        print("\n".join(problems[:10]))
    standard = tuple(sizes) == STANDARD_SIZES
    docs: Path | None = None if args.no_docs else args.docs or (run.DEFAULT_DOCS if standard else None)
    if docs is not None:
        run.update_doc(docs, run.machine_paragraph(), text, SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {docs}")
    elif not args.no_docs:
        print(f"\nNot the standard sizes: {run.DEFAULT_DOCS.relative_to(run.ROOT)} left as it is "
              "(--docs PATH writes one).")
    failed = any(r.error or (r.wrk is not None and r.wrk.non2xx) for r in readings)
    missed = (not all(met for _, _, met, _ in kind_targets(readings, sizes))
              or (cost is not None and cost.ratio > WRITE_BOUND) or (build is not None and build.met is not True))
    if failed:
        return 1
    return 1 if args.strict and missed else 0


if __name__ == "__main__":
    sys.exit(main())
