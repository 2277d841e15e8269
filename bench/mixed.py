#!/usr/bin/env python3
"""Benchmark of reads beside writes: a read load and 6 writers at once.

A server (`quire serve --workers 2`, SQLite) on a data dir of its own with
model `posts` (ten fields, one of them an asset), `--items` items, a search
index over `posts` and, where the code has webhooks, one webhook following
`content.*` to a receiver in this process: everything a save does (a
revision, an audit entry, a webhook job, search work, asset references,
dropping the kept answers) is on. For `--seconds`:

- **reads**: wrk (`--connections`, 2 threads) asks the first page of posts,
  `GET /api/content/items/posts?limit=20`, again and again;
- **writes**: `--writers` clients (processes of their own, one kept
  connection each) update random items one save after the other (two
  fields changed), each save timed. The webhook's receiver is a process
  of its own too: neither's Python work waits for the other's.

The same is run on the code of `--base` (a commit, by default the last one
before revisions landed), taken out with `git archive` and served from the
same virtual environment (its `src` first on `PYTHONPATH`), A and B
alternated over `--rounds`, so the shared machine's noise falls on both.

Targets (issue 32): content saves at least as many as on the base commit;
reads under writes p99 ≤ 150 ms; a save's p50 ≤ 5 ms. Results go to stdout
and, for a standard run, to the "Mixed reads and writes" section of
docs/benchmarks.md.

    .venv/bin/python bench/mixed.py                                   # the standard run, about 6 minutes
    .venv/bin/python bench/mixed.py --seconds 10 --rounds 1 --no-docs  # a quick check
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revisions import Client as Api  # noqa: E402  (a sibling script, not a package)
from run import (  # noqa: E402
    DEFAULT_DOCS,
    ROOT,
    Server,
    _git_revision,
    free_port,
    machine_paragraph,
    parse_wrk,
    server_log_problems,
    update_doc,
)

SECTION_TITLE = "Mixed reads and writes"
BASE = "8717192"  # the last commit before revisions landed (issue 32 compares with it)
STANDARD = {"seconds": 60, "rounds": 2, "writers": 6, "items": 2000, "connections": 16}
TARGET_READ_P99_MS = 150.0
TARGET_SAVE_P50_MS = 5.0
READ_PATH = "/api/content/items/posts?limit=20"
FIELDS = [{"name": "title", "type": "text"}, {"name": "slug", "type": "text"}, {"name": "summary", "type": "longtext"},
          {"name": "body", "type": "markdown"}, {"name": "rating", "type": "number"},
          {"name": "featured", "type": "boolean"}, {"name": "tags", "type": "tags"},
          {"name": "category", "type": "select", "opts": {"options": ["news", "guides", "notes"]}},
          {"name": "published", "type": "date"}, {"name": "image", "type": "asset"}]
ENV = {"QUIRE_WEBHOOKS_ALLOW_HOSTS": "127.0.0.1"}


RECEIVER = """
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
class Answer(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), Answer)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


class Receiver:
    """Answers every delivery 200 at once, in a process of its own (as a
    real site's receiver is elsewhere: its work is not the bench's)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def shutdown(self) -> None:
        self.proc.kill()
        self.proc.wait()


@dataclass
class Outcome:
    name: str
    commit: str
    reads_rps: float = 0.0
    read_p50: float = 0.0
    read_p99: float = 0.0
    read_errors: int = 0
    saves: int = 0
    save_ms: list[float] = field(default_factory=list)
    failed_saves: int = 0
    load: float = 0.0

    @property
    def save_p50(self) -> float:
        return statistics.median(self.save_ms) if self.save_ms else 0.0

    @property
    def save_p99(self) -> float:
        return statistics.quantiles(self.save_ms, n=100)[98] if len(self.save_ms) > 100 else max(self.save_ms or [0])


def export_commit(commit: str, into: Path) -> Path:
    """The `src` folder of `commit`, taken out of this repository."""
    target = into / f"src-{commit}"
    if not target.exists():
        archive = into / f"{commit}.tar"
        subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), commit, "src"], check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(target, filter="data")
        archive.unlink()
    return target / "src"


def admin_key(data_dir: Path, pythonpath: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("QUIRE_")}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    done = subprocess.run([sys.executable, "-m", "quire", "keys", "create", "--data", str(data_dir), "--name", "bench",
                           "--role", "admin"], capture_output=True, text=True, env=env, check=True)
    return done.stdout.strip().splitlines()[-1]


def seed(api: Api, items: int, receiver: Receiver, rng: random.Random, without: set[str]) -> list[str]:
    """The model, an asset, the search index, the webhook (where the code has
    them) and the items; answers the items' ids."""
    status, _ = api.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection", "fields": FIELDS})
    assert status == 200, status
    boundary = "benchboundary"
    picture = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 80, 40)).save(picture, "PNG")
    body = (f"--{boundary}\r\ncontent-disposition: form-data; name=\"files\"; filename=\"a.png\"\r\n"
            "content-type: image/png\r\n\r\n").encode() + picture.getvalue() + f"\r\n--{boundary}--\r\n".encode()
    status, uploaded = api.call("POST", "/api/assets", raw=body,
                                content_type=f"multipart/form-data; boundary={boundary}")
    assert status == 200, (status, uploaded)
    asset = (uploaded["assets"] if isinstance(uploaded, dict) else uploaded)[0]["_id"]
    if "search" not in without:
        status, _ = api.call("PUT", "/api/searchmod/indexes/posts",
                             {"model": "posts", "fields": ["title", "summary", "body"]})
        assert status == 200, status
    if "webhook" not in without:
        api.call("POST", "/api/webhooks", {"name": "bench", "url": receiver.url, "events": ["content.*"]})
    ids = []
    for n in range(items):
        status, saved = api.call("POST", "/api/content/item/posts", {"data": {
            "title": f"Post {n}", "slug": f"post-{n}", "summary": "A summary " * 10, "body": "Body text. " * 150,
            "rating": rng.randint(1, 5), "featured": n % 2 == 0, "tags": ["a", "b"], "category": "news",
            "published": "2026-11-01", "image": {"_id": asset}}})
        assert status == 200, (status, saved)
        ids.append(saved["_id"])
    return ids


def writer(base: str, key: str, ids: list[str], seconds: float, seed_value: int) -> None:
    """One writer (a process of its own, so the writers' own Python work
    never waits for another's): saves until `seconds` have passed, then
    prints its save times (ms) and failures as JSON."""
    api = Api(base, key)
    rng = random.Random(seed_value)
    times: list[float] = []
    failed = 0
    until = time.monotonic() + seconds
    try:
        while time.monotonic() < until:
            started = time.perf_counter()
            status, _ = api.call("POST", "/api/content/item/posts", {"data": {
                "_id": rng.choice(ids), "title": f"Edited {rng.random():.6f}", "rating": rng.randint(1, 5)}})
            elapsed = (time.perf_counter() - started) * 1000
            if status == 200:
                times.append(elapsed)
            else:
                failed += 1
    finally:
        api.close()
    print(json.dumps({"times": times, "failed": failed}))


def start_writers(base: str, key: str, ids: list[str], args: argparse.Namespace, work: Path) -> list[subprocess.Popen[str]]:
    ids_file = work / "ids.json"
    ids_file.write_text(json.dumps(ids))
    return [subprocess.Popen([sys.executable, __file__, "--writer", base, key, str(ids_file), str(args.seconds), str(n)],
                             stdout=subprocess.PIPE, text=True) for n in range(args.writers)]


def run_one(name: str, commit: str, pythonpath: str | None, args: argparse.Namespace, work: Path,
            round_no: int) -> Outcome:
    data_dir = work / f"{name}-{round_no}"
    shutil.rmtree(data_dir, ignore_errors=True)
    env = dict(ENV) | dict(item.split("=", 1) for item in args.set)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    key = admin_key(data_dir, pythonpath)
    server = Server(data_dir, free_port(), 2, work / f"{name}-{round_no}.log", env=env)
    receiver = Receiver()
    outcome = Outcome(name, commit)
    server.start()
    try:
        server.wait_ready()
        api = Api(server.base, key)
        ids = seed(api, args.items, receiver, random.Random(round_no), set(args.without.split(",")))
        api.close()
        writers = start_writers(server.base, key, ids, args, work)
        spies = profile_workers(server, args, work / f"{name}-{round_no}") if args.profile else []
        wrk = subprocess.run(["wrk", "-t2", f"-c{args.connections}", f"-d{args.seconds}s", "--latency",
                              "-H", f"api-key: {key}", server.base + READ_PATH],
                             capture_output=True, text=True, timeout=args.seconds + 120, check=True)
        outcome.load = os.getloadavg()[0]
        for proc in writers:
            out, _ = proc.communicate(timeout=args.seconds + 60)
            done = json.loads(out)
            outcome.save_ms.extend(done["times"])
            outcome.failed_saves += done["failed"]
        for spy in spies:
            spy.wait(timeout=60)
        read = parse_wrk(wrk.stdout + wrk.stderr)
        outcome.reads_rps, outcome.read_p50, outcome.read_p99 = read.rps, read.p50, read.p99
        outcome.read_errors = read.non2xx + sum(read.socket_errors.values())
        if outcome.read_errors:
            print(f"{name}: reads: {read.non2xx} non-2xx, socket errors {read.socket_errors}", file=sys.stderr)
        outcome.saves = len(outcome.save_ms)
        problems = server_log_problems(server.log_path)
        if problems:
            print(f"{name}: server log problems: {problems[:3]}", file=sys.stderr)
        if outcome.failed_saves:
            print(f"{name}: {outcome.failed_saves} saves failed", file=sys.stderr)
    finally:
        server.stop()
        receiver.shutdown()
    return outcome


def profile_workers(server: Server, args: argparse.Namespace, prefix: Path) -> list[subprocess.Popen[bytes]]:
    """py-spy (on PATH or beside this Python) samples every worker's threads
    for the run, written as collapsed stacks to `<prefix>-<pid>.txt`."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    return [subprocess.Popen([spy, "record", "--pid", str(pid), "--threads", "--idle", "--format", "raw",
                              "--duration", str(args.seconds), "--rate", "200", "--nonblocking",
                              "--output", f"{prefix}-{pid}.txt"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
            for pid in server.worker_pids()]


def render(rounds: list[tuple[Outcome, Outcome]], args: argparse.Namespace) -> str:
    lines = [f"| round | code | reads/s | read p50 | read p99 | saves in {args.seconds} s | save p50 | save p99 | "
             "failed | load |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n, pair in enumerate(rounds, 1):
        for o in pair:
            lines.append(f"| {n} | {o.name} (`{o.commit}`) | {o.reads_rps:,.0f} | {o.read_p50:.1f} ms | "
                         f"{o.read_p99:.1f} ms | {o.saves:,} | {o.save_p50:.1f} ms | {o.save_p99:.1f} ms | "
                         f"{o.failed_saves + o.read_errors} | {o.load:.1f} |")
    return "\n".join(lines)


def verdict(rounds: list[tuple[Outcome, Outcome]]) -> list[str]:
    now = [pair[0] for pair in rounds]
    base = [pair[1] for pair in rounds]
    saves_now = statistics.median(o.saves for o in now)
    saves_base = statistics.median(o.saves for o in base)
    p99 = statistics.median(o.read_p99 for o in now)
    p50 = statistics.median(o.save_p50 for o in now)
    return [
        f"- saves: {saves_now:,.0f} against {saves_base:,.0f} on the base commit (median of rounds): "
        f"{'met' if saves_now >= saves_base else 'NOT met'} (at least as many)",
        f"- reads under writes p99: {p99:.1f} ms: {'met' if p99 <= TARGET_READ_P99_MS else 'NOT met'} "
        f"(≤ {TARGET_READ_P99_MS:.0f} ms)",
        f"- a save's p50: {p50:.1f} ms: {'met' if p50 <= TARGET_SAVE_P50_MS else 'NOT met'} (≤ {TARGET_SAVE_P50_MS:.0f} ms)",
    ]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--writer"]:
        base, key, ids_file, seconds, seed_value = argv[1:]
        writer(base, key, json.loads(Path(ids_file).read_text()), float(seconds), int(seed_value))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BASE, help=f"the commit to compare with (default {BASE})")
    for name, value in STANDARD.items():
        parser.add_argument(f"--{name}", type=int, default=value)
    parser.add_argument("--without", default="", help="leave out: search, webhook (comma-separated; to find costs)")
    parser.add_argument("--set", action="append", default=[], metavar="QUIRE_X=V",
                        help="a setting for both servers (repeatable)")
    parser.add_argument("--only", default="", help="run only this code: now or base")
    parser.add_argument("--work", type=Path, default=ROOT / "bench" / ".work" / "mixed")
    parser.add_argument("--profile", action="store_true",
                        help="sample the workers with py-spy (collapsed stacks in --work, threads and idle included)")
    parser.add_argument("--no-docs", action="store_true", help="print only; leave docs/benchmarks.md")
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        print("wrk is needed (Debian: apt-get install wrk)", file=sys.stderr)
        return 2
    args.work.mkdir(parents=True, exist_ok=True)
    base_src = export_commit(args.base, args.work)
    now = _git_revision()
    rounds: list[tuple[Outcome, Outcome]] = []
    for n in range(1, args.rounds + 1):
        current = run_one("now", now, None, args, args.work, n) if args.only != "base" else Outcome("now", now)
        older = (run_one("base", args.base, str(base_src), args, args.work, n) if args.only != "now"
                 else Outcome("base", args.base))
        rounds.append((current, older))
        print(render(rounds[-1:], args), flush=True)
    table = render(rounds, args)
    lines = verdict(rounds)
    print(table)
    print("\n".join(lines))
    standard = all(getattr(args, k) == v for k, v in STANDARD.items()) and not args.without and not args.only and not args.set and not args.profile
    if standard and not args.no_docs:
        section = (f"## {SECTION_TITLE}\n\n"
                   f"`bench/mixed.py`: a 2-worker server (SQLite) with `posts` ({args.items:,} items, an asset "
                   "field), a search index over it and a webhook following `content.*` to a local receiver; "
                   f"for {args.seconds} s wrk reads `{READ_PATH}` ({args.connections} connections) while "
                   f"{args.writers} clients (processes of their own, as is the receiver) update random items one save "
                   "after the other. The same on the code of "
                   f"`{args.base}` (the last commit before revisions), alternated over {args.rounds} rounds; "
                   "load is the 1-minute load average at the end of each run.\n\n"
                   f"{table}\n\n" + "\n".join(lines) + "\n")
        update_doc(DEFAULT_DOCS, machine_paragraph(), section, SECTION_TITLE)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
