#!/usr/bin/env python3
"""Several Quire instances on one PostgreSQL (`make bench`).

Loads the posts of bench/run.py into a PostgreSQL started for the run
(bench/pgdata.py), then:

1. Scaling: 1, 2 and 4 `quire serve --workers 1` instances behind nginx
   (a minimal config generated in the work dir), each held to a fixed CPU
   share when the machine lets a cgroup's CPU bandwidth be set (cgroup v2
   `cpu.max`, else cgroup v1 `cpu.cfs_quota_us`: the same CFS bandwidth
   limit), driven by wrk through nginx. Reported: req/s, requests per
   CPU-second of the Quire processes, req/s per CPU given, and the CPU
   used by PostgreSQL, nginx, wrk and everything else.
2. Correctness across instances, as numbers, on 4 instances without CPU
   limits: a write through A visible on B (p50/p99), a form's rate limit
   across instances, each notification e-mail sent once, and every e-mail
   delivered at least once when the instance sending it is killed (SIGKILL)
   while the SMTP server stalls its DATA.

Results go to stdout and, on a standard-size run, to the "Several
instances" section of docs/benchmarks.md. See bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import email
import http.client
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import pgdata  # noqa: E402  (bench/pgdata.py: the PostgreSQL and its data)
import run  # noqa: E402  (bench/run.py: the data, the server, wrk and the docs)

BENCH = Path(__file__).resolve().parent
DEFAULT_WORK = BENCH / ".work" / "instances"
SECTION_TITLE = "Several instances"
KEY_NAME = "bench instances"
CGROUP_NAME = "quire-bench"
CFS_PERIOD_US = 100_000
VISIBLE_WAIT = 5.0  # seconds a write may take to show on another instance before it counts as never
SMTP_TIMEOUT = 5  # [smtp] timeout_seconds: the lease of a send is 3 x this + 30 s
RATE_LIMIT = 20  # [inbox] rate_limit for the run (per form and address, per minute)


# -- CPU shares ---------------------------------------------------------------


class CpuLimit:
    """A fixed CPU share per instance through the kernel's CFS bandwidth
    control, if this machine lets us set it: cgroup v2 `cpu.max` when a
    cgroup2 hierarchy has the cpu controller, else cgroup v1's
    `cpu.cfs_quota_us`. `method` says what is used, `why` why not v2."""

    def __init__(self, share: float) -> None:
        self.share = share
        self.method = "none"
        self.why = ""
        self.root: Path | None = None
        self.groups: list[Path] = []
        if share <= 0:
            self.why = "no CPU share asked (--cpu-share 0)"
            return
        v2, why_not_v2 = _cgroup2_cpu()
        if v2 is not None and self._try(v2, "cgroup v2 cpu.max"):
            return
        v1 = Path("/sys/fs/cgroup/cpu")
        if (v1 / "cpu.cfs_quota_us").exists() and self._try(v1, "cgroup v1 cpu.cfs_quota_us"):
            self.why = why_not_v2
            return
        self.why = why_not_v2 + "; cgroup v1's cpu controller is not writable either: no CPU limit"

    def _try(self, parent: Path, method: str) -> bool:
        probe = parent / f"{CGROUP_NAME}-{os.getpid()}-probe"
        try:
            probe.mkdir()
            self._write_quota(probe, method)
        except OSError as exc:
            self.why = f"{method}: {exc}"
            with contextlib.suppress(OSError):
                probe.rmdir()
            return False
        probe.rmdir()
        self.root, self.method = parent, method
        return True

    def _write_quota(self, group: Path, method: str) -> None:
        quota = int(self.share * CFS_PERIOD_US)
        if method.startswith("cgroup v2"):
            (group / "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}\n")
        else:
            (group / "cpu.cfs_period_us").write_text(f"{CFS_PERIOD_US}\n")
            (group / "cpu.cfs_quota_us").write_text(f"{quota}\n")

    def group(self, name: str) -> Path | None:
        """A new group with the share; its `cgroup.procs` (None: no limit)."""
        if self.root is None:
            return None
        group = self.root / f"{CGROUP_NAME}-{os.getpid()}-{name}"
        group.mkdir(exist_ok=True)
        self._write_quota(group, self.method)
        self.groups.append(group)
        return group / "cgroup.procs"

    def remove(self) -> None:
        """Remove the groups (their processes are gone by now)."""
        for group in self.groups:
            with contextlib.suppress(OSError):
                group.rmdir()
        self.groups = []

    @property
    def text(self) -> str:
        if self.root is None:
            return f"no CPU limit ({self.why})"
        note = f"; cgroup v2 was not usable: {self.why}" if self.why else ""
        return f"{self.share:g} CPU per instance through {self.method} ({self.root}){note}"


def _cgroup2_cpu() -> tuple[Path | None, str]:
    """A cgroup2 mount whose cpu controller can be used, or why none."""
    mounts = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/mounts").read_text().splitlines():
            parts = line.split()
            if len(parts) > 2 and parts[2] == "cgroup2":
                mounts.append(Path(parts[1]))
    if not mounts:
        return None, "no cgroup v2 hierarchy is mounted"
    reasons = []
    for mount in mounts:
        try:
            controllers = (mount / "cgroup.controllers").read_text().split()
        except OSError as exc:
            reasons.append(f"{mount}: {exc}")
            continue
        if "cpu" not in controllers:
            reasons.append(f"cgroup v2 at {mount} has the controllers {' '.join(controllers) or 'none'} "
                           "(the cpu controller is bound to the cgroup v1 hierarchy)")
            continue
        try:  # children get cpu.max only when the parent hands the controller down
            if "cpu" not in (mount / "cgroup.subtree_control").read_text().split():
                (mount / "cgroup.subtree_control").write_text("+cpu\n")
        except OSError as exc:
            reasons.append(f"cgroup v2 at {mount}: cannot enable cpu for children ({exc})")
            continue
        return mount, ""
    return None, "; ".join(reasons)


# -- instances and nginx ------------------------------------------------------


class Instance(run.Server):
    """`quire serve --workers 1`, started inside its CPU group (a shell
    moves itself into the group, then becomes the server: every process it
    starts is in the group from its first instruction)."""

    def __init__(self, data_dir: Path, log_path: Path, env: dict[str, str], procs: Path | None) -> None:
        super().__init__(data_dir, run.free_port(), 1, log_path, env)
        self.procs = procs

    def command(self) -> list[str]:
        command = super().command()
        if self.procs is None:
            return command
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.procs), *command]

    def pids(self) -> list[int]:
        """The server and every process under it."""
        return [self.proc.pid, *run.descendants(self.proc.pid)] if self.proc else []

    def kill(self) -> None:
        """SIGKILL to the whole instance (its own session): no shutdown at all."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)


class Nginx:
    """nginx as a round-robin proxy in front of the instances, with a
    config of its own in the work dir (one worker process, keep-alive
    connections to the instances, X-Forwarded-For appended)."""

    def __init__(self, work: Path, ports: list[int], workers: int) -> None:
        self.root = work / "nginx"
        self.port = run.free_port()
        self.ports = ports
        self.workers = workers
        self.proc: subprocess.Popen[bytes] | None = None
        self.base = f"http://127.0.0.1:{self.port}"

    def config(self) -> str:
        temp = self.root / "tmp"
        upstreams = "\n".join(f"        server 127.0.0.1:{p};" for p in self.ports)
        temps = "\n".join(f"    {kind}_temp_path {temp / kind};"
                          for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        return f"""worker_processes {self.workers};
pid {self.root / 'nginx.pid'};
error_log {self.root / 'error.log'} warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
{temps}
    upstream quire {{
{upstreams}
        keepalive 64;
    }}
    server {{
        listen 127.0.0.1:{self.port};
        location / {{
            proxy_pass http://quire;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_buffers 16 16k;
        }}
    }}
}}
"""

    def start(self) -> None:
        (self.root / "tmp").mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o755)
        (self.root / "tmp").chmod(0o777)  # nginx's workers run as nobody when started by root
        conf = self.root / "nginx.conf"
        conf.write_text(self.config())
        log = open(self.root / "nginx.out", "wb")  # noqa: SIM115 (kept open for the process)
        self.proc = subprocess.Popen(["nginx", "-p", str(self.root), "-c", str(conf), "-e", str(self.root / "error.log"),
                                      "-g", "daemon off;"], stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 15
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"nginx exited with {self.proc.returncode}: "
                                   + (self.root / "nginx.out").read_text(errors="replace")[-2000:])
            with contextlib.suppress(OSError):
                status, _ = run.http_get(self.base + run.Server.health_path, None, timeout=2)
                if status == 200:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("nginx did not answer within 15 s")
            time.sleep(0.1)

    def pids(self) -> list[int]:
        return [self.proc.pid, *run.descendants(self.proc.pid)] if self.proc else []

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGQUIT)  # graceful: finish what is in flight
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)


@contextlib.contextmanager
def instances(count: int, data_dir: Path, work: Path, env: dict[str, str], limit: CpuLimit | None,
              tag: str) -> Iterator[list[Instance]]:
    """`count` instances on the same data dir and database, ready."""
    started: list[Instance] = []
    try:
        for n in range(count):
            procs = limit.group(f"{tag}-{n}") if limit is not None else None
            inst = Instance(data_dir, work / f"instance-{tag}-{n}.log", env, procs)
            inst.start()
            started.append(inst)
        for inst in started:
            inst.wait_ready()
        yield started
    finally:
        for inst in started:
            inst.stop()
        if limit is not None:
            limit.remove()


# -- CPU accounting -----------------------------------------------------------


def _cpu_of(pids: list[int]) -> dict[int, float]:
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        out[pid] = (int(fields[11]) + int(fields[12])) / tick
    return out


class CpuMeter:
    """CPU seconds of named groups of processes over a window, from
    /proc/<pid>/stat, wrk's from the rusage of reaped children and the
    rest (other processes) from /proc/stat."""

    def __init__(self, groups: dict[str, list[int]]) -> None:
        self.groups = groups
        self.before = {name: _cpu_of(pids) for name, pids in groups.items()}
        self.children = _children_cpu()
        self.busy = run.busy_seconds()
        self.started = time.perf_counter()

    def stop(self) -> dict[str, float]:
        seconds = time.perf_counter() - self.started
        used = {}
        for name, pids in self.groups.items():
            after = _cpu_of(pids)
            used[name] = sum(v - self.before[name].get(pid, 0.0) for pid, v in after.items())
        used["wrk"] = _children_cpu() - self.children
        total = run.busy_seconds() - self.busy
        used["other processes"] = max(0.0, total - sum(used.values()))
        used["wall"] = seconds
        return used


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# -- scaling ------------------------------------------------------------------


@dataclass
class ScaleRow:
    instances: int
    scenario: str
    result: run.WrkResult | None
    cpu: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    @property
    def per_cpu_second(self) -> float:
        quire = self.cpu.get("Quire", 0.0)
        return self.result.requests / quire if self.result and quire else 0.0


def scaling(args: argparse.Namespace, work: Path, pg: Any, data_dir: Path, env: dict[str, str], key: str,
            ids_file: Path, limit: CpuLimit) -> list[ScaleRow]:
    rows: list[ScaleRow] = []
    page_prefix = f"/api/content/items/posts?limit={run.PAGE}&skip="
    plan = [
        (f"items page (`limit={run.PAGE}&skip=0..{run.MAX_SKIP}`)", BENCH / "skip.lua",
         [page_prefix, str(run.MAX_SKIP)]),
        ("item by id (random of all posts)", BENCH / "ids.lua", ["/api/content/item/posts/", str(ids_file)]),
    ]
    for count in args.instances:
        print(f"\n{count} instance(s), {limit.text}", flush=True)
        with instances(count, data_dir, work, env, limit, f"scale{count}") as insts:
            proxy = Nginx(work, [i.port for i in insts], args.nginx_workers)
            try:
                proxy.start()
                status, body = run.http_get(proxy.base + page_prefix + "0", key)
                if status != 200:
                    raise RuntimeError(f"the items page through nginx answered {status}: {body[:200]!r}")
                for name, script, script_args in plan:
                    if args.warmup > 0:
                        run.run_wrk(args, key, proxy.base + "/", script, script_args, args.warmup)
                    meter = CpuMeter({"Quire": [p for i in insts for p in i.pids()], "nginx": proxy.pids(),
                                      "PostgreSQL": [pg.process.pid, *run.descendants(pg.process.pid)]})
                    text = run.run_wrk(args, key, proxy.base + "/", script, script_args, args.duration)
                    row = ScaleRow(count, name, run.parse_wrk(text), meter.stop())
                    (work / f"wrk-scale{count}-{len(rows)}.txt").write_text(text)
                    rows.append(row)
                    assert row.result is not None
                    print(f"    {name}: {row.result.rps:,.0f} req/s, p50 {row.result.p50:.2f} ms, "
                          f"{row.per_cpu_second:,.0f} requests per Quire CPU-second; CPU s: "
                          + ", ".join(f"{k} {v:.1f}" for k, v in row.cpu.items()), flush=True)
            except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
                rows.append(ScaleRow(count, "setup", None, error=str(exc)))
                print(f"    ERROR: {exc}", flush=True)
            finally:
                proxy.stop()
    return rows


# -- correctness across instances ---------------------------------------------


class Client:
    """One keep-alive HTTP connection to an instance."""

    def __init__(self, port: int, key: str | None = None) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.key = key

    def request(self, method: str, path: str, body: Any = None,
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        head = {**({"api-key": self.key} if self.key else {}), **(headers or {})}
        data = None
        if body is not None:
            data = orjson.dumps(body)
            head["content-type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=head)
            response = self.conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()  # opened again by the next request
            raise
        try:
            return response.status, orjson.loads(raw) if raw else None
        except orjson.JSONDecodeError:
            return response.status, raw

    def close(self) -> None:
        self.conn.close()


@dataclass
class Visibility:
    delays_ms: list[float]
    first_read: int  # visible on the first read after the write's answer
    never: int
    errors: list[str]


def visibility(insts: list[Instance], key: str, ids: list[str], writes: int) -> Visibility:
    """A title saved through A (POST .../item/posts), then B polled in a
    tight loop until it answers that title: from A's answer (the commit) to
    B's first answer with it. A and B rotate over the instances."""
    clients = [Client(i.port, key) for i in insts]
    out = Visibility([], 0, 0, [])
    try:
        for n in range(writes):
            a, b = clients[n % len(clients)], clients[(n + 1) % len(clients)]
            item_id = ids[(n * 7919) % len(ids)]
            title = f"Visible {n} {time.time_ns()}"
            # B answers the item first, so whatever B keeps of it is the old
            # version: what is timed is B learning of A's commit
            b.request("GET", f"/api/content/item/posts/{item_id}")
            status, body = a.request("POST", "/api/content/item/posts", {"data": {"_id": item_id, "title": title}})
            if status != 200:
                out.errors.append(f"write {n} answered {status}: {str(body)[:200]}")
                continue
            saved = time.perf_counter()
            reads = 0
            while True:
                status, body = b.request("GET", f"/api/content/item/posts/{item_id}")
                now = time.perf_counter()
                reads += 1
                if status == 200 and isinstance(body, dict) and body.get("title") == title:
                    out.delays_ms.append((now - saved) * 1000)
                    out.first_read += reads == 1
                    break
                if now - saved > VISIBLE_WAIT:
                    out.never += 1
                    break
    finally:
        for c in clients:
            c.close()
    return out


SSO_CLIENT = ("quire-bench", "bench-secret")
SSO_ACCOUNTS = {"ann": {"email": "ann@example.com", "preferred_username": "ann", "name": "Ann",
                        "realm_access": {"roles": ["admin"]}}}


def sso_missing() -> str:
    """Why the back-channel logout cannot be measured here ("" when it can):
    it needs the OpenID provider of the tests (node, tests/oidc/node_modules)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (run.ROOT / "tests" / "oidc" / "node_modules").is_dir():
        return "the test OpenID provider is not installed (make test installs it: npm ci --prefix tests/oidc)"
    return ""


def sso_env(op_port: int) -> dict[str, str]:
    return {"QUIRE_SSO_PROVIDER_URL": f"http://127.0.0.1:{op_port}", "QUIRE_SSO_CLIENT_ID": SSO_CLIENT[0],
            "QUIRE_SSO_CLIENT_SECRET": SSO_CLIENT[1], "QUIRE_SSO_MAPPING": '{"role": "realm_access/roles/0"}'}


@dataclass
class LogoutTrial:
    delays_ms: list[float]
    errors: list[str]


def backchannel_logout(insts: list[Instance], work: Path, op_port: int, rounds: int) -> LogoutTrial:
    """Log in by SSO on B and hold B's event stream; sign out at the
    provider, which posts the logout token to A (its back-channel address);
    timed from the sign-out's answer to B's stream sending `logout`."""
    sys.path.insert(0, str(run.ROOT))
    import httpx2 as httpx
    from tests.sso.provider import end_session, login, start_provider

    a, b = insts[0], insts[1]
    out = LogoutTrial([], [])
    client = {"client_id": SSO_CLIENT[0], "client_secret": SSO_CLIENT[1],
              "redirect_uris": [f"{i.base}/sso/callback" for i in insts],
              "post_logout_redirect_uris": [f"{i.base}/auth/login" for i in insts],
              "backchannel_logout_uri": f"{a.base}/sso/logout", "backchannel_logout_session_required": True}
    with start_provider(work, [client], SSO_ACCOUNTS, port=op_port) as op:
        for n in range(rounds):
            try:
                with httpx.Client(timeout=30) as http:
                    started = http.get(b.base + "/sso/authenticate")
                    back = login(http, started.headers["location"], "ann")
                    if http.get(back).status_code != 303:
                        raise RuntimeError(f"the SSO callback on B did not log in: {back[:120]}")
                    with http.stream("GET", b.base + "/system/events") as stream:
                        lines = stream.iter_lines()
                        next(lines)  # retry: the stream is open
                        end_session(http, op.endpoint("end_session_endpoint") + f"?client_id={SSO_CLIENT[0]}")
                        done = time.perf_counter()  # the provider has posted the token to A
                        for line in lines:  # a keep-alive comes every few seconds
                            if line.startswith("data: ") and orjson.loads(line[6:])["type"] == "logout":
                                out.delays_ms.append((time.perf_counter() - done) * 1000)
                                break
                            if time.perf_counter() - done > VISIBLE_WAIT * 6:
                                raise RuntimeError("no logout on B's stream within 30 s")
                        else:
                            raise RuntimeError("B's stream ended without a logout")
            except Exception as exc:  # noqa: BLE001 (a failed round is reported, the others go on)
                out.errors.append(f"round {n}: {type(exc).__name__}: {str(exc)[:200]}")
    return out


@dataclass
class RateTrial:
    name: str
    attempts: int
    accepted: int
    first_429: int | None  # 1-based attempt number
    other: Counter[int]


def rate_limits(insts: list[Instance], token: str, limit: int) -> list[RateTrial]:
    """Submissions to one form from one address (X-Forwarded-For: the
    instances trust one proxy), alternating between instances, twice the
    limit: the limit holds across instances when exactly `limit` pass."""
    trials = []
    shapes = [("A, B alternately", [insts[0], insts[1 % len(insts)]]), (f"all {len(insts)} in turn", insts)]
    for t, (name, order) in enumerate(shapes, 1):
        clients = [Client(i.port) for i in order]
        trial = RateTrial(name, 2 * limit, 0, None, Counter())
        try:
            for n in range(2 * limit):
                status, _ = clients[n % len(clients)].request(
                    "POST", f"/api/inbox/submit/{token}", {"data": {"name": "Rate", "message": f"attempt {n}"}},
                    {"x-forwarded-for": f"10.77.{t}.1", "accept": "application/json"})
                if status == 200:
                    trial.accepted += 1
                elif status == 429:
                    trial.first_429 = trial.first_429 or n + 1
                else:
                    trial.other[status] += 1
        finally:
            for c in clients:
                c.close()
        trials.append(trial)
    return trials


class Mailbox:
    """An SMTP server's handler (aiosmtpd) that counts each Message-ID it
    acknowledged; asked to, it stalls the next DATA (no answer) until
    released, and then refuses it: a message never acknowledged was never
    delivered."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.received: Counter[str] = Counter()
        self.arrived: dict[str, float] = {}  # first acknowledgement, time.monotonic()
        self.stall_next = False
        self.stalled = threading.Event()
        self.stalled_id = ""
        self.released = threading.Event()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        message_id = str(email.message_from_bytes(envelope.content)["Message-ID"] or "")
        stall = False
        with self.lock:
            if self.stall_next:
                self.stall_next, stall = False, True
                self.stalled_id = message_id
        if stall:
            self.stalled.set()
            while not self.released.is_set():
                await asyncio.sleep(0.05)
            return "451 4.3.0 Stalled by the benchmark; not taken"
        with self.lock:
            self.received[message_id] += 1
            self.arrived.setdefault(message_id, time.monotonic())
        return "250 2.0.0 OK"

    def distinct(self, ids: set[str]) -> int:
        with self.lock:
            return sum(1 for m in ids if self.received[m])


def email_jobs(url: str) -> list[dict[str, Any]]:
    """The e-mail jobs, read through Quire's own store API."""
    from quire.store.postgres import PostgresStore

    store = PostgresStore(url)
    try:
        return list(store.collection("system/jobs").find({"kind": "email"}))
    finally:
        store.close()


def _submit_all(insts: list[Instance], token: str, count: int, tag: str) -> list[str]:
    """`count` submissions round-robin over the instances, each from its own
    address (the rate limit counts per address); the problems."""
    clients = [Client(i.port) for i in insts]
    problems = []
    try:
        for n in range(count):
            status, body = clients[n % len(clients)].request(
                "POST", f"/api/inbox/submit/{token}",
                {"data": {"name": f"Mail {tag} {n}", "email": f"visitor{n}@example.org", "message": "Hello"}},
                {"x-forwarded-for": f"10.{88 + len(tag)}.{n // 250}.{n % 250 + 1}", "accept": "application/json"})
            if status != 200:
                problems.append(f"submission {n} answered {status}: {str(body)[:200]}")
    finally:
        for c in clients:
            c.close()
    return problems


def _wait_jobs(url: str, known: set[str], count: int, timeout: float) -> list[dict[str, Any]]:
    """The e-mail jobs not in `known`, once `count` of them are done or failed (or the time is up)."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = [j for j in email_jobs(url) if j["_id"] not in known]
        if sum(j["state"] in ("done", "failed") for j in jobs) >= count or time.monotonic() > deadline:
            return jobs
        time.sleep(0.5)


def outbox_once(insts: list[Instance], url: str, box: Mailbox, token: str, count: int) -> dict[str, Any]:
    started = time.monotonic()
    problems = _submit_all(insts, token, count, "once")
    jobs = _wait_jobs(url, set(), count, 60 + count)
    ids = {j["payload"]["message_id"] for j in jobs}
    with box.lock:
        copies = Counter(box.received[m] for m in ids)
        last = max((box.arrived[m] for m in ids if m in box.arrived), default=started)
    holders = Counter(j.get("holder", "?").split(":")[1] for j in jobs if j.get("holder"))
    return {"submitted": count, "problems": problems, "jobs": len(jobs), "distinct_ids": len(ids),
            "done": sum(j["state"] == "done" for j in jobs),
            "attempts": dict(Counter(j["attempts"] for j in jobs)),
            "received": box.distinct(ids), "copies": dict(copies), "seconds": last - started,
            "senders": sorted(holders.values(), reverse=True)}


def outbox_kill(insts: list[Instance], url: str, box: Mailbox, token: str, count: int) -> dict[str, Any]:
    """Stall the next DATA, kill -9 the instance sending it, and wait for
    every message to arrive at least once."""
    known = {j["_id"] for j in email_jobs(url)}
    box.stall_next = True
    problems = _submit_all(insts, token, count, "kill")
    if not box.stalled.wait(60):
        return {"error": "no DATA reached the SMTP server within 60 s", "problems": problems}
    holder = ""
    for _ in range(40):  # the job is recorded running (with its holder) before the send begins
        holder = next((j.get("holder") or "" for j in email_jobs(url)
                       if j["payload"]["message_id"] == box.stalled_id and j["state"] == "running"), "")
        if holder:
            break
        time.sleep(0.05)
    pid = int(holder.split(":")[1]) if holder.count(":") >= 2 else -1
    victim = next((i for i in insts if pid in i.pids()), None)
    if victim is None:
        box.released.set()
        return {"error": f"no instance runs the sender {holder!r}", "problems": problems}
    victim.kill()
    killed = time.monotonic()
    box.released.set()
    print(f"    killed the instance on port {victim.port} (pid {pid}) while its DATA was stalled", flush=True)
    lease = 3 * SMTP_TIMEOUT + 30
    jobs = _wait_jobs(url, known, count, lease + 60 + count)
    ids = {j["payload"]["message_id"] for j in jobs}
    with box.lock:
        copies = Counter(box.received[m] for m in ids)
        stalled_at = box.arrived.get(box.stalled_id)
    stalled_job = next((j for j in jobs if j["payload"]["message_id"] == box.stalled_id), {})
    return {"submitted": count, "problems": problems, "jobs": len(jobs), "received": box.distinct(ids),
            "copies": dict(copies), "lease": lease,
            "stalled_after": None if stalled_at is None else stalled_at - killed,
            "stalled_attempts": stalled_job.get("attempts"), "stalled_state": stalled_job.get("state"),
            "done": sum(j["state"] == "done" for j in jobs)}


def correctness(args: argparse.Namespace, work: Path, url: str, data_dir: Path, env: dict[str, str], key: str,
                ids: list[str], box: Mailbox) -> dict[str, Any]:
    out: dict[str, Any] = {}
    missing = sso_missing()
    op_port = run.free_port()
    if not missing:
        env = {**env, **sso_env(op_port)}
    with instances(args.check_instances, data_dir, work, env, None, "check") as insts:
        print(f"\nCorrectness on {len(insts)} instances (no CPU limit)", flush=True)
        vis = visibility(insts, key, ids, args.writes)
        out["visibility"] = vis
        if vis.delays_ms:
            print(f"    write on A visible on B: p50 {_pct(vis.delays_ms, 50):.1f} ms, "
                  f"p99 {_pct(vis.delays_ms, 99):.1f} ms, max {max(vis.delays_ms):.1f} ms over "
                  f"{len(vis.delays_ms)} writes; never {vis.never}", flush=True)
        admin = Client(insts[0].port, key)
        try:
            status, form = admin.request("POST", "/api/inbox/forms", {"data": {"name": "Bench rate"}})
            if status != 200:
                raise RuntimeError(f"creating a form answered {status}: {form}")
            out["rates"] = rate_limits(insts, form["token"], RATE_LIMIT)
            for t in out["rates"]:
                print(f"    rate limit {RATE_LIMIT}, {t.name}: {t.accepted} of {t.attempts} accepted, "
                      f"first 429 at attempt {t.first_429}", flush=True)
            status, form = admin.request("POST", "/api/inbox/forms",
                                         {"data": {"name": "Bench mail", "emails": ["team@example.com"]}})
            if status != 200:
                raise RuntimeError(f"creating a form answered {status}: {form}")
        finally:
            admin.close()
        out["once"] = outbox_once(insts, url, box, form["token"], args.emails)
        print(f"    e-mail: {out['once']}", flush=True)
        if missing:
            out["logout"] = missing
            print(f"    back-channel logout: not measured: {missing}", flush=True)
        else:
            trial = backchannel_logout(insts, work, op_port, args.logouts)
            out["logout"] = trial
            if trial.delays_ms:
                print(f"    back-channel logout to A reaching B's stream: p50 {_pct(trial.delays_ms, 50):.0f} ms, "
                      f"max {max(trial.delays_ms):.0f} ms over {len(trial.delays_ms)} logouts; "
                      f"errors {trial.errors[:2]}", flush=True)
            else:
                print(f"    back-channel logout: no round succeeded: {trial.errors[:2]}", flush=True)
        # last: it kills an instance
        out["kill"] = outbox_kill(insts, url, box, form["token"], args.kill_emails)
        print(f"    e-mail with a kill: {out['kill']}", flush=True)
    return out


@contextlib.contextmanager
def smtp_server(box: Mailbox) -> Iterator[int]:
    from aiosmtpd.controller import Controller

    port = run.free_port()
    controller = Controller(box, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield port
    finally:
        box.released.set()
        controller.stop()


# -- report -------------------------------------------------------------------


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered) + 0.5) - 1))]


def render_scaling(rows: list[ScaleRow], limit: CpuLimit) -> str:
    """One row per instance count and scenario; "× first" compares req/s
    and the CPU given with the smallest count's, so growth can be read
    against the CPU that bought it."""
    lines = ["| instances | scenario | CPU given to Quire | Quire CPU used | req/s | × first (req/s; CPU given) | "
             "p50 | p99 | req/s per CPU given | requests per Quire CPU-second | "
             "CPU s: Quire / PostgreSQL / nginx / wrk / other | wall |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
    first: dict[str, ScaleRow] = {}
    for r in rows:
        if r.result is None:
            lines.append(f"| {r.instances} | **error**: {r.error} | | | | | | | | | | |")
            continue
        base = first.setdefault(r.scenario, r)
        given = r.instances * limit.share if limit.root is not None else None
        c = r.cpu
        used = c.get("Quire", 0) / c["wall"] if c.get("wall") else 0
        grew = r.result.rps / base.result.rps if base.result and base.result.rps else 0
        cpu_grew = f"{r.instances / base.instances:g}" if given else "—"
        lines.append(
            f"| {r.instances} | {r.scenario} | {f'{given:g} CPU' if given else 'unlimited'} | {used:.2f} CPU | "
            f"{r.result.rps:,.0f} | {grew:.2f}; {cpu_grew} | "
            f"{run._ms(r.result.p50)} | {run._ms(r.result.p99)} | "
            f"{f'{r.result.rps / given:,.0f}' if given else '—'} | {r.per_cpu_second:,.0f} | "
            + " / ".join(f"{c.get(k, 0):.1f}" for k in ("Quire", "PostgreSQL", "nginx", "wrk", "other processes"))
            + f" | {c.get('wall', 0):.1f} s |")
    return "\n".join(lines)


def render_checks(checks: dict[str, Any]) -> str:
    lines = ["| check | result | target | met? |", "|---|---|---|---|"]
    vis: Visibility | None = checks.get("visibility")
    if vis is not None:
        if vis.delays_ms:
            p99 = _pct(vis.delays_ms, 99)
            text = (f"p50 {_pct(vis.delays_ms, 50):.1f} ms, p99 {p99:.1f} ms, max {max(vis.delays_ms):.1f} ms "
                    f"over {len(vis.delays_ms)} writes ({vis.first_read} seen on the first read); "
                    f"never within {VISIBLE_WAIT:g} s: {vis.never}; failed writes: {len(vis.errors)}")
            met = p99 <= 100 and not vis.never and not vis.errors
        else:
            text, met = f"no write succeeded: {vis.errors[:1]}", False
        lines.append(f"| a write through A visible on B | {text} | p99 ≤ 100 ms | {run._met(met)} |")
    for t in checks.get("rates", []):
        other = ", ".join(f"{n}× {s}" for s, n in t.other.items())
        met = t.accepted == RATE_LIMIT and t.first_429 == RATE_LIMIT + 1 and not t.other
        lines.append(f"| rate limit {RATE_LIMIT}/min of one form and address, {t.name} | {t.accepted} of "
                     f"{t.attempts} accepted, first 429 at attempt {t.first_429}{'; ' + other if other else ''} | "
                     f"exactly {RATE_LIMIT} | {run._met(met)} |")
    once = checks.get("once")
    if once is not None:
        met = (not once["problems"] and once["distinct_ids"] == once["submitted"] == once["received"] == once["done"]
               and once["copies"] == {1: once["submitted"]} and once["attempts"] == {1: once["submitted"]})
        lines.append(f"| e-mail outbox, {once['submitted']} submissions over the instances | {once['received']} "
                     f"distinct Message-IDs received, copies per message {once['copies']}, jobs done {once['done']}, "
                     f"attempts {once['attempts']}, sent by {len(once['senders'])} processes {once['senders']}, "
                     f"all in {once['seconds']:.1f} s | each sent and recorded once | {run._met(met)} |")
    kill = checks.get("kill")
    if kill is not None:
        if "error" in kill:
            lines.append(f"| e-mail with the sending instance killed | **error**: {kill['error']} | | **no** |")
        else:
            met = not kill["problems"] and kill["received"] == kill["submitted"]
            after = "never" if kill["stalled_after"] is None else f"{kill['stalled_after']:.1f} s after the kill"
            lines.append(
                f"| e-mail, {kill['submitted']} submissions, the instance sending one killed (SIGKILL) while "
                f"the SMTP server stalled its DATA | {kill['received']} of {kill['submitted']} received at least "
                f"once (copies per message {kill['copies']}); the stalled message arrived {after} (lease "
                f"{kill['lease']} s), its job {kill['stalled_state']} after {kill['stalled_attempts']} attempts | "
                f"none lost | {run._met(met)} |")
    logout = checks.get("logout")
    if isinstance(logout, str):
        lines.append(f"| a back-channel logout received by A ending a stream held on B | not measured: {logout} "
                     "| — | — |")
    elif isinstance(logout, LogoutTrial):
        if logout.delays_ms:
            text = (f"p50 {_pct(logout.delays_ms, 50):.0f} ms, max {max(logout.delays_ms):.0f} ms over "
                    f"{len(logout.delays_ms)} logouts; failed rounds: {len(logout.errors)}")
        else:
            text = f"no round succeeded: {logout.errors[:1]}"
        met = bool(logout.delays_ms) and not logout.errors
        lines.append(f"| a back-channel logout received by A (posted by the OpenID provider of the tests) "
                     f"reaching a stream held on B | {text} | every logout arrives | {run._met(met)} |")
    return "\n".join(lines)


def section(args: argparse.Namespace, limit: CpuLimit, pg_load: dict[str, Any], scale: str, checks: str,
            loads: list[float]) -> str:
    return (
        f"## {SECTION_TITLE}\n\n"
        f"`make bench` (bench/instances.py) at {run._git_revision()}: the {args.posts:,} posts and "
        f"{args.authors:,} authors of bench/run.py copied into a PostgreSQL {pg_load.get('version', '?')} started "
        f"by the benchmark on 127.0.0.1 ({pg_load.get('seconds', 0):g} s; a throwaway server: `fsync=off`, "
        "`synchronous_commit=off`). Every instance is `quire serve --workers 1` on the same data dir and "
        f"database. Scaling: nginx ({args.nginx_workers} worker process, round robin, keep-alive to the "
        f"instances) in front, `wrk -t{args.threads} -c{args.connections} -d{args.duration:g}s` through it after "
        f"a {args.warmup:g} s warm-up; {limit.text}. CPU seconds are read from /proc/<pid>/stat for the "
        "instances' processes, PostgreSQL's and nginx's, from the rusage of wrk, and the rest of the machine's "
        "busy time (/proc/stat) is \"other\". The machine has "
        f"{os.cpu_count()} CPUs for all of them, so what counts is requests per CPU-second and how req/s "
        "follows the CPU given, not a speed-up. 1-minute load average "
        + " → ".join(f"{x:.2f}" for x in loads) + ".\n\n"
        f"{scale}\n\nCorrectness across {args.check_instances} instances (no CPU limit; each addressed "
        f"directly; `[inbox] rate_limit = {RATE_LIMIT}`, `[server] proxy_hops = 1`, `[smtp] timeout_seconds = "
        f"{SMTP_TIMEOUT}`, `[jobs] poll_seconds = 1`; an aiosmtpd server in the benchmark counts the "
        "Message-IDs it acknowledged):\n\n"
        f"{checks}\n"
    )


# -- main ---------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Several Quire instances on PostgreSQL (see bench/README.md).")
    parser.add_argument("--posts", type=int, default=run.STANDARD_POSTS, help="posts (default 100000)")
    parser.add_argument("--authors", type=int, default=run.STANDARD_AUTHORS, help="authors (default 1000)")
    run.add_load_options(parser, DEFAULT_WORK, SECTION_TITLE)
    parser.add_argument("--instances", default="1,2,4", help="instance counts to scale over (default 1,2,4)")
    parser.add_argument("--cpu-share", type=float, default=0.5,
                        help="CPUs each instance may use in the scaling runs (default 0.5; 0: no limit)")
    parser.add_argument("--nginx-workers", type=int, default=1, help="nginx worker processes (default 1)")
    parser.add_argument("--check-instances", type=int, default=4, help="instances for the correctness checks (default 4)")
    parser.add_argument("--writes", type=int, default=200, help="writes timed from A to B (default 200)")
    parser.add_argument("--emails", type=int, default=100, help="submissions that e-mail (default 100)")
    parser.add_argument("--kill-emails", type=int, default=20,
                        help="submissions that e-mail while one instance is killed (default 20)")
    parser.add_argument("--logouts", type=int, default=20, help="back-channel logouts timed from A to B (default 20)")
    parser.add_argument("--no-scaling", action="store_true", help="only the correctness checks")
    parser.add_argument("--no-checks", action="store_true", help="only the scaling runs")
    args = parser.parse_args(argv)
    try:
        args.instances = [int(n) for n in args.instances.split(",") if n.strip()]
    except ValueError:
        parser.error("--instances takes counts like 1,2,4")
    if not args.instances or min(args.instances) < 1 or args.check_instances < 2:
        parser.error("--instances must be positive and --check-instances at least 2")
    if min(args.posts, args.authors, args.writes, args.emails, args.kill_emails, args.logouts) < 1:
        parser.error("--posts, --authors, --writes, --emails, --kill-emails and --logouts must be at least 1")
    if args.cpu_share < 0 or args.nginx_workers < 1:
        parser.error("--cpu-share must not be negative and --nginx-workers must be positive")
    run.check_load_options(parser, args)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, run._terminate)
    if run.wrk_missing() or pgdata.postgres_missing():
        return 2
    if shutil.which("nginx") is None:
        print("error: nginx is not installed (apt-get install nginx)", file=sys.stderr)
        return 2
    work: Path = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    limit = CpuLimit(args.cpu_share)
    print(f"CPU limit: {limit.text}", flush=True)
    box = Mailbox()
    rows: list[ScaleRow] = []
    checks: dict[str, Any] = {}
    loads = [os.getloadavg()[0]]
    try:
        # the data of bench/run.py, generated once for both benchmarks
        dataset = run.ensure_data(run.DEFAULT_WORK if args.work == DEFAULT_WORK else work / "sqlite",
                                  args.posts, args.authors, args.fresh)
        ids = dataset.ids_file.read_text().split()
        with pgdata.postgres() as pg, smtp_server(box) as smtp_port:
            url = pg.url()
            data_dir = work / "pg-data"
            if data_dir.exists():
                shutil.rmtree(data_dir)
            pg_load = pgdata.load(dataset.data_dir, data_dir, url, run.MODELS)
            pg_load["version"] = run._version([str(pg.bin / "postgres"), "--version"], r"\)\s*(\S+)")
            env = {**pgdata.store_env(url), "QUIRE_SERVER_PROXY_HOPS": "1",
                   "QUIRE_INBOX_RATE_LIMIT": str(RATE_LIMIT), "QUIRE_SMTP_HOST": "127.0.0.1",
                   "QUIRE_SMTP_PORT": str(smtp_port), "QUIRE_SMTP_STARTTLS": "false",
                   "QUIRE_SMTP_FROM": "Quire bench <bench@example.com>",
                   "QUIRE_SMTP_TIMEOUT_SECONDS": str(SMTP_TIMEOUT), "QUIRE_SMTP_RETRY_SECONDS": "1",
                   "QUIRE_JOBS_POLL_SECONDS": "1"}
            key = pgdata.rotate_key(data_dir, env, KEY_NAME)
            if not args.no_scaling:
                rows = scaling(args, work, pg, data_dir, env, key, dataset.ids_file, limit)
            loads.append(os.getloadavg()[0])
            if not args.no_checks:
                checks = correctness(args, work, url, data_dir, env, key, ids, box)
            loads.append(os.getloadavg()[0])
    except KeyboardInterrupt:
        print("\nInterrupted; the servers were stopped.", file=sys.stderr)
        return 130
    except RuntimeError as exc:  # an instance, nginx or PostgreSQL that would not start
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    finally:
        limit.remove()

    scale = render_scaling(rows, limit) if rows else "(scaling not run)"
    check_table = render_checks(checks) if checks else "(checks not run)"
    print("\n" + scale + "\n\n" + check_table)
    problems = [line for log in sorted(work.glob("instance-*.log")) for line in run.server_log_problems(log)]
    if problems:
        print(f"\nThe instances logged {len(problems)} problem line(s) (see {work}/instance-*.log):")
        print("\n".join(problems[:10]))
    standard = (args.posts == run.STANDARD_POSTS and args.authors == run.STANDARD_AUTHORS
                and rows and checks and args.instances == [1, 2, 4])
    docs: Path | None = None if args.no_docs else args.docs or (run.DEFAULT_DOCS if standard else None)
    if docs is not None:
        run.update_doc(docs, run.machine_paragraph(), section(args, limit, pg_load, scale, check_table, loads),
                       SECTION_TITLE)
        print(f"\nWrote the {SECTION_TITLE} section of {docs}")
    elif not args.no_docs:
        print(f"\nNot a full run: {run.DEFAULT_DOCS.relative_to(run.ROOT)} left as it is (--docs PATH writes one).")
    failed = any(r.result is None or r.result.non2xx for r in rows) or "error" in checks.get("kill", {})
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
