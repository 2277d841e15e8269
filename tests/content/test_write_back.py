"""An item written back exactly as a read answered it is accepted: the
read-only keys answers carry are ignored, the filled-in nulls are values,
and an unchanged `_state` needs no publish permission (behaviour.md
section 2)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from quire.app import Quire
from tests.conftest import Api, create_item, put_model, role_key


@pytest.fixture
def nav(admin: Api) -> Api:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}, {"name": "url", "type": "text"}])
    root = create_item(admin, "nav", {"label": "Home", "url": "/"})
    blog = create_item(admin, "nav", {"label": "Blog", "_pid": root["_id"]})
    create_item(admin, "nav", {"label": "Guides", "_pid": blog["_id"]})
    return admin


def stored(quire: Quire, model: str, item_id: str) -> dict[str, Any]:
    raw = quire.store.collection(f"content/{model}").get_raw(item_id)
    assert raw is not None
    return orjson.loads(raw)  # type: ignore[no-any-return]


def walk(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [n for node in nodes for n in [node, *walk(node["_children"])]]


def test_tree_items_written_back_as_read_are_accepted(nav: Api, quire: Quire) -> None:
    before = {n["_id"]: stored(quire, "nav", n["_id"]) for n in walk(nav.get("/api/content/tree/nav").json())}
    for node in walk(nav.get("/api/content/tree/nav").json()):
        response = nav.post("/api/content/item/nav", json={"data": node})
        assert response.status_code == 200, response.text
        assert "_children" not in response.json()
    for item_id, old in before.items():
        now = stored(quire, "nav", item_id)
        assert "_children" not in now
        assert {k: v for k, v in now.items() if k not in ("_modified", "_mby", "_rev")} == {
            k: v for k, v in old.items() if k not in ("_modified", "_mby", "_rev")
        } | ({"url": None} if "url" not in old else {})  # the null it was answered with is now a value
    assert [n["label"] for n in walk(nav.get("/api/content/tree/nav").json())] == ["Home", "Blog", "Guides"]


def test_editor_without_publish_permission_can_write_back_an_item(nav: Api) -> None:
    editor = role_key(nav, "editor", {"content/nav/read": True, "content/nav/update": True})
    node = editor.get("/api/content/tree/nav").json()[0]
    response = editor.post("/api/content/item/nav", json={"data": {**node, "label": "Start"}})
    assert response.status_code == 200, response.text
    assert response.json()["label"] == "Start"
    response = editor.post("/api/content/item/nav", json={"data": {**node, "_state": 0}})
    assert response.status_code == 403  # a change of state still needs it


def test_singleton_and_populated_items_written_back_are_accepted(admin: Api) -> None:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    ])
    put_model(admin, "site", type="singleton", fields=[{"name": "name", "type": "text"}])
    ann = create_item(admin, "authors", {"name": "Ann"})
    post = create_item(admin, "posts", {"title": "P", "author": {"_model": "authors", "_id": ann["_id"]}})
    read = admin.get(f"/api/content/item/posts/{post['_id']}", params={"populate": 1}).json()
    response = admin.post("/api/content/item/posts", json={"data": read})
    assert response.status_code == 200, response.text
    assert response.json()["author"] == {"_model": "authors", "_id": ann["_id"]}  # stored as the link again
    site = admin.get("/api/content/item/site").json()
    response = admin.post("/api/content/item/site", json={"data": site})
    assert response.status_code == 200, response.text
    assert response.json()["_model"] == "site"
