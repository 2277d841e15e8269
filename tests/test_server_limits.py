"""End to end with the real server (granian): the requests it refuses itself,
before Quire sees them, answer as docs/configuration.md says; the README's
personalization example works as written, with curl."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.commands import run_quire
from tests.serving import quire_server

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTED_BASE = "http://127.0.0.1:8080"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    data = tmp_path_factory.mktemp("limits") / "data"
    run_quire("demo", "--data", str(data))
    with quire_server(data) as (url, _key, log):
        yield url, log


@pytest.fixture(scope="module")
def base(served: tuple[str, Path]) -> str:
    return served[0]


def raw(base: str, head: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send `head` as it is (no client fixes it up); the status, headers and body."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    top, _, body = answer.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def get(base: str, target: bytes, extra: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    return raw(base, b"GET " + target + b" HTTP/1.1\r\nHost: quire\r\nConnection: close\r\n" + extra + b"\r\n")


def test_a_url_within_the_limit_reaches_quire(base: str) -> None:
    target = b"/api/system/healthcheck?x=" + b"a" * (65534 - len(b"/api/system/healthcheck?x="))
    status, headers, body = get(base, target)
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    assert headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize(("target", "status"), [
    (b"/api/system/healthcheck?x=" + b"a" * 65535, 414),  # over 64 KB
    (b"/api/system/healthcheck?x=" + b"a" * 1_000_000, 431),  # larger than the server's read buffer
    (b'/api/content/items/posts?filter={"slug":"hello-quire"}', 400),  # a raw `"`, as `curl -g` sends it
])
def test_urls_the_server_refuses_itself_answer_with_an_empty_body(base: str, target: bytes, status: int) -> None:
    got, headers, body = get(base, target)
    assert (got, headers.get("content-length"), body) == (status, "0", b"")


@pytest.mark.parametrize("length", [b"abc", b"-1", b"1, 2", b"99999999999999999999999"])
def test_a_malformed_content_length_is_400_with_an_empty_body(base: str, length: bytes) -> None:
    status, headers, body = raw(base, b"POST /api/content/item/posts HTTP/1.1\r\nHost: quire\r\n"
                                      b"Content-Length: " + length + b"\r\nConnection: close\r\n\r\n")
    assert (status, headers.get("content-length"), body) == (400, "0", b"")


def test_a_body_cut_short_is_logged_as_400_not_500(served: tuple[str, Path]) -> None:
    base, log = served
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(b"POST /api/content/item/posts?cut=1 HTTP/1.1\r\nHost: quire\r\nContent-Length: 100\r\n"
                     b"Content-Type: application/json\r\n\r\n{\"da")
    deadline = time.monotonic() + 20
    while "POST /api/content/item/posts 400" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    text = log.read_text()
    assert "POST /api/content/item/posts 400" in text and "POST /api/content/item/posts 500" not in text


def test_the_same_filter_url_encoded_is_answered_by_quire(base: str) -> None:
    status, headers, body = get(base, b"/api/content/item/posts?filter=%7B%22slug%22:%22hello-quire%22%7D")
    assert status == 200 and json.loads(body)["slug"] == "hello-quire"
    assert headers["content-type"].startswith("application/json")


def commands(markdown: Path, needle: str) -> list[str]:
    """The curl command lines of a Markdown page's examples that contain
    `needle`, continuation lines joined."""
    text = markdown.read_text(encoding="utf-8").replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip().startswith("curl ") and needle in line]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
@pytest.mark.parametrize("page", ["README.md", "docs/persona.md"])
def test_the_persona_example_works_as_written(base: str, page: str) -> None:
    found = commands(ROOT / page, "persona_vars[name]=Ann")
    assert len(found) == 1, found
    argv = shlex.split(found[0].replace(DOCUMENTED_BASE, base))
    done = subprocess.run([argv[0], "-sS", *argv[1:]], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert answer["hero"]["heading"] == "Welcome back, Ann!"


def test_no_example_puts_a_raw_quote_or_brace_in_a_url() -> None:
    """What the server refuses (a raw `"`, `{` or space in the request line)
    must not appear in a URL that curl sends as it is."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = []
    for page in pages:
        for line in page.read_text(encoding="utf-8").replace("\\\n", " ").splitlines():
            if line.strip().startswith("curl "):
                for url in re.findall(r"""(['"])(https?://.*?)\1""", line):
                    if "$(" not in url[1] and re.search(r'[" {}]', url[1]):  # $(...): built by the shell
                        bad.append(f"{page.name}: {line.strip()}")
    assert bad == []
