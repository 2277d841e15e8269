"""Content items over HTTP: create, update, validate, delete, list, sort,
project and filter (behaviour.md sections 1 and 2)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from quire.events import Events
from quire.store.sqlite import Collection
from tests.conftest import Api, create_item, put_model, role_key

POST_FIELDS = [
    {"name": "title", "type": "text", "required": True},
    {"name": "views", "type": "number"},
    {"name": "body", "type": "text"},
]
STREAM_RAW = Collection.stream_raw


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=POST_FIELDS)
    return admin




def titles(docs: list[dict[str, Any]]) -> list[str]:
    return [d["title"] for d in docs]


# -- create -------------------------------------------------------------------


def test_create_returns_whole_stored_item_published_by_default(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"title": "Hello", "views": 3}})
    assert response.status_code == 200
    item = response.json()
    assert item["title"] == "Hello"
    assert item["views"] == 3
    assert item["_state"] == 1
    assert len(item["_id"]) == 24
    assert isinstance(item["_created"], int)
    assert isinstance(item["_modified"], int)
    assert "_cby" in item and "_mby" in item
    assert "data" not in item


def test_created_item_is_readable_by_id(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Hello"})
    response = posts.get(f"/api/content/item/posts/{item['_id']}")
    assert response.status_code == 200
    assert response.json() == item


def test_create_with_state_draft_is_stored_as_draft(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Draft", "_state": 0})
    assert item["_state"] == 0


def test_create_with_state_without_publish_permission_is_403(posts: Api) -> None:
    writer = role_key(posts, "writer", {"content/posts/read": True, "content/posts/create": True})
    response = writer.post("/api/content/item/posts", json={"data": {"title": "x", "_state": 1}})
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}
    assert posts.get("/api/content/items/posts").json() == []


def test_create_without_state_needs_no_publish_permission(posts: Api) -> None:
    writer = role_key(posts, "writer", {"content/posts/read": True, "content/posts/create": True})
    response = writer.post("/api/content/item/posts", json={"data": {"title": "x"}})
    assert response.status_code == 200, response.text
    assert response.json()["_state"] == 1


def test_create_with_state_and_publish_permission_succeeds(posts: Api) -> None:
    editor = role_key(
        posts,
        "editor",
        {"content/posts/create": True, "content/posts/publish": True},
    )
    response = editor.post("/api/content/item/posts", json={"data": {"title": "x", "_state": 0}})
    assert response.status_code == 200, response.text
    assert response.json()["_state"] == 0


# -- update -------------------------------------------------------------------


def test_update_with_id_is_partial_and_other_fields_survive(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Old", "views": 7, "body": "text"})
    response = posts.post(
        "/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "New"}}
    )
    assert response.status_code == 200
    updated = response.json()
    assert updated["_id"] == item["_id"]
    assert updated["title"] == "New"
    assert updated["views"] == 7
    assert updated["body"] == "text"
    assert updated["_created"] == item["_created"]
    stored = posts.get(f"/api/content/item/posts/{item['_id']}").json()
    assert stored == updated


def test_update_does_not_create_a_second_item(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Old"})
    posts.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "New"}})
    listed = posts.get("/api/content/items/posts").json()
    assert titles(listed) == ["New"]


def test_update_with_unknown_id_is_404_and_creates_nothing(posts: Api) -> None:
    response = posts.post(
        "/api/content/item/posts", json={"data": {"_id": "0" * 24, "title": "Ghost"}}
    )
    assert response.status_code == 404
    assert response.json() == {"error": "Item not found"}
    assert posts.get("/api/content/items/posts").json() == []


def test_update_with_malformed_id_is_404(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"_id": "nope", "title": "x"}})
    assert response.status_code == 404
    assert response.json()["error"] == "Item not found"


def test_update_can_unpublish_and_item_disappears_from_reads(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Soon hidden"})
    response = posts.post(
        "/api/content/item/posts", json={"data": {"_id": item["_id"], "_state": 0}}
    )
    assert response.status_code == 200
    assert response.json()["_state"] == 0
    assert posts.get(f"/api/content/item/posts/{item['_id']}").status_code == 404


# -- validation ---------------------------------------------------------------


def test_unknown_field_is_400_naming_it_and_nothing_stored(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"title": "x", "colour": "red"}})
    assert response.status_code == 400
    body = response.json()
    assert isinstance(body["error"], str) and body["error"]
    assert body["fields"] == ["colour"]
    assert posts.get("/api/content/items/posts").json() == []


def test_wrong_type_is_400_naming_the_field_and_nothing_stored(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"title": "x", "views": "many"}})
    assert response.status_code == 400
    body = response.json()
    assert "error" in body
    assert body["fields"] == ["views"]
    assert posts.get("/api/content/items/posts").json() == []


def test_missing_required_field_is_400_naming_it_and_nothing_stored(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"views": 1}})
    assert response.status_code == 400
    body = response.json()
    assert "error" in body
    assert body["fields"] == ["title"]
    assert posts.get("/api/content/items/posts").json() == []


def test_empty_required_field_is_400(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"title": ""}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["title"]


def test_several_bad_fields_are_all_named(posts: Api) -> None:
    response = posts.post(
        "/api/content/item/posts",
        json={"data": {"title": 5, "views": "x", "nope": 1}},
    )
    assert response.status_code == 400
    assert sorted(response.json()["fields"]) == ["nope", "title", "views"]


def test_failed_update_leaves_stored_item_unchanged(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Keep", "views": 1})
    response = posts.post(
        "/api/content/item/posts",
        json={"data": {"_id": item["_id"], "title": "Changed", "views": "bad"}},
    )
    assert response.status_code == 400
    assert posts.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "Keep"


def test_update_clearing_required_field_is_400(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Keep"})
    response = posts.post(
        "/api/content/item/posts", json={"data": {"_id": item["_id"], "title": None}}
    )
    assert response.status_code == 400
    assert response.json()["fields"] == ["title"]


@pytest.mark.parametrize(
    "body",
    [{}, {"data": None}, {"data": "text"}, {"data": [1, 2]}, {"title": "no wrapper"}],
    ids=["no-data", "null", "string", "list", "unwrapped"],
)
def test_missing_or_non_object_data_is_412(posts: Api, body: dict[str, Any]) -> None:
    response = posts.post("/api/content/item/posts", json=body)
    assert response.status_code == 412
    assert response.json() == {"error": "Item data is missing"}


def test_empty_body_is_412_item_data_is_missing(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", content=b"")
    assert response.status_code == 412
    assert response.json() == {"error": "Item data is missing"}


def test_create_in_unknown_model_is_404(admin: Api) -> None:
    response = admin.post("/api/content/item/nothing", json={"data": {"title": "x"}})
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nothing> not found"}


# -- delete -------------------------------------------------------------------


def test_delete_answers_success_and_item_is_gone(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Bye"})
    response = posts.delete(f"/api/content/item/posts/{item['_id']}")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    gone = posts.get(f"/api/content/item/posts/{item['_id']}")
    assert gone.status_code == 404
    assert gone.json() == {"error": "Item not found"}


def test_delete_unknown_item_is_404(posts: Api) -> None:
    response = posts.delete(f"/api/content/item/posts/{'a' * 24}")
    assert response.status_code == 404
    assert response.json() == {"error": "Item not found"}


def test_delete_on_singleton_is_405_with_allow(admin: Api) -> None:
    put_model(admin, "settings", type="singleton", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "settings", {"title": "Site"})
    response = admin.delete(f"/api/content/item/settings/{item['_id']}")
    assert response.status_code == 405
    assert "error" in response.json()
    assert "allow" in response.headers
    assert admin.get("/api/content/item/settings").json()["title"] == "Site"


# -- drafts -------------------------------------------------------------------


def test_draft_is_invisible_to_list_by_id_and_first_match(posts: Api) -> None:
    create_item(posts, "posts", {"title": "Public"})
    draft = create_item(posts, "posts", {"title": "Secret", "_state": 0})
    assert titles(posts.get("/api/content/items/posts").json()) == ["Public"]
    by_id = posts.get(f"/api/content/item/posts/{draft['_id']}")
    assert by_id.status_code == 404
    assert by_id.json() == {"error": "Item not found"}
    first = posts.get("/api/content/item/posts", params={"filter": '{"title": "Secret"}'})
    assert first.status_code == 404


def test_draft_is_not_counted_in_envelope_total(posts: Api) -> None:
    create_item(posts, "posts", {"title": "Public"})
    create_item(posts, "posts", {"title": "Secret", "_state": 0})
    body = posts.get("/api/content/items/posts", params={"limit": 10, "skip": 0}).json()
    assert body["meta"]["total"] == 1
    assert titles(body["data"]) == ["Public"]


def test_archived_item_is_invisible(posts: Api) -> None:
    create_item(posts, "posts", {"title": "Old", "_state": -1})
    assert posts.get("/api/content/items/posts").json() == []


# -- list shapes --------------------------------------------------------------


def make_posts(admin: Api, names: list[str]) -> list[dict[str, Any]]:
    return [create_item(admin, "posts", {"title": n, "views": i}) for i, n in enumerate(names)]


def test_list_without_paging_is_a_bare_array_in_creation_order(posts: Api) -> None:
    make_posts(posts, ["b", "c", "a"])
    response = posts.get("/api/content/items/posts")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, list)
    assert titles(body) == ["b", "c", "a"]


def test_list_with_limit_and_skip_returns_envelope_with_total(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c", "d", "e"])
    response = posts.get("/api/content/items/posts", params={"limit": 2, "skip": 1})
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"data", "meta"}
    assert titles(body["data"]) == ["b", "c"]
    assert body["meta"]["total"] == 5
    assert set(body["meta"]) == {"total", "next"}  # next: the cursor of the page after (not the last)


def test_envelope_total_counts_all_matching_items_not_the_page(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c", "d", "e"])
    body = posts.get(
        "/api/content/items/posts",
        params={"limit": 1, "skip": 0, "filter": '{"views": {"$gte": 2}}'},
    ).json()
    assert titles(body["data"]) == ["c"]
    assert body["meta"]["total"] == 3


def test_list_with_limit_only_is_a_bare_array(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    body = posts.get("/api/content/items/posts", params={"limit": 2}).json()
    assert isinstance(body, list)
    assert titles(body) == ["a", "b"]


def test_limit_zero_means_no_limit_as_in_cockpit(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    body = posts.get("/api/content/items/posts", params={"limit": 0}).json()
    assert titles(body) == ["a", "b", "c"]


def test_limit_zero_with_skip_answers_the_rest_in_the_envelope(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c", "d"])
    body = posts.get("/api/content/items/posts", params={"limit": 0, "skip": 1}).json()
    assert titles(body["data"]) == ["b", "c", "d"]
    assert body["meta"] == {"total": 4}
    body = posts.get("/api/content/items/posts", params={"limit": 0, "skip": 0}).json()
    assert titles(body["data"]) == ["a", "b", "c", "d"]


@pytest.mark.sqlite_only
def test_limit_zero_with_skip_is_streamed_with_the_total_counted_first(posts: Api, quire: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The same bytes as a page of the whole rest would be, but read chunk
    by chunk from the database, never the whole collection at once."""
    make_posts(posts, ["a", "b", "c", "d", "e", "f", "g"])
    chunks: list[int] = []

    def small_chunks(self: Collection, *args: Any, **kw: Any) -> Iterator[list[bytes]]:
        for rows in STREAM_RAW(self, *args, **{**kw, "chunk": 2}):
            chunks.append(len(rows))
            yield rows

    for params in ({"skip": 2}, {"skip": 0}, {"skip": 2, "filter": '{"views": {"$gte": 2}}', "sort": '{"title": -1}'},
                   {"skip": 99}):
        paged = posts.get("/api/content/items/posts", params={**params, "limit": 1000})
        chunks.clear()

        with monkeypatch.context() as patched:
            patched.setattr(Collection, "stream_raw", small_chunks)
            patched.setattr(quire.content, "list_page", None)  # not read as one page
            streamed = posts.get("/api/content/items/posts", params={**params, "limit": 0})
        assert streamed.status_code == 200, streamed.text
        assert streamed.content == paged.content
        body = streamed.json()
        assert sum(chunks) == len(body["data"]) and all(n <= 2 for n in chunks)
    assert body == {"data": [], "meta": {"total": 7}}
    bad = posts.get("/api/content/items/posts", params={"limit": 0, "skip": 1, "filter": '{"a": {"$bad": 1}}'})
    assert bad.status_code == 400 and "error" in bad.json()


def test_list_with_skip_only_is_a_bare_array(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    body = posts.get("/api/content/items/posts", params={"skip": 1}).json()
    assert isinstance(body, list)
    assert titles(body) == ["b", "c"]


def test_empty_list_is_empty_array(posts: Api) -> None:
    response = posts.get("/api/content/items/posts")
    assert response.status_code == 200
    assert response.json() == []


def test_list_of_unknown_model_is_404(admin: Api) -> None:
    response = admin.get("/api/content/items/nothing")
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nothing> not found"}


@pytest.mark.parametrize("param", ["limit", "skip", "populate"])
def test_non_integer_int_parameter_is_400(posts: Api, param: str) -> None:
    response = posts.get("/api/content/items/posts", params={param: "abc"})
    assert response.status_code == 400
    assert param in response.json()["error"]


def test_negative_limit_is_400(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"limit": -1})
    assert response.status_code == 400
    assert "limit" in response.json()["error"]


# -- sort ---------------------------------------------------------------------


def test_sort_ascending_by_field(posts: Api) -> None:
    make_posts(posts, ["b", "c", "a"])
    body = posts.get("/api/content/items/posts", params={"sort": '{"title": 1}'}).json()
    assert titles(body) == ["a", "b", "c"]


def test_sort_descending_by_field(posts: Api) -> None:
    make_posts(posts, ["b", "c", "a"])
    body = posts.get("/api/content/items/posts", params={"sort": '{"title": -1}'}).json()
    assert titles(body) == ["c", "b", "a"]


def test_sort_descending_by_created_reverses_creation_order(posts: Api) -> None:
    make_posts(posts, ["b", "c", "a"])
    body = posts.get(
        "/api/content/items/posts", params={"sort": '{"_created": -1, "_id": -1}'}
    ).json()
    assert titles(body) == ["a", "c", "b"]


def test_sort_applies_before_limit_and_skip(posts: Api) -> None:
    make_posts(posts, ["b", "c", "a", "d"])
    body = posts.get(
        "/api/content/items/posts", params={"sort": '{"title": -1}', "limit": 2, "skip": 1}
    ).json()
    assert titles(body["data"]) == ["c", "b"]
    assert body["meta"]["total"] == 4


def test_sort_with_bad_direction_is_400(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"sort": '{"title": 2}'})
    assert response.status_code == 400
    assert "error" in response.json()


def test_sort_not_valid_json_is_400_naming_sort(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"sort": "{title: "})
    assert response.status_code == 400
    assert response.json() == {"error": "<sort> is not valid json"}


# -- fields projection --------------------------------------------------------


def test_fields_inclusion_keeps_named_fields_and_id(posts: Api) -> None:
    make_posts(posts, ["a"])
    body = posts.get("/api/content/items/posts", params={"fields": '{"title": 1}'}).json()
    assert set(body[0]) == {"_id", "title"}


def test_fields_inclusion_without_id(posts: Api) -> None:
    make_posts(posts, ["a"])
    body = posts.get("/api/content/items/posts", params={"fields": '{"title": 1, "_id": 0}'}).json()
    assert body == [{"title": "a"}]


def test_fields_exclusion_drops_named_fields_only(posts: Api) -> None:
    make_posts(posts, ["a"])
    body = posts.get("/api/content/items/posts", params={"fields": '{"views": 0}'}).json()
    assert "views" not in body[0]
    assert body[0]["title"] == "a"
    assert "_id" in body[0] and "_created" in body[0]


def test_fields_id_zero_alone_drops_only_id(posts: Api) -> None:
    make_posts(posts, ["a"])
    body = posts.get("/api/content/items/posts", params={"fields": '{"_id": 0}'}).json()
    assert "_id" not in body[0]
    assert body[0]["title"] == "a"
    assert body[0]["views"] == 0


def test_fields_mixing_inclusion_and_exclusion_is_400(posts: Api) -> None:
    make_posts(posts, ["a"])
    response = posts.get("/api/content/items/posts", params={"fields": '{"title": 1, "views": 0}'})
    assert response.status_code == 400
    assert "error" in response.json()


def test_fields_apply_to_item_by_id(posts: Api) -> None:
    item = make_posts(posts, ["a"])[0]
    body = posts.get(
        f"/api/content/item/posts/{item['_id']}", params={"fields": '{"title": 1}'}
    ).json()
    assert body == {"_id": item["_id"], "title": "a"}


def test_fields_apply_inside_envelope(posts: Api) -> None:
    make_posts(posts, ["a", "b"])
    body = posts.get(
        "/api/content/items/posts",
        params={"fields": '{"title": 1, "_id": 0}', "limit": 1, "skip": 1},
    ).json()
    assert body == {"data": [{"title": "b"}], "meta": {"total": 2}}


# -- filter -------------------------------------------------------------------


def test_filter_in_strict_json(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    body = posts.get("/api/content/items/posts", params={"filter": '{"title": "b"}'}).json()
    assert titles(body) == ["b"]


def test_filter_in_json5_form(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    body = posts.get("/api/content/items/posts", params={"filter": "{title:'b'}"}).json()
    assert titles(body) == ["b"]


def test_filter_in_bracket_form(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    response = posts.get("/api/content/items/posts?filter[title]=c")
    assert response.status_code == 200
    assert titles(response.json()) == ["c"]


def test_filter_in_bracket_form_with_operator_and_number(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    response = posts.get("/api/content/items/posts?filter[views][$gte]=1")
    assert response.status_code == 200
    assert titles(response.json()) == ["b", "c"]


def test_filter_with_operators(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c", "d"])
    body = posts.get(
        "/api/content/items/posts",
        params={"filter": '{"$or": [{"views": {"$lt": 1}}, {"title": {"$in": ["d"]}}]}'},
    ).json()
    assert titles(body) == ["a", "d"]


def test_filter_not_valid_json_is_400(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"filter": '{"title": '})
    assert response.status_code == 400
    assert response.json() == {"error": "<filter> is not valid json"}


def test_fields_not_valid_json_is_400(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"fields": "{title"})
    assert response.status_code == 400
    assert response.json() == {"error": "<fields> is not valid json"}


@pytest.mark.parametrize("operator", ["$where", "$function", "$foo"])
def test_unknown_operator_is_400_naming_it(posts: Api, operator: str) -> None:
    make_posts(posts, ["a"])
    response = posts.get(
        "/api/content/items/posts", params={"filter": json.dumps({"title": {operator: "x"}})}
    )
    assert response.status_code == 400
    assert operator in response.json()["error"]


def test_unknown_top_level_operator_is_400_naming_it(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"filter": '{"$where": "1"}'})
    assert response.status_code == 400
    assert "$where" in response.json()["error"]


def test_filter_that_is_not_an_object_is_400(posts: Api) -> None:
    response = posts.get("/api/content/items/posts", params={"filter": "[1, 2]"})
    assert response.status_code == 400
    assert "error" in response.json()


def test_first_item_matching_filter_on_collection(posts: Api) -> None:
    make_posts(posts, ["a", "b", "c"])
    response = posts.get("/api/content/item/posts", params={"filter": '{"views": {"$gt": 0}}'})
    assert response.status_code == 200
    assert response.json()["title"] == "b"


def test_first_item_with_no_match_on_collection_is_404(posts: Api) -> None:
    make_posts(posts, ["a"])
    response = posts.get("/api/content/item/posts", params={"filter": '{"title": "zzz"}'})
    assert response.status_code == 404
    assert response.json() == {"error": "Item not found"}


# -- more writes --------------------------------------------------------------


def test_invalid_state_value_is_400_naming_state(posts: Api) -> None:
    response = posts.post("/api/content/item/posts", json={"data": {"title": "x", "_state": 5}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["_state"]
    assert posts.get("/api/content/items/posts").json() == []


def test_update_with_state_without_publish_permission_is_403(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "x"})
    editor = role_key(posts, "editor", {"content/posts/read": True, "content/posts/update": True})
    response = editor.post(
        "/api/content/item/posts", json={"data": {"_id": item["_id"], "_state": 0}}
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}
    assert posts.get(f"/api/content/item/posts/{item['_id']}").status_code == 200


def test_update_without_update_permission_is_403(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "x"})
    writer = role_key(posts, "writer", {"content/posts/create": True})
    response = writer.post(
        "/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "y"}}
    )
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}
    assert posts.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "x"


def test_delete_without_delete_permission_is_403(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "x"})
    reader = role_key(posts, "reader", {"content/posts/read": True})
    response = reader.delete(f"/api/content/item/posts/{item['_id']}")
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}


def test_failing_save_handler_is_500_without_detail_and_nothing_stored(
    posts: Api, events: Events
) -> None:
    def boom(**_: Any) -> None:
        raise RuntimeError("secret internal detail")

    events.on("content.item.save.before", boom)
    response = posts.post("/api/content/item/posts", json={"data": {"title": "x"}})
    assert response.status_code == 500
    assert response.json() == {"error": "Internal server error"}
    assert "secret" not in response.text
    events.off("content.item.save.before", boom)
    assert posts.get("/api/content/items/posts").json() == []


# -- more reads ---------------------------------------------------------------


def test_long_list_streams_as_one_valid_array(posts: Api) -> None:
    count = 501  # more than one stream chunk of the store
    for i in range(count):
        create_item(posts, "posts", {"title": f"t{i:04d}"})
    body = posts.get("/api/content/items/posts").json()
    assert len(body) == count
    assert titles(body) == [f"t{i:04d}" for i in range(count)]


def test_sort_and_fields_in_bracket_form(posts: Api) -> None:
    make_posts(posts, ["b", "c", "a"])
    response = posts.get("/api/content/items/posts?sort[title]=-1&fields[title]=1&fields[_id]=0")
    assert response.status_code == 200
    assert response.json() == [{"title": "c"}, {"title": "b"}, {"title": "a"}]


def test_unknown_operator_nested_in_and_is_400_naming_it(posts: Api) -> None:
    response = posts.get(
        "/api/content/items/posts", params={"filter": '{"$and": [{"title": {"$near": 1}}]}'}
    )
    assert response.status_code == 400
    assert "$near" in response.json()["error"]


def test_item_by_malformed_id_is_404(posts: Api) -> None:
    response = posts.get("/api/content/item/posts/not-an-id")
    assert response.status_code == 404
    assert response.json() == {"error": "Item not found"}
