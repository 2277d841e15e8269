"""Populated list rows are kept for the store's generation (reads.py,
`_render_populated`): a write anywhere, in this process or another, shows
on the next populate, and the answers of different views and callers
(depth, locale, fields, role) are never mixed up."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model, role_key
from tests.serving import quire_server

LOCALES = [{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Français"}]
POPULATE = {"populate": 1, "limit": 20}


def link(model: str, item: dict[str, Any]) -> dict[str, str]:
    return {"_model": model, "_id": item["_id"]}


def define_blog(admin: Api) -> None:
    put_model(admin, "countries", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "authors", fields=[
        {"name": "name", "type": "text", "i18n": True},
        {"name": "country", "type": "contentItemLink", "opts": {"link": "countries"}},
    ])
    put_model(admin, "posts", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    ])


@pytest.fixture
def blog(admin: Api) -> Api:
    assert admin.put("/api/system/locales", json=LOCALES).status_code == 200
    define_blog(admin)
    return admin


def save(api: Api, model: str, data: dict[str, Any]) -> dict[str, Any]:
    return create_item(api, model, data)


def authors_of(api: Api, **params: Any) -> list[Any]:
    response = api.get("/api/content/items/posts", params={**POPULATE, **params})
    assert response.status_code == 200, response.text
    return [post["author"] for post in response.json()]


def names_of(api: Api, **params: Any) -> list[Any]:
    return [a if a is None else a["name"] for a in authors_of(api, **params)]


def test_a_write_to_the_linked_item_shows_on_the_next_populate(blog: Api) -> None:
    ann = save(blog, "authors", {"name": "Ann"})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    assert names_of(blog) == ["Ann"]
    assert names_of(blog) == ["Ann"]  # kept now
    save(blog, "authors", {"_id": ann["_id"], "name": "Annie"})
    assert names_of(blog) == ["Annie"]


def test_a_linked_item_unpublished_or_deleted_answers_null_as_before(blog: Api) -> None:
    ann = save(blog, "authors", {"name": "Ann"})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    assert names_of(blog) == ["Ann"]
    save(blog, "authors", {"_id": ann["_id"], "_state": 0})
    assert authors_of(blog) == [None]
    save(blog, "authors", {"_id": ann["_id"], "_state": 1})
    assert names_of(blog) == ["Ann"]
    assert blog.delete(f"/api/content/item/authors/{ann['_id']}").status_code == 200
    assert authors_of(blog) == [None]


def test_callers_who_may_not_read_the_linked_model_get_null_whoever_asked_first(blog: Api) -> None:
    ann = save(blog, "authors", {"name": "Ann"})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    posts_only = role_key(blog, "postreader", {"content/posts/read": True})
    both = role_key(blog, "reader", {"content/posts/read": True, "content/authors/read": True})
    assert names_of(blog) == ["Ann"]  # the admin's answer is kept first
    assert authors_of(posts_only) == [None]
    assert names_of(both) == ["Ann"]
    assert authors_of(posts_only) == [None]  # and the other way round


def test_a_role_that_loses_a_permission_gets_null_at_once(blog: Api) -> None:
    ann = save(blog, "authors", {"name": "Ann"})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    reader = role_key(blog, "reader", {"content/posts/read": True, "content/authors/read": True})
    assert names_of(reader) == ["Ann"]
    response = blog.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    assert response.status_code == 200, response.text
    assert authors_of(reader) == [None]


def test_locale_variants_are_not_mixed_up(blog: Api) -> None:
    ann = save(blog, "authors", {"name": "Ann", "name_de": "Anna"})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    for _ in range(2):  # the second round answers from what the first kept
        assert names_of(blog, locale="de") == ["Anna"]
        assert names_of(blog, locale="fr") == ["Ann"]  # falls back to the default
        stored = authors_of(blog)[0]
        assert stored["name"] == "Ann" and stored["name_de"] == "Anna"
        assert "name_de" not in authors_of(blog, locale="de")[0]


def test_depth_and_fields_are_not_mixed_up(blog: Api) -> None:
    de = save(blog, "countries", {"name": "Germany"})
    ann = save(blog, "authors", {"name": "Ann", "country": link("countries", de)})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    for _ in range(2):
        assert authors_of(blog)[0]["country"] == link("countries", de)
        assert authors_of(blog, populate=2)[0]["country"]["name"] == "Germany"
        projected = blog.get("/api/content/items/posts",
                             params={**POPULATE, "fields": '{"author": 1}'}).json()
        assert "title" not in projected[0] and projected[0]["author"]["name"] == "Ann"
        assert blog.get("/api/content/items/posts", params=POPULATE).json()[0]["title"] == "P"


def test_a_write_of_the_deeper_hop_shows_too(blog: Api) -> None:
    de = save(blog, "countries", {"name": "Germany"})
    ann = save(blog, "authors", {"name": "Ann", "country": link("countries", de)})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    assert authors_of(blog, populate=2)[0]["country"]["name"] == "Germany"
    save(blog, "countries", {"_id": de["_id"], "name": "Deutschland"})
    assert authors_of(blog, populate=2)[0]["country"]["name"] == "Deutschland"


# -- another process ------------------------------------------------------------


@pytest.fixture
def other(data_dir: Path, app: Any, admin_key: str, app_env: dict[str, str]) -> Iterator[Api]:
    """A second app on the same data dir, as another worker process is:
    its own store connections and its own caches."""
    second = build_app(load_settings(data_dir, env=app_env), Events())
    try:
        yield Api(TestClient(second, raise_server_exceptions=False), admin_key)
    finally:
        second.state.quire.close()


def test_a_write_through_another_process_shows_on_the_next_populate(blog: Api, other: Api) -> None:
    ann = save(blog, "authors", {"name": "Ann"})
    save(blog, "posts", {"title": "P", "author": link("authors", ann)})
    assert names_of(blog) == ["Ann"] and names_of(other) == ["Ann"]
    save(other, "authors", {"_id": ann["_id"], "name": "Annie"})
    assert names_of(blog) == ["Annie"]
    save(other, "authors", {"_id": ann["_id"], "_state": 0})
    assert authors_of(blog) == [None]
    assert other.delete(f"/api/content/item/posts/{blog.get('/api/content/items/posts').json()[0]['_id']}") \
        .status_code == 200
    assert authors_of(blog) == []


def test_two_workers_answer_the_new_value_after_a_write(tmp_path: Path) -> None:
    with quire_server(tmp_path / "data") as (base, key, _log), \
            httpx.Client(base_url=base, timeout=30, headers={"api-key": key}) as client:
        api = _HttpApi(client)
        define_blog(api)  # type: ignore[arg-type]
        ann = client.post("/api/content/item/authors", json={"data": {"name": "Ann"}}).json()
        for i in range(3):
            client.post("/api/content/item/posts", json={"data": {"title": f"P{i}", "author": link("authors", ann)}})

        def names() -> set[str | None]:
            # new connections, so that both workers answer (and keep) pages
            seen: set[str | None] = set()
            for _ in range(16):
                with httpx.Client(base_url=base, timeout=30, headers={"api-key": key}) as fresh:
                    body = fresh.get("/api/content/items/posts", params=POPULATE).json()
                    seen |= {post["author"]["name"] if post["author"] else None for post in body}
            return seen

        assert names() == {"Ann"}
        assert client.post("/api/content/item/authors",
                           json={"data": {"_id": ann["_id"], "name": "Annie"}}).status_code == 200
        assert names() == {"Annie"}


class _HttpApi:
    """Enough of `Api` for `put_model` over a real connection."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def put(self, url: str, **kw: Any) -> Any:
        return self.client.put(url, **kw)
