"""Several instances on one PostgreSQL database behind nginx, run from the
repository's own deployment files (docs/deployment.md):

- `deploy/systemd/quire@.service` gives each instance's command (its
  `ExecStart` with `%i` as the port, the installed `quire` as this Python's
  `-m quire`, `/var/lib/quire` as a temporary data directory), and
  `deploy/systemd/quire.env.example` its environment (`QUIRE_STORE_URL`
  pointed at a PostgreSQL server the tests start);
- `deploy/nginx/quire.conf` is nginx's site, copied with only its ports and
  addresses rewritten, inside a main file that puts nginx's pid, logs and
  temporary files in a temporary folder (`nginx -p <tmp> -c <conf>`, in the
  foreground; as root, its workers run as `nobody`).

The data directory is made by `quire demo` (what `make run` does), so the
instances serve the demo on PostgreSQL. The tests then prove through nginx,
and instance by instance where which one answers matters, what several
instances must get right: writes seen by the others, the admin's event
stream unbuffered, login throttling and back-channel logout across
instances, a unique route raced from two instances, `kill -9` of an instance,
and the database going away and coming back.
"""

from __future__ import annotations

import contextlib
import grp
import itertools
import os
import pwd
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson
import pytest

from tests.ports import free_port
from tests.postgres import PostgresServer, binaries
from tests.sso.provider import Provider, end_session, login, start_provider, unavailable
from tests.webhooks.receiver import Receiver

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
SITE_CONF = DEPLOY / "nginx" / "quire.conf"
UNIT = DEPLOY / "systemd" / "quire@.service"
ENV_EXAMPLE = DEPLOY / "systemd" / "quire.env.example"
UNIT_DATA = "/var/lib/quire"  # the data directory the units name
UNIT_PORTS = (8001, 8002)  # the instances the nginx file names
CLIENT_ID = "quire-admin"
CLIENT_SECRET = "deployment-test-secret"
ACCOUNTS = {"ann": {"email": "ann@example.com", "preferred_username": "ann", "name": "Ann",
                    "realm_access": {"roles": ["admin"]}}}
WAIT = 60.0  # longest wait for something that must happen (a server up, a write seen)
HEX_ID = re.compile(r"\b[0-9a-f]{24}\b")


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None


def wait_until(check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.1)


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.TransportError:
        return False


# -- the instances, from the systemd unit --------------------------------------------


def unit_command(port: int, data: Path) -> list[str]:
    """The template unit's ExecStart for instance `port`, run from this checkout."""
    lines = [ln for ln in UNIT.read_text().splitlines() if ln.startswith("ExecStart=")]
    assert len(lines) == 1, "quire@.service has one ExecStart"
    program, *args = shlex.split(lines[0].removeprefix("ExecStart="))
    assert program.endswith("/bin/quire"), program
    assert "%i" in args, "the instance name is the port"
    assert UNIT_DATA in args, "every instance serves the one data directory"
    return [sys.executable, "-m", "quire",
            *(str(data) if a == UNIT_DATA else a.replace("%i", str(port)) for a in args)]


def unit_environment(store_url: str) -> dict[str, str]:
    """The variables of the example EnvironmentFile, with the test's database."""
    env: dict[str, str] = {}
    for line in ENV_EXAMPLE.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            env[name.strip()] = value.strip()
    assert "QUIRE_STORE_URL" in env, "the instances' environment names the shared database"
    return {**env, "QUIRE_STORE_URL": store_url}


@dataclass
class Instance:
    port: int
    data: Path
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as sink:
            # a session of its own: kill() and stop() reach granian's workers too
            self.process = subprocess.Popen(unit_command(self.port, self.data), stdout=sink,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env})
        wait_until(lambda: self._alive() and answers(self.base + "/api/system/healthcheck"),
                   f"instance {self.port} answers:\n{self.log.read_text(errors='replace')}")

    def _alive(self) -> bool:
        if self.process is None or self.process.poll() is not None:
            raise AssertionError(f"instance {self.port} exited:\n{self.log.read_text(errors='replace')}")
        return True

    def signal(self, sig: int) -> None:
        if self.process is not None and self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, sig)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None

    def kill(self) -> None:
        """`kill -9` of the instance: granian's main process and its workers."""
        self.signal(signal.SIGKILL)

    def stop(self) -> None:
        self.signal(signal.SIGTERM)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


# -- nginx, from the repository's site file --------------------------------------------


def site_for(listen: int, ports: list[int]) -> str:
    """The repository's nginx site with the test's ports: nothing else changed."""
    text = SITE_CONF.read_text()
    assert text.count("listen 80;") == 1
    text = text.replace("listen 80;", f"listen 127.0.0.1:{listen};")
    for unit_port, port in zip(UNIT_PORTS, ports, strict=True):
        assert text.count(f"server 127.0.0.1:{unit_port} ") == 1, f"the upstream names instance {unit_port}"
        text = text.replace(f"server 127.0.0.1:{unit_port} ", f"server 127.0.0.1:{port} ")
    return text


class Nginx:
    """nginx in the foreground, everything it writes under `root`."""

    def __init__(self, binary: str, root: Path, ports: list[int]) -> None:
        self.root = root
        self.port = free_port()
        root.mkdir(parents=True, exist_ok=True)
        (root / "logs").mkdir(exist_ok=True)
        (root / "site.conf").write_text(site_for(self.port, ports))
        user = ""
        if os.geteuid() == 0:  # workers of a root master drop to this user; it must reach the temp folders
            entry = pwd.getpwnam("nobody")
            user = f"user nobody {grp.getgrgid(entry.pw_gid).gr_name};"
            for path in (root, *root.rglob("*")):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        temp = "\n".join(f"  {kind}_temp_path {root / kind};"
                         for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (root / "nginx.conf").write_text(
            f"daemon off;\n{user}\npid {root / 'nginx.pid'};\nerror_log {root / 'logs' / 'error.log'} warn;\n"
            "events { worker_connections 512; }\n"
            f"http {{\n  access_log {root / 'logs' / 'access.log'};\n{temp}\n"
            f"  include {root / 'site.conf'};\n}}\n")
        # -e: nginx opens its error log before it reads the file; the built-in
        # path (/var/log/nginx) is not writable without root
        self.options = ["-p", str(root), "-c", str(root / "nginx.conf"), "-e", str(root / "logs" / "error.log")]
        checked = subprocess.run([binary, "-t", *self.options],
                                 capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
        self.out = open(root / "nginx.out", "wb")  # noqa: SIM115 (closed by stop)
        self.process = subprocess.Popen([binary, *self.options],
                                        stdout=self.out, stderr=subprocess.STDOUT)
        wait_until(self._listening, "nginx listens")

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _listening(self) -> bool:
        assert self.process.poll() is None, (self.root / "nginx.out").read_text()
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", self.port)) == 0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.out.close()


# -- the cluster ------------------------------------------------------------------------


@dataclass
class Cluster:
    pg: PostgresServer
    a: Instance
    b: Instance
    nginx: Nginx
    key: str  # the demo's admin API key
    password: str  # the demo admin's password
    form_token: str  # the demo's contact form
    data: Path
    provider: Provider | None
    purges: Receiver  # the CDN's purge address
    provider_missing: str = ""

    @property
    def instances(self) -> tuple[Instance, Instance]:
        return self.a, self.b

    def client(self, base: str, key: bool = True) -> httpx.Client:
        return httpx.Client(base_url=base, timeout=30, headers={"api-key": self.key} if key else {})


def demo(data: Path, env: dict[str, str]) -> tuple[str, str, str]:
    """`quire demo` on the shared database: (admin API key, admin password,
    the contact form's token)."""
    out = subprocess.run([sys.executable, "-m", "quire", "demo", "--data", str(data)], capture_output=True,
                         text=True, timeout=180, env={**os.environ, **env})
    assert out.returncode == 0, out.stderr
    password = re.search(r"log in as user admin, password (\S+)", out.stdout)
    token = re.search(r"Contact form token: (\S+)", out.stdout)
    assert password and token, out.stdout
    return out.stdout.strip().splitlines()[-1], password.group(1), token.group(1)


def settings_file(nginx_base: str, provider: Provider | None, purge_url: str) -> str:
    """The settings every instance shares (the one quire.toml of the data directory)."""
    lines = ["[server]", "proxy_hops = 1", f'public_url = "{nginx_base}"', "",
             # a role only the rate-limit test's key has (the others are not limited)
             "[api]", "rate_limits = { limited = 40 }", "",
             # a CDN's purge address: the tests' receiver
             "[cdn]", f'purge_url = "{purge_url}"', "retry_ms = 200", ""]
    if provider is not None:
        lines += ["[sso]", f'provider_url = "{provider.issuer}"', f'client_id = "{CLIENT_ID}"',
                  f'client_secret = "{CLIENT_SECRET}"', "[sso.mapping]", 'role = "realm_access/roles/0"']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    nginx = nginx_binary()
    if binaries() is None:
        unavailable("PostgreSQL is not installed (Debian: apt-get install postgresql)")
    if nginx is None:
        unavailable("nginx is not installed (Debian: apt-get install nginx)")
    tmp = tmp_path_factory.mktemp("deployment")
    data = tmp / "data"
    pg = PostgresServer().start()  # the tests stop it: a server of the module's own
    with contextlib.ExitStack() as stack:
        stack.callback(pg.destroy)
        ports = [free_port(), free_port()]
        env = unit_environment(pg.url())
        key, password, form_token = demo(data, env)
        provider: Provider | None = None
        missing = ""
        proxy = Nginx(nginx, tmp / "nginx", ports)
        stack.callback(proxy.stop)
        try:
            provider = stack.enter_context(start_provider(tmp, [{
                "client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
                "redirect_uris": [f"{proxy.base}/sso/callback"],
                "post_logout_redirect_uris": [f"{proxy.base}/auth/login"],
                # the provider tells instance A, and A alone, of a logout
                "backchannel_logout_uri": f"http://127.0.0.1:{ports[0]}/sso/logout",
                "backchannel_logout_session_required": True}], ACCOUNTS))
        except pytest.skip.Exception as exc:
            missing = str(exc)
        purges = Receiver()
        stack.callback(purges.close)
        (data / "quire.toml").write_text(settings_file(proxy.base, provider, purges.url))
        a, b = (Instance(port, data, env, tmp / f"instance-{port}.log") for port in ports)
        for instance in (a, b):
            stack.callback(instance.stop)
            instance.start()
        yield Cluster(pg, a, b, proxy, key, password, form_token, data, provider, purges, missing)


def make_model(cluster: Cluster, name: str) -> None:
    with cluster.client(cluster.nginx.base) as http:
        response = http.put(f"/api/system/models/{name}", json={
            "name": name, "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        assert response.status_code == 200, response.text


def ids_in(http: httpx.Client, model: str) -> set[str]:
    response = http.get(f"/api/content/items/{model}", params={"fields": '{"_id": 1}'})
    assert response.status_code == 200, response.text
    return {item["_id"] for item in response.json()}


# -- the tests ---------------------------------------------------------------------------


def test_demo_is_served_from_postgresql_through_nginx(cluster: Cluster) -> None:
    with cluster.client(cluster.nginx.base, key=False) as http:
        posts = http.get("/api/content/items/posts", params={"fields": '{"title": 1}'})
    assert posts.status_code == 200, posts.text
    assert "Hello, Quire" in {p["title"] for p in posts.json()}
    assert not (cluster.data / "quire.db").exists()  # the store is the database, not a file
    with cluster.client(cluster.a.base) as a, cluster.client(cluster.b.base) as b:
        assert ids_in(a, "posts") == ids_in(b, "posts") == {p["_id"] for p in posts.json()}


def test_nginx_spreads_requests_over_both_instances(cluster: Cluster) -> None:
    probe = f"/api/content/items/probe{os.getpid()}x{time.monotonic_ns()}"  # a path of this test alone
    with cluster.client(cluster.nginx.base, key=False) as http:
        for _ in range(6):
            response = http.get(probe)
            assert response.status_code == 404, response.text
            assert "error" in response.json()

    def both_logged() -> bool:
        return all(f"GET {probe} 404" in instance.output() for instance in cluster.instances)

    wait_until(both_logged, "each instance answered some of the requests")


def test_a_write_through_one_instance_is_read_through_the_other(cluster: Cluster) -> None:
    make_model(cluster, "notes")
    page = {"limit": "50", "skip": "0", "fields": '{"title": 1}'}
    with cluster.client(cluster.a.base) as a, cluster.client(cluster.b.base) as b:
        assert b.get("/api/content/items/notes", params=page).status_code == 200  # B keeps this answer
        created = a.post("/api/content/item/notes", json={"data": {"title": "written on A"}})
        assert created.status_code == 200, created.text
        note = created.json()["_id"]
        # B drops its kept answer when A's notice arrives (LISTEN/NOTIFY);
        # how soon is not this test's business, that it happens is.
        wait_until(lambda: note in {n["_id"] for n in b.get("/api/content/items/notes", params=page).json()["data"]},
                   "B's list shows A's item")
        assert b.get(f"/api/content/item/notes/{note}").json()["title"] == "written on A"
        changed = b.post("/api/content/item/notes", json={"data": {"_id": note, "title": "changed on B"}})
        assert changed.status_code == 200, changed.text
        wait_until(lambda: a.get(f"/api/content/item/notes/{note}").json()["title"] == "changed on B",
                   "A reads B's change")


def admin_login(http: httpx.Client, user: str, password: str,
                headers: dict[str, str] | None = None) -> httpx.Response:
    page = http.get("/auth/login")
    assert page.status_code == 200, page.text
    csrf = re.search(r'name="csrf" value="([^"]*)"', page.text)
    assert csrf, page.text
    return http.post("/auth/login", data={"csrf": csrf.group(1), "user": user, "password": password},
                     headers=headers or {})


def test_an_admin_session_started_on_one_instance_opens_the_other(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.a.base, timeout=30) as on_a:
        assert admin_login(on_a, "admin", cluster.password).status_code == 303
        with httpx.Client(base_url=cluster.b.base, cookies=on_a.cookies, timeout=30) as on_b:
            assert on_b.get("/").status_code == 200


def test_the_admin_event_stream_passes_through_nginx_unbuffered(cluster: Cluster) -> None:
    with httpx.Client(base_url=cluster.nginx.base, timeout=30) as http:
        assert admin_login(http, "admin", cluster.password).status_code == 303
        with http.stream("GET", "/system/events") as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            # The first event arrives while the answer is still open: nothing
            # waits for a buffer to fill or the answer to end.
            first = next(stream.iter_raw())
            assert b": connected" in first


def _changes(stream: Any) -> Iterator[dict[str, Any]]:
    """The changes of a feed stream, as they arrive (each id with its data)."""
    seq = None
    for line in stream.iter_lines():
        if line.startswith("id: "):
            seq = line[4:]
        elif line.startswith("data: "):
            yield {**orjson.loads(line[6:]), "event_id": seq}


def test_the_change_feed_streams_through_nginx_and_resumes_on_the_other_instance(cluster: Cluster) -> None:
    make_model(cluster, "feednotes")
    headers = {"accept": "text/event-stream"}
    with cluster.client(cluster.nginx.base) as proxied, cluster.client(cluster.a.base) as a, \
            cluster.client(cluster.b.base) as b:
        with proxied.stream("GET", "/api/content/changes", params={"models": "feednotes"}, headers=headers) as feed:
            assert feed.status_code == 200 and feed.headers["content-type"].startswith("text/event-stream")
            changes = _changes(feed)
            a.post("/api/content/item/feednotes", json={"data": {"title": "on A", "_state": 1}})
            b.post("/api/content/item/feednotes", json={"data": {"title": "on B", "_state": 1}})
            got = [next(changes), next(changes)]  # through nginx, unbuffered, whichever instance wrote
            assert [c["item"]["title"] for c in got] == ["on A", "on B"]
        a.post("/api/content/item/feednotes", json={"data": {"title": "while away", "_state": 1}})
        assert got[0]["event_id"] == str(got[0]["seq"])
        resumed = {**headers, "last-event-id": got[0]["event_id"]}
        with b.stream("GET", "/api/content/changes", params={"models": "feednotes"}, headers=resumed) as again:
            titles = [c["item"]["title"] if "item" in c else repr(c) for c in itertools.islice(_changes(again), 2)]
        assert titles == ["on B", "while away"]  # from the other instance, no gap and no repeat
        pulled = proxied.get("/api/content/changes", params={"models": "feednotes", "since": "0"}).json()
        assert [c["item"]["title"] for c in pulled["data"]] == ["on A", "on B", "while away"]


def test_writes_on_either_instance_are_purged_and_etags_hold_across_instances(cluster: Cluster) -> None:
    make_model(cluster, "cached")
    with cluster.client(cluster.a.base) as a, cluster.client(cluster.b.base) as b:
        first = a.post("/api/content/item/cached", json={"data": {"title": "on A", "_state": 1}}).json()
        second = b.post("/api/content/item/cached", json={"data": {"title": "on B", "_state": 1}}).json()
        wanted = {"model:cached", "list:cached", f"id:{first['_id']}", f"id:{second['_id']}"}

        def sent() -> list[str]:
            return [tag for got in list(cluster.purges.received) for tag in got.json["tags"]]

        wait_until(lambda: wanted <= set(sent()), "the writes' tags reached the purge address")
        # whichever instance drained them; a tag may go twice when both drain at once (a purge is
        # idempotent: at least once is the promise), and nothing else the writes did not touch goes
        assert {tag for tag in sent() if tag.endswith(("cached", first["_id"], second["_id"]))} == wanted
        # a strong ETag made on A is the one B makes: either answers 304
        page = {"limit": "10"}
        tag = a.get("/api/content/items/cached", params=page).headers["etag"]
        again = b.get("/api/content/items/cached", params=page, headers={"if-none-match": tag})
        assert again.status_code == 304 and again.headers["etag"] == tag
    with cluster.client(cluster.nginx.base) as through:
        assert through.get("/api/content/items/cached", params=page, headers={"if-none-match": tag}
                           ).status_code == 304


def test_login_throttling_holds_across_instances(cluster: Cluster) -> None:
    # Each instance is talked to directly, the test in nginx's place: the
    # X-Forwarded-For nginx would send names the client.
    client = {"x-forwarded-for": "198.51.100.7"}
    with httpx.Client(base_url=cluster.a.base, timeout=30) as a, \
            httpx.Client(base_url=cluster.b.base, timeout=30) as b:
        for attempt in range(5):  # [admin] login_attempts, counted once for the cluster
            response = admin_login((a, b)[attempt % 2], "mallory", "wrong", client)
            assert response.status_code == 401, response.text
        for http in (a, b):
            refused = admin_login(http, "mallory", "wrong", client)
            assert refused.status_code == 429, refused.text
            assert int(refused.headers["retry-after"]) > 0
        # another address trying the same user name is held too (per user name)
        assert admin_login(b, "mallory", "wrong", {"x-forwarded-for": "198.51.100.8"}).status_code == 429


def test_a_keys_rate_limit_holds_across_instances(cluster: Cluster) -> None:
    with cluster.client(cluster.nginx.base) as admin:
        assert admin.put("/api/system/roles/limited", json={"permissions": {"content/notes/read": True}}
                         ).status_code == 200
        key = admin.post("/api/system/keys", json={"name": "limited", "role": "limited"}).json()["key"]
    left = 60 - time.time() % 60
    if left < 20:  # limits count per wall-clock minute: start in a fresh one
        time.sleep(left + 0.2)
    statuses = []
    with httpx.Client(timeout=30, headers={"api-key": key}) as http:
        for n in range(120):  # the two instances in turn, each with its own workers
            base = (cluster.a.base, cluster.b.base)[n % 2]
            statuses.append(http.get(f"{base}/api/system/healthcheck").status_code)
            time.sleep(0.02)
    allowed = statuses.count(200)
    # 40 a minute for the key, shared through PostgreSQL: each worker may let a
    # twentieth of it through (and a second's worth) before sharing its counts
    assert 40 <= allowed <= 70, statuses
    assert statuses[-30:] == [429] * 30, statuses


def test_concurrent_failed_logins_on_both_instances_are_counted_once(cluster: Cluster) -> None:
    client = {"x-forwarded-for": "198.51.100.9"}
    with contextlib.ExitStack() as stack:
        browsers = [stack.enter_context(httpx.Client(base_url=cluster.instances[i % 2].base, timeout=30))
                    for i in range(8)]
        forms = []
        for http in browsers:  # each browser has the login page (its CSRF cookie and field) first
            csrf = re.search(r'name="csrf" value="([^"]*)"', http.get("/auth/login").text)
            assert csrf
            forms.append({"csrf": csrf.group(1), "user": "trudy", "password": "wrong"})

        def attempt(http: httpx.Client, form: dict[str, str]) -> Callable[[], httpx.Response]:
            return lambda: http.post("/auth/login", data=form, headers=client)

        results = race([attempt(h, f) for h, f in zip(browsers, forms, strict=True)])
    assert sorted(r.status_code for r in results) == [401] * 5 + [429] * 3


def test_the_form_rate_limit_holds_across_instances(cluster: Cluster) -> None:
    client = {"x-forwarded-for": "198.51.100.20"}  # as nginx would send it
    message = {"data": {"name": "Ann", "email": "ann@example.org", "message": "Hello"}}
    path = f"/api/inbox/submit/{cluster.form_token}"
    with cluster.client(cluster.a.base, key=False) as a, cluster.client(cluster.b.base, key=False) as b:
        for n in range(10):  # [inbox] rate_limit per address and form, for the cluster
            sent = (a, b)[n % 2].post(path, json=message, headers=client)
            assert sent.status_code == 200, sent.text
        for http in (a, b):
            refused = http.post(path, json=message, headers=client)
            assert refused.status_code == 429, refused.text
            assert refused.json() == {"error": "Too many submissions, try again later"}
            assert int(refused.headers["retry-after"]) > 0


def test_nginx_passes_the_client_address_the_client_cannot_choose(cluster: Cluster) -> None:
    name = f"spoofer{time.monotonic_ns()}"
    with httpx.Client(base_url=cluster.nginx.base, timeout=30) as http:
        response = admin_login(http, name, "wrong", {"x-forwarded-for": "203.0.113.9"})
    assert response.status_code == 401
    # proxy_hops = 1: the entry nginx appended (the peer it saw), not the one the client wrote
    wait_until(lambda: any("failed admin login from 127.0.0.1" in i.output() for i in cluster.instances),
               "the failed login is logged with nginx's peer address")
    assert not any("from 203.0.113.9" in i.output() for i in cluster.instances)


def race(requests: list[Callable[[], httpx.Response]]) -> list[httpx.Response]:
    """Send the requests at once, each from a thread of its own."""
    barrier = threading.Barrier(len(requests))
    results: list[httpx.Response | None] = [None] * len(requests)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = requests[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(requests))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [r for r in results if r is not None]


def race_for_route(clients: list[httpx.Client], slug: str) -> tuple[list[int], set[str]]:
    """Every client creates a page with `slug` at once: the statuses, and the
    errors with page ids left out."""
    def create(http: httpx.Client) -> Callable[[], httpx.Response]:
        return lambda: http.post("/api/pages/page", json={"data": {"title": "Race", "slug": slug}})

    results = race([create(c) for c in clients])
    errors = {HEX_ID.sub("<id>", orjson.dumps(r.json()).decode()) for r in results if r.status_code != 200}
    return sorted(r.status_code for r in results), errors


def test_a_route_raced_from_two_instances_is_taken_once_with_the_409_of_one_instance(cluster: Cluster) -> None:
    with contextlib.ExitStack() as stack:
        a1, a2, a3, b1, b2 = (stack.enter_context(cluster.client(i.base)) for i in
                              (cluster.a, cluster.a, cluster.a, cluster.b, cluster.b))
        alone, alone_errors = race_for_route([a1, a2, a3], "race-alone")
        spread, spread_errors = race_for_route([a1, b1, a2, b2], "race-spread")
    assert alone == [200, 409, 409]
    assert spread == [200, 409, 409, 409]
    assert {e.replace("race-alone", "race-spread") for e in alone_errors} == spread_errors
    (error,) = spread_errors
    assert orjson.loads(error) == {"error": "Route /race-spread is already taken by page <id>", "fields": ["slug"]}


def test_kill_9_of_an_instance_loses_no_acknowledged_write(cluster: Cluster) -> None:
    make_model(cluster, "ledger")
    acknowledged: list[str] = []
    stop = threading.Event()

    def write(worker: int) -> None:
        with cluster.client(cluster.nginx.base) as http:
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    response = http.post("/api/content/item/ledger", json={"data": {"title": f"{worker}-{n}"}})
                except httpx.TransportError:
                    continue  # not acknowledged: the client cannot know, and need not be told
                if response.status_code == 200:
                    acknowledged.append(response.json()["_id"])

    writers = [threading.Thread(target=write, args=(w,)) for w in range(3)]
    for writer in writers:
        writer.start()
    try:
        wait_until(lambda: len(acknowledged) >= 30, "writes are acknowledged")
        cluster.a.kill()
        at_kill = len(acknowledged)
        wait_until(lambda: len(acknowledged) >= at_kill + 30, "writes go on through the other instance")
    finally:
        stop.set()
        for writer in writers:
            writer.join()
        if cluster.a.process is None:
            cluster.a.start()  # back, for the tests after this one
    with cluster.client(cluster.b.base) as b, cluster.client(cluster.a.base) as a, \
            cluster.client(cluster.nginx.base) as proxied:
        assert set(acknowledged) <= ids_in(b, "ledger")
        assert set(acknowledged) <= ids_in(a, "ledger")  # the restarted instance sees them too
        assert ids_in(proxied, "ledger") == ids_in(b, "ledger")  # the whole streamed list through nginx


def test_backchannel_logout_received_by_one_instance_reaches_a_stream_on_the_other(cluster: Cluster) -> None:
    if cluster.provider is None:
        unavailable(cluster.provider_missing)
    op = cluster.provider
    accepted_before = cluster.a.output().count("back-channel logout accepted")
    with httpx.Client(timeout=30) as http:
        started = http.get(cluster.nginx.base + "/sso/authenticate")
        assert started.status_code == 303, started.text
        back = login(http, started.headers["location"], "ann")
        assert back.startswith(cluster.nginx.base + "/sso/callback?"), back
        assert http.get(back).status_code == 303  # logged in, through nginx
        with http.stream("GET", cluster.b.base + "/system/events") as on_b, \
                http.stream("GET", cluster.nginx.base + "/system/events") as via_nginx:
            streams = [on_b.iter_lines(), via_nginx.iter_lines()]
            for lines in streams:
                assert next(lines) == "retry: 3000"
            # The provider logs ann out and posts the logout token to
            # instance A (its back-channel address) before this returns.
            end_session(http, op.endpoint("end_session_endpoint") + f"?client_id={CLIENT_ID}")
            for lines in streams:
                events = [orjson.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")]
                assert [e["type"] for e in events] == ["logout"]  # and then the stream ended
        assert http.get(cluster.nginx.base + "/").status_code == 303  # the session is gone everywhere
    assert cluster.a.output().count("back-channel logout accepted") == accepted_before + 1
    assert "back-channel logout accepted" not in cluster.b.output()


def assert_unavailable(response: httpx.Response) -> None:
    assert response.status_code == 503, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert isinstance(response.json()["error"], str)
    assert int(response.headers["retry-after"]) > 0


@contextlib.contextmanager
def database_away(cluster: Cluster) -> Iterator[None]:
    """PostgreSQL stopped for the block, then started again on the same
    port and data; the instances are not touched."""
    cluster.pg.stop()
    try:
        yield
    finally:
        cluster.pg.restart()


def test_the_database_going_away_answers_503_json_through_nginx_and_recovers(cluster: Cluster) -> None:
    make_model(cluster, "outage")
    logged = [len(i.output()) for i in cluster.instances]
    with cluster.client(cluster.nginx.base) as http:
        with database_away(cluster):
            for _ in range(4):  # each instance more than once: none of the answers is luck
                assert_unavailable(http.get("/api/system/healthcheck"))
                assert_unavailable(http.get("/api/content/items/outage", params={"filter": '{"title": "x"}'}))
                assert_unavailable(http.post("/api/content/item/outage", json={"data": {"title": "lost"}}))
        created: list[str] = []
        for instance in cluster.instances:  # no restart of Quire: each instance finds the database again
            with cluster.client(instance.base) as direct:
                def wrote(direct: httpx.Client = direct) -> bool:
                    response = direct.post("/api/content/item/outage", json={"data": {"title": "after"}})
                    if response.status_code == 200:
                        created.append(response.json()["_id"])
                        return True
                    assert_unavailable(response)  # until then: still the 503, never a 500 or a hang
                    return False
                wait_until(wrote, f"instance {instance.port} writes again")
    for instance in cluster.instances:
        with cluster.client(instance.base) as direct:
            def listed(direct: httpx.Client = direct) -> bool:
                response = direct.get("/api/content/items/outage", params={"fields": '{"_id": 1}'})
                if response.status_code == 200:  # a streamed list: a connection of the stream pool
                    assert set(created) <= {item["_id"] for item in response.json()}
                    return True
                assert_unavailable(response)
                return False
            wait_until(listed, f"instance {instance.port} lists both writes")
    # an outage is expected weather: warnings, no tracebacks (nor errors) in the logs
    for instance, start in zip(cluster.instances, logged, strict=True):
        during = instance.output()[start:]
        assert re.search(r"database \S+ unavailable", during), during
        assert "Traceback" not in during and " ERROR " not in during, during


def come_back(cluster: Cluster, model: str) -> None:
    """Use every kind of connection of both instances (writer, reader, a
    streamed list's), then stop the database and start it again."""
    make_model(cluster, model)
    for instance in cluster.instances:
        with cluster.client(instance.base) as direct:
            assert direct.post(f"/api/content/item/{model}", json={"data": {"title": "before"}}).status_code == 200
            assert len(ids_in(direct, model)) >= 1
    with database_away(cluster):
        pass
    for instance in cluster.instances:
        wait_until(lambda i=instance: answers(i.base + "/api/system/healthcheck"),  # type: ignore[misc]
                   f"instance {instance.port} answers its health check")


def test_the_first_write_after_the_database_returned_succeeds(cluster: Cluster) -> None:
    come_back(cluster, "returnw")
    for instance in cluster.instances:
        with cluster.client(instance.base) as direct:
            response = direct.post("/api/content/item/returnw", json={"data": {"title": "first"}})
            assert response.status_code == 200, response.text


def test_the_first_streamed_list_after_the_database_returned_succeeds(cluster: Cluster) -> None:
    come_back(cluster, "returnr")
    for instance in cluster.instances:
        with cluster.client(instance.base) as direct:
            response = direct.get("/api/content/items/returnr", params={"fields": '{"_id": 1}'})
            assert response.status_code == 200, response.text


def test_nginx_takes_uploads_as_large_as_quire_does() -> None:
    from quire.config import AssetSettings

    limit = re.search(r"client_max_body_size (\d+)m;", SITE_CONF.read_text())
    assert limit, "the site sets client_max_body_size in MiB"
    # a larger upload must reach Quire, which answers it with its own 413 JSON
    assert int(limit.group(1)) * 1024 * 1024 == AssetSettings().max_request_bytes


@pytest.mark.parametrize("unit", ["quire.service", "quire@.service"])
def test_the_systemd_units_pass_systemd_analyze(unit: str, tmp_path: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    # a template is checked as one of its instances
    target = tmp_path / unit.replace("@.", "@8001.")
    shutil.copy(DEPLOY / "systemd" / unit, target)
    out = subprocess.run([analyze, "verify", str(target)], capture_output=True, text=True)
    # The program is installed where the unit says only on a real host.
    problems = [line for line in (out.stdout + out.stderr).splitlines()
                if line.strip() and "/opt/quire/.venv/bin/quire" not in line]
    assert not problems, "\n".join(problems)


def _task_done(http: httpx.Client, task: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def ended() -> bool:
        found.update(http.get(f"/api/system/spaces/tasks/{task['id']}").json())
        return found.get("state") in ("done", "failed")

    wait_until(ended, f"the {task['kind']} task ended")
    assert found["state"] == "done", found
    return found


def test_spaces_forked_merged_and_switched_across_instances(cluster: Cluster) -> None:
    """A space made through A, forked and merged back by jobs any instance
    may run, compared through B, and an alias switched on A that B serves
    from its next request (the list of spaces is system data: A's change
    reaches B's caches as any write does)."""
    with cluster.client(cluster.a.base) as a, cluster.client(cluster.b.base) as b:
        assert a.post("/api/system/spaces", json={"name": "pg-site"}).status_code == 200
        made = subprocess.run([sys.executable, "-m", "quire", "keys", "create", "--space", "pg-site", "--name", "k",
                               "--role", "admin", "--data", str(cluster.data)], capture_output=True, text=True,
                              timeout=60, env={**os.environ, **unit_environment(cluster.pg.url())})
        assert made.returncode == 0, made.stderr
        space = {"api-key": made.stdout.split()[-1]}
        model = {"name": "notes", "type": "collection", "fields": [{"name": "title", "type": "text"}]}
        assert b.put("/pg-site/api/system/models/notes", headers=space, json=model).status_code == 200
        first = b.post("/pg-site/api/content/item/notes", headers=space, json={"data": {"title": "one"}}).json()

        asked = a.post("/api/system/spaces", json={"name": "pg-stage", "from": "pg-site"})
        assert asked.status_code == 202, asked.text
        _task_done(b, asked.json())
        wait_until(lambda: b.get("/pg-stage/api/content/items/notes", headers=space).status_code == 200,
                   "B serves the fork")
        assert a.post("/pg-stage/api/content/item/notes", headers=space,
                      json={"data": {"_id": first["_id"], "title": "staged"}}).status_code == 200
        plan = b.get("/api/system/spaces/pg-stage/merge").json()
        assert plan["writes"] == 1 and plan["models"][0]["change"] == [first["_id"]], plan
        _task_done(a, b.post("/api/system/spaces/pg-stage/merge", json={"plan": plan["plan"]}).json())
        wait_until(lambda: b.get(f"/pg-site/api/content/item/notes/{first['_id']}", headers=space
                                 ).json().get("title") == "staged", "B reads the merge")

        assert a.put("/api/system/aliases/pg-live", json={"space": "pg-site"}).status_code == 200
        wait_until(lambda: b.get("/pg-live/api/content/items/notes", headers=space).status_code == 200,
                   "B serves the alias")
        b.post("/pg-stage/api/content/item/notes", headers=space, json={"data": {"title": "only in stage"}})
        assert a.put("/api/system/aliases/pg-live", json={"space": "pg-stage"}).json()["previous"] == "pg-site"
        wait_until(lambda: len(b.get("/pg-live/api/content/items/notes", headers=space).json()) == 2,
                   "B serves the switched alias")
        assert a.put("/api/system/aliases/pg-live", json={"space": "pg-site"}).status_code == 200  # the rollback
        wait_until(lambda: len(b.get("/pg-live/api/content/items/notes", headers=space).json()) == 1,
                   "B serves the alias switched back")
