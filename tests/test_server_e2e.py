"""End to end: the real `quire serve` (granian, two workers) over HTTP."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serving import quire_server


class Server:
    def __init__(self, base: str, key: str, log: Path) -> None:
        self.base, self.key, self.log = base, key, log

    def call(self, method: str, path: str, body: Any = None, key: str | None = "default") -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        if key:
            request.add_header("api-key", self.key if key == "default" else key)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with quire_server(tmp_path_factory.mktemp("e2e") / "data") as (base, key, log):
        yield Server(base, key, log)


def test_content_round_trip_over_http_with_two_workers(server: Server) -> None:
    status, _ = server.call("PUT", "/api/system/models/notes", {"fields": [{"name": "text", "type": "text"}]})
    assert status == 200
    ids = []
    for i in range(30):  # requests spread over both workers: each sees the model at once
        status, item = server.call("POST", "/api/content/item/notes", {"data": {"text": f"n{i}"}})
        assert status == 200, item
        ids.append(item["_id"])
    status, page = server.call("GET", "/api/content/items/notes?limit=5&skip=10")
    assert status == 200
    assert page["meta"]["total"] >= 30 and [d["_id"] for d in page["data"]] == ids[10:15]
    status, everything = server.call("GET", "/api/content/items/notes")
    assert [d["text"] for d in everything][:30] == [f"n{i}" for i in range(30)]


def test_errors_over_http_are_json(server: Server) -> None:
    server.call("PUT", "/api/system/models/notes", {"fields": [{"name": "text", "type": "text"}]})
    assert server.call("GET", "/api/content/items/notes", key="qk_wrong") == (401, {"error": "Authentication failed"})
    assert server.call("GET", "/api/nothing")[0] == 404
    query = urllib.parse.quote('{"$where":1}')
    assert server.call("GET", f"/api/content/items/notes?filter={query}")[1] == {"error": "Unknown operator $where"}


def test_each_request_is_logged_without_its_query(server: Server) -> None:
    server.call("GET", "/api/system/healthcheck?api_key=secret-in-query", key=None)
    deadline = time.monotonic() + 20  # the line is written after the answer: polled, not slept for
    while "GET /api/system/healthcheck 200" not in (log := server.log.read_text()):
        assert time.monotonic() < deadline, log
        time.sleep(0.05)
    assert "secret-in-query" not in log and server.key not in log


def test_concurrent_partial_updates_over_http_both_survive(server: Server) -> None:
    import threading

    server.call("PUT", "/api/system/models/counters", {"fields": [
        {"name": "a", "type": "number"}, {"name": "b", "type": "number"}]})
    status, item = server.call("POST", "/api/content/item/counters", {"data": {"a": 0, "b": 0}})
    assert status == 200
    failures: list[tuple[int, Any]] = []

    def bump(field: str) -> None:
        for i in range(1, 41):
            result = server.call("POST", "/api/content/item/counters", {"data": {"_id": item["_id"], field: i}})
            if result[0] != 200:
                failures.append(result)

    threads = [threading.Thread(target=bump, args=(f,)) for f in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert failures == []
    status, final = server.call("GET", f"/api/content/item/counters/{item['_id']}")
    assert (final["a"], final["b"]) == (40, 40)


def test_a_second_server_on_a_served_port_refuses_to_start(server: Server, tmp_path: Path) -> None:
    """The server shares its socket between workers (SO_REUSEPORT): without
    the check a second one would start too and the kernel would deal the
    requests out between two data folders."""
    from tests.commands import run_quire

    port = urllib.parse.urlsplit(server.base).port
    for command in (["serve"], ["demo", "--serve"]):
        done = run_quire(*command, "--data", str(tmp_path / "other"), "--port", str(port), check=False, process=True)
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"cannot serve on 127.0.0.1:{port}: the port is in use" in done.stderr
        assert "Quire serving" not in done.stdout
    status, _ = server.call("GET", "/api/system/healthcheck")  # the first one serves on
    assert status == 200
