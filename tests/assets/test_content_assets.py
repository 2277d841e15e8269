"""Asset fields in content (issue 3 item 4): a model field of type `asset`
stores a reference, and every content response carries the current asset
object (or null once the asset is gone)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quire.app import Quire
from tests.assets.helpers import BLUE, GREEN, RED, solid, upload_one
from tests.conftest import Api, create_item, put_model

MISSING = "0123456789abcdef01234567"


@pytest.fixture
def red(admin: Api) -> dict[str, Any]:
    return upload_one(admin, "red.png", solid(8, 4, RED), title="Red")


@pytest.fixture
def blue(admin: Api) -> dict[str, Any]:
    return upload_one(admin, "blue.png", solid(4, 8, BLUE), title="Blue")


@pytest.fixture
def green(admin: Api) -> dict[str, Any]:
    return upload_one(admin, "green.png", solid(5, 5, GREEN), title="Green")


@pytest.fixture
def models(admin: Api) -> Api:
    response = admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    assert response.status_code == 200, response.text
    put_model(admin, "authors", type="collection", fields=[
        {"name": "name", "type": "text"},
        {"name": "avatar", "type": "asset"},
    ])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "image", "type": "asset", "i18n": True},
        {"name": "gallery", "type": "asset", "multiple": True},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
        {"name": "block", "type": "set", "opts": {"fields": [
            {"name": "caption", "type": "text"}, {"name": "picture", "type": "asset"}]}},
    ])
    put_model(admin, "menu", type="tree", fields=[
        {"name": "title", "type": "text"},
        {"name": "icon", "type": "asset"},
    ])
    put_model(admin, "settings", type="singleton", fields=[{"name": "logo", "type": "asset"}])
    return admin


def stored(quire: Quire, model: str, item_id: str) -> dict[str, Any]:
    doc = quire.store.collection(f"content/{model}").get(item_id)
    assert doc is not None
    return doc  # type: ignore[no-any-return]


def current(admin: Api, asset_id: str) -> dict[str, Any]:
    response = admin.get(f"/api/assets/{asset_id}")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


# -- storing ----------------------------------------------------------------------


def test_asset_field_accepts_an_id_string_and_stores_only_the_reference(models: Api, quire: Quire,
                                                                        red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": red["_id"]})
    assert stored(quire, "posts", item["_id"])["image"] == {"_id": red["_id"]}


def test_asset_field_accepts_an_object_with_id_and_drops_the_rest(models: Api, quire: Quire,
                                                                  red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": {**red, "title": "stale copy"}})
    assert stored(quire, "posts", item["_id"])["image"] == {"_id": red["_id"]}
    got = models.get(f"/api/content/item/posts/{item['_id']}").json()
    assert got["image"]["title"] == "Red"


def test_multiple_asset_field_stores_a_list_of_references(models: Api, quire: Quire, red: dict[str, Any],
                                                          blue: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "gallery": [red["_id"], {"_id": blue["_id"]}]})
    assert stored(quire, "posts", item["_id"])["gallery"] == [{"_id": red["_id"]}, {"_id": blue["_id"]}]


@pytest.mark.parametrize("value", ["abc", "0123456789ABCDEF01234567", "0123456789abcdef0123456",
                                   {"id": MISSING}, {"_id": 5}, 12, ["x"], True])
def test_bad_asset_reference_is_400_naming_the_field(models: Api, quire: Quire, value: Any) -> None:
    response = models.post("/api/content/item/posts", json={"data": {"title": "A", "image": value}})
    assert response.status_code == 400
    body = response.json()
    assert "image" in body["error"]
    assert body["fields"] == ["image"]
    assert quire.store.collection("content/posts").find() == []


def test_bad_reference_in_a_multiple_asset_field_is_400(models: Api, red: dict[str, Any]) -> None:
    response = models.post("/api/content/item/posts", json={"data": {"gallery": [red["_id"], "nope"]}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["gallery"]


def test_filter_on_the_asset_reference(models: Api, red: dict[str, Any], blue: dict[str, Any]) -> None:
    a = create_item(models, "posts", {"title": "A", "image": red["_id"]})
    create_item(models, "posts", {"title": "B", "image": blue["_id"]})
    response = models.get("/api/content/items/posts", params={"filter": json.dumps({"image._id": red["_id"]})})
    assert response.status_code == 200
    assert [i["_id"] for i in response.json()] == [a["_id"]]


# -- reading: every response carries the current object ---------------------------------


def test_item_by_id_carries_the_asset_object(models: Api, red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": red["_id"]})
    response = models.get(f"/api/content/item/posts/{item['_id']}")
    assert response.status_code == 200
    assert response.json()["image"] == current(models, red["_id"])


def test_item_by_filter_carries_the_asset_object(models: Api, red: dict[str, Any]) -> None:
    create_item(models, "posts", {"title": "A", "image": red["_id"]})
    response = models.get("/api/content/item/posts", params={"filter": json.dumps({"title": "A"})})
    assert response.status_code == 200
    assert response.json()["image"] == current(models, red["_id"])


def test_items_list_carries_asset_objects(models: Api, red: dict[str, Any], blue: dict[str, Any]) -> None:
    create_item(models, "posts", {"title": "A", "image": red["_id"]})
    create_item(models, "posts", {"title": "B", "image": blue["_id"], "gallery": [red["_id"], blue["_id"]]})
    create_item(models, "posts", {"title": "C"})
    response = models.get("/api/content/items/posts")
    assert response.status_code == 200
    items = response.json()
    assert [i["title"] for i in items] == ["A", "B", "C"]
    assert items[0]["image"] == current(models, red["_id"])
    assert items[1]["image"] == current(models, blue["_id"])
    assert items[1]["gallery"] == [current(models, red["_id"]), current(models, blue["_id"])]
    assert "image" not in items[2] or items[2]["image"] is None


def test_items_page_with_limit_and_skip_carries_asset_objects(models: Api, red: dict[str, Any]) -> None:
    create_item(models, "posts", {"title": "A"})
    create_item(models, "posts", {"title": "B", "image": red["_id"]})
    response = models.get("/api/content/items/posts", params={"limit": 1, "skip": 1})
    assert response.status_code == 200
    body = response.json()
    assert body["meta"] == {"total": 2}
    assert body["data"][0]["image"] == current(models, red["_id"])


def test_fields_projection_keeps_resolving_the_asset(models: Api, red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": red["_id"]})
    response = models.get(f"/api/content/item/posts/{item['_id']}", params={"fields": json.dumps({"image": 1})})
    assert response.status_code == 200
    assert response.json() == {"_id": item["_id"], "image": current(models, red["_id"])}
    listed = models.get("/api/content/items/posts", params={"fields": json.dumps({"image": 1, "_id": 0})})
    assert listed.json() == [{"image": current(models, red["_id"])}]


def test_asset_inside_a_set_field_is_resolved(models: Api, red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "block": {"caption": "c", "picture": red["_id"]}})
    response = models.get(f"/api/content/item/posts/{item['_id']}")
    assert response.status_code == 200
    assert response.json()["block"] == {"caption": "c", "picture": current(models, red["_id"])}


def test_tree_carries_asset_objects(models: Api, red: dict[str, Any], blue: dict[str, Any]) -> None:
    root = create_item(models, "menu", {"title": "Root", "icon": red["_id"]})
    create_item(models, "menu", {"title": "Child", "icon": blue["_id"], "_pid": root["_id"]})
    response = models.get("/api/content/tree/menu")
    assert response.status_code == 200
    tree = response.json()
    assert tree[0]["icon"] == current(models, red["_id"])
    assert tree[0]["_children"][0]["icon"] == current(models, blue["_id"])


def test_singleton_carries_the_asset_object(models: Api, red: dict[str, Any]) -> None:
    saved = models.post("/api/content/item/settings", json={"data": {"logo": red["_id"]}})
    assert saved.status_code == 200, saved.text
    response = models.get("/api/content/item/settings")
    assert response.status_code == 200
    assert response.json()["logo"] == current(models, red["_id"])


def test_batch_carries_asset_objects(models: Api, red: dict[str, Any], blue: dict[str, Any]) -> None:
    create_item(models, "posts", {"title": "A", "image": red["_id"]})
    create_item(models, "menu", {"title": "Root", "icon": blue["_id"]})
    models.post("/api/content/item/settings", json={"data": {"logo": red["_id"]}})
    spec = {"posts": {}, "paged": {"model": "posts", "limit": 1, "skip": 0}, "menu": {}, "settings": {}}
    response = models.get("/api/content/items", params={"models": json.dumps(spec)})
    assert response.status_code == 200
    body = response.json()
    assert body["posts"][0]["image"] == current(models, red["_id"])
    assert body["paged"]["data"][0]["image"] == current(models, red["_id"])
    assert body["menu"][0]["icon"] == current(models, blue["_id"])
    assert body["settings"]["logo"] == current(models, red["_id"])


def test_populate_resolves_assets_of_linked_items(models: Api, red: dict[str, Any], blue: dict[str, Any]) -> None:
    author = create_item(models, "authors", {"name": "Ann", "avatar": blue["_id"]})
    item = create_item(models, "posts", {"title": "A", "image": red["_id"],
                                         "author": {"_model": "authors", "_id": author["_id"]}})
    response = models.get(f"/api/content/item/posts/{item['_id']}", params={"populate": 1})
    assert response.status_code == 200
    body = response.json()
    assert body["image"] == current(models, red["_id"])
    assert body["author"]["name"] == "Ann"
    assert body["author"]["avatar"] == current(models, blue["_id"])
    listed = models.get("/api/content/items/posts", params={"populate": 1}).json()
    assert listed[0]["author"]["avatar"] == current(models, blue["_id"])
    unpopulated = models.get(f"/api/content/item/posts/{item['_id']}").json()
    assert unpopulated["author"] == {"_model": "authors", "_id": author["_id"]}


def test_localized_asset_field_follows_the_locale(models: Api, quire: Quire, red: dict[str, Any],
                                                  blue: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": red["_id"], "image_de": blue["_id"]})
    assert stored(quire, "posts", item["_id"])["image_de"] == {"_id": blue["_id"]}
    de = models.get(f"/api/content/item/posts/{item['_id']}", params={"locale": "de"})
    assert de.status_code == 200
    assert de.json()["image"] == current(models, blue["_id"])
    assert "image_de" not in de.json()
    default = models.get(f"/api/content/item/posts/{item['_id']}")
    assert default.json()["image"] == current(models, red["_id"])
    assert default.json()["image_de"] == current(models, blue["_id"])
    listed = models.get("/api/content/items/posts", params={"locale": "de"}).json()
    assert listed[0]["image"] == current(models, blue["_id"])


def test_localized_asset_field_falls_back_to_the_default(models: Api, red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": red["_id"]})
    de = models.get(f"/api/content/item/posts/{item['_id']}", params={"locale": "de"})
    assert de.status_code == 200
    assert de.json()["image"] == current(models, red["_id"])


# -- live: edits and deletes show at once --------------------------------------------------


def test_editing_the_asset_shows_in_content_at_once(models: Api, red: dict[str, Any]) -> None:
    item = create_item(models, "posts", {"title": "A", "image": red["_id"], "gallery": [red["_id"]]})
    models.get(f"/api/content/item/posts/{item['_id']}")  # read once before the change
    update = models.post(f"/api/assets/{red['_id']}", json={"data": {"title": "Crimson", "altText": "a red box"}})
    assert update.status_code == 200
    by_id = models.get(f"/api/content/item/posts/{item['_id']}").json()
    assert by_id["image"]["title"] == "Crimson" and by_id["image"]["altText"] == "a red box"
    assert by_id["image"] == update.json()
    listed = models.get("/api/content/items/posts").json()
    assert listed[0]["image"]["title"] == "Crimson"
    assert listed[0]["gallery"][0]["title"] == "Crimson"


def test_deleting_the_asset_leaves_null(models: Api, quire: Quire, red: dict[str, Any], blue: dict[str, Any],
                                        green: dict[str, Any]) -> None:
    author = create_item(models, "authors", {"name": "Ann", "avatar": red["_id"]})
    item = create_item(models, "posts", {
        "title": "A", "image": red["_id"], "image_de": red["_id"], "gallery": [red["_id"], blue["_id"]],
        "block": {"caption": "c", "picture": red["_id"]},
        "author": {"_model": "authors", "_id": author["_id"]},
    })
    root = create_item(models, "menu", {"title": "Root", "icon": red["_id"]})
    assert root["_id"]
    deleted = models.delete(f"/api/assets/{red['_id']}")
    assert deleted.status_code == 200 and deleted.json() == {"success": True}

    by_id = models.get(f"/api/content/item/posts/{item['_id']}")
    assert by_id.status_code == 200
    body = by_id.json()
    assert body["image"] is None and body["image_de"] is None
    assert body["gallery"] == [None, current(models, blue["_id"])]
    assert body["block"] == {"caption": "c", "picture": None}
    assert models.get("/api/content/items/posts").json()[0]["image"] is None
    assert models.get(f"/api/content/item/posts/{item['_id']}", params={"locale": "de"}).json()["image"] is None
    assert models.get("/api/content/tree/menu").json()[0]["icon"] is None
    populated = models.get(f"/api/content/item/posts/{item['_id']}", params={"populate": 1}).json()
    assert populated["author"]["avatar"] is None
    batch = models.get("/api/content/items", params={"models": json.dumps({"posts": {}})}).json()
    assert batch["posts"][0]["image"] is None
    # nothing resolved was written back: the stored reference is unchanged
    assert stored(quire, "posts", item["_id"])["image"] == {"_id": red["_id"]}


def test_reads_of_items_without_assets_need_no_asset_lookups(models: Api, quire: Quire,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    create_item(models, "posts", {"title": "A"})
    calls: list[list[str]] = []
    original = quire.content.resolve_assets
    assert original is not None

    def counting(ids: list[str]) -> dict[str, dict[str, Any]]:
        calls.append(ids)
        return original(ids)

    monkeypatch.setattr(quire.content, "resolve_assets", counting)
    response = models.get("/api/content/items/posts")
    assert response.status_code == 200 and response.json()[0]["title"] == "A"
    assert calls == []


def test_asset_objects_of_many_items_are_fetched_in_one_lookup(models: Api, quire: Quire, red: dict[str, Any],
                                                               blue: dict[str, Any],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(6):
        create_item(models, "posts", {"title": f"P{i}", "image": (red if i % 2 else blue)["_id"]})
    calls: list[list[str]] = []
    original = quire.content.resolve_assets
    assert original is not None

    def counting(ids: list[str]) -> dict[str, dict[str, Any]]:
        calls.append(ids)
        return original(ids)

    monkeypatch.setattr(quire.content, "resolve_assets", counting)
    response = models.get("/api/content/items/posts", params={"limit": 10, "skip": 0})
    assert response.status_code == 200
    assert [i["image"]["title"] for i in response.json()["data"]] == ["Blue", "Red"] * 3
    assert len(calls) == 1 and sorted(calls[0]) == sorted({red["_id"], blue["_id"]})
