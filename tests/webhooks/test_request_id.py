"""One id per HTTP request (quire.requestid): answered in X-Request-Id (a
proxy's own kept when it looks like one), written on the audit entries and
the webhook deliveries the request's writes caused, so a change can be
followed from the proxy's log to the receiver's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import Api, put_model
from tests.ports import free_port
from tests.serving import stop_process
from tests.webhooks.receiver import Receiver
from tests.webhooks.test_delivery import log_of, make_hook


def test_every_answer_names_its_request_and_a_proxys_id_is_kept_when_sane(admin: Api, anon: Api) -> None:
    first = anon.get("/api/system/healthcheck").headers["x-request-id"]
    second = anon.get("/api/nothing-here").headers["x-request-id"]
    assert len(first) == 16 and first != second  # an error answer too
    assert anon.get("/api/system/healthcheck", headers={"x-request-id": "nginx-7f3a:1"}
                    ).headers["x-request-id"] == "nginx-7f3a:1"
    for hostile in ("a b", "x" * 129, "<script>", "id\u00e9"):
        answered = anon.get("/api/system/healthcheck", headers={"x-request-id": hostile.encode("utf-8")})
        assert answered.headers["x-request-id"] != hostile and len(answered.headers["x-request-id"]) == 16


def test_the_audit_entry_and_the_webhook_delivery_of_a_write_carry_its_request_id(
        admin: Api, receiver: Receiver) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    hook = make_hook(admin, receiver.url)
    saved = admin.post("/api/content/item/posts", json={"data": {"title": "Traced"}},
                       headers={"x-request-id": "edge-42"})
    assert saved.status_code == 200 and saved.headers["x-request-id"] == "edge-42"
    got = receiver.wait_for(1)[0]
    assert got.headers["quire-request-id"] == "edge-42"
    assert log_of(admin, hook["_id"], 1)[0]["request"] == "edge-42"
    entries = admin.get("/api/audit", params={"action": "item.create"}).json()["data"]
    assert [e["request"] for e in entries if e["id"] == saved.json()["_id"]] == ["edge-42"]


def test_json_logs_are_one_object_a_line_with_the_request_id(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "quire", "serve", "--data", str(tmp_path / "data"),
                                 "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "QUIRE_SERVER_LOG_FORMAT": "json",
                                     "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                request = urllib.request.Request(f"http://127.0.0.1:{port}/api/system/healthcheck",
                                                 headers={"x-request-id": "probe-1"})
                with urllib.request.urlopen(request, timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline and proc.poll() is None, log.read_text()
                time.sleep(0.2)
        deadline = time.monotonic() + 10
        while "probe-1" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
    finally:
        stop_process(proc)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]  # every line is JSON
    assert any(line["message"].startswith("Quire serving") for line in lines)
    access = [line for line in lines if line.get("request_id") == "probe-1"]
    assert access and access[0]["logger"] == "quire.access" and "/api/system/healthcheck" in access[0]["message"]
    assert (access[0]["method"], access[0]["path"], access[0]["status"]) == ("GET", "/api/system/healthcheck", 200)
    assert all({"time", "level", "logger", "message"} <= set(line) for line in lines)


def test_forked_workers_make_ids_of_their_own() -> None:
    from quire.requestid import request_id

    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # a worker forked from the server's process
        os.write(write, request_id(None).encode())
        os._exit(0)
    os.waitpid(child, 0)
    theirs = os.read(read, 64).decode()
    ours = request_id(None)
    assert len(theirs) == len(ours) == 16 and theirs[:8] != ours[:8]
