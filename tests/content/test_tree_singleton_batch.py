"""Tree models, singletons and the batch endpoint over HTTP (behaviour.md
section 2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api, create_item, put_model, role_key

# -- tree ---------------------------------------------------------------------


@pytest.fixture
def menu(admin: Api) -> Api:
    put_model(admin, "menu", type="tree", fields=[{"name": "title", "type": "text"}])
    return admin


def node(admin: Api, title: str, pid: str | None = None, o: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"title": title}
    if pid is not None:
        data["_pid"] = pid
    if o is not None:
        data["_o"] = o
    return create_item(admin, "menu", data)


def shape(nodes: list[dict[str, Any]]) -> list[Any]:
    """[(title, [children...]), ...] for compact comparisons."""
    return [(n["title"], shape(n["_children"])) for n in nodes]


def test_tree_item_gets_pid_null_and_order(menu: Api) -> None:
    root = node(menu, "Root")
    assert root["_pid"] is None
    assert isinstance(root["_o"], int | float)


def test_tree_nests_children_under_parents(menu: Api) -> None:
    home = node(menu, "Home")
    about = node(menu, "About")
    node(menu, "Team", about["_id"])
    node(menu, "Contact", home["_id"])
    response = menu.get("/api/content/tree/menu")
    assert response.status_code == 200
    assert shape(response.json()) == [
        ("Home", [("Contact", [])]),
        ("About", [("Team", [])]),
    ]


def test_tree_nodes_are_flat_items_with_children_key(menu: Api) -> None:
    home = node(menu, "Home")
    tree = menu.get("/api/content/tree/menu").json()
    assert tree[0]["_id"] == home["_id"]
    assert tree[0]["_pid"] is None
    assert tree[0]["_children"] == []


def test_tree_siblings_are_ordered_by_o(menu: Api) -> None:
    node(menu, "Third", o=3)
    node(menu, "First", o=1)
    node(menu, "Second", o=2)
    tree = menu.get("/api/content/tree/menu").json()
    assert [n["title"] for n in tree] == ["First", "Second", "Third"]


def test_tree_children_are_ordered_by_o(menu: Api) -> None:
    root = node(menu, "Root")
    node(menu, "b", root["_id"], o=2)
    node(menu, "a", root["_id"], o=1)
    tree = menu.get("/api/content/tree/menu").json()
    assert [c["title"] for c in tree[0]["_children"]] == ["a", "b"]


def test_tree_reorder_by_updating_o(menu: Api) -> None:
    first = node(menu, "First", o=1)
    node(menu, "Second", o=2)
    response = menu.post("/api/content/item/menu", json={"data": {"_id": first["_id"], "_o": 3}})
    assert response.status_code == 200
    tree = menu.get("/api/content/tree/menu").json()
    assert [n["title"] for n in tree] == ["Second", "First"]


def test_tree_parent_selects_subtree(menu: Api) -> None:
    home = node(menu, "Home")
    about = node(menu, "About")
    team = node(menu, "Team", about["_id"])
    node(menu, "Ann", team["_id"])
    node(menu, "Contact", home["_id"])
    response = menu.get("/api/content/tree/menu", params={"parent": about["_id"]})
    assert response.status_code == 200
    assert shape(response.json()) == [("Team", [("Ann", [])])]


def test_tree_parent_unknown_is_404(menu: Api) -> None:
    node(menu, "Home")
    response = menu.get("/api/content/tree/menu", params={"parent": "0" * 24})
    assert response.status_code == 404
    assert response.json() == {"error": "Item not found"}


def test_tree_hides_drafts_and_their_subtrees(menu: Api) -> None:
    node(menu, "Home")
    hidden = create_item(menu, "menu", {"title": "Hidden", "_state": 0})
    node(menu, "Under hidden", hidden["_id"])
    tree = menu.get("/api/content/tree/menu").json()
    assert shape(tree) == [("Home", [])]


def test_tree_applies_fields_projection(menu: Api) -> None:
    root = node(menu, "Root")
    node(menu, "Kid", root["_id"])
    tree = menu.get("/api/content/tree/menu", params={"fields": '{"title": 1, "_id": 0}'}).json()
    assert tree == [{"title": "Root", "_children": [{"title": "Kid", "_children": []}]}]


def test_deleting_tree_node_deletes_its_subtree(menu: Api) -> None:
    keep = node(menu, "Keep")
    gone = node(menu, "Gone")
    child = node(menu, "Child", gone["_id"])
    grandchild = node(menu, "Grandchild", child["_id"])
    response = menu.delete(f"/api/content/item/menu/{gone['_id']}")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    for removed in (gone, child, grandchild):
        got = menu.get(f"/api/content/item/menu/{removed['_id']}")
        assert got.status_code == 404
    assert [d["_id"] for d in menu.get("/api/content/items/menu").json()] == [keep["_id"]]


def test_tree_pid_pointing_to_missing_item_is_400_and_nothing_stored(menu: Api) -> None:
    response = menu.post(
        "/api/content/item/menu", json={"data": {"title": "Orphan", "_pid": "0" * 24}}
    )
    assert response.status_code == 400
    body = response.json()
    assert "error" in body
    assert body["fields"] == ["_pid"]
    assert menu.get("/api/content/items/menu").json() == []


def test_tree_pid_that_is_not_an_id_is_400(menu: Api) -> None:
    response = menu.post("/api/content/item/menu", json={"data": {"title": "x", "_pid": "root"}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["_pid"]


def test_tree_item_cannot_become_its_own_ancestor(menu: Api) -> None:
    parent = node(menu, "Parent")
    child = node(menu, "Child", parent["_id"])
    response = menu.post(
        "/api/content/item/menu", json={"data": {"_id": parent["_id"], "_pid": child["_id"]}}
    )
    assert response.status_code == 400
    assert response.json()["fields"] == ["_pid"]


def test_tree_endpoint_on_collection_is_400(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    response = admin.get("/api/content/tree/posts")
    assert response.status_code == 400
    assert "posts" in response.json()["error"]


def test_tree_endpoint_on_unknown_model_is_404(admin: Api) -> None:
    response = admin.get("/api/content/tree/nothing")
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nothing> not found"}


def test_pid_on_collection_item_is_400(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    response = admin.post("/api/content/item/posts", json={"data": {"title": "x", "_pid": None}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["_pid"]


# -- singleton ----------------------------------------------------------------


@pytest.fixture
def settings(admin: Api) -> Api:
    put_model(
        admin,
        "settings",
        type="singleton",
        fields=[
            {"name": "title", "type": "text", "default": "My site"},
            {"name": "footer", "type": "text"},
        ],
    )
    return admin


def test_singleton_before_first_save_returns_defaults_and_model(settings: Api) -> None:
    response = settings.get("/api/content/item/settings")
    assert response.status_code == 200
    body = response.json()
    assert body["_model"] == "settings"
    assert body["title"] == "My site"
    assert body.get("footer") is None
    assert "_id" not in body


def test_singleton_returns_saved_item(settings: Api) -> None:
    saved = create_item(settings, "settings", {"footer": "(c) us"})
    assert saved["_model"] == "settings"
    assert saved["title"] == "My site"
    body = settings.get("/api/content/item/settings").json()
    assert body == saved


def test_singleton_post_twice_updates_the_same_item(settings: Api) -> None:
    first = create_item(settings, "settings", {"title": "One", "footer": "F"})
    second = create_item(settings, "settings", {"title": "Two"})
    assert second["_id"] == first["_id"]
    assert second["title"] == "Two"
    assert second["footer"] == "F"
    assert second["_created"] == first["_created"]
    assert settings.get("/api/content/item/settings").json()["title"] == "Two"


def test_singleton_has_single_stored_item(settings: Api) -> None:
    create_item(settings, "settings", {"title": "One"})
    create_item(settings, "settings", {"title": "Two"})
    listed = settings.get("/api/content/items/settings").json()
    assert [d["title"] for d in listed] == ["Two"]


def test_singleton_save_validates_fields(settings: Api) -> None:
    response = settings.post("/api/content/item/settings", json={"data": {"nope": 1}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["nope"]


def test_singleton_get_with_locale_resolves_localized_field(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(
        admin, "site", type="singleton", fields=[{"name": "title", "type": "text", "i18n": True}]
    )
    create_item(admin, "site", {"title": "Hello", "title_de": "Hallo"})
    body = admin.get("/api/content/item/site", params={"locale": "de"}).json()
    assert body["title"] == "Hallo"
    assert "title_de" not in body


# -- batch --------------------------------------------------------------------


@pytest.fixture
def catalog(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "settings", type="singleton", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "menu", type="tree", fields=[{"name": "title", "type": "text"}])
    for title in ("b", "a", "c"):
        create_item(admin, "posts", {"title": title})
    create_item(admin, "settings", {"title": "Site"})
    create_item(admin, "menu", {"title": "Home"})
    return admin


def batch(api: Api, spec: Any) -> Any:
    return api.get("/api/content/items", params={"models": json.dumps(spec)})


def test_batch_returns_object_keyed_by_model_name(catalog: Api) -> None:
    response = batch(catalog, {"posts": {}, "settings": {}})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"posts", "settings"}
    assert [d["title"] for d in body["posts"]] == ["b", "a", "c"]
    assert body["settings"]["title"] == "Site"


def test_batch_alias_with_model_option(catalog: Api) -> None:
    body = batch(
        catalog,
        {
            "latest": {"model": "posts", "sort": {"title": -1}, "limit": 1},
            "first": {"model": "posts", "sort": {"title": 1}, "limit": 1},
        },
    ).json()
    assert [d["title"] for d in body["latest"]] == ["c"]
    assert [d["title"] for d in body["first"]] == ["a"]


def test_batch_with_limit_and_skip_returns_envelope(catalog: Api) -> None:
    body = batch(catalog, {"posts": {"sort": {"title": 1}, "limit": 1, "skip": 1}}).json()
    assert set(body["posts"]) == {"data", "meta"}
    assert len(body["posts"]["data"]) == 1
    assert body["posts"]["meta"]["total"] == 3
    assert set(body["posts"]["meta"]) == {"total", "next"}  # "c" follows: the cursor of its page
    assert body["posts"]["data"][0]["title"] == "b"


def test_batch_limit_zero_means_no_limit(catalog: Api) -> None:
    body = batch(catalog, {"all": {"model": "posts", "sort": {"title": 1}, "limit": 0},
                           "rest": {"model": "posts", "sort": {"title": 1}, "limit": 0, "skip": 1}}).json()
    assert [d["title"] for d in body["all"]] == ["a", "b", "c"]
    assert [d["title"] for d in body["rest"]["data"]] == ["b", "c"]
    assert body["rest"]["meta"] == {"total": 3}


def test_batch_applies_filter_and_fields(catalog: Api) -> None:
    body = batch(
        catalog, {"posts": {"filter": {"title": "a"}, "fields": {"title": 1, "_id": 0}}}
    ).json()
    assert body["posts"] == [{"title": "a"}]


def test_batch_singleton_is_an_item(catalog: Api) -> None:
    body = batch(catalog, {"settings": {}}).json()
    assert isinstance(body["settings"], dict)
    assert body["settings"]["_model"] == "settings"


def test_batch_tree_is_nested(catalog: Api) -> None:
    body = batch(catalog, {"menu": {}}).json()
    assert [n["title"] for n in body["menu"]] == ["Home"]
    assert body["menu"][0]["_children"] == []


def test_batch_accepts_json5(catalog: Api) -> None:
    response = catalog.get(
        "/api/content/items", params={"models": "{posts: {filter: {title: 'c'}}}"}
    )
    assert response.status_code == 200
    assert [d["title"] for d in response.json()["posts"]] == ["c"]


def test_batch_without_models_is_412(catalog: Api) -> None:
    response = catalog.get("/api/content/items")
    assert response.status_code == 412
    assert response.json() == {"error": "<models> parameter is missing"}


def test_batch_models_not_valid_json_is_400(catalog: Api) -> None:
    response = catalog.get("/api/content/items", params={"models": "{posts: "})
    assert response.status_code == 400
    assert response.json() == {"error": "<models> is not valid json"}


def test_batch_leaves_out_unknown_model(catalog: Api) -> None:
    response = batch(catalog, {"posts": {}, "nothing": {}})
    assert response.status_code == 200
    assert set(response.json()) == {"posts"}


def test_batch_leaves_out_unreadable_model(catalog: Api) -> None:
    reader = role_key(catalog, "postreader", {"content/posts/read": True})
    response = batch(reader, {"posts": {}, "settings": {}, "menu": {}})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"posts"}
    assert len(body["posts"]) == 3


def test_batch_anonymous_without_permissions_gets_empty_object(catalog: Api, anon: Api) -> None:
    response = batch(anon, {"posts": {}})
    assert response.status_code == 200
    assert response.json() == {}


def test_batch_hides_drafts(catalog: Api) -> None:
    create_item(catalog, "posts", {"title": "draft", "_state": 0})
    body = batch(catalog, {"posts": {}}).json()
    assert "draft" not in [d["title"] for d in body["posts"]]
