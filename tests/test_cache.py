"""quire.cache: the app's one cache layer. Values are kept for the store's
generation and dropped when it moves, in this process and after another
process committed; each app has its own entries; the dispatcher looks for
other processes' commits once per request."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.asgi import App, route
from quire.cache import Cache
from quire.config import load_settings
from quire.http import json_response
from quire.store import SqliteStore
from tests.client import TestClient
from tests.conftest import Api, put_model

PERSONA_ITEM = "64b7f0c2a1b2c3d4e5f60718"


def test_region_keeps_a_value_for_one_generation(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "x.db")
    cache = Cache(store)
    region = cache.region("answers", 8)
    calls: list[int] = []

    def compute() -> bytes:
        calls.append(1)
        return b"[]"

    assert region.fetch("k", compute) == b"[]"
    assert region.fetch("k", compute) == b"[]"
    assert len(calls) == 1
    store.collection("c").insert({"a": 1})  # a commit moves the generation
    assert region.get("k") is None
    region.fetch("k", compute)
    assert len(calls) == 2
    assert cache.region("answers", 8) is region  # one region per name and app


def test_a_value_computed_before_the_generation_moved_is_not_kept(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "x.db")
    region = Cache(store).region("answers", 8)

    def compute_while_another_task_commits() -> str:
        store.collection("c").insert({"a": 1})
        return "stale"

    assert region.fetch("k", compute_while_another_task_commits) == "stale"
    assert region.get("k") is None


def test_a_full_region_drops_its_oldest_entries_down_to_half(tmp_path: Path) -> None:
    region = Cache(SqliteStore(tmp_path / "x.db")).region("answers", 2)
    region.put("a", 1)
    region.put("b", 2)
    region.put("c", 3)
    assert region.get_many(["a", "b", "c"]) == {"c": 3}

    region = Cache(SqliteStore(tmp_path / "y.db")).region("answers", 100)
    for n in range(10):
        region.put(n, f"answer {n}", weight=10)
    region.put(3, "asked again", weight=10)  # put again: now the newest
    region.put(10, "answer 10", weight=10)  # 110 > 100: the oldest go until 50 is left
    assert region.get_many(range(11)) == {7: "answer 7", 8: "answer 8", 9: "answer 9", 3: "asked again",
                                          10: "answer 10"}


def test_an_entry_heavier_than_the_region_is_kept_alone(tmp_path: Path) -> None:
    region = Cache(SqliteStore(tmp_path / "x.db")).region("answers", 10)
    region.put("small", 1, weight=5)
    region.put("big", 2, weight=50)
    assert region.get_many(["small", "big"]) == {"big": 2}
    region.put("next", 3, weight=5)
    assert region.get_many(["small", "big", "next"]) == {"next": 3}


def test_counts_are_kept_until_another_process_commits(tmp_path: Path) -> None:
    one, two = SqliteStore(tmp_path / "x.db"), SqliteStore(tmp_path / "x.db")
    cache = Cache(two)
    one.collection("c").insert({"a": 1})
    coll = two.collection("c")
    assert cache.count(coll, {"a": {"$gte": 1}}) == 1
    queries = two.queries
    assert cache.count(coll, {"a": {"$gte": 1}}) == 1
    assert two.queries == queries  # kept
    one.collection("c").insert({"a": 2})
    assert cache.count(coll, {"a": {"$gte": 1}}) == 1  # not yet looked for
    cache.refresh()
    assert cache.count(coll, {"a": {"$gte": 1}}) == 2


def test_counts_inside_a_write_transaction_see_its_writes(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "x.db")
    cache = Cache(store)
    coll = store.collection("c")
    coll.insert({"a": 1})
    assert cache.count(coll) == 1
    with store.transaction():
        coll.insert({"a": 2})
        assert cache.count(coll) == 2
        coll.insert({"a": 3})
        assert cache.count(coll) == 3
    assert cache.count(coll) == 3


def test_system_data_reloads_when_another_process_bumps_the_version(tmp_path: Path) -> None:
    one, two = SqliteStore(tmp_path / "x.db"), SqliteStore(tmp_path / "x.db")
    writer, reader = Cache(one), Cache(two)
    loads: list[int] = []
    value = reader.system(lambda: loads.append(1) or len(loads))
    assert value.get() == 1
    one.collection("other").insert({"a": 1})  # a commit that is not system data
    reader.refresh()
    assert value.get() == 1  # the version did not move: not loaded again
    with one.transaction():
        writer.bump_system()
    assert value.get() == 1  # not looked for yet
    reader.refresh()
    assert value.get() == 2


@pytest.fixture
def two_apps(tmp_path: Path) -> Iterator[list[Any]]:
    apps = [build_app(load_settings(tmp_path / name, env={"QUIRE_SERVER_QUIET": "true"})) for name in ("a", "b")]
    yield apps
    for app in apps:
        app.state.quire.close()


def _persona_site(app: Any, heading: str) -> Api:
    """A model with a variants field and one item of a fixed id (the same
    in both apps), its member variant saying `heading`."""
    quire = app.state.quire
    admin = Api(TestClient(app), str(quire.auth.create_key("admin", "admin")["key"]))
    put_model(admin, "posts", type="collection", fields=[{"name": "hero", "type": "variants"}])
    quire.store.collection("content/posts").insert({
        "_id": PERSONA_ITEM, "_state": 1, "_created": 1, "_modified": 1,
        "hero": {"persona:variants": [{"id": "m", "audience": ["member"], "data": {"title": heading}}]},
    })
    return admin


def test_two_apps_in_one_process_share_no_cached_entries(two_apps: list[Any]) -> None:
    first, second = (_persona_site(app, heading) for app, heading in zip(two_apps, ("first", "second"), strict=True))
    stores = [app.state.quire.store for app in two_apps]
    assert stores[0].generation == stores[1].generation  # what a shared cache would mix up
    params = {"persona": "member", "limit": 10}
    assert first.get("/api/content/items/posts", params=params).json()[0]["hero"] == {"title": "first"}
    assert second.get("/api/content/items/posts", params=params).json()[0]["hero"] == {"title": "second"}
    caches = [app.state.quire.cache for app in two_apps]
    assert caches[0] is not caches[1]
    assert caches[0].region("content.answers", 1) is not caches[1].region("content.answers", 1)


def test_a_change_made_by_another_process_shows_in_the_next_request(tmp_path: Path) -> None:
    """Two apps on one data directory are two worker processes."""
    apps = [build_app(load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "true"})) for _ in range(2)]
    try:
        key = str(apps[0].state.quire.auth.create_key("admin", "admin")["key"])
        one, two = (Api(TestClient(app), key) for app in apps)
        assert two.get("/api/system/models").json() == []
        assert two.get("/api/pages/routes").json() == {"default": []}
        put_model(one, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
        assert one.post("/api/pages/page", json={"data": {"title": "About", "_state": 1}}).status_code == 200
        assert [m["name"] for m in two.get("/api/system/models").json()] == ["posts"]
        assert [r["route"] for r in two.get("/api/pages/routes").json()["default"]] == ["/about"]
    finally:
        for app in apps:
            app.state.quire.close()


def test_the_dispatcher_runs_before_request_once_per_request() -> None:
    calls: list[str] = []

    async def handler(request: Any) -> Any:
        calls.append("handler")
        return json_response({"ok": True})

    app = App([route("/x", get=handler)], cors_origins=[], cors_headers=[], cors_methods=[], access_log_enabled=False,
              before_request=lambda: calls.append("before"))
    client = TestClient(app)
    assert client.get("/x").status_code == 200
    assert calls == ["before", "handler"]
    assert client.get("/missing").status_code == 404
    assert calls == ["before", "handler"]  # nothing to dispatch to


def test_the_look_for_other_commits_waits_for_a_cached_read(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "x.db")
    other = SqliteStore(tmp_path / "x.db")
    cache = Cache(store)
    before = store.generation
    other.collection("c").insert({"a": 1})  # another process commits
    cache.refresh()  # the request starts: nothing is read yet
    assert store._generation == before  # no look so far (an answer without cached data pays nothing)
    assert store.generation != before  # the first cached read looks, and sees the commit
    after = store.generation
    assert store.generation == after  # once per request
    other.close()
    store.close()


def test_the_system_version_is_read_again_only_when_someone_else_may_have_changed_it(tmp_path: Path) -> None:
    """Every commit moves the generation, but only another connection's
    commit, a rollback or this cache's own bump can change the system
    version: a save of this process costs no look at it."""
    store = SqliteStore(tmp_path / "q.db")
    cache = Cache(store)
    loads: list[int] = []
    value = cache.system(lambda: loads.append(1) or len(loads))
    reads: list[str] = []
    real_get_meta = store.get_meta

    def counted(key: str) -> Any:
        reads.append(key)
        return real_get_meta(key)

    store.get_meta = counted  # type: ignore[method-assign]
    assert value.get() == 1 and reads == ["system_version"]
    for n in range(5):  # this object's own commits
        with store.transaction():
            store.collection("posts").insert({"_id": f"p{n}"})
        assert value.get() == 1
    assert reads == ["system_version"]
    other = SqliteStore(tmp_path / "q.db")  # another process's commit: looked at, nothing changed
    with other.transaction():
        other.collection("posts").insert({"_id": "x"})
    store.mark_stale()
    assert value.get() == 1 and reads == ["system_version"] * 2
    with other.transaction():  # another process changes system data
        Cache(other).bump_system()
    store.mark_stale()
    assert value.get() == 2 and len(reads) == 3
    with store.transaction():  # this cache's own bump: seen at once, inside the transaction too
        cache.bump_system()
        assert value.get() == 3
    with pytest.raises(RuntimeError), store.transaction():  # a bump rolled back
        cache.bump_system()
        assert value.get() == 4
        raise RuntimeError("undone")
    assert value.get() == 5  # read again: the loaded value of the undone bump is not kept
    other.close()
    store.close()
