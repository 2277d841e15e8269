"""Content events fire on every write path: API and import alike."""

from __future__ import annotations

from typing import Any

import pytest

from quire.bundle import import_bundle
from quire.events import Events, Reject
from tests.conftest import Api, create_item, put_model


def record(events: Events, *names: str) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        events.on(name, lambda name=name, **payload: seen.append((name, payload)))
    return seen


def test_create_update_delete_emit_save_and_remove_events(admin: Api, events: Events) -> None:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    seen = record(events, "content.item.save.before", "content.item.save.after", "content.item.remove")
    item = create_item(admin, "posts", {"title": "a"})
    create_item(admin, "posts", {"_id": item["_id"], "title": "b"})
    admin.delete(f"/api/content/item/posts/{item['_id']}")
    assert [n for n, _ in seen] == [
        "content.item.save.before", "content.item.save.after",
        "content.item.save.before", "content.item.save.after",
        "content.item.remove",
    ]
    assert [p["is_update"] for n, p in seen if n.endswith("after")] == [False, True]
    assert seen[-1][1]["item"]["_id"] == item["_id"]


def test_before_handler_can_change_the_item(admin: Api, events: Events) -> None:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])

    def shout(item: dict[str, Any], **_: Any) -> None:
        item["title"] = item["title"].upper()

    events.on("content.item.save.before", shout)
    item = create_item(admin, "posts", {"title": "quiet"})
    assert item["title"] == "QUIET"
    assert admin.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "QUIET"


def test_before_handler_rejecting_cancels_the_write_with_412(admin: Api, events: Events) -> None:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])

    async def refuse(item: dict[str, Any], **_: Any) -> None:
        if item.get("title") == "spam":
            raise Reject("No spam here")

    events.on("content.item.save.before", refuse)
    response = admin.post("/api/content/item/posts", json={"data": {"title": "spam"}})
    assert response.status_code == 412
    assert response.json() == {"error": "No spam here"}
    assert admin.get("/api/content/items/posts").json() == []


def test_after_handler_failure_does_not_undo_the_commit(admin: Api, events: Events) -> None:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])

    def broken(**_: Any) -> None:
        raise RuntimeError("integration down")

    events.on("content.item.save.after", broken)
    assert admin.post("/api/content/item/posts", json={"data": {"title": "kept"}}).status_code == 200
    assert len(admin.get("/api/content/items/posts").json()) == 1


def test_deleting_a_tree_node_emits_remove_for_each_item_of_the_subtree(admin: Api, events: Events) -> None:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    root = create_item(admin, "nav", {"label": "root"})
    child = create_item(admin, "nav", {"label": "child", "_pid": root["_id"]})
    create_item(admin, "nav", {"label": "grandchild", "_pid": child["_id"]})
    seen = record(events, "content.item.remove")
    assert admin.delete(f"/api/content/item/nav/{root['_id']}").json() == {"success": True}
    assert sorted(p["item"]["label"] for _, p in seen) == ["child", "grandchild", "root"]
    assert admin.get("/api/content/tree/nav").json() == []


@pytest.mark.anyio
async def test_import_emits_save_events_after_commit(admin: Api, events: Events, quire: Any) -> None:
    seen = record(events, "content.item.save.before", "content.item.save.after")
    bundle = {
        "quire": 1,
        "models": [{"name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]}],
        "items": {"posts": [{"_id": "a" * 24, "title": "imported", "_state": 1, "_created": 1}]},
    }
    counts = await import_bundle(quire, bundle)
    assert counts["items"] == 1 and counts["models"] == 1
    assert [n for n, _ in seen] == ["content.item.save.before", "content.item.save.after"]
    assert admin.get("/api/content/item/posts/" + "a" * 24).json()["title"] == "imported"


@pytest.mark.anyio
async def test_import_with_a_bad_item_stores_nothing(quire: Any) -> None:
    bundle = {
        "quire": 1,
        "models": [{"name": "posts", "type": "collection", "fields": [{"name": "n", "type": "number"}]}],
        "items": {"posts": [{"_id": "a" * 24, "n": 1}, {"_id": "b" * 24, "n": "not a number"}]},
    }
    try:
        await import_bundle(quire, bundle)
    except Exception as exc:
        assert "n must be a number" in str(exc)
    else:
        raise AssertionError("import should fail")
    assert quire.models.find("posts") is None
