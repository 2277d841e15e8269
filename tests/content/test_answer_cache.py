"""List pages' answers are kept for the store's generation
(`content/routes.py`, `content.answers`; items by id in
`content.item_answers`): asked again, the same answer is
sent without any work, and it is never sent to a request it was not made
for: another query, other persona headers, a caller with other
permissions, a key revoked since, or after any write, in this process or
another."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient
from tests.conftest import Api, create_item, etag_rev, put_model, role_key

PAGE = {"limit": 2, "skip": 0}


@pytest.fixture
def blog(admin: Api) -> Api:
    put_model(admin, "authors", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
        {"name": "hero", "type": "variants"},
    ])
    ann = create_item(admin, "authors", {"name": "Ann"})
    for title in ("one", "two", "three"):
        create_item(admin, "posts", {"title": title, "author": {"_model": "authors", "_id": ann["_id"]}})
    return admin


def page(api: Api, **params: Any) -> Any:
    response = api.get("/api/content/items/posts", params={**PAGE, **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_a_page_asked_again_is_the_same_answer_read_from_no_table(blog: Api, quire: Any) -> None:
    first = blog.get("/api/content/items/posts", params=PAGE)
    queries = quire.store.queries
    again = blog.get("/api/content/items/posts", params=PAGE)
    assert quire.store.queries == queries
    assert again.content == first.content
    assert again.headers["content-type"] == first.headers["content-type"] == "application/json; charset=utf-8"
    assert again.headers["x-content-type-options"] == "nosniff"
    assert [p["title"] for p in first.json()["data"]] == ["one", "two"]


def test_a_write_shows_on_the_next_page(blog: Api) -> None:
    before = page(blog)
    assert before["meta"]["total"] == 3
    create_item(blog, "posts", {"title": "four"})
    assert page(blog)["meta"]["total"] == 4
    first = before["data"][0]
    blog.post("/api/content/item/posts", json={"data": {"_id": first["_id"], "title": "edited"}})
    assert page(blog)["data"][0]["title"] == "edited"


def test_other_queries_are_other_answers(blog: Api) -> None:
    assert [p["title"] for p in page(blog)["data"]] == ["one", "two"]
    assert [p["title"] for p in page(blog, skip=1)["data"]] == ["two", "three"]
    assert [p["title"] for p in page(blog, skip=1, fields='{"title":1}')["data"]] == ["two", "three"]
    assert "author" not in page(blog, skip=1, fields='{"title":1}')["data"][0]
    assert page(blog, populate=1)["data"][0]["author"]["name"] == "Ann"
    assert page(blog)["data"][0]["author"] == {"_model": "authors", "_id": page(blog, populate=1)["data"][0]
                                              ["author"]["_id"]}


def test_a_bare_page_keeps_its_link_header(blog: Api) -> None:
    first = blog.get("/api/content/items/posts", params={"limit": 2})
    again = blog.get("/api/content/items/posts", params={"limit": 2})
    assert first.headers["link"] == again.headers["link"]
    assert 'rel="next"' in again.headers["link"] and again.content == first.content


def test_callers_with_other_permissions_never_get_the_kept_answer(blog: Api, anon: Api) -> None:
    assert page(blog, populate=1)["data"][0]["author"]["name"] == "Ann"
    posts_only = role_key(blog, "posts-only", {"content/posts/read": True})
    assert page(posts_only, populate=1)["data"][0]["author"] is None  # may not read authors
    authors_only = role_key(blog, "authors-only", {"content/authors/read": True})
    assert authors_only.get("/api/content/items/posts", params={**PAGE, "populate": 1}).status_code == 403
    assert anon.get("/api/content/items/posts", params={**PAGE, "populate": 1}).status_code == 401
    wrong = blog.with_key("qk_" + "0" * 40)
    assert wrong.get("/api/content/items/posts", params={**PAGE, "populate": 1}).status_code == 401


def test_a_revoked_key_is_refused_although_its_answer_was_kept(blog: Api, quire: Any) -> None:
    reader = role_key(blog, "reader", {"content/posts/read": True})
    assert page(reader)["meta"]["total"] == 3
    key_id = next(k["_id"] for k in quire.auth.list_keys() if k["role"] == "reader")
    quire.auth.delete_key(key_id)
    assert reader.get("/api/content/items/posts", params=PAGE).status_code == 401


def test_persona_headers_are_part_of_the_answer(blog: Api) -> None:
    variants = {"persona:variants": [
        {"id": "g", "audience": [], "data": {"t": "Hello {{ name:guest }}"}},
        {"id": "m", "audience": ["member"], "data": {"t": "Welcome {{ name }}"}},
    ]}
    first = page(blog)["data"][0]
    blog.post("/api/content/item/posts", json={"data": {"_id": first["_id"], "hero": variants}})

    def hero(headers: dict[str, str], **params: Any) -> Any:
        response = blog.get("/api/content/items/posts", params={**PAGE, **params}, headers=headers)
        assert response.status_code == 200, response.text
        return response.json()["data"][0]["hero"]

    stored = hero({})
    assert [v["data"] for v in stored["persona:variants"]] == [v["data"] for v in variants["persona:variants"]]
    assert hero({"X-Persona-Audience": "member"}) == {"t": "Welcome {{ name }}"}  # no variables: kept
    assert hero({"X-Persona-Audience": "member", "X-Persona-Vars": '{"name": "Ann"}'}) == {"t": "Welcome Ann"}
    assert hero({"X-Persona-Audience": "member", "X-Persona-Vars": '{"name": "Bo"}'}) == {"t": "Welcome Bo"}
    assert hero({"X-Persona-Audience": "guest"}) == {"t": "Hello {{ name:guest }}"}
    assert hero({"X-Persona-Audience": "guest", "X-Persona-Vars": "{}"}) == {"t": "Hello guest"}
    assert hero({}, persona="member", **{"persona_vars[name]": "Cy"}) == {"t": "Welcome Cy"}
    assert hero({}) == stored


@pytest.fixture
def other(data_dir: Path, app: Any, admin_key: str, app_env: dict[str, str]) -> Iterator[Api]:
    """A second app on the same data dir, as another worker process is."""
    second = build_app(load_settings(data_dir, env=app_env), Events())
    try:
        yield Api(TestClient(second, raise_server_exceptions=False), admin_key)
    finally:
        second.state.quire.close()


def test_a_write_through_another_process_shows_on_the_next_page(blog: Api, other: Api) -> None:
    assert page(blog)["meta"]["total"] == 3 and page(other)["meta"]["total"] == 3
    create_item(other, "posts", {"title": "four"})
    assert page(blog)["meta"]["total"] == 4
    first = page(blog)["data"][0]
    other.post("/api/content/item/posts", json={"data": {"_id": first["_id"], "title": "edited"}})
    assert page(blog)["data"][0]["title"] == "edited"


def test_kept_answers_can_be_turned_off(tmp_path: Path) -> None:
    app = build_app(load_settings(tmp_path, env={"QUIRE_SERVER_QUIET": "true", "QUIRE_API_KEPT_ANSWERS_MB": "0"}))
    quire = app.state.quire
    try:
        key = quire.auth.create_key("k", "admin")["key"]
        api = Api(TestClient(app), key)
        put_model(api, "notes", type="collection", fields=[{"name": "title", "type": "text"}])
        create_item(api, "notes", {"title": "a"})
        for _ in range(2):
            assert [i["title"] for i in api.get("/api/content/items/notes?limit=5").json()] == ["a"]
        assert len(quire.cache.region("content.answers", 0)._entries) == 0
        note = api.get("/api/content/items/notes?limit=1").json()[0]
        for _ in range(2):
            assert api.get(f"/api/content/item/notes/{note['_id']}").json()["title"] == "a"
        assert len(quire.cache.region("content.item_answers", 0)._entries) == 0
    finally:
        quire.close()


def item(api: Api, item_id: str, **params: Any) -> Any:
    response = api.get(f"/api/content/item/posts/{item_id}", params=params)
    assert response.status_code == 200, response.text
    return response


def test_an_item_asked_again_by_id_is_its_kept_answer(blog: Api, quire: Any) -> None:
    first_id = page(blog)["data"][0]["_id"]
    first = item(blog, first_id)
    queries = quire.store.queries
    again = item(blog, first_id)
    assert quire.store.queries == queries  # no row read
    assert again.content == first.content and again.headers["etag"] == first.headers["etag"]
    assert item(blog, first_id, populate=1).json()["author"]["name"] == "Ann"  # another query: its own answer
    assert "name" not in item(blog, first_id).json()["author"]


def test_an_item_by_id_shows_a_write_and_never_reaches_another_caller(blog: Api, other: Api, anon: Api) -> None:
    first_id = page(blog)["data"][0]["_id"]
    assert item(blog, first_id).json()["title"] == "one"
    assert item(other, first_id).json()["title"] == "one"
    other.post("/api/content/item/posts", json={"data": {"_id": first_id, "title": "edited"}})
    edited = item(blog, first_id)
    assert edited.json()["title"] == "edited" and etag_rev(edited) == 2
    assert item(blog, first_id, populate=1).json()["author"]["name"] == "Ann"
    posts_only = role_key(blog, "posts-only", {"content/posts/read": True})
    assert item(posts_only, first_id, populate=1).json()["author"] is None  # may not read authors
    assert anon.get(f"/api/content/item/posts/{first_id}").status_code == 401
    blog.delete(f"/api/content/item/posts/{first_id}")
    assert blog.get(f"/api/content/item/posts/{first_id}").status_code == 404
