"""Indexes catch up with content from the durable queue: after a write of
another process, and when a writer dies before or after the engine's
commit (nothing is lost, nothing is written twice into the results)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire
from quire.config import load_settings
from quire.searchmod.follow import QUEUE, Marks
from tests.conftest import Api, create_item
from tests.searchmod.helpers import (
    ADMIN,
    error_of,
    filler,
    ids,
    posts_model,
    put_index,
    search,
    search_response,
)

# the embedded engine's catching up (its PostgreSQL twin: test_pgengine_catch_up.py)
pytestmark = pytest.mark.sqlite_only


@pytest.fixture
def posts(admin: Api) -> Api:
    posts_model(admin)
    filler(admin)
    put_index(admin, "ix", model="posts", fields=["title", "body"], weights={"title": 3})
    return admin


def queued(quire: Quire) -> int:
    return int(quire.store.execute_read(f"SELECT count(*) FROM \"{QUEUE}\"").fetchone()[0])


def other_process(data_dir: Path, body: str) -> subprocess.CompletedProcess[str]:
    """Run `body` in a new Python process with `quire` open on the same data."""
    script = textwrap.dedent("""
        import asyncio, os, sys
        from quire.app import Quire
        from quire.auth.service import Identity
        from quire.config import load_settings
        quire = Quire(load_settings(sys.argv[1], env={}))
        admin = Identity("admin", key_id="other")
    """) + textwrap.dedent(body)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", script, str(data_dir)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_write_of_another_process_is_found_here(posts: Api, quire: Quire, data_dir: Path) -> None:
    done = other_process(data_dir, """
        asyncio.run(quire.content.save("posts", {"title": "zeppelin from afar", "_state": 1}, admin))
        quire.close()
    """)
    assert done.returncode == 0, done.stderr
    found = search(posts, "ix", "zeppelin")
    assert found["total"] == 1 and found["hits"][0]["title"] == "zeppelin from afar"
    assert queued(quire) == 0


def test_a_worker_killed_after_the_commit_loses_nothing(posts: Api, quire: Quire, data_dir: Path) -> None:
    # the other process commits the write, then dies before it writes the index
    done = other_process(data_dir, """
        quire.search.follower.catch_up = lambda only=None: os._exit(9)
        async def save_then_wait():
            await quire.content.save("posts", {"title": "orphaned walrus", "_state": 1}, admin)
            await asyncio.sleep(5)  # the catch-up due shortly after the commit runs (and dies) meanwhile
        asyncio.run(save_then_wait())
    """)
    assert done.returncode == 9, done.stderr
    assert queued(quire) == 1
    quire.store.mark_stale()  # what every request does: another process committed
    quire.search.follower.catch_up()  # the poller's round
    assert queued(quire) == 0
    assert [h["title"] for h in search(posts, "ix", "walrus")["hits"]] == ["orphaned walrus"]


def test_a_writer_dying_before_the_engine_commit_writes_it_all_next_time(
        posts: Api, quire: Quire, monkeypatch: pytest.MonkeyPatch) -> None:
    real_writer = quire.search.engine.writer

    def dying_writer(*args: Any, **kwargs: Any) -> Any:
        writer = real_writer(*args, **kwargs)

        def commit() -> None:
            raise RuntimeError("stopped mid-write")

        writer.commit = commit
        return writer

    monkeypatch.setattr(quire.search.engine, "writer", dying_writer)
    create_item(posts, "posts", {"title": "lost lemur"})  # the write itself committed
    monkeypatch.undo()
    assert queued(quire) == 1
    quire.search.follower.catch_up()
    assert ids(search(posts, "ix", "lemur")) != []
    assert queued(quire) == 0


def test_a_writer_dying_after_the_engine_commit_writes_it_again_once(
        posts: Api, quire: Quire, monkeypatch: pytest.MonkeyPatch) -> None:
    item = create_item(posts, "posts", {"title": "early heron"})
    quire.search.follower.catch_up()  # the round due after that commit
    real_set = Marks.set_number

    def dying(self: Marks, kind: str, value: int | None) -> None:
        if kind == "applied":
            raise RuntimeError("stopped after the engine's commit, before the mark moved")
        real_set(self, kind, value)

    monkeypatch.setattr(Marks, "set_number", dying)
    response = posts.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "late heron"}})
    assert response.status_code == 200, response.text
    with pytest.raises(RuntimeError):
        quire.search.follower.catch_up()  # the round due after that commit, dying
    monkeypatch.undo()
    assert queued(quire) == 1  # the row stays: the mark did not move
    quire.search.follower.catch_up()
    assert queued(quire) == 0
    found = search(posts, "ix", "heron")
    assert found["total"] == 1 and [h["title"] for h in found["hits"]] == ["late heron"]


def test_rows_queued_during_a_build_reach_the_new_generation(posts: Api, quire: Quire,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # a write lands while the build reads content: it is in the queue, written after the switch
    real_docs = quire.search._item_docs
    wrote: list[str] = []

    def item_docs(*args: Any) -> Any:
        if not wrote:
            wrote.append("x")
            other = Quire(load_settings(quire.settings.data_dir, env={}))
            try:
                thread = threading.Thread(target=lambda: asyncio.run(
                    other.content.save("posts", {"title": "midbuild osprey", "_state": 1}, ADMIN)))
                thread.start()
                thread.join()
            finally:
                other.close()
        return real_docs(*args)

    monkeypatch.setattr(quire.search, "_item_docs", item_docs)
    result = posts.post("/api/searchmod/indexes/ix/rebuild")
    assert result.status_code == 200, result.text
    assert [h["title"] for h in search(posts, "ix", "osprey")["hits"]] == ["midbuild osprey"]
    assert queued(quire) == 0


def test_a_lost_index_directory_is_rebuilt_from_content(posts: Api, quire: Quire) -> None:
    create_item(posts, "posts", {"title": "sturdy tortoise"})
    live = Marks(quire.store, "ix").live()
    assert live is not None
    shutil.rmtree(quire.search.engine.path("ix", live["generation"]))
    assert error_of(search_response(posts, "ix", "tortoise"), 503) == "Index 'ix' has lost its files: rebuild it"
    assert posts.post("/api/searchmod/indexes/ix/rebuild").status_code == 200
    assert [h["title"] for h in search(posts, "ix", "tortoise")["hits"]] == ["sturdy tortoise"]


def test_a_server_catches_up_in_a_thread_of_its_own_off_the_event_loop(posts: Api, quire: Quire,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A round commits tantivy (its files synced to disk): a server does it
    in the `quire-search` thread, woken by each commit, never on the event
    loop that answers requests; searches still find every write."""
    from quire.searchmod import follow
    from quire.searchmod.index import TantivyEngine

    if not isinstance(quire.search.engine, TantivyEngine):
        pytest.skip("the PostgreSQL engine follows by polling on the event loop (its rounds are statements)")
    rounds: list[str] = []
    real = follow.Follower.catch_up

    def recorded(self: Any, only: str | None = None) -> None:
        rounds.append(threading.current_thread().name)
        real(self, only)

    monkeypatch.setattr(follow.Follower, "catch_up", recorded)

    async def serve_and_write() -> None:
        quire.search.start()
        try:
            loop_thread = threading.current_thread().name
            identity = quire.auth.identify(posts.key)
            for n in range(5):
                await quire.content.save("posts", {"title": f"threaded otter {n}", "_state": 1}, identity)
            for _ in range(200):  # the thread drains the queue (wait for the condition)
                if queued(quire) == 0:
                    break
                await asyncio.sleep(0.05)
            assert queued(quire) == 0
            assert loop_thread not in rounds[1:]  # after the start's own round: none on the loop
            assert "quire-search" in rounds
        finally:
            quire.search.close()

    asyncio.run(serve_and_write())
    assert search(posts, "ix", "otter")["total"] == 5
