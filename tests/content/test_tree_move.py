"""`ContentService.move`: a tree item to another place (the studio's drag
and drop and keyboard moves), through the write path of a save: `_o` and
`_pid` as the API stores them, `_rev` + 1, save events, search indexes,
the update permission, no cycles."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from quire.auth.service import Identity
from quire.content.service import ContentService
from quire.errors import BadRequest, Forbidden, NotFound, PreconditionFailed, ValidationError
from quire.events import Events, Reject
from tests.conftest import Api, create_item, put_model

ADMIN = Identity("admin", frozenset(), "k1", "test")


@pytest.fixture
def nav(admin: Api) -> dict[str, str]:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    ids = {label: create_item(admin, "nav", {"label": label})["_id"] for label in ("A", "B", "C")}
    ids["B1"] = create_item(admin, "nav", {"label": "B1", "_pid": ids["B"]})["_id"]
    return ids


def shape(admin: Api) -> list[Any]:
    def walk(nodes: list[dict[str, Any]]) -> list[Any]:
        return [(n["label"], walk(n["_children"])) if n["_children"] else n["label"] for n in nodes]
    return walk(admin.get("/api/content/tree/nav").json())


def stored(admin: Api) -> dict[str, dict[str, Any]]:
    return {n["label"]: n for n in admin.get("/api/content/items/nav").json()}


@pytest.mark.anyio
async def test_move_reorders_siblings_and_renumbers_order(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    content = quire.get(ContentService)
    written = await content.move("nav", nav["C"], None, 0, ADMIN)
    assert shape(admin) == ["C", "A", ("B", ["B1"])]
    assert sorted(w["label"] for w in written) == ["A", "B", "C"]  # every sibling whose _o changed
    items = stored(admin)
    assert [items[k]["_o"] for k in ("C", "A", "B")] == [0, 1, 2]
    assert items["C"]["_rev"] == 2 and items["B1"]["_rev"] == 1  # B1 did not move: not written
    await content.move("nav", nav["C"], None, 99, ADMIN)  # past the end: last
    assert shape(admin) == ["A", ("B", ["B1"]), "C"]


@pytest.mark.anyio
async def test_move_under_another_parent(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    content = quire.get(ContentService)
    await content.move("nav", nav["A"], nav["B"], 1, ADMIN)
    assert shape(admin) == [("B", ["B1", "A"]), "C"]
    await content.move("nav", nav["B1"], nav["C"], 0, ADMIN)
    assert shape(admin) == [("B", ["A"]), ("C", ["B1"])]
    assert stored(admin)["B1"]["_pid"] == nav["C"]


@pytest.mark.anyio
async def test_the_siblings_an_item_leaves_close_the_gap(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    content = quire.get(ContentService)
    await content.move("nav", nav["A"], nav["B"], 0, ADMIN)  # A leaves the top: B and C move up
    items = stored(admin)
    assert [items[k]["_o"] for k in ("B", "C")] == [0, 1]
    assert [items[k]["_o"] for k in ("A", "B1")] == [0, 1]
    await content.move("nav", nav["A"], None, 0, ADMIN)  # back out: B1 is B's first child again
    items = stored(admin)
    assert items["B1"]["_o"] == 0 and [items[k]["_o"] for k in ("A", "B", "C")] == [0, 1, 2]


@pytest.mark.anyio
async def test_move_refuses_cycles_unknown_items_and_other_models(quire: Any, admin: Api,
                                                                  nav: dict[str, str]) -> None:
    content = quire.get(ContentService)
    with pytest.raises(ValidationError):
        await content.move("nav", nav["B"], nav["B1"], 0, ADMIN)
    with pytest.raises(ValidationError):
        await content.move("nav", nav["B"], "f" * 24, 0, ADMIN)
    with pytest.raises(ValidationError):
        await content.move("nav", nav["B"], "not an id", 0, ADMIN)
    with pytest.raises(NotFound):
        await content.move("nav", "f" * 24, None, 0, ADMIN)
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    post = create_item(admin, "posts", {"title": "x"})
    with pytest.raises(BadRequest):
        await content.move("posts", post["_id"], None, 0, ADMIN)
    assert shape(admin) == ["A", ("B", ["B1"]), "C"]


@pytest.mark.anyio
async def test_move_needs_update(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    reader = Identity("reader", frozenset({"content/nav/read"}), "k2", "reader")
    with pytest.raises(Forbidden):
        await quire.get(ContentService).move("nav", nav["C"], None, 0, reader)
    assert shape(admin) == ["A", ("B", ["B1"]), "C"]


@pytest.mark.anyio
async def test_move_emits_save_events_and_a_refusal_moves_nothing(quire: Any, admin: Api, events: Events,
                                                                  nav: dict[str, str]) -> None:
    seen: list[tuple[str, str]] = []
    events.on("content.item.save.before", lambda item, **_: seen.append(("before", item["label"])))
    events.on("content.item.save.after", lambda item, **_: seen.append(("after", item["label"])))
    content = quire.get(ContentService)
    await content.move("nav", nav["B"], None, 0, ADMIN)
    assert sorted(seen) == [("after", "A"), ("after", "B"), ("before", "A"), ("before", "B")]

    def refuse(item: dict[str, Any], **_: Any) -> None:
        if item["label"] == "C":
            raise Reject("C stays")

    events.on("content.item.save.before", refuse)
    with pytest.raises(PreconditionFailed):
        await content.move("nav", nav["C"], None, 0, ADMIN)
    assert shape(admin) == [("B", ["B1"]), "A", "C"]  # the siblings written before C were rolled back


@pytest.mark.anyio
async def test_moved_items_follow_in_search(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    response = admin.put("/api/searchmod/indexes/navs", json={"model": "nav", "fields": ["label"]})
    assert response.status_code == 200
    saved: list[str] = []
    quire.events.on("content.item.saved", lambda item, **_: saved.append(item["label"]))
    await quire.get(ContentService).move("nav", nav["A"], nav["B"], 0, ADMIN)
    assert "A" in saved  # the search module's follower hears the same event
    hits = admin.get("/api/searchmod/search/navs", params={"q": "B1"}).json()["hits"]
    assert [h["label"] for h in hits] == ["B1"]


def test_tree_with_drafts_for_the_studio(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    from quire.content.service import ReadOptions

    create_item(admin, "nav", {"label": "D", "_state": 0})
    content = quire.get(ContentService)
    assert [n["label"] for n in content.tree("nav", None, ReadOptions(), ADMIN)] == ["A", "B", "C"]
    assert [n["label"] for n in content.tree("nav", None, ReadOptions(drafts=True), ADMIN)] == ["A", "B", "C", "D"]
    reader = Identity("reader", frozenset({"content/nav/read"}), "k2", "reader")
    with pytest.raises(Forbidden):
        content.tree("nav", None, ReadOptions(drafts=True), reader)


def test_search_service_names_the_index_of_a_model(quire: Any, admin: Api, nav: dict[str, str]) -> None:
    from quire.searchmod.service import SearchService

    search = quire.get(SearchService)
    assert search.index_for("nav") is None
    admin.put("/api/searchmod/indexes/zfiltered", json={"model": "nav", "fields": ["label"],
                                                         "filter": {"label": "A"}})
    assert search.index_for("nav") == "zfiltered"
    admin.put("/api/searchmod/indexes/whole", json={"model": "nav", "fields": ["label"]})
    assert search.index_for("nav") == "whole"  # the one without a filter holds every item
    assert search.matching_ids("whole", "b1") == ([nav["B1"]], 1)
    assert search.matching_ids("whole", "   ") == ([], 0)


@pytest.mark.sqlite_only
def test_lists_of_every_state_sort_by_a_declared_index(admin: Api, quire: Any) -> None:
    """The studio's lists for editors (`drafts`: no `_state` condition)
    are served in order by the declared index kept without `_state`."""
    from quire.content.service import ReadOptions

    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}], indexes=["title"])
    for n in range(20):
        create_item(admin, "posts", {"title": f"t{n:02d}", "_state": n % 2})
    content = quire.get(ContentService)
    model = quire.models.get("posts")
    coll = content.collection(model)
    node = content.query(model, None, ADMIN, drafts=True)
    sql, params = coll._select(node, content._sort({"title": -1}), 5, 0)
    coll.count()  # a real statement first, so the reader sees the new schema
    plan = " ".join(str(r) for r in quire.store.execute_read("EXPLAIN QUERY PLAN " + sql, params).fetchall())
    assert "ix:content/posts:title" in plan and "TEMP B-TREE" not in plan
    page = content.list_page("posts", ReadOptions(sort={"title": -1}, limit=3, skip=0, drafts=True), ADMIN)
    assert [orjson.loads(r)["title"] for r in page.rows] == ["t19", "t18", "t17"] and page.total == 20
