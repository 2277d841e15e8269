"""A real OpenID provider for the SSO tests: npm's oidc-provider, run by node.

    with start_provider(tmp_path, clients=[{...}], accounts={"ann": {...}}) as op:
        op.issuer, op.discovery_url

The provider logs in any username with any password (unknown usernames get no
claims beyond ``sub``), grants every requested scope without a consent page and
requires PKCE (S256). ``login`` and ``end_session`` below drive its pages with
httpx, for tests that don't need a browser.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2 as httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
OIDC_DIR = ROOT / "tests" / "oidc"
SCRIPT = OIDC_DIR / "provider.mjs"
START_TIMEOUT = 45.0  # node starting while both test workers load the machine (tried twice)
# oidc-provider 9 uses URL.parse and crypto.hash (node >= 20.18); it asks for
# node 22 LTS but runs on 20. Debian bookworm's own nodejs (18) is too old.
MIN_NODE = (20, 18)


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


@dataclass
class Provider:
    issuer: str
    process: subprocess.Popen[bytes]
    log_path: Path

    @property
    def url(self) -> str:
        """Base URL of the provider (the same as its issuer)."""
        return self.issuer

    @property
    def discovery_url(self) -> str:
        return discovery_url(self.issuer)

    def endpoint(self, name: str) -> str:
        """A URL from the discovery document, e.g. endpoint("token_endpoint")."""
        doc = httpx.get(self.discovery_url).raise_for_status().json()
        return str(doc[name])

    def log(self) -> str:
        """What the provider wrote to stderr so far (errors, back-channel failures)."""
        return self.log_path.read_text(errors="replace")


def unavailable(reason: str) -> NoReturn:
    """Skip a test whose outside part is missing here; fail it on CI
    (QUIRE_TESTS_STRICT=1, set by .ci/run), where everything must run."""
    if os.environ.get("QUIRE_TESTS_STRICT") == "1":
        pytest.fail(f"{reason} (QUIRE_TESTS_STRICT=1: required here)")
    pytest.skip(reason)


def _node() -> str:
    """The node binary, or skip the test with the reason."""
    node = shutil.which("node")
    if node is None:
        unavailable("node is not installed (needed for the OpenID provider in tests/oidc)")
    if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        unavailable("tests/oidc/node_modules is missing: run `npm ci --prefix tests/oidc`")
    out = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    version = tuple(int(part) for part in re.findall(r"\d+", out)[:2])
    if version < MIN_NODE:
        unavailable(f"node {out.strip()} is too old for oidc-provider 9 (needs >= 20.18)")
    return node


@contextmanager
def start_provider(
    tmp_path: Path,
    clients: list[dict[str, Any]],
    accounts: dict[str, dict[str, Any]] | None = None,
    ttl: dict[str, int] | None = None,
    port: int = 0,
    resources: list[str] | None = None,
) -> Iterator[Provider]:
    """Run tests/oidc/provider.mjs until the block ends.

    ``clients`` are oidc-provider client metadata, passed through as given;
    ``accounts`` maps username (= sub) to claims; ``resources`` are the
    resource servers (RFC 8707) it issues JWT access tokens for. ``port`` 0 lets the provider
    take a free port itself, so parallel test workers never race for one.
    """
    node = _node()
    config = {"port": port, "clients": clients, "accounts": accounts or {}, "ttl": ttl or {},
              "resources": resources or []}
    if port:
        config["issuer"] = f"http://127.0.0.1:{port}"
    cfg = tmp_path / "oidc-provider.json"
    cfg.write_text(json.dumps(config))
    # A node that has not said "ready" in START_TIMEOUT on a loaded machine
    # is stopped and started once more before the test fails: the second
    # start finds node's files in the page cache.
    for attempt in (1, 2):
        out_path, log_path = tmp_path / f"oidc-provider-{attempt}.out", tmp_path / f"oidc-provider-{attempt}.err"
        # Files rather than pipes: nobody has to keep draining them, and they
        # are there to read when something fails.
        with out_path.open("wb") as out, log_path.open("wb") as err:
            proc = subprocess.Popen([node, str(SCRIPT), str(cfg)], cwd=ROOT, stdout=out, stderr=err)
        try:
            issuer = _wait_ready(proc, out_path, log_path, last=attempt == 2)
        except BaseException:
            _stop(proc)
            raise
        if issuer is not None:
            break
        _stop(proc)
    assert issuer is not None
    try:
        yield Provider(issuer=issuer, process=proc, log_path=log_path)
    finally:
        _stop(proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], out_path: Path, log_path: Path, last: bool) -> str | None:
    """The issuer once the provider says it is ready; None when it timed out
    and this was not the `last` try; fails the test otherwise."""
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        for line in out_path.read_text(errors="replace").splitlines(keepends=True):
            if line.startswith("ready ") and line.endswith("\n"):  # the whole line
                return line.removeprefix("ready ").strip()
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    if proc.poll() is None and not last:
        return None
    state = "timed out" if proc.poll() is None else f"exited with {proc.returncode}"
    pytest.fail(f"OpenID provider {state} before it was ready; stderr:\n{log_path.read_text()}")


# --- driving the provider's pages with httpx -------------------------------------


def pkce_pair() -> tuple[str, str]:
    """(code_verifier, S256 code_challenge)."""
    verifier = secrets.token_urlsafe(48)
    challenge = b64url(hashlib.sha256(verifier.encode()).digest())
    return verifier, challenge


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def jwt_claims(token: str) -> dict[str, Any]:
    """The payload of a JWT, unverified."""
    return dict(json.loads(b64url_decode(token.split(".")[1])))


def _form_action(page: str, form_id: str | None = None) -> str:
    pattern = r"<form[^>]*?" + (f'id="{re.escape(form_id)}"[^>]*?' if form_id else "")
    match = re.search(pattern + r'action="([^"]+)"', page)
    assert match, f"no form in page:\n{page}"
    return html.unescape(match.group(1))


def login(http: httpx.Client, authorize_url: str, username: str, password: str = "x") -> str:
    """Follow an authorization request through the dev login form.

    Returns the URL the provider finally redirects to outside itself: the
    client's redirect_uri with ``code``, ``state`` and ``iss`` (or ``error``).
    The session cookie stays in ``http``'s jar, for ``end_session``.
    """
    origin = _origin(authorize_url)
    url = _follow(http, http.get(authorize_url), origin)
    if not url.startswith(origin + "/interaction/"):
        return url  # already logged in: straight back to the client
    page = http.get(url).raise_for_status().text
    form = {"prompt": "login", "login": username, "password": password}
    return _follow(http, http.post(_form_action(page), data=form), origin)


def end_session(http: httpx.Client, end_session_url: str, logout: bool = True) -> str:
    """Open the end-session page and press "Yes, sign me out" (or "No, stay
    signed in"). Back-channel logout is delivered before this returns.
    Returns where the provider sends the browser afterwards."""
    page = http.get(end_session_url).raise_for_status().text
    xsrf = re.search(r'name="xsrf" value="([^"]+)"', page)
    assert xsrf, f"no logout form in page:\n{page}"
    form = {"xsrf": html.unescape(xsrf.group(1))} | ({"logout": "yes"} if logout else {})
    action = _form_action(page, "op.logoutForm")
    return _follow(http, http.post(action, data=form), _origin(end_session_url))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _follow(http: httpx.Client, response: httpx.Response, origin: str) -> str:
    """Follow redirects within the provider; return the first URL outside it
    (or the last page inside it that is not a redirect)."""
    while response.is_redirect:
        url = urljoin(str(response.url), response.headers["location"])
        if _origin(url) != origin:
            return url
        response = http.get(url)
    response.raise_for_status()
    return str(response.url)


# --- a stand-in for a back-channel logout endpoint ---------------------------------


class LogoutReceiver(ThreadingHTTPServer):
    """Records the logout tokens a provider posts to it; forwards nothing."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _LogoutHandler)
        self.tokens: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/backchannel"


class _LogoutHandler(BaseHTTPRequestHandler):
    server: LogoutReceiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0))).decode()
        self.server.tokens.extend(parse_qs(body).get("logout_token", []))
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def logout_receiver() -> Iterator[LogoutReceiver]:
    """A LogoutReceiver serving in a thread until the block ends."""
    server = LogoutReceiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
