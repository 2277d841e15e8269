"""Automatic indexes: which shape a read wants, when an index is built for
it, that SQLite then answers from it, and how they are capped, dropped
and shown."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from quire.store import SqliteStore, parse_filter
from quire.store.autoindex import Shape, shape_of

HINTS = {"_state": "number", "views": "number", "published": "bool", "title": "text", "_id": "id"}


def shape(spec: dict[str, Any], sort: list[tuple[str, int]] | None = None) -> Shape | None:
    return shape_of(parse_filter(spec), [((k,), d) for k, d in sort or []], HINTS)


def test_equality_then_sort_then_range() -> None:
    s = shape({"_state": 1, "published": True, "views": {"$gte": 5}}, [("title", 1)])
    assert s == Shape(frozenset({"_state", "published"}), ("title", "views"))
    assert s.columns() == ("_state", "published", "title", "views")


def test_shapes_of_common_reads() -> None:
    assert shape({"_state": 1}) == Shape(frozenset({"_state"}), ())
    assert shape({"_state": 1, "views": {"$gte": 3}}) == Shape(frozenset({"_state"}), ("views",))
    assert shape({"$and": [{"_state": 1}, {"published": True}]}, [("views", -1)]) == Shape(
        frozenset({"_state", "published"}), ("views",))
    assert shape({"views": {"$in": [1, 2]}}) == Shape(frozenset(), ("views",))
    assert shape({"title": "a"}, [("title", 1)]) == Shape(frozenset({"title"}), ())


def test_only_hinted_top_level_fields_count() -> None:
    # unknown fields, nested paths, $or and $regex need no index here
    assert shape({"other": 1, "a.b": 2}) is None
    # one id is found by the primary key; a sort or range on ids wants an index
    assert shape({"_state": 1, "_id": "x"}, [("views", 1)]) is None
    assert shape({"_state": 1}, [("_id", -1)]) == Shape(frozenset({"_state"}), ("_id",))
    assert shape({"_id": {"$gt": "a"}}) == Shape(frozenset(), ("_id",))
    assert shape({"$or": [{"views": 1}, {"title": "a"}]}) is None
    assert shape({"title": {"$regex": "^a"}}) is None
    # a sort on a field computed in Python: only the filter part is wanted
    assert shape({"_state": 1}, [("other", 1)]) == Shape(frozenset({"_state"}), ())


def test_served_by_needs_equality_columns_first_then_the_order() -> None:
    s = Shape(frozenset({"_state", "published"}), ("views",))
    assert s.served_by(("published", "_state", "views"))
    assert s.served_by(("_state", "published", "views", "title"))
    assert not s.served_by(("_state", "views"))
    assert not s.served_by(("views", "_state", "published"))
    assert Shape(frozenset({"_state"}), ()).served_by(("_state", "views"))


def _store(tmp_path: Path, rows: int = 1200, **options: Any) -> tuple[SqliteStore, Any]:
    store = SqliteStore(tmp_path / "q.db")
    store.auto_indexes(**{"min_rows": 1000, **options})
    coll = store.collection("content/posts", HINTS)
    with store.transaction():
        for i in range(rows):
            coll.insert({"_state": 1 if i % 10 else 0, "views": i % 97, "published": i % 3 == 0,
                         "title": f"t{i:05d}"})
    return store, coll


def _plans(store: SqliteStore, action: Any) -> list[str]:
    """EXPLAIN QUERY PLAN of each SELECT `action` runs (on a connection of
    its own: a cached EXPLAIN is not prepared again when the schema moves)."""
    seen: list[tuple[str, Any]] = []
    real = store.execute_read

    def spy(sql: str, params: Any = ()) -> Any:
        if sql.startswith("SELECT") and "sqlite_master" not in sql:
            seen.append((sql, list(params)))
        return real(sql, params)

    store.execute_read = spy  # type: ignore[method-assign]
    try:
        action()
    finally:
        store.execute_read = real  # type: ignore[method-assign]
    fresh = store.side_connection(1000)
    try:
        return [" / ".join(r[3] for r in fresh.execute("EXPLAIN QUERY PLAN " + sql, params)) for sql, params in seen]
    finally:
        fresh.close()


def _auto_indexes(store: SqliteStore) -> list[str]:
    return sorted(r[0] for r in store.execute_read(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'ax:%'"))


def test_a_read_seen_three_times_gets_an_index_and_then_uses_it(tmp_path: Path) -> None:
    store, coll = _store(tmp_path)
    node = parse_filter({"_state": 1, "published": True})
    sort = [(("views",), -1)]
    before = coll.find_page(node, sort, 20)[0]
    assert "SCAN" in _plans(store, lambda: coll.find_page(node, sort, 20))[0]
    coll.find_page(node, sort, 20)
    assert store.auto is not None
    store.auto.wait()
    assert _auto_indexes(store) == ["ax:content/posts:_state+published+views"]
    store.refresh()
    plan = _plans(store, lambda: coll.find_page(node, sort, 20))[0]
    assert "USING INDEX ax:content/posts:_state+published+views" in plan
    assert "TEMP B-TREE" not in plan  # the index gives the order: no sort
    assert coll.find_page(node, sort, 20)[0] == before  # the same answer


def test_newest_by_id_gets_an_index_after_state(tmp_path: Path) -> None:
    store, coll = _store(tmp_path)
    node = parse_filter({"_state": 1})
    sort = [(("_id",), -1)]
    before = coll.find_page(node, sort, 1)[0]
    for _ in range(3):
        coll.find_page(node, sort, 1)
    assert store.auto is not None
    store.auto.wait()
    assert _auto_indexes(store) == ["ax:content/posts:_state+_id"]
    store.refresh()
    plan = _plans(store, lambda: coll.find_page(node, sort, 1))[0]
    assert "ax:content/posts:_state+_id" in plan and "TEMP B-TREE" not in plan
    assert coll.find_page(node, sort, 1)[0] == before


def test_range_reads_and_counts_get_theirs(tmp_path: Path) -> None:
    store, coll = _store(tmp_path)
    node = parse_filter({"_state": 1, "views": {"$gte": 90}})
    for _ in range(3):
        coll.find_page(node, None, 20)
        coll.count(node)
    assert store.auto is not None
    store.auto.wait()
    assert _auto_indexes(store) == ["ax:content/posts:_state+views"]
    store.refresh()
    plans = _plans(store, lambda: (coll.find_page(node, None, 20), coll.count(node)))
    assert all("ax:content/posts:_state+views" in p for p in plans), plans


def test_no_index_for_a_small_collection_or_a_declared_one(tmp_path: Path) -> None:
    store, coll = _store(tmp_path, rows=200)
    node = parse_filter({"views": {"$gte": 3}})
    for _ in range(3):
        coll.find_raw(node)
    assert store.auto is not None
    store.auto.wait()
    assert _auto_indexes(store) == []  # a scan of 200 rows costs less than an index
    store2, coll2 = _store(tmp_path / "b")
    store2.ensure_indexes("content/posts", [[("views",)]])
    for _ in range(3):
        coll2.find_raw(node)
    assert store2.auto is not None
    store2.auto.wait()
    assert _auto_indexes(store2) == []  # the declared `views` index answers it


def test_a_collection_keeps_at_most_the_cap_dropping_the_least_recently_used(tmp_path: Path) -> None:
    store, coll = _store(tmp_path, max_per_collection=2)
    assert store.auto is not None
    for field in ("views", "title", "published"):
        for _ in range(3):
            coll.find_raw(parse_filter({field: {"$in": [1, "a", True]}}))
        store.auto.wait()
        time.sleep(0.01)  # distinct build times
    assert _auto_indexes(store) == ["ax:content/posts:published", "ax:content/posts:title"]


def test_indexes_unused_for_long_are_dropped(tmp_path: Path) -> None:
    store, coll = _store(tmp_path, unused_days=1)
    assert store.auto is not None
    for _ in range(3):
        coll.find_raw(parse_filter({"views": 5}))
    store.auto.wait()
    assert _auto_indexes(store) == ["ax:content/posts:views"]
    store._write("UPDATE _quire_auto_indexes SET used = used - 2 * 86400")
    store.auto._submit(store.auto._flush)
    store.auto.wait()
    assert _auto_indexes(store) == []
    assert store.execute_read("SELECT COUNT(*) FROM _quire_auto_indexes").fetchone()[0] == 0


def test_another_process_sees_a_new_index_after_its_commit(tmp_path: Path) -> None:
    store, coll = _store(tmp_path)
    other = SqliteStore(tmp_path / "q.db")
    assert other.auto_indexes(min_rows=1000) is not None
    other_coll = other.collection("content/posts", HINTS)
    node = parse_filter({"_state": 1, "views": {"$lt": 2}})
    other_coll.find_raw(node)  # `other` learns there is no index for it
    for _ in range(3):
        coll.find_raw(node)
    assert store.auto is not None
    store.auto.wait()
    assert other.refresh()  # the build committed: other's epoch moves
    assert other.auto is not None
    other_coll.find_raw(node)
    assert other.auto._used == {"ax:content/posts:_state+views"}


def test_writes_wait_for_a_build_and_reads_go_on(tmp_path: Path) -> None:
    store, coll = _store(tmp_path, rows=20_000)
    assert store.auto is not None
    node = parse_filter({"title": {"$gte": "t1"}})
    started = threading.Event()
    real_build = store.auto._build

    def slow_build(conn: Any, *args: Any) -> None:
        started.set()
        real_build(conn, *args)

    store.auto._build = slow_build  # type: ignore[method-assign]
    for _ in range(3):
        coll.find_raw(node, limit=1)
    assert started.wait(5)

    async def write() -> None:
        async with store.atomic(timeout=30):
            coll.insert({"_state": 1, "views": 1, "published": True, "title": "new"})

    asyncio.run(write())  # waits for the build's transaction, never fails
    assert coll.count({"title": "new"}) == 1
    store.auto.wait()
    assert _auto_indexes(store) == ["ax:content/posts:title"]


def test_a_model_change_drops_automatic_indexes_of_removed_fields(tmp_path: Path) -> None:
    store, coll = _store(tmp_path)
    assert store.auto is not None
    for _ in range(3):
        coll.find_raw(parse_filter({"views": 5}))
        coll.find_raw(parse_filter({"title": "a"}))
    store.auto.wait()
    store.drop_auto_indexes("content/posts", lambda cols: "views" not in cols)
    assert _auto_indexes(store) == ["ax:content/posts:title"]
    listed = store.indexes("content/posts")
    assert [(i["name"], i["origin"], i["fields"]) for i in listed] == [
        ("ax:content/posts:title", "automatic", ["title"])]
    assert listed[0]["bytes"] > 0 and listed[0]["used"] >= listed[0]["created"] > 0


def test_no_automatic_indexes_in_memory_or_when_turned_off(tmp_path: Path) -> None:
    assert SqliteStore(":memory:").auto_indexes() is None
    store = SqliteStore(tmp_path / "off.db")
    coll = store.collection("content/posts", HINTS)
    with store.transaction():
        for i in range(1500):
            coll.insert({"views": i})
    for _ in range(5):
        coll.find_raw(parse_filter({"views": 5}))
    assert store.auto is None and _auto_indexes(store) == []


@pytest.mark.parametrize("spec", [{"views": {"$gte": 50}}, {"published": True, "views": {"$lt": 10}}])
def test_answers_are_the_same_with_and_without_the_index(tmp_path: Path, spec: dict[str, Any]) -> None:
    store, coll = _store(tmp_path)
    node = parse_filter(spec)
    sort = [(("views",), 1), (("title",), -1)]
    before = (coll.find_raw(node, sort), coll.count(node))
    for _ in range(3):
        coll.find_raw(node, sort)
    assert store.auto is not None
    store.auto.wait()
    store.refresh()
    assert _auto_indexes(store)
    assert (coll.find_raw(node, sort), coll.count(node)) == before


_KILLED_BUILD = """
import os, sys, threading, time
from quire.store import SqliteStore, parse_filter
store = SqliteStore(sys.argv[1])
store.auto_indexes(min_rows=1000)
coll = store.collection("content/posts", {"_state": "number", "views": "number", "title": "text"})
real = store.auto._build
def build(conn, *args):
    threading.Timer(0.05, lambda: os._exit(9)).start()  # killed while the index is being written
    real(conn, *args)
    os._exit(0)  # the build finished first: the parent sees the index whole
store.auto._build = build
for _ in range(3):
    coll.find_raw(parse_filter({"title": {"$gte": "t1"}}), limit=1)
time.sleep(30)
"""


def test_a_worker_killed_while_building_leaves_the_database_whole(tmp_path: Path) -> None:
    store, coll = _store(tmp_path, rows=30_000)
    before = coll.count()
    store.close()
    done = subprocess.run([sys.executable, "-c", _KILLED_BUILD, str(tmp_path / "q.db")], timeout=60)
    assert done.returncode in (0, 9)
    again = SqliteStore(tmp_path / "q.db")
    again.auto_indexes(min_rows=1000)
    coll = again.collection("content/posts", HINTS)
    assert again.execute_read("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert coll.count() == before
    built = _auto_indexes(again)
    assert built in ([], ["ax:content/posts:title"])  # never half an index
    for _ in range(3):  # the next worker to see the shape builds it
        coll.find_raw(parse_filter({"title": {"$gte": "t1"}}), limit=1)
    assert again.auto is not None
    again.auto.wait()
    assert _auto_indexes(again) == ["ax:content/posts:title"]
    assert coll.count(parse_filter({"title": {"$gte": "t1"}})) == sum(
        1 for d in coll.find(None) if d["title"] >= "t1")
