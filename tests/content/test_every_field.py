"""Answers carry every field of the model, null where the item holds no
value, as Cockpit answers them; filled in at read time, never stored
(behaviour.md section 2). Populated items and singletons carry `_model`."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from quire.app import Quire
from tests.assets.helpers import RED, solid, upload_one
from tests.conftest import Api, create_item, put_model

FIELDS = [
    {"name": "title", "type": "text", "required": True, "i18n": True},
    {"name": "views", "type": "number"},
    {"name": "body", "type": "markdown"},
]


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=FIELDS)
    return admin


def stored(quire: Quire, model: str, item_id: str) -> dict[str, Any]:
    raw = quire.store.collection(f"content/{model}").get_raw(item_id)
    assert raw is not None
    return orjson.loads(raw)  # type: ignore[no-any-return]


def test_list_answers_missing_fields_as_null(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "A", "views": 2})
    body = posts.get("/api/content/items/posts").json()
    assert body[0]["body"] is None
    assert body[0]["views"] == 2
    assert "body" not in stored(quire, "posts", item["_id"])  # never written back


def test_every_read_fills_a_field_added_after_the_items_were_stored(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "A", "views": 1, "body": "b"})
    put_model(posts, "posts", type="collection", fields=[*FIELDS, {"name": "summary", "type": "text"}])
    reads = [
        posts.get("/api/content/items/posts").json()[0],
        posts.get("/api/content/items/posts", params={"limit": 1, "skip": 0}).json()["data"][0],
        posts.get(f"/api/content/item/posts/{item['_id']}").json(),
        posts.get(f"/api/content/item/posts/{item['_id']}", params={"populate": 1}).json(),
        posts.get("/api/content/item/posts", params={"filter": '{"title": "A"}'}).json(),
        posts.get("/api/content/items", params={"models": '{"posts": {}}'}).json()["posts"][0],
    ]
    for read in reads:
        assert read["summary"] is None
        assert read["body"] == "b"
    assert "summary" not in stored(quire, "posts", item["_id"])


def test_save_answers_every_field_but_stores_what_was_sent(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "A"})
    assert item["views"] is None and item["body"] is None
    assert set(stored(quire, "posts", item["_id"])) >= {"title", "_id"}
    assert "views" not in stored(quire, "posts", item["_id"])
    assert posts.get(f"/api/content/item/posts/{item['_id']}").json() == item


def test_inclusion_projection_fills_only_the_projected_fields(posts: Api) -> None:
    create_item(posts, "posts", {"title": "A"})
    body = posts.get("/api/content/items/posts", params={"fields": '{"views": 1, "_id": 0}'}).json()
    assert body == [{"views": None}]


def test_exclusion_projection_does_not_add_the_excluded_fields(posts: Api) -> None:
    create_item(posts, "posts", {"title": "A"})
    body = posts.get("/api/content/items/posts", params={"fields": '{"body": 0}'}).json()
    assert "body" not in body[0]
    assert body[0]["views"] is None


def test_localized_field_is_filled_under_its_name_only(posts: Api) -> None:
    posts.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(posts, "posts", type="collection",
              fields=[*FIELDS, {"name": "teaser", "type": "text", "i18n": True}])
    create_item(posts, "posts", {"title": "A", "title_de": "B"})
    plain = posts.get("/api/content/items/posts").json()[0]
    assert plain["teaser"] is None
    assert "teaser_de" not in plain
    german = posts.get("/api/content/items/posts", params={"locale": "de"}).json()[0]
    assert german["title"] == "B"
    assert german["teaser"] is None
    assert "title_de" not in german


def test_a_key_nested_in_another_field_does_not_count_as_the_field(admin: Api) -> None:
    put_model(admin, "pages", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "seo", "type": "object"},
        {"name": "parts", "type": "set", "opts": {"fields": [{"name": "title", "type": "text"}]}},
    ])
    create_item(admin, "pages", {"seo": {"title": "nested"}, "parts": {"title": "also nested"}})
    create_item(admin, "pages", {"title": "top", "seo": {"title": "nested"}})
    first, second = admin.get("/api/content/items/pages").json()
    assert first["title"] is None
    assert first["seo"] == {"title": "nested"}
    assert second["title"] == "top"
    assert second["parts"] is None
    again = admin.get("/api/content/items/pages").json()  # the decoded rows' answers are kept
    assert again == [first, second]


def test_a_key_left_nested_by_a_removed_field_does_not_count(admin: Api) -> None:
    put_model(admin, "notes", type="collection",
              fields=[{"name": "title", "type": "text"}, {"name": "meta", "type": "object"}])
    create_item(admin, "notes", {"meta": {"title": "old"}})
    put_model(admin, "notes", type="collection", fields=[{"name": "title", "type": "text"}])
    body = admin.get("/api/content/items/notes").json()
    assert body[0]["title"] is None
    assert body[0]["meta"] == {"title": "old"}  # stored keys the model no longer names still go out


def test_text_that_looks_like_a_key_does_not_count(posts: Api) -> None:
    create_item(posts, "posts", {"title": 'He wrote {"views": 3, "body": "x"}'})
    body = posts.get("/api/content/items/posts").json()
    assert body[0]["views"] is None and body[0]["body"] is None


def test_tree_items_are_filled(admin: Api) -> None:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}, {"name": "url", "type": "text"}])
    root = create_item(admin, "nav", {"label": "Home"})
    create_item(admin, "nav", {"label": "Blog", "_pid": root["_id"]})
    tree = admin.get("/api/content/tree/nav").json()
    assert tree[0]["url"] is None
    assert tree[0]["_children"][0]["url"] is None


def test_singleton_defaults_and_stored_item_carry_every_field(admin: Api) -> None:
    put_model(admin, "site", type="singleton",
              fields=[{"name": "name", "type": "text"}, {"name": "tagline", "type": "text"}])
    assert admin.get("/api/content/item/site").json() == {"name": None, "tagline": None, "_model": "site",
                                                          "_rev": 0}
    admin.post("/api/content/item/site", json={"data": {"name": "Q"}})
    item = admin.get("/api/content/item/site").json()
    assert item["tagline"] is None and item["name"] == "Q"


def test_asset_fields_are_filled_and_still_resolved(admin: Api) -> None:
    red = upload_one(admin, "red.png", solid(8, 4, RED), title="Red")
    put_model(admin, "shots", type="collection", fields=[
        {"name": "title", "type": "text"}, {"name": "image", "type": "asset"}, {"name": "note", "type": "text"},
    ])
    create_item(admin, "shots", {"title": "none"})
    create_item(admin, "shots", {"image": {"_id": red["_id"]}})
    first, second = admin.get("/api/content/items/shots").json()
    assert first["image"] is None and first["note"] is None
    assert second["image"]["title"] == "Red"  # the asset's title: not the item's
    assert second["title"] is None and second["note"] is None


# -- _model -------------------------------------------------------------------


def test_populated_items_carry_their_model_and_every_field(admin: Api) -> None:
    put_model(admin, "authors", type="collection",
              fields=[{"name": "name", "type": "text"}, {"name": "bio", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    ])
    ann = create_item(admin, "authors", {"name": "Ann"})
    post = create_item(admin, "posts", {"title": "P", "author": {"_model": "authors", "_id": ann["_id"]}})
    for read in (
        admin.get("/api/content/items/posts", params={"populate": 1}).json()[0],
        admin.get(f"/api/content/item/posts/{post['_id']}", params={"populate": 1}).json(),
    ):
        assert read["author"]["_model"] == "authors"
        assert read["author"]["name"] == "Ann"
        assert read["author"]["bio"] is None
    assert "_model" not in admin.get("/api/content/items/posts").json()[0]  # items of a list do not


def test_singleton_read_with_fields_keeps_model(admin: Api) -> None:
    put_model(admin, "site", type="singleton",
              fields=[{"name": "name", "type": "text"}, {"name": "tagline", "type": "text"}])
    admin.post("/api/content/item/site", json={"data": {"name": "Q", "tagline": "T"}})
    body = admin.get("/api/content/item/site", params={"fields": '{"name": 1}'}).json()
    assert body["_model"] == "site"
    assert body["name"] == "Q" and "tagline" not in body
    body = admin.get("/api/content/item/site", params={"fields": '{"name": 1, "_id": 0}'}).json()
    assert body == {"name": "Q", "_model": "site"}
    batch = admin.get("/api/content/items", params={"models": '{"site": {"fields": {"name": 1}}}'}).json()
    assert batch["site"]["_model"] == "site"
    body = admin.get("/api/content/item/site", params={"fields": '{"_model": 0}'}).json()
    assert "_model" not in body  # excluded by name, it goes
