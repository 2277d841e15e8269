"""A streamed list whose client goes away half-way closes its rows (and
their private database connection) at once, not when the garbage collector
gets to them."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
from typing import Any

import pytest

from quire.bundle import import_bundle


@pytest.mark.sqlite_only
@pytest.mark.anyio
async def test_a_list_whose_client_disconnects_closes_its_database_connection(
    app: Any, quire: Any, admin_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    items = [{"_id": f"{n:024x}", "n": n, "_state": 1} for n in range(3000)]
    await import_bundle(quire, {"quire": 1, "items": {"posts": items}, "models": [
        {"name": "posts", "type": "collection", "fields": [{"name": "n", "type": "number"}]}]})
    opened: list[sqlite3.Connection] = []
    open_stream = quire.store.open_stream_connection

    def recording() -> sqlite3.Connection:
        conn = open_stream()
        opened.append(conn)
        return conn

    monkeypatch.setattr(quire.store, "open_stream_connection", recording)
    gone = asyncio.Event()
    bodies = 0

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal bodies
        if message["type"] == "http.response.body":
            bodies += 1
            if bodies == 2:  # the client stops reading, then goes away
                gone.set()
                await asyncio.sleep(3600)

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "GET", "scheme": "http", "path": "/api/content/items/posts", "raw_path": b"",
             "query_string": b"", "root_path": "", "headers": [(b"api-key", admin_key.encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    gc.disable()  # what the collector would close some time later does not count
    try:
        await asyncio.wait_for(app(scope, receive, send), 10)
        await asyncio.sleep(0.05)
        assert bodies == 2 and len(opened) == 1
        with pytest.raises(sqlite3.ProgrammingError):
            opened[0].execute("SELECT 1")  # closed
    finally:
        gc.enable()
