#!/usr/bin/env python3
"""Load benchmark of Quire's content API (`make bench`).

Generates a blog of N posts and M authors straight through the Python API,
serves it with `quire serve --workers 2`, drives it with wrk and streams the
whole collection once while sampling the workers' memory. Results go to
stdout and, for a standard-size run, to the "Content" section of
docs/benchmarks.md. See bench/README.md.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime as dt
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from quire.demo import MODELS as DEMO_MODELS

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DEFAULT_WORK = BENCH / ".work"
DEFAULT_DOCS = ROOT / "docs" / "benchmarks.md"

GENERATOR_VERSION = 3  # bump when the generated data changes shape
STANDARD_POSTS = 100_000
STANDARD_AUTHORS = 1_000
SEED = 20260101
BATCH = 5_000
MAX_SKIP = 2_000
PAGE = 20
SAMPLE_SECONDS = 0.02
KEY_NAME = "bench"
MB = 1024 * 1024
CEILING_TARGET = 0.70  # Quire's req/s over the ceiling's, at least
BACKENDS = ("sqlite", "postgresql")

# -- the data -----------------------------------------------------------------

# The blog models of the demo (`quire demo`): authors and posts.
MODELS: list[dict[str, Any]] = [m for m in DEMO_MODELS if m["name"] in ("authors", "posts")]

WORDS = (
    "quire", "content", "model", "field", "item", "author", "post", "guide", "release", "news",
    "api", "query", "filter", "sort", "index", "page", "stream", "cache", "worker", "request",
    "response", "schema", "locale", "draft", "publish", "archive", "asset", "image", "link",
    "populate", "token", "key", "role", "permission", "store", "table", "document", "json",
    "text", "markdown", "select", "date", "boolean", "tags", "engine", "machine", "language",
    "system", "network", "server", "client", "browser", "editor", "review", "update", "version",
    "change", "feature", "fix", "build", "test", "deploy", "monitor"
)
TAGS = (
    "intro", "howto", "api", "models", "release", "performance", "security", "sqlite", "python",
    "search", "assets", "locales", "roles", "hooks", "cli", "deploy", "docker", "testing",
    "tips", "news", "community"
)
CATEGORIES = ("news", "guides", "releases")
FIRST = (
    "Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Margaret", "Ken", "Dennis",
    "Frances", "Linus", "Guido"
)
LAST = (
    "Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Hamilton", "Thompson",
    "Ritchie", "Allen", "Torvalds", "Rossum"
)
EPOCH_DAY = dt.date(2018, 1, 1).toordinal()
LAST_DAY = dt.date(2026, 6, 30).toordinal()


def _sentence(rng: random.Random, lo: int, hi: int) -> str:
    words = rng.choices(WORDS, k=rng.randint(lo, hi))
    return " ".join(words).capitalize() + "."


def _paragraphs(rng: random.Random, lo: int, hi: int) -> str:
    return "\n\n".join(
        " ".join(_sentence(rng, 6, 14) for _ in range(rng.randint(2, 4)))
        for _ in range(rng.randint(lo, hi))
    )


def _post(rng: random.Random, n: int, post_id: str, author_id: str, actor: str,
          picture_ids: list[str], pictures: float) -> dict[str, Any]:
    title = " ".join(rng.choices(WORDS, k=rng.randint(3, 7))).capitalize()
    day = dt.date.fromordinal(rng.randint(EPOCH_DAY, LAST_DAY))
    created = int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp()) + rng.randint(0, 86_399)
    modified = created + rng.randint(0, 30 * 86_400)
    return {
        "_id": post_id,
        "_rev": 1,  # where the API stores it, as for an item created through it
        "title": title,
        "slug": re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + f"-{n}",
        "body": f"# {title}\n\n" + _paragraphs(rng, 2, 4),
        "tags": rng.sample(TAGS, rng.randint(1, 4)),
        "category": rng.choice(CATEGORIES),
        "published": day.isoformat(),
        "featured": rng.random() < 0.05,
        "author": {"_model": "authors", "_id": author_id},
        "image": {"_id": rng.choice(picture_ids)} if rng.random() < pictures else None,
        "_state": 1,
        "_created": created,
        "_modified": modified,
        "_cby": actor,
        "_mby": actor,
    }


def _pictures(quire: Any, rng: random.Random, count: int, actor: str, now: int) -> list[str]:
    """Asset records (no files: content answers only read the records) for
    the posts' pictures, shaped as uploads make them."""
    from quire.ids import new_id

    coll = quire.store.collection("assets/assets")
    ids = []
    with quire.store.transaction():
        for n in range(count):
            asset_id = new_id()
            width, height = rng.choice([(1600, 1000), (1200, 800), (1000, 1500)])
            coll.insert({
                "_id": asset_id, "path": f"/2026/01/01/picture-{n}_{asset_id[-8:]}.jpg",
                "title": f"Picture {n}", "description": "", "tags": ["bench"], "mime": "image/jpeg",
                "type": "image", "size": rng.randint(80_000, 900_000), "width": width, "height": height,
                "colors": ["#f99f50", "#212845", "#293155"], "thumbhash": "HUQBBYBoeIiIeHiHiIiIgPB3iX94",
                "altText": f"Picture {n}", "folder": None, "fp": None, "_hash": f"{n:064x}",
                "_created": now, "_modified": now, "_cby": actor,
            })
            ids.append(asset_id)
    return ids


def _author(rng: random.Random, author_id: str, actor: str, now: int) -> dict[str, Any]:
    name = f"{rng.choice(FIRST)} {rng.choice(LAST)}"
    return {
        "_id": author_id,
        "_rev": 1,  # where the API stores it, as for an item created through it
        "name": name,
        "bio": _paragraphs(rng, 1, 1),
        "email": name.lower().replace(" ", ".") + "@example.com",
        "_state": 1,
        "_created": now,
        "_modified": now,
        "_cby": actor,
        "_mby": actor,
    }


@dataclass
class Dataset:
    data_dir: Path
    ids_file: Path
    marker: dict[str, Any]


def _open_quire(data_dir: Path) -> Any:
    from quire.app import Quire
    from quire.config import load_settings

    # env={}: QUIRE_* variables of the caller must not change the benchmark.
    return Quire(load_settings(data_dir, env={}))


PostHook = Callable[[int, dict[str, Any]], None]


def ensure_data(work: Path, posts: int, authors: int, fresh: bool, pictures: float = 0.0,
                models: list[dict[str, Any]] | None = None, post_hook: PostHook | None = None,
                variant: dict[str, Any] | None = None) -> Dataset:
    """The data dir for these counts: reused when its marker matches.

    Other benchmarks reuse the generator with their own `models` (the same
    names) and a `post_hook(n, doc)` that changes each post before it is
    stored; `variant` names that difference in the marker."""
    data_dir = work / "data"
    ids_file = work / "post-ids.txt"
    marker_file = work / "marker.json"
    wanted = {"generator": GENERATOR_VERSION, "posts": posts, "authors": authors, "seed": SEED,
              "pictures": pictures, **(variant or {})}
    if not fresh and marker_file.exists() and ids_file.exists() and (data_dir / "quire.db").exists():
        with contextlib.suppress(ValueError, OSError):
            marker = json.loads(marker_file.read_text())
            if all(marker.get(k) == v for k, v in wanted.items()):
                print(f"Reusing {data_dir} ({posts:,} posts, {authors:,} authors; --fresh regenerates)")
                return Dataset(data_dir, ids_file, marker)
    marker_file.unlink(missing_ok=True)
    ids_file.unlink(missing_ok=True)
    if data_dir.exists():
        shutil.rmtree(data_dir)
    work.mkdir(parents=True, exist_ok=True)
    marker = {**wanted, **generate(data_dir, ids_file, posts, authors, pictures, models, post_hook)}
    marker_file.write_text(json.dumps(marker, indent=2) + "\n")
    return Dataset(data_dir, ids_file, marker)


def generate(data_dir: Path, ids_file: Path, posts: int, authors: int, pictures: float,
             models: list[dict[str, Any]] | None = None, post_hook: PostHook | None = None) -> dict[str, Any]:
    from quire.content.models import parse_model
    from quire.ids import new_id

    started = time.perf_counter()
    print(f"Generating {posts:,} posts and {authors:,} authors in {data_dir} ...", flush=True)
    rng = random.Random(SEED)
    quire = _open_quire(data_dir)
    try:
        for definition in models or MODELS:
            quire.models.save(parse_model(definition["name"], definition))
        actor = new_id()
        now = int(time.time())
        author_ids = [new_id() for _ in range(authors)]
        picture_ids = _pictures(quire, rng, max(1, authors), actor, now)
        authors_coll = quire.store.collection("content/authors")
        with quire.store.transaction():
            for author_id in author_ids:
                authors_coll.insert(_author(rng, author_id, actor, now))
        posts_coll = quire.store.collection("content/posts")
        post_ids = [new_id() for _ in range(posts)]
        total_bytes = 0
        for start in range(0, posts, BATCH):
            with quire.store.transaction():
                for n in range(start, min(start + BATCH, posts)):
                    doc = _post(rng, n, post_ids[n], rng.choice(author_ids), actor, picture_ids, pictures)
                    if post_hook is not None:
                        post_hook(n, doc)
                    total_bytes += len(orjson.dumps(doc))
                    posts_coll.insert(doc)
            done = min(start + BATCH, posts)
            if done % 20_000 == 0 or done == posts:
                print(f"  {done:,} posts ({time.perf_counter() - started:.1f} s)", flush=True)
    finally:
        quire.close()
    ids_file.write_text("\n".join(post_ids) + "\n")
    seconds = time.perf_counter() - started
    db_bytes = (data_dir / "quire.db").stat().st_size
    print(f"Generated in {seconds:.1f} s; database {db_bytes / MB:.1f} MB", flush=True)
    return {
        "avg_post_bytes": round(total_bytes / max(posts, 1)),
        "db_bytes": db_bytes,
        "generated": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "generate_seconds": round(seconds, 1),
    }


def rotate_key(data_dir: Path, name: str = KEY_NAME) -> str:
    """A fresh admin key for this run (the previous key of that name is revoked)."""
    quire = _open_quire(data_dir)
    try:
        for key in quire.auth.list_keys():
            if key["name"] == name:
                quire.auth.delete_key(key["_id"])
        return str(quire.auth.create_key(name, "admin")["key"])
    finally:
        quire.close()


# -- processes and memory -----------------------------------------------------


def busy_seconds() -> float:
    """CPU seconds spent busy by all cores since boot (/proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def process_cpu() -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of every process, with its command line."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[int, tuple[str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rpartition(")")[2].split()
        name = command or stat[stat.find("(") + 1:stat.rfind(")")]
        out[int(entry.name)] = (name, (int(fields[11]) + int(fields[12])) / tick)
    return out


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses.
    return int(stat.rpartition(")")[2].split()[1])


def descendants(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            ppid = _ppid(int(entry.name))
            if ppid is not None:
                parents.setdefault(ppid, []).append(int(entry.name))
    out: list[int] = []
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return sorted(out)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS, RssAnon, RssFile of a process in kB (empty once it is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                name, _, rest = line.partition(":")
                if name in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                    out[name] = int(rest.split()[0])
    except OSError:
        return {}
    return out


class Sampler:
    """Samples the memory of some processes every SAMPLE_SECONDS in a thread."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = pids
        self.samples: dict[int, list[dict[str, int]]] = {pid: [] for pid in pids}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            for pid in self.pids:
                mem = memory_kb(pid)
                if mem:
                    self.samples[pid].append(mem)
            self._stop.wait(SAMPLE_SECONDS)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class Server:
    """`quire serve` in its own session, so that it can be stopped as a group."""

    def __init__(self, data_dir: Path, port: int, workers: int, log_path: Path,
                 env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.env = env or {}  # QUIRE_* settings for this server (the caller's own are removed)
        self.port = port
        self.workers = workers
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.base = f"http://127.0.0.1:{port}"

    health_path = "/api/system/healthcheck"

    def command(self) -> list[str]:
        quire_bin = Path(sys.executable).parent / "quire"
        return [str(quire_bin) if quire_bin.exists() else "quire", "serve", "--data", str(self.data_dir),
                "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers), "--quiet"]

    def start(self) -> None:
        command = self.command()
        env = {k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")} | self.env
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                         stdin=subprocess.DEVNULL, start_new_session=True)

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def wait_ready(self, timeout: float = 60.0) -> list[int]:
        """Wait for the health check and for every worker process; their pids."""
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"quire serve exited with {self.proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"quire serve did not become ready in {timeout:.0f} s:\n{self.log_tail()}")
            workers = self.worker_pids()
            if len(workers) >= self.workers:
                with contextlib.suppress(OSError):
                    status, _ = http_get(self.base + self.health_path, None, timeout=2)
                    if status == 200:
                        return workers
            time.sleep(0.1)

    def worker_pids(self) -> list[int]:
        assert self.proc is not None
        return [p for p in descendants(self.proc.pid) if "resource_tracker" not in cmdline(p)]

    def stop(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            print("quire serve did not stop on SIGINT; killing its process group", file=sys.stderr)
        # Its session is its own (start_new_session): this reaches only the
        # server and the workers it started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


class CeilingServer(Server):
    """bench/ceiling.py: granian as `quire serve` runs it, sending answers
    recorded from Quire (`record_answers`) and doing nothing else."""

    def __init__(self, answers: Path, port: int, workers: int, log_path: Path, health_path: str) -> None:
        super().__init__(answers, port, workers, log_path)
        self.health_path = health_path

    def command(self) -> list[str]:
        return [sys.executable, str(BENCH / "ceiling.py"), "--answers", str(self.data_dir),
                "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers), "--quiet"]


# granian adds these itself (date, server) or they describe the connection
_OWN_HEADERS = {"date", "server", "connection", "keep-alive", "transfer-encoding"}


def record_answers(base: str, key: str, paths: dict[str, str], out: Path) -> dict[str, int]:
    """Quire's answer to one request per path prefix (`{prefix: path}`):
    status, headers and body, written for bench/ceiling.py; the body sizes."""
    entries, sizes = [], {}
    for prefix, path in paths.items():
        request = urllib.request.Request(base + path, headers={"api-key": key})
        with urllib.request.urlopen(request, timeout=30) as response:
            body = response.read()
            headers = [[k, v] for k, v in response.getheaders() if k.lower() not in _OWN_HEADERS]
            entries.append({"prefix": prefix, "status": int(response.status), "headers": headers,
                            "body": base64.b64encode(body).decode()})
        sizes[prefix] = len(body)
    out.write_bytes(orjson.dumps(entries))
    return sizes


def turns_parser(doc: str | None, standard: dict[str, Any]) -> argparse.ArgumentParser:
    """The options of a benchmark that runs wrk on the content data in
    turns (bench/limits.py, bench/conditional.py): sizes, rounds, wrk's."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--posts", type=int, default=standard["posts"])
    parser.add_argument("--rounds", type=int, default=standard["rounds"])
    parser.add_argument("--duration", type=float, default=standard["duration"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--no-docs", action="store_true")
    return parser


def is_standard(args: argparse.Namespace, standard: dict[str, Any]) -> bool:
    """A run at the standard sizes, whose figures go to docs/benchmarks.md."""
    return not args.no_docs and all(getattr(args, k) == v for k, v in standard.items())


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_get(url: str, key: str | None, timeout: float = 30) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"api-key": key} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


# -- wrk ----------------------------------------------------------------------

_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_PERCENTILE = re.compile(r"^\s*(50|75|90|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m|h)\s*$", re.M)
_RPS = re.compile(r"^Requests/sec:\s+([\d.]+)", re.M)
_TOTAL = re.compile(r"^\s*(\d+) requests in ([\d.]+\w+), ([\d.]+\w+) read", re.M)
_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")
_NON2XX = re.compile(r"Non-2xx or 3xx responses: (\d+)")


@dataclass
class WrkResult:
    rps: float
    percentiles_ms: dict[int, float]
    requests: int
    duration: str
    transferred: str
    socket_errors: dict[str, int]
    non2xx: int

    @property
    def p50(self) -> float:
        return self.percentiles_ms[50]

    @property
    def p99(self) -> float:
        return self.percentiles_ms[99]


def parse_wrk(text: str) -> WrkResult:
    """Requests/sec, the --latency percentiles (in ms) and the error lines."""
    rps = _RPS.search(text)
    total = _TOTAL.search(text)
    percentiles = {int(p): float(v) * _UNITS[u] for p, v, u in _PERCENTILE.findall(text)}
    if rps is None or total is None or 50 not in percentiles or 99 not in percentiles:
        raise ValueError(f"cannot parse wrk output:\n{text}")
    sock = _SOCKET.search(text)
    socket_errors = dict(zip(("connect", "read", "write", "timeout"), map(int, sock.groups()), strict=True)) if sock else {}
    non2xx = _NON2XX.search(text)
    return WrkResult(
        rps=float(rps.group(1)),
        percentiles_ms=percentiles,
        requests=int(total.group(1)),
        duration=total.group(2),
        transferred=total.group(3),
        socket_errors=socket_errors,
        non2xx=int(non2xx.group(1)) if non2xx else 0,
    )


def run_wrk(args: argparse.Namespace, key: str, url: str, script: Path | None, script_args: list[str],
            seconds: float, timeout: float | None = None, headers: dict[str, str] | None = None) -> str:
    """wrk's output; `timeout`: how long a request may take before wrk
    gives it up (its own default is 2 s); `headers` sent besides the key."""
    command = ["wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{seconds:g}s", "--latency",
               "-H", f"api-key: {key}"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    if timeout is not None:
        command.append(f"--timeout={timeout:g}s")
    if script is not None:
        command += ["-s", str(script)]
    command.append(url)
    if script is not None:
        command += ["--", *script_args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=seconds + 60 + (timeout or 0), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout + done.stderr


# -- scenarios ----------------------------------------------------------------

Check = Callable[[Any], str | None]


@dataclass
class Target:
    metric: str  # "rps" (at least) or "p50" (at most, ms)
    bound: float

    @property
    def text(self) -> str:
        return f"≥ {self.bound:,.0f} req/s" if self.metric == "rps" else f"p50 ≤ {self.bound:g} ms"

    def met(self, result: WrkResult) -> bool:
        return result.rps >= self.bound if self.metric == "rps" else result.p50 <= self.bound


@dataclass
class Scenario:
    name: str
    path: str  # for the sanity check; the wrk URL too unless script is set
    check: Check
    script: Path | None = None
    script_args: list[str] = field(default_factory=list)
    target: Target | None = None
    # the path prefix under which bench/ceiling.py answers this scenario's
    # recorded answer: measured there too, right after Quire
    ceiling: str | None = None


@dataclass
class Outcome:
    scenario: Scenario
    result: WrkResult | None = None
    error: str | None = None
    # (Quire, ceiling) per round: the same requests with the same wrk settings
    ceiling_rounds: list[tuple[WrkResult, WrkResult]] = field(default_factory=list)
    ceiling_error: str | None = None
    answer_bytes: int = 0  # of the check request's answer

    @property
    def ratios(self) -> list[float]:
        return [q.rps / c.rps for q, c in self.ceiling_rounds if c.rps]

    @property
    def ratio(self) -> float | None:
        """Quire's req/s over the ceiling's: the median of the rounds."""
        return statistics.median(self.ratios) if self.ratios else None

    @property
    def ratio_met(self) -> bool | None:
        if self.scenario.ceiling is None:
            return None
        return self.ratio is not None and self.ratio >= CEILING_TARGET and not any(
            q.non2xx or c.non2xx for q, c in self.ceiling_rounds)

    @property
    def met(self) -> bool | None:
        if self.error is not None or self.result is None:
            return False
        if self.result.non2xx:
            return False
        return self.scenario.target.met(self.result) if self.scenario.target else None


def _q(value: Any) -> str:
    return urllib.parse.quote(json.dumps(value, separators=(",", ":")), safe="")


def scenarios(posts: int, ids_file: Path, sample_id: str) -> list[Scenario]:
    page_prefix = f"/api/content/items/posts?limit={PAGE}&skip="
    populate_prefix = f"/api/content/items/posts?populate=1&limit={PAGE}&skip="
    mid = min(MAX_SKIP // 2, max(posts - PAGE, 0))
    expect = min(PAGE, max(posts - mid, 0))

    def check_page(body: Any) -> str | None:
        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            return f"expected {{data, meta}}, got {type(body).__name__}"
        if len(body["data"]) != expect:
            return f"expected {expect} items, got {len(body['data'])}"
        total = (body.get("meta") or {}).get("total")
        return None if total == posts else f"meta.total is {total}, expected {posts}"

    def check_item(body: Any) -> str | None:
        ok = isinstance(body, dict) and body.get("_id") == sample_id
        return None if ok else "item by id did not answer that item"

    def check_filter(body: Any) -> str | None:
        if not isinstance(body, list) or len(body) != min(PAGE, posts):
            return f"expected a list of {min(PAGE, posts)} items"
        if any(d.get("category") != "guides" for d in body):
            return "an item of another category came back"
        days = [d.get("published") for d in body]
        return None if days == sorted(days, reverse=True) else "items are not sorted by published, newest first"

    def check_populate(body: Any) -> str | None:
        problem = check_page(body)
        if problem:
            return problem
        author = body["data"][0].get("author") if body["data"] else None
        return None if isinstance(author, dict) and "name" in author else f"author was not populated: {author!r}"

    rps = Target("rps", 7_000)
    return [
        Scenario(f"items page (`limit={PAGE}&skip=0..{MAX_SKIP}`)", page_prefix + str(mid), check_page,
                 BENCH / "skip.lua", [page_prefix, str(MAX_SKIP)], rps, ceiling="/api/content/items/"),
        Scenario("item by id (random of all posts)", f"/api/content/item/posts/{sample_id}", check_item,
                 BENCH / "ids.lua", ["/api/content/item/posts/", str(ids_file)], rps, ceiling="/api/content/item/"),
        Scenario(f"indexed filter + sort (`category=guides`, `published` desc, limit {PAGE})",
                 f"/api/content/items/posts?filter={_q({'category': 'guides'})}"
                 f"&sort={_q({'published': -1})}&limit={PAGE}", check_filter, target=Target("p50", 5)),
        Scenario(f"populate author (`limit={PAGE}&skip=0..{MAX_SKIP}&populate=1`)", populate_prefix + str(mid),
                 check_populate, BENCH / "skip.lua", [populate_prefix, str(MAX_SKIP)]),
    ]


def run_ceiling(args: argparse.Namespace, work: Path, quire_base: str, base: str, key: str, outcome: Outcome,
                n: int) -> None:
    """The scenario's requests, with the same wrk settings, against the
    ceiling server (which answers each with Quire's recorded answer), in
    rounds alternating with Quire: other processes on a shared machine come
    and go, so each round's ratio is taken from two runs seconds apart, and
    the median of the rounds counts."""
    sc = outcome.scenario
    print(f"    ceiling: {args.ceiling_rounds} rounds of {args.ceiling_seconds:g} s, Quire then granian answering "
          "Quire's recorded bytes", flush=True)
    path = "/" if sc.script else sc.path
    try:
        if args.warmup > 0:
            run_wrk(args, key, base + path, sc.script, sc.script_args, args.warmup)
        for r in range(1, args.ceiling_rounds + 1):
            texts = [run_wrk(args, key, b + path, sc.script, sc.script_args, args.ceiling_seconds)
                     for b in (quire_base, base)]
            (work / f"wrk-{n}-ceiling-{r}.txt").write_text("\n".join(texts))
            pair = (parse_wrk(texts[0]), parse_wrk(texts[1]))
            outcome.ceiling_rounds.append(pair)
            print(f"    round {r}: Quire {pair[0].rps:,.0f} req/s, ceiling {pair[1].rps:,.0f} req/s "
                  f"(p50 {pair[1].p50:.2f} ms, non-2xx {pair[1].non2xx}): {pair[0].rps / pair[1].rps:.2f}", flush=True)
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        outcome.ceiling_error = str(exc)
        return
    print(f"    Quire / ceiling = {outcome.ratio or 0:.2f} (median of the rounds)", flush=True)


def run_scenario(args: argparse.Namespace, work: Path, base: str, key: str, sc: Scenario,
                 n: int | str) -> Outcome:
    print(f"\n[{n}] {sc.name}", flush=True)
    status, raw = http_get(base + sc.path, key)
    if status != 200:
        return Outcome(sc, error=f"check request answered {status}: {raw[:200]!r}")
    try:
        problem = sc.check(orjson.loads(raw))
    except orjson.JSONDecodeError as exc:
        problem = f"check request answered invalid JSON: {exc}"
    if problem:
        return Outcome(sc, error=problem)
    answer_bytes = len(raw)
    url = base + ("/" if sc.script else sc.path)
    if args.warmup > 0:
        run_wrk(args, key, url, sc.script, sc.script_args, args.warmup)
    text = run_wrk(args, key, url, sc.script, sc.script_args, args.duration)
    (work / f"wrk-{n}.txt").write_text(text)
    result = parse_wrk(text)
    errors = sum(result.socket_errors.values())
    print(f"    {result.rps:,.0f} req/s  p50 {result.p50:.2f} ms  p99 {result.p99:.2f} ms  "
          f"({result.requests:,} requests, {result.transferred} read, non-2xx {result.non2xx}, "
          f"socket errors {errors})", flush=True)
    return Outcome(sc, result, answer_bytes=answer_bytes)


# -- streaming ----------------------------------------------------------------


@dataclass
class WorkerMemory:
    pid: int
    baseline_kb: int
    peak_kb: int
    after_kb: int
    anon_growth_kb: int
    file_growth_kb: int

    @property
    def growth_kb(self) -> int:
        return self.peak_kb - self.baseline_kb


@dataclass
class StreamResult:
    items: int
    bytes: int
    seconds: float
    first_byte_seconds: float
    workers: list[WorkerMemory]
    samples: int
    error: str | None = None

    @property
    def max_growth_mb(self) -> float:
        return max((w.growth_kb for w in self.workers), default=0) / 1024

    @property
    def met(self) -> bool:
        return self.error is None and self.max_growth_mb < 50


def _median(samples: list[dict[str, int]], key: str) -> int:
    values = [s.get(key, 0) for s in samples]
    return int(statistics.median(values)) if values else 0


def _peak(samples: list[dict[str, int]], key: str) -> int:
    return max((s.get(key, 0) for s in samples), default=0)


def run_stream(base: str, key: str, pids: list[int], expected: int, n: int) -> StreamResult:
    print(f"\n[{n}] streaming all posts (no limit), sampling worker RSS every "
          f"{SAMPLE_SECONDS * 1000:.0f} ms", flush=True)
    with Sampler(pids) as before:
        time.sleep(0.5)
    request = urllib.request.Request(base + "/api/content/items/posts", headers={"api-key": key})
    buf = bytearray()
    error: str | None = None
    started = time.perf_counter()
    first_byte = 0.0
    with Sampler(pids) as during:
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                if response.status != 200:
                    error = f"answered {response.status}"
                while chunk := response.read(1 << 16):
                    if not first_byte:
                        first_byte = time.perf_counter() - started
                    buf += chunk
        except urllib.error.HTTPError as exc:
            error = f"answered {exc.code}: {exc.read()[:200]!r}"
        except OSError as exc:
            error = f"request failed: {exc}"
        seconds = time.perf_counter() - started
        time.sleep(0.2)  # memory freed late still counts
    time.sleep(1.0)
    after = {pid: memory_kb(pid).get("VmRSS", 0) for pid in pids}
    items = 0
    if error is None:
        try:
            docs = orjson.loads(bytes(buf))
            items = len(docs) if isinstance(docs, list) else -1
            distinct = len({d.get("_id") for d in docs if isinstance(d, dict)}) if isinstance(docs, list) else 0
            del docs
            if items != expected or distinct != expected:
                error = f"expected {expected:,} distinct items, got {items:,} ({distinct:,} distinct)"
        except orjson.JSONDecodeError as exc:
            error = f"the stream is not valid JSON: {exc}"
    workers = []
    for pid in pids:
        base_s, peak_s = before.samples[pid], during.samples[pid]
        workers.append(WorkerMemory(
            pid=pid,
            baseline_kb=_median(base_s, "VmRSS"),
            peak_kb=_peak(peak_s, "VmRSS"),
            after_kb=after[pid],
            anon_growth_kb=_peak(peak_s, "RssAnon") - _median(base_s, "RssAnon"),
            file_growth_kb=_peak(peak_s, "RssFile") - _median(base_s, "RssFile"),
        ))
    result = StreamResult(items, len(buf), seconds, first_byte, workers,
                          min((len(s) for s in during.samples.values()), default=0), error)
    print(f"    {len(buf) / MB:.1f} MB, {items:,} items in {seconds:.2f} s "
          f"(first byte {first_byte * 1000:.0f} ms, {result.samples} samples)", flush=True)
    for w in workers:
        print(f"    worker {w.pid}: RSS {w.baseline_kb / 1024:.1f} -> peak {w.peak_kb / 1024:.1f} MB "
              f"(+{w.growth_kb / 1024:.1f} MB: anon +{w.anon_growth_kb / 1024:.1f}, "
              f"file +{w.file_growth_kb / 1024:.1f}), {w.after_kb / 1024:.1f} MB after", flush=True)
    if error:
        print(f"    ERROR: {error}", flush=True)
    return result


# -- report -------------------------------------------------------------------


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.1f} ms"


def _met(flag: bool | None, note: str = "") -> str:
    if flag is None:
        return "—"
    return ("yes" if flag else "**no**") + (f" ({note})" if note else "")


def render_table(outcomes: list[Outcome], stream: StreamResult | None, posts: int) -> str:
    lines = ["| scenario | req/s | p50 | p99 | target | met? |", "|---|---:|---:|---:|---|---|"]
    for o in outcomes:
        target = o.scenario.target.text if o.scenario.target else "—"
        if o.result is None:
            lines.append(f"| {o.scenario.name} | — | — | — | {target} | **error**: {o.error} |")
            continue
        r = o.result
        note = f"{r.non2xx:,} non-2xx" if r.non2xx else ""
        lines.append(f"| {o.scenario.name} | {r.rps:,.0f} | {_ms(r.p50)} | {_ms(r.p99)} | {target} | "
                     f"{_met(o.met, note)} |")
    if stream is not None:
        name = f"streaming all {posts:,} posts (no limit)"
        if stream.error:
            lines.append(f"| {name} | — | — | — | RSS growth < 50 MB | **error**: {stream.error} |")
        else:
            lines.append(f"| {name} | — | — | — | RSS growth < 50 MB | "
                         f"{_met(stream.met, f'+{stream.max_growth_mb:.1f} MB')} |")
    return "\n".join(lines)


def render_ceiling(outcomes: list[Outcome], loads: list[float], args: argparse.Namespace) -> str:
    """Quire against the ceiling of its own stack (see bench/ceiling.py)."""
    rows = [o for o in outcomes if o.scenario.ceiling is not None and (o.ceiling_rounds or o.ceiling_error)]
    if not rows:
        return ""
    lines = ["Ceiling: the same requests with the same wrk settings to granian started as `quire serve` starts "
             "it (bench/ceiling.py: same interface, loop, workers and options) with an ASGI app that only sends "
             "the answer Quire gave to one of them (status, headers, body); after the scenario's run, "
             f"{args.ceiling_rounds} rounds of {args.ceiling_seconds:g} s on Quire then {args.ceiling_seconds:g} s "
             "on the ceiling, the ratio being the median of the rounds' ratios. 1-minute load average "
             + " → ".join(f"{x:.2f}" for x in loads) + " over the wrk runs, on "
             f"{os.cpu_count()} CPUs shared by wrk, the servers and other processes.", "",
             "| scenario | answer | Quire req/s (rounds) | ceiling req/s (rounds) | ceiling p50 | "
             "Quire ÷ ceiling (rounds → median) | target | met? |",
             "|---|---:|---:|---:|---:|---:|---|---|"]
    for o in rows:
        target = f"≥ {CEILING_TARGET:.2f}"
        if not o.ceiling_rounds:
            lines.append(f"| {o.scenario.name} | — | — | — | — | — | {target} | **error**: {o.ceiling_error} |")
            continue
        quire = " / ".join(f"{q.rps:,.0f}" for q, _ in o.ceiling_rounds)
        ceiling = " / ".join(f"{c.rps:,.0f}" for _, c in o.ceiling_rounds)
        p50 = statistics.median(c.p50 for _, c in o.ceiling_rounds)
        ratios = " / ".join(f"{r:.2f}" for r in o.ratios) + f" → **{o.ratio or 0:.2f}**"
        lines.append(f"| {o.scenario.name} | {_answer_kb(o)} | {quire} | {ceiling} | {_ms(p50)} | {ratios} | "
                     f"{target} | {_met(o.ratio_met)} |")
    return "\n".join(lines)


def _answer_kb(o: Outcome) -> str:
    return f"{o.answer_bytes / 1024:.1f} KB" if o.answer_bytes else "—"


def render_details(outcomes: list[Outcome], stream: StreamResult | None) -> str:
    lines = ["| scenario | requests | read | non-2xx | socket errors (connect/read/write/timeout) |",
             "|---|---:|---:|---:|---|"]
    for o in outcomes:
        if o.result is not None:
            r = o.result
            sock = "/".join(str(r.socket_errors.get(k, 0)) for k in ("connect", "read", "write", "timeout"))
            lines.append(f"| {o.scenario.name} | {r.requests:,} in {r.duration} | {r.transferred} | "
                         f"{r.non2xx:,} | {sock} |")
    out = "\n".join(lines)
    if stream is not None and not stream.error:
        out += (f"\n\nStreaming: {stream.bytes / MB:.1f} MB ({stream.items:,} items) in {stream.seconds:.2f} s, "
                f"{stream.bytes / MB / max(stream.seconds, 1e-9):.0f} MB/s, first byte after "
                f"{stream.first_byte_seconds * 1000:.0f} ms. Worker RSS (VmRSS from /proc, sampled every "
                f"{SAMPLE_SECONDS * 1000:.0f} ms; baseline is the median of 0.5 s before the request):\n\n"
                "| worker | baseline | peak | growth | of which anon / file-backed | 1 s after |\n"
                "|---|---:|---:|---:|---:|---:|\n")
        out += "\n".join(
            f"| {w.pid} | {w.baseline_kb / 1024:.1f} MB | {w.peak_kb / 1024:.1f} MB | "
            f"+{w.growth_kb / 1024:.1f} MB | +{w.anon_growth_kb / 1024:.1f} / +{w.file_growth_kb / 1024:.1f} MB | "
            f"{w.after_kb / 1024:.1f} MB |"
            for w in stream.workers
        )
    return out


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or "unknown CPU"


def _ram_gb() -> float:
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    return 0.0


def _version(command: list[str], pattern: str) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except OSError:
        return "?"
    found = re.search(pattern, out.stdout + out.stderr)
    return found.group(1) if found else "?"


def _git_revision() -> str:
    rev = _version(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], r"([0-9a-f]{7,})")
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
                           capture_output=True, text=True, check=False).stdout.strip()
    return rev + (" (with uncommitted changes in src/)" if dirty else "")


def machine_paragraph() -> str:
    try:
        granian = metadata.version("granian")
    except metadata.PackageNotFoundError:
        granian = "?"
    cores = os.cpu_count() or 0
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    core_text = f"{cores} cores" + (f" ({usable} usable)" if usable != cores else "")
    wrk = _version(["wrk", "--version"], r"wrk\s+(\S+)")
    return (
        f"**Machine:** {_cpu_model()}, {core_text}, {_ram_gb():.1f} GB RAM; "
        f"{platform.system()} {platform.release()}; Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, granian {granian}, "
        f"{'wrk ' + wrk if wrk != '?' else 'no wrk (in-process figures only)'}; "
        f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}."
    )


def section_title(args: argparse.Namespace) -> str:
    return "Content with pictures" if args.pictures else "Content"


def content_section(args: argparse.Namespace, dataset: Dataset, table: str, details: str) -> str:
    m = dataset.marker
    pictures = (f"; {args.pictures:.0%} of the posts reference one of 1,000 picture assets, and every "
                "answer carries the current asset object in its place" if args.pictures else "")
    return (
        f"## {section_title(args)}\n\n"
        f"`make bench` (bench/run.py{' --pictures ' + format(args.pictures, 'g') if args.pictures else ''}) "
        f"at {_git_revision()}: {args.posts:,} posts "
        f"(~{m.get('avg_post_bytes', 0):,} bytes of JSON each) and {args.authors:,} authors, "
        f"`quire serve --workers {args.workers}`, driven by "
        f"`wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s` on the same machine "
        f"after a {args.warmup:g} s warm-up per scenario; requests carry an admin key{pictures}.\n\n"
        f"{table}\n\n{details}\n"
    )


def backends_title(args: argparse.Namespace) -> str:
    return "PostgreSQL beside SQLite" + (", with pictures" if args.pictures else "")


def render_backends(runs: list[BackendRun]) -> str:
    """The scenarios side by side, one column group per backend."""
    head = "| scenario |" + "".join(f" {r.name} req/s | p50 | p99 |" for r in runs)
    rule = "|---|" + "---:|---:|---:|" * len(runs)
    if len(runs) == 2:
        head += f" {runs[1].name} ÷ {runs[0].name} (req/s) |"
        rule += "---:|"
    lines = [head, rule]
    for n, outcome in enumerate(runs[0].outcomes):
        row = f"| {outcome.scenario.name} |"
        results = []
        for r in runs:
            o = r.outcomes[n] if n < len(r.outcomes) else None
            res = o.result if o is not None else None
            results.append(res)
            if res is None:
                row += f" **error**: {o.error if o else 'not run'} | — | — |"
            else:
                note = f" ({res.non2xx:,} non-2xx)" if res.non2xx else ""
                row += f" {res.rps:,.0f}{note} | {_ms(res.p50)} | {_ms(res.p99)} |"
        if len(runs) == 2:
            a, b = results
            row += f" {b.rps / a.rps:.2f} |" if a is not None and b is not None and a.rps else " — |"
        lines.append(row)
    row = "| streaming all posts: seconds, largest worker RSS growth |"
    for r in runs:
        st = r.stream
        if st is None or st.error:
            row += f" **error**: {st.error if st else 'not run'} | — | — |"
        else:
            row += f" {st.seconds:.2f} s | +{st.max_growth_mb:.1f} MB | — |"
    lines.append(row + (" — |" if len(runs) == 2 else ""))
    return "\n".join(lines)


def backends_section(args: argparse.Namespace, dataset: Dataset, runs: list[BackendRun], pg_load: dict[str, Any],
                     table: str) -> str:
    m = dataset.marker
    loads = "; ".join(f"{r.name} " + " → ".join(f"{x:.2f}" for x in r.loads) for r in runs)
    counts = pg_load.get("counts", {})
    return (
        f"## {backends_title(args)}\n\n"
        f"`make bench` (bench/run.py --backends {','.join(args.backends)}"
        f"{' --pictures ' + format(args.pictures, 'g') if args.pictures else ''}) at {_git_revision()}: the same "
        f"{args.posts:,} posts (~{m.get('avg_post_bytes', 0):,} bytes of JSON each) and {args.authors:,} authors, "
        f"generated into SQLite and copied document by document into a PostgreSQL "
        f"{pg_load.get('version', '?')} started by the benchmark on 127.0.0.1 (bench/pgdata.py: "
        f"{sum(counts.values()):,} documents in {pg_load.get('seconds', 0):g} s; `fsync=off`, "
        "`synchronous_commit=off`, `shared_buffers=64MB`: a throwaway server, so reads are what this compares). "
        f"Each backend served in turn by `quire serve --workers {args.workers}` and driven by "
        f"`wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s` after a {args.warmup:g} s warm-up "
        "per scenario, the same requests as in the Content section, in the same run; PostgreSQL's server "
        "shares the 2 CPUs with the workers and wrk. 1-minute load average over the wrk runs: "
        f"{loads}.\n\n{table}\n"
    )


def report_backends(args: argparse.Namespace, dataset: Dataset, runs: list[BackendRun], pg_load: dict[str, Any],
                    docs: Path | None) -> None:
    """The backends side by side; the section when both ran."""
    table = render_backends(runs)
    print("\n" + table)
    for run in runs:
        if run.name != "SQLite":
            print("\n" + run.name + ":\n\n" + render_details(run.outcomes, run.stream))
            problems = server_log_problems(run.log)
            if problems:
                print(f"\nThe {run.name} server logged {len(problems)} problem line(s) (see {run.log}):")
                print("\n".join(problems[:10]))
    if docs is not None and len(runs) == len(BACKENDS):
        update_doc(docs, machine_paragraph(), backends_section(args, dataset, runs, pg_load, table),
                   backends_title(args))
        print(f"\nWrote the {backends_title(args)} section of {docs}")


def update_doc(path: Path, machine: str, section: str, title_of_section: str = "Content") -> None:
    """Replace the top (title, machine) and the `## <title_of_section>`
    section; keep every other `## ` section as it is."""
    text = path.read_text() if path.exists() else ""
    sections: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), [line]))
        elif sections:
            sections[-1][1].append(line)
    head = (
        "# Benchmarks\n\n"
        "Each section is written by its benchmark and replaced when that benchmark runs again; "
        "the machine line below is that of the latest run.\n\n"
        f"{machine}\n"
    )
    parts = [head]
    replaced = False
    for title, lines in sections:
        if title == title_of_section:
            parts.append(section)
            replaced = True
        else:
            parts.append("\n".join(lines).strip() + "\n")
    if not replaced:
        parts.append(section)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(parts))
    tmp.replace(path)


def server_log_problems(path: Path) -> list[str]:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    return [line for line in lines if re.search(r"\b(ERROR|CRITICAL|Traceback|Exception)\b", line)]


# -- main ---------------------------------------------------------------------


def add_load_options(parser: argparse.ArgumentParser, work: Path, section: str, connections: int = 32) -> None:
    """The options every load benchmark takes: wrk, the server, the data
    dir and where the results go."""
    parser.add_argument("--duration", type=float, default=10, help="seconds per wrk run (default 10)")
    parser.add_argument("--warmup", type=float, default=3, help="seconds of warm-up per run (default 3, 0: none)")
    parser.add_argument("--connections", type=int, default=connections,
                        help=f"wrk connections (default {connections})")
    parser.add_argument("--threads", type=int, default=2, help="wrk threads (default 2)")
    parser.add_argument("--workers", type=int, default=2, help="server worker processes (default 2)")
    parser.add_argument("--fresh", action="store_true", help="regenerate the data even if it matches")
    parser.add_argument("--work", type=Path, default=work, help=f"work dir (default {work.relative_to(ROOT)})")
    parser.add_argument("--docs", type=Path, default=None,
                        help=f"markdown file to write the {section} section to (default docs/benchmarks.md, "
                             "but only for a run at the standard size)")
    parser.add_argument("--no-docs", action="store_true", help="do not write any markdown file")


def check_load_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse load options wrk or the server cannot run with (parser.error exits)."""
    if args.duration <= 0 or args.connections < 1 or args.threads < 1 or args.workers < 1:
        parser.error("--duration, --connections, --threads and --workers must be positive")
    if args.threads > args.connections:
        parser.error("--threads must not exceed --connections (wrk needs a connection per thread)")


def wrk_missing(hint: str = "") -> bool:
    """True (and says so on stderr) when wrk is not installed."""
    if shutil.which("wrk") is not None:
        return False
    print(f"error: wrk is not installed (apt-get install wrk{hint})", file=sys.stderr)
    return True


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Load benchmark of the content API (see bench/README.md).")
    parser.add_argument("--posts", type=int, default=STANDARD_POSTS, help="posts to generate (default 100000)")
    parser.add_argument("--pictures", type=float, default=0.0,
                        help="share of posts referencing a picture asset, answered as the live asset "
                             "object (default 0; the docs section is then 'Content with pictures')")
    parser.add_argument("--authors", type=int, default=STANDARD_AUTHORS, help="authors to generate (default 1000)")
    add_load_options(parser, DEFAULT_WORK, "Content")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument("--no-ceiling", action="store_true",
                        help="skip the ceiling runs (granian answering Quire's recorded bytes)")
    parser.add_argument("--ceiling-rounds", type=int, default=3,
                        help="rounds of Quire then ceiling for the ratio (default 3)")
    parser.add_argument("--ceiling-seconds", type=float, default=5,
                        help="seconds of each run of a ceiling round (default 5)")
    parser.add_argument("--backends", default="sqlite",
                        help="comma-separated store backends to measure, of sqlite and postgresql (default "
                             "sqlite); postgresql starts a PostgreSQL for the run and loads the same data into it")
    args = parser.parse_args(argv)
    args.backends = [b.strip().lower() for b in args.backends.split(",") if b.strip()]
    unknown = sorted(set(args.backends) - set(BACKENDS))
    if unknown or not args.backends:
        parser.error(f"--backends takes {' and '.join(BACKENDS)} (got {', '.join(unknown) or 'none'})")
    args.backends = [b for b in BACKENDS if b in args.backends]  # SQLite first, each once
    if args.posts < 1 or args.authors < 1:
        parser.error("--posts and --authors must be at least 1")
    if args.ceiling_rounds < 1 or args.ceiling_seconds <= 0:
        parser.error("--ceiling-rounds and --ceiling-seconds must be positive")
    check_load_options(parser, args)
    return args


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextlib.contextmanager
def _ceiling(args: argparse.Namespace, work: Path, base: str, key: str, plan: list[Scenario]) -> Iterator[Server]:
    """The ceiling server, up beside Quire's (idle while Quire is measured),
    answering the scenarios' recorded answers."""
    paths = {sc.ceiling: sc.path for sc in plan if sc.ceiling is not None}
    answers = work / "ceiling-answers.json"
    sizes = record_answers(base, key, paths, answers)
    server = CeilingServer(answers, free_port(), args.workers, work / "ceiling.log",
                           health_path=next(iter(paths)))
    try:
        server.start()
        server.wait_ready()
        print(f"Ceiling on {server.base}: recorded answers of " +
              ", ".join(f"{size:,} bytes under {prefix}" for prefix, size in sizes.items()), flush=True)
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def _server(data_dir: Path, args: argparse.Namespace, log_path: Path, env: dict[str, str] | None = None) -> Iterator[Server]:
    server = Server(data_dir, free_port(), args.workers, log_path, env)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@dataclass
class BackendRun:
    """The scenarios measured on one store backend."""

    name: str  # as the tables show it: "SQLite", "PostgreSQL"
    log: Path  # the server's output
    outcomes: list[Outcome] = field(default_factory=list)
    stream: StreamResult | None = None
    loads: list[float] = field(default_factory=list)  # 1-minute load average before and after the wrk runs

    @property
    def failed(self) -> bool:
        failed = any(o.error for o in self.outcomes) or (self.stream is not None and self.stream.error is not None)
        return failed or any(o.result is not None and o.result.non2xx for o in self.outcomes)

    @property
    def missed(self) -> bool:
        return any(o.met is False or o.ratio_met is False for o in self.outcomes) or (
            self.stream is not None and not self.stream.met)


def measure(args: argparse.Namespace, work: Path, dataset: Dataset, run: BackendRun, data_dir: Path,
            env: dict[str, str], key: str, ceiling_runs: bool, tag: str = "") -> None:
    """Serve `data_dir` (with `env`: its store) and run every scenario and
    the stream on it, into `run`; `tag` prefixes the wrk output files."""
    ids = dataset.ids_file.read_text().split()
    with _server(data_dir, args, run.log, env) as server, contextlib.ExitStack() as stack:
        pids = server.wait_ready()
        who = "" if args.backends == ["sqlite"] else f"{run.name}: "  # alone, the output of old
        print(f"{who}Serving on {server.base}: main pid {server.proc.pid if server.proc else '?'}, "
              f"worker pids {pids}", flush=True)
        plan = scenarios(args.posts, dataset.ids_file, ids[len(ids) // 2])
        ceiling = stack.enter_context(_ceiling(args, work, server.base, key, plan)) if ceiling_runs else None
        run.loads.append(os.getloadavg()[0])
        for n, sc in enumerate(plan, 1):
            outcome = run_scenario(args, work, server.base, key, sc, f"{tag}{n}")
            run.outcomes.append(outcome)
            if ceiling is not None and sc.ceiling is not None and outcome.result is not None:
                run_ceiling(args, work, server.base, ceiling.base, key, outcome, n)
        run.loads.append(os.getloadavg()[0])
        run.stream = run_stream(server.base, key, server.worker_pids(), args.posts, len(plan) + 1)


def measure_postgres(args: argparse.Namespace, work: Path, dataset: Dataset, run: BackendRun) -> dict[str, Any]:
    """The same data loaded into a PostgreSQL started for this run, and the
    same scenarios on it (bench/pgdata.py); what the load took."""
    import pgdata

    with pgdata.postgres() as pg:
        url = pg.url()
        pg_dir = work / "pg-data"  # the site's data dir; its store is in PostgreSQL
        if pg_dir.exists():
            shutil.rmtree(pg_dir)
        print(f"\nPostgreSQL on 127.0.0.1:{pg.port}: loading the same data ...", flush=True)
        loaded = pgdata.load(dataset.data_dir, pg_dir, url, MODELS)
        env = pgdata.store_env(url)
        key = pgdata.rotate_key(pg_dir, env, KEY_NAME)
        measure(args, work, dataset, run, pg_dir, env, key, ceiling_runs=False, tag="pg-")
        loaded["version"] = _version([str(pg.bin / "postgres"), "--version"], r"\)\s*(\S+)")
    return loaded


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    if wrk_missing():
        return 2
    if "postgresql" in args.backends:
        import pgdata

        if pgdata.postgres_missing():
            return 2
    work: Path = args.work.resolve()
    if args.pictures and args.work == DEFAULT_WORK:
        work = work / "pictures"  # its own data set, kept beside the plain one
    runs: list[BackendRun] = []
    pg_load: dict[str, Any] = {}
    try:
        dataset = ensure_data(work, args.posts, args.authors, args.fresh, args.pictures)
        if "sqlite" in args.backends:
            runs.append(BackendRun("SQLite", work / "server.log"))
            measure(args, work, dataset, runs[-1], dataset.data_dir, {}, rotate_key(dataset.data_dir),
                    ceiling_runs=not args.no_ceiling)
        if "postgresql" in args.backends:
            runs.append(BackendRun("PostgreSQL", work / "server-pg.log"))
            pg_load = measure_postgres(args, work, dataset, runs[-1])
    except KeyboardInterrupt:
        print("\nInterrupted; the server was stopped.", file=sys.stderr)
        return 130

    standard = args.posts == STANDARD_POSTS and args.authors == STANDARD_AUTHORS
    docs: Path | None = None if args.no_docs else args.docs or (DEFAULT_DOCS if standard else None)
    for run in runs:
        if run.name == "SQLite":
            report_sqlite(args, work, dataset, run, docs)
    if len(runs) > 1 or runs[0].name != "SQLite":
        report_backends(args, dataset, runs, pg_load, docs)
    if not standard and not args.no_docs and args.docs is None:
        print(f"\nNot a standard-size run: {DEFAULT_DOCS.relative_to(ROOT)} left as it is (--docs PATH writes one).")

    if any(run.failed for run in runs):
        return 1
    return 1 if args.strict and any(run.missed for run in runs) else 0


def report_sqlite(args: argparse.Namespace, work: Path, dataset: Dataset, run: BackendRun, docs: Path | None) -> None:
    """The SQLite tables, as bench/run.py always printed them, and its
    Content section."""
    problems = server_log_problems(run.log)
    table = render_table(run.outcomes, run.stream, args.posts)
    ceiling_table = render_ceiling(run.outcomes, run.loads, args)
    details = render_details(run.outcomes, run.stream)
    if ceiling_table:
        details = ceiling_table + "\n\n" + details
    print("\n" + table + "\n\n" + details)
    if problems:
        print(f"\nThe server logged {len(problems)} problem line(s) (see {run.log}):")
        print("\n".join(problems[:10]))
    if docs is not None:
        update_doc(docs, machine_paragraph(), content_section(args, dataset, table, details), section_title(args))
        print(f"\nWrote the Content section of {docs}")

if __name__ == "__main__":
    sys.exit(main())
