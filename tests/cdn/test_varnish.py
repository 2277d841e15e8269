"""A real caching proxy in front of Quire: Varnish from Debian, run with the
repository's `deploy/varnish/quire.vcl` (only the backend's port rewritten),
kept answers for `s-maxage`, and Quire purging it by tag after each write.
After any write and its purge, the proxy serves what Quire itself answers:
never a stale answer."""

from __future__ import annotations

import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.chromium import unavailable
from tests.ports import free_port
from tests.serving import quire_server, stop_process

VCL = Path(__file__).resolve().parents[2] / "deploy" / "varnish" / "quire.vcl"


def varnishd() -> str | None:
    return shutil.which("varnishd") or ("/usr/sbin/varnishd" if Path("/usr/sbin/varnishd").exists() else None)


@dataclass
class Stack:
    quire: str  # Quire itself
    proxy: str  # Varnish in front of it
    key: str

    def call(self, method: str, path: str, body: Any = None) -> Any:
        request = urllib.request.Request(self.quire + path, method=method,
                                         data=None if body is None else orjson.dumps(body),
                                         headers={"api-key": self.key, "content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            return orjson.loads(answer.read())

    def read(self, base: str, path: str) -> tuple[int, bytes, dict[str, str]]:
        try:
            with urllib.request.urlopen(base + path, timeout=30) as answer:
                return answer.status, answer.read(), {k.lower(): v for k, v in answer.headers.items()}
        except urllib.error.HTTPError as error:
            return error.code, error.read(), {k.lower(): v for k, v in error.headers.items()}

    def purged(self, timeout: float = 20) -> None:
        """Wait until every write's tags went to the proxy (the gauge of
        what waits is 0: the purge was sent and answered)."""
        deadline = time.monotonic() + timeout
        while True:
            request = urllib.request.Request(self.quire + "/metrics", headers={"api-key": self.key})
            with urllib.request.urlopen(request, timeout=30) as answer:
                text = answer.read().decode()
            waiting = re.search(r"^quire_cdn_purges_waiting\S* (\S+)$", text, re.M)
            assert waiting is not None, "no quire_cdn_purges_waiting in /metrics"
            if float(waiting.group(1)) == 0:
                return
            assert time.monotonic() < deadline, f"{waiting.group(1)} writes still to purge"
            time.sleep(0.05)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    program = varnishd()
    if program is None:
        unavailable("Varnish is not installed (Debian: apt-get install varnish)")
    tmp = tmp_path_factory.mktemp("varnish")
    quire_port, proxy_port = free_port(), free_port()
    vcl = tmp / "quire.vcl"
    vcl.write_text(VCL.read_text().replace('.port = "8080";', f'.port = "{quire_port}";'))
    env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_CDN_PURGE_URL": f"http://127.0.0.1:{proxy_port}/",
           "QUIRE_CDN_PURGE_METHOD": "PURGE", "QUIRE_CDN_PURGE_HEADER": "Surrogate-Key", "QUIRE_CDN_RETRY_MS": "100",
           "QUIRE_API_CACHE_CONTROL": '{"content": "public, s-maxage=300", "pages": "public, s-maxage=300"}'}
    log = tmp / "varnish.log"
    with open(log, "w") as sink:
        proxy = subprocess.Popen([program, "-F", "-j", "none", "-a", f"127.0.0.1:{proxy_port}", "-f", str(vcl),
                                  "-n", str(tmp / "work"), "-s", "malloc,64m"], stdout=sink, stderr=subprocess.STDOUT)
    try:
        with quire_server(tmp / "data", env=env, port=quire_port) as (base, key, _log):
            made = Stack(base, f"http://127.0.0.1:{proxy_port}", key)
            deadline = time.monotonic() + 60
            while made.read(made.proxy, "/api/system/healthcheck")[0] != 200:
                assert proxy.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
            yield made
    finally:
        stop_process(proxy)


def _same(stack: Stack, path: str) -> dict[str, str]:
    """The proxy answers `path` as Quire does, twice (the second time from
    its cache); answers the second answer's headers."""
    status, body, _ = stack.read(stack.quire, path)
    for _ in range(2):
        seen = stack.read(stack.proxy, path)
        assert (seen[0], orjson.loads(seen[1])) == (status, orjson.loads(body)), f"stale answer for {path}"
    return seen[2]


def test_after_every_write_and_its_purge_the_proxy_serves_no_stale_answer(stack: Stack) -> None:
    stack.call("PUT", "/api/system/models/authors", {"name": "authors", "type": "collection",
                                                    "fields": [{"name": "name", "type": "text"}]})
    stack.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection", "fields": [
        {"name": "title", "type": "text"}, {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}]})
    stack.call("PUT", "/api/system/roles/public", {"permissions": {
        "content/posts/read": True, "content/authors/read": True, "pages/read": True}})
    ada = stack.call("POST", "/api/content/item/authors", {"data": {"name": "Ada", "_state": 1}})
    post = stack.call("POST", "/api/content/item/posts", {"data": {
        "title": "Hello", "_state": 1, "author": {"_model": "authors", "_id": ada["_id"]}}})
    stack.purged()
    listing = "/api/content/items/posts?limit=10&populate=1"
    one = f"/api/content/item/posts/{post['_id']}?populate=1"
    watched = [listing, one, f"/api/content/item/authors/{ada['_id']}", "/api/pages/routes", "/api/pages/pages"]
    for path in watched:
        _same(stack, path)
    headers = _same(stack, listing)
    assert len(headers["x-varnish"].split()) == 2, headers  # the second read came from the proxy's cache

    draft = {}
    writes = [
        ("a linked item changes", lambda: stack.call("POST", "/api/content/item/authors", {
            "data": {"_id": ada["_id"], "name": "Ada Lovelace"}})),
        ("the item changes", lambda: stack.call("POST", "/api/content/item/posts", {
            "data": {"_id": post["_id"], "title": "Hello again"}})),
        ("an item is added", lambda: draft.update(stack.call("POST", "/api/content/item/posts", {
            "data": {"title": "Second", "_state": 1}}))),
        ("an item is unpublished", lambda: stack.call("POST", "/api/content/item/posts", {
            "data": {"_id": draft["_id"], "_state": 0}})),
        ("the model changes", lambda: stack.call("PUT", "/api/system/models/posts", {
            "name": "posts", "type": "collection", "fields": [
                {"name": "title", "type": "text"}, {"name": "summary", "type": "text", "opts": {"default": "-"}},
                {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}]})),
        ("a page is published", lambda: stack.call("POST", "/api/pages/page", {
            "data": {"title": "About", "type": "layout", "_state": 1}})),
        ("an item is removed", lambda: stack.call("DELETE", f"/api/content/item/posts/{post['_id']}")),
    ]
    for what, write in writes:
        write()
        stack.purged()
        for path in watched + ([f"/api/content/item/posts/{draft['_id']}"] if draft else []):
            try:
                _same(stack, path)
            except AssertionError as exc:
                raise AssertionError(f"after '{what}': {exc}") from None


def test_answers_to_a_key_never_come_from_the_proxy(stack: Stack) -> None:
    stack.call("PUT", "/api/system/models/notes", {"name": "notes", "type": "collection",
                                                  "fields": [{"name": "text", "type": "text"}]})
    stack.call("POST", "/api/content/item/notes", {"data": {"text": "draft only"}})  # unpublished
    request = urllib.request.Request(stack.proxy + "/api/content/items/notes?limit=5", headers={"api-key": stack.key})
    with urllib.request.urlopen(request, timeout=30) as answer:
        assert len(orjson.loads(answer.read())) == 1  # the key sees its draft
    status, body, _ = stack.read(stack.proxy, "/api/content/items/notes?limit=5")
    assert status in (401, 403) or orjson.loads(body) == []  # without a key: nothing of it, ever
