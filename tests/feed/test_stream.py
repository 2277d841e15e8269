"""The change feed as Server-Sent Events from a real server of two
workers: live changes whichever worker made them, resuming with
Last-Event-ID without a gap or a repeat, forged ids, caps, and a client
that never reads."""

from __future__ import annotations

import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
import pytest

from tests.serving import quire_server

ENV = {"QUIRE_SERVER_QUIET": "true", "QUIRE_FEED_POLL_MS": "50", "QUIRE_FEED_QUEUE": "20",
       "QUIRE_FEED_STREAMS_PER_KEY": "3"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    data = tmp_path_factory.mktemp("feed") / "data"
    with quire_server(data, env=ENV) as (base, key, _log):
        httpx.put(f"{base}/api/system/models/posts", headers={"api-key": key}, json={
            "name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]}).raise_for_status()
        yield base, key


class Events:
    """A stream read on a thread: (id, event, data) as they arrive."""

    def __init__(self, base: str, key: str, last_id: str | None = None, **params: str) -> None:
        headers = {"api-key": key, "accept": "text/event-stream"}
        if last_id is not None:
            headers["last-event-id"] = last_id
        self.got: queue.Queue[tuple[str | None, str, Any]] = queue.Queue()
        self.status = 0
        self._client = httpx.Client(timeout=httpx.Timeout(10, read=60))
        self._response = self._client.send(self._client.build_request(
            "GET", f"{base}/api/content/changes", headers=headers, params=params), stream=True)
        self.status = self._response.status_code
        if self.status != 200:
            self.body = self._response.read().decode()
        else:
            threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        fields: dict[str, str] = {}
        try:
            for line in self._response.iter_lines():
                if line == "":
                    if "data" in fields:
                        self.got.put((fields.get("id"), fields.get("event", "message"), json.loads(fields["data"])))
                    fields = {}
                elif not line.startswith(":") and ":" in line:
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")
        except httpx.HTTPError:
            pass
        self.got.put((None, "closed", None))

    def next(self, timeout: float = 10) -> tuple[str | None, str, Any]:
        assert self.status == 200, self.body
        return self.got.get(timeout=timeout)

    def close(self) -> None:
        self._response.close()
        self._client.close()


def _own_key(base: str, key: str, name: str) -> str:
    """A key of its own (admin role): the per-key cap counts each test's streams alone."""
    made = httpx.post(f"{base}/api/system/keys", headers={"api-key": key}, json={"name": name, "role": "admin"})
    made.raise_for_status()
    return str(made.json()["key"])


def _save(base: str, key: str, title: str) -> dict[str, Any]:
    answer = httpx.post(f"{base}/api/content/item/posts", headers={"api-key": key},
                        json={"data": {"title": title, "_state": 1}})
    answer.raise_for_status()
    return answer.json()  # type: ignore[no-any-return]


def test_changes_arrive_live_and_a_reconnect_gets_exactly_what_it_missed(served: tuple[str, str]) -> None:
    base, key = served
    stream = Events(base, key, models="posts")
    try:
        time.sleep(0.5)  # connected
        made = [_save(base, key, f"Live {n}") for n in range(4)]  # two workers answer these writes
        got = [stream.next() for _ in made]
        assert [data["item"]["title"] for _, _, data in got] == [f"Live {n}" for n in range(4)]
        assert [data["id"] for _, _, data in got] == [m["_id"] for m in made]
        last_id = got[1][0]
    finally:
        stream.close()
    later = [_save(base, key, f"Missed {n}") for n in range(2)]
    again = Events(base, key, last_id=last_id, models="posts")
    try:
        resumed = [again.next()[2]["item"]["title"] for _ in range(4)]
        assert resumed == ["Live 2", "Live 3", "Missed 0", "Missed 1"]  # after its id: no gap, no repeat
        _save(base, key, "After")
        assert again.next()[2]["item"]["title"] == "After"
        with pytest.raises(queue.Empty):
            again.next(timeout=1)
    finally:
        again.close()
    assert later


def test_a_forged_last_event_id_gets_a_resync_event_then_live_changes(served: tuple[str, str]) -> None:
    base, admin = served
    for forged in ("99999999999", "abc", "-5", "1" * 40):
        key = _own_key(base, admin, "forger")  # a closed stream counts until the server notices: a key each
        stream = Events(base, key, last_id=forged, models="posts")
        try:
            _, event, data = stream.next()
            assert event == "resync" and "Last-Event-ID" in data["error"], (forged, data)
            _save(base, key, f"after {forged[:5]}")
            assert stream.next()[2]["item"]["title"] == f"after {forged[:5]}"
        finally:
            stream.close()


def test_streams_are_capped_per_key_and_a_client_that_never_reads_is_let_go(served: tuple[str, str]) -> None:
    base, admin = served
    key = _own_key(base, admin, "capped")
    # a client that sends the request and never reads: its queue (20) fills, it is dropped
    port = int(base.rsplit(":", 1)[1])
    stuck = socket.create_connection(("127.0.0.1", port))
    stuck.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stuck.sendall(f"GET /api/content/changes?models=posts HTTP/1.1\r\nHost: x\r\napi-key: {key}\r\n"
                  "Accept: text/event-stream\r\n\r\n".encode())
    reader = Events(base, key, models="posts")
    try:
        time.sleep(0.5)
        big = "x" * 20_000
        for n in range(60):
            _save(base, key, f"{n} {big}")
        titles = [reader.next()[2]["item"]["title"].split()[0] for _ in range(60)]
        assert titles == [str(n) for n in range(60)]  # the one that reads got every change
        opened = [Events(base, key, models="posts") for _ in range(4)]
        try:
            assert [s.status for s in opened].count(429) >= 2  # at most 3 per key, counted over both workers
            refused = next(s for s in opened if s.status == 429)
            assert "streams per key" in refused.body
        finally:
            for s in opened:
                s.close()
        assert httpx.get(f"{base}/api/system/healthcheck").status_code == 200
    finally:
        reader.close()
        stuck.close()
