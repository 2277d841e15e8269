"""Waiting for SQLite's write lock: never on the event loop, and a 503 with
Retry-After (never a 500) when the lock cannot be had in time."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.errors import StoreBusy
from quire.store import SqliteStore
from tests.client import TestClient
from tests.conftest import Api, put_model


def held_lock(db: Path) -> sqlite3.Connection:
    """Another connection (as another process would) holding the write lock."""
    conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    return conn


@pytest.fixture
def app(data_dir: Path) -> Iterator[Any]:
    settings = load_settings(data_dir, env={"QUIRE_SERVER_QUIET": "true"},
                             overrides={"store": {"lock_timeout_ms": 300}})
    application = build_app(settings)
    yield application
    application.state.quire.close()


def test_an_api_write_answers_503_with_retry_after_while_the_lock_is_held(admin: Api, data_dir: Path) -> None:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    holder = held_lock(data_dir / "quire.db")
    try:
        response = admin.post("/api/content/item/posts", json={"data": {"title": "a"}})
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        assert "busy" in response.json()["error"]
        # management writes too
        response = admin.put("/api/system/roles/editor", json={"permissions": {}})
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
    finally:
        holder.rollback()
        holder.close()
    response = admin.post("/api/content/item/posts", json={"data": {"title": "a"}})
    assert response.status_code == 200
    assert [i["title"] for i in admin.get("/api/content/items/posts").json()] == ["a"]


@pytest.mark.anyio
async def test_reads_answer_while_a_write_waits_for_the_lock(client: TestClient, app: Any, admin_key: str,
                                                             data_dir: Path) -> None:
    put_model(Api(client, admin_key), "posts", fields=[{"name": "title", "type": "text"}])
    app.state.quire.store.lock_timeout = 30.0  # the write outlasts the read by far
    headers = {"api-key": admin_key}
    holder = held_lock(data_dir / "quire.db")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://quire") as http:
        write = asyncio.create_task(
            http.post("/api/content/item/posts", json={"data": {"title": "w"}}, headers=headers)
        )
        await asyncio.sleep(0.1)  # the write is now waiting for the lock
        read = await http.get("/api/content/items/posts", headers=headers)
        assert read.status_code == 200 and read.json() == []
        # the read was answered on the same event loop while the write waited
        assert not write.done()
        holder.rollback()
        holder.close()
        response = await write
    assert response.status_code == 200, response.text
    assert response.json()["title"] == "w"


@pytest.mark.anyio
async def test_atomic_gives_up_with_store_busy_after_its_timeout(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db", lock_timeout=0.05)
    store.collection("t").insert({"_id": "a"})
    holder = held_lock(tmp_path / "q.db")
    try:
        with pytest.raises(StoreBusy) as caught:
            async with store.atomic():
                store.collection("t").insert({"_id": "b"})
        assert caught.value.status == 503 and caught.value.headers == {"Retry-After": "1"}
        # a sync write on the event loop gives up after a short wait too
        with pytest.raises(StoreBusy):
            store.collection("t").insert({"_id": "b"})
    finally:
        holder.rollback()
        holder.close()
    async with store.atomic():  # the store is usable again: no transaction was left open
        store.collection("t").insert({"_id": "c"})
    assert store.collection("t").ids() == ["a", "c"]
    store.close()


def test_a_sync_write_off_the_event_loop_waits_for_the_lock(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db", blocking_timeout=5.0)
    store.collection("t").insert({"_id": "a"})
    holder = held_lock(tmp_path / "q.db")
    thread = threading.Timer(0.2, holder.commit)
    thread.start()
    store.collection("t").insert({"_id": "b"})  # waits for the other connection's commit
    thread.join()
    holder.close()
    assert store.collection("t").ids() == ["a", "b"]
    store.close()


@pytest.mark.anyio
async def test_an_admin_session_stays_valid_while_another_writer_holds_the_lock(quire: Any, data_dir: Path) -> None:
    token, doc = quire.sessions.start({"_id": "u1"})
    later = doc["seen"] + 3600  # noting the visit is due (and the session still live)
    quire.sessions.idle = quire.sessions.absolute = 10 * 3600
    holder = held_lock(data_dir / "quire.db")
    try:
        # on the event loop: the sync write gives up at once, the lookup does not fail
        found = quire.sessions.lookup(token, now=later)
        assert found is not None and found["user"] == "u1"
    finally:
        holder.rollback()
        holder.close()
    assert quire.sessions.lookup(token, now=later)["seen"] == later


@pytest.mark.anyio
@pytest.mark.parametrize("steady", [False, True])
async def test_a_steady_waiter_looks_for_the_lock_at_a_short_pause_however_long_it_waits(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steady: bool) -> None:
    """An import's batches wait `steady`: once the lock is free, they get it
    within a few milliseconds, not after a pause grown to MAX_PAUSE."""
    from quire.store import base

    store = SqliteStore(tmp_path / "q.db", lock_timeout=0.3)
    store.collection("t").insert({"_id": "a"})
    pauses: list[float] = []
    real_sleep = asyncio.sleep

    async def recorded(delay: float, *args: Any) -> Any:
        pauses.append(delay)
        return await real_sleep(0)

    monkeypatch.setattr(base.asyncio, "sleep", recorded)
    holder = held_lock(tmp_path / "q.db")
    try:
        with pytest.raises(StoreBusy):
            async with store.atomic(steady=steady):
                pass
    finally:
        holder.rollback()
        holder.close()
        store.close()
    assert len(pauses) > 10
    if steady:
        assert max(pauses) <= base.FIRST_PAUSE
    else:
        assert max(pauses) == base.MAX_PAUSE  # the pause grows for other writers
