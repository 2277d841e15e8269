"""Locales (per-locale reads, `field:locale` in filter and sort) and populate
(link resolution, batched per level) over HTTP (behaviour.md section 2)."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, create_item, put_model, role_key

LOCALES = [{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Français"}]




@pytest.fixture
def pages(admin: Api) -> Api:
    response = admin.put("/api/system/locales", json=LOCALES)
    assert response.status_code == 200, response.text
    put_model(
        admin,
        "pages",
        type="collection",
        fields=[
            {"name": "title", "type": "text", "i18n": True},
            {"name": "slug", "type": "text"},
        ],
    )
    return admin


# -- locales ------------------------------------------------------------------


def test_locales_put_then_get_lists_default_first_then_saved(admin: Api) -> None:
    put = admin.put("/api/system/locales", json=LOCALES)
    assert put.status_code == 200
    got = admin.get("/api/system/locales")
    assert got.status_code == 200
    body = got.json()
    assert put.json() == body
    assert [entry["i18n"] for entry in body] == ["default", "de", "fr"]
    assert body[0]["default"] is True
    assert body[1] == {"i18n": "de", "name": "Deutsch", "default": False}


def test_locales_get_before_any_put_has_only_default(admin: Api) -> None:
    body = admin.get("/api/system/locales").json()
    assert [entry["i18n"] for entry in body] == ["default"]


def test_locales_put_with_bad_code_is_400(admin: Api) -> None:
    response = admin.put("/api/system/locales", json=[{"i18n": "not a code!", "name": "x"}])
    assert response.status_code == 400
    assert "error" in response.json()


def test_locales_put_not_a_list_is_400(admin: Api) -> None:
    response = admin.put("/api/system/locales", json={"i18n": "de"})
    assert response.status_code == 400
    assert "error" in response.json()


def test_locales_need_a_key(anon: Api) -> None:
    response = anon.get("/api/system/locales")
    assert response.status_code == 401
    assert response.json() == {"error": "Authentication failed"}


def test_read_with_locale_answers_that_locales_value(pages: Api) -> None:
    item = create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo", "slug": "hello"})
    body = pages.get(f"/api/content/item/pages/{item['_id']}", params={"locale": "de"}).json()
    assert body["title"] == "Hallo"
    assert body["slug"] == "hello"


def test_read_with_locale_carries_no_localized_keys(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo", "title_fr": "Salut"})
    body = pages.get("/api/content/items/pages", params={"locale": "de"}).json()
    assert body[0]["title"] == "Hallo"
    assert not [k for k in body[0] if k.startswith("title_")]


def test_read_with_locale_falls_back_to_default_when_missing(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello"})
    body = pages.get("/api/content/items/pages", params={"locale": "de"}).json()
    assert body[0]["title"] == "Hello"
    assert "title_de" not in body[0]


def test_read_with_locale_falls_back_to_default_when_empty(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "", "title_fr": "Salut"})
    body = pages.get("/api/content/items/pages", params={"locale": "de"}).json()
    assert body[0]["title"] == "Hello"
    assert not [k for k in body[0] if k.startswith("title_")]


def test_read_with_unknown_locale_answers_default_values(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo"})
    body = pages.get("/api/content/items/pages", params={"locale": "xx"}).json()
    assert body[0]["title"] == "Hello"
    assert not [k for k in body[0] if k.startswith("title_")]


def test_read_without_locale_returns_stored_keys(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo"})
    body = pages.get("/api/content/items/pages").json()
    assert body[0]["title"] == "Hello"
    assert body[0]["title_de"] == "Hallo"


def test_fallback_is_never_written_back(pages: Api) -> None:
    item = create_item(pages, "pages", {"title": "Hello"})
    pages.get("/api/content/items/pages", params={"locale": "de"})
    stored = pages.get(f"/api/content/item/pages/{item['_id']}").json()
    assert "title_de" not in stored
    assert stored["title"] == "Hello"


def test_locale_applies_to_envelope_list(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo"})
    body = pages.get(
        "/api/content/items/pages", params={"locale": "de", "limit": 5, "skip": 0}
    ).json()
    assert body["data"][0]["title"] == "Hallo"
    assert body["meta"]["total"] == 1


def test_localized_value_of_unconfigured_locale_is_400(pages: Api) -> None:
    response = pages.post(
        "/api/content/item/pages", json={"data": {"title": "Hello", "title_it": "Ciao"}}
    )
    assert response.status_code == 400
    assert response.json()["fields"] == ["title_it"]


def test_filter_on_field_colon_locale_targets_localized_value(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo"})
    create_item(pages, "pages", {"title": "Bye", "title_de": "Tschuess"})
    body = pages.get("/api/content/items/pages", params={"filter": '{"title:de": "Hallo"}'}).json()
    assert [d["title"] for d in body] == ["Hello"]


def test_filter_on_plain_field_does_not_match_localized_value(pages: Api) -> None:
    create_item(pages, "pages", {"title": "Hello", "title_de": "Hallo"})
    body = pages.get("/api/content/items/pages", params={"filter": '{"title": "Hallo"}'}).json()
    assert body == []


def test_sort_on_field_colon_locale_orders_by_localized_value(pages: Api) -> None:
    create_item(pages, "pages", {"title": "A", "title_de": "Z"})
    create_item(pages, "pages", {"title": "B", "title_de": "Y"})
    create_item(pages, "pages", {"title": "C", "title_de": "X"})
    body = pages.get("/api/content/items/pages", params={"sort": '{"title:de": 1}'}).json()
    assert [d["title"] for d in body] == ["C", "B", "A"]
    plain = pages.get("/api/content/items/pages", params={"sort": '{"title": 1}'}).json()
    assert [d["title"] for d in plain] == ["A", "B", "C"]


# -- populate -----------------------------------------------------------------


@pytest.fixture
def blog(admin: Api) -> Api:
    put_model(
        admin,
        "countries",
        type="collection",
        fields=[{"name": "name", "type": "text"}],
    )
    put_model(
        admin,
        "authors",
        type="collection",
        fields=[
            {"name": "name", "type": "text"},
            {"name": "country", "type": "contentItemLink", "opts": {"link": "countries"}},
        ],
    )
    put_model(
        admin,
        "posts",
        type="collection",
        fields=[
            {"name": "title", "type": "text"},
            {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
        ],
    )
    return admin


def link(model: str, item: dict[str, Any]) -> dict[str, str]:
    return {"_model": model, "_id": item["_id"]}


def test_link_is_stored_as_model_and_id(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    post = create_item(blog, "posts", {"title": "P", "author": {"_id": ann["_id"]}})
    assert post["author"] == {"_model": "authors", "_id": ann["_id"]}
    listed = blog.get("/api/content/items/posts").json()
    assert listed[0]["author"] == {"_model": "authors", "_id": ann["_id"]}


def test_link_to_another_model_than_opts_link_is_400(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    response = blog.post(
        "/api/content/item/posts",
        json={"data": {"title": "P", "author": {"_model": "posts", "_id": ann["_id"]}}},
    )
    assert response.status_code == 400
    assert response.json()["fields"] == ["author"]


def test_populate_1_resolves_link_to_linked_item(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"populate": 1}).json()
    assert body[0]["author"]["_id"] == ann["_id"]
    assert body[0]["author"]["name"] == "Ann"


def test_populate_applies_to_item_by_id(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    post = create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    body = blog.get(f"/api/content/item/posts/{post['_id']}", params={"populate": 1}).json()
    assert body["author"]["name"] == "Ann"


def test_populate_link_to_draft_becomes_null(blog: Api) -> None:
    hidden = create_item(blog, "authors", {"name": "Hidden", "_state": 0})
    create_item(blog, "posts", {"title": "P", "author": link("authors", hidden)})
    body = blog.get("/api/content/items/posts", params={"populate": 1}).json()
    assert body[0]["author"] is None


def test_populate_link_to_deleted_item_becomes_null(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    assert blog.delete(f"/api/content/item/authors/{ann['_id']}").status_code == 200
    body = blog.get("/api/content/items/posts", params={"populate": 1}).json()
    assert body[0]["author"] is None


def test_populate_link_to_unreadable_model_becomes_null(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    reader = role_key(blog, "postreader", {"content/posts/read": True})
    response = reader.get("/api/content/items/posts", params={"populate": 1})
    assert response.status_code == 200
    assert response.json()[0]["author"] is None
    assert response.json()[0]["title"] == "P"


def test_populate_1_leaves_second_hop_as_link(blog: Api) -> None:
    de = create_item(blog, "countries", {"name": "Germany"})
    ann = create_item(blog, "authors", {"name": "Ann", "country": link("countries", de)})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"populate": 1}).json()
    assert body[0]["author"]["country"] == {"_model": "countries", "_id": de["_id"]}


def test_populate_2_follows_two_hops(blog: Api) -> None:
    de = create_item(blog, "countries", {"name": "Germany"})
    ann = create_item(blog, "authors", {"name": "Ann", "country": link("countries", de)})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"populate": 2}).json()
    assert body[0]["author"]["name"] == "Ann"
    assert body[0]["author"]["country"]["name"] == "Germany"


def test_without_populate_links_stay_links(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"populate": 0}).json()
    assert body[0]["author"] == link("authors", ann)


def test_populate_with_locale_localizes_linked_item(admin: Api) -> None:
    admin.put("/api/system/locales", json=LOCALES)
    put_model(admin, "authors", fields=[{"name": "name", "type": "text", "i18n": True}])
    put_model(
        admin,
        "posts",
        fields=[{"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}],
    )
    ann = create_item(admin, "authors", {"name": "Ann", "name_de": "Anna"})
    create_item(admin, "posts", {"author": link("authors", ann)})
    body = admin.get("/api/content/items/posts", params={"populate": 1, "locale": "de"}).json()
    assert body[0]["author"]["name"] == "Anna"
    assert "name_de" not in body[0]["author"]


def queries_for_listing(quire: Quire, blog: Api, count: int) -> int:
    authors = [create_item(blog, "authors", {"name": f"A{i}"}) for i in range(count)]
    for i, author in enumerate(authors):
        create_item(blog, "posts", {"title": f"P{i}", "author": link("authors", author)})
    blog.get("/api/content/items/posts", params={"populate": 1})  # warm caches
    before = quire.store.queries
    response = blog.get("/api/content/items/posts", params={"populate": 1})
    used = quire.store.queries - before
    body = response.json()
    assert len(body) == count
    assert all(d["author"]["name"] == f"A{i}" for i, d in enumerate(body))
    return used


def test_populate_uses_few_queries_for_twenty_posts(quire: Quire, blog: Api) -> None:
    assert queries_for_listing(quire, blog, 20) <= 5


def test_populate_query_count_does_not_grow_with_number_of_posts(quire: Quire, blog: Api) -> None:
    small = queries_for_listing(quire, blog, 5)
    # start over in the same app: drop the items, keep the models
    for model in ("posts", "authors"):
        for doc in blog.get(f"/api/content/items/{model}").json():
            assert blog.delete(f"/api/content/item/{model}/{doc['_id']}").status_code == 200
    large = queries_for_listing(quire, blog, 20)
    assert large == small


def test_populate_2_query_count_does_not_grow_with_number_of_posts(quire: Quire, blog: Api) -> None:
    def run(count: int) -> int:
        de = create_item(blog, "countries", {"name": "Germany"})
        for i in range(count):
            author = create_item(
                blog, "authors", {"name": f"A{i}", "country": link("countries", de)}
            )
            create_item(blog, "posts", {"title": f"P{i}", "author": link("authors", author)})
        blog.get("/api/content/items/posts", params={"populate": 2})
        before = quire.store.queries
        body = blog.get("/api/content/items/posts", params={"populate": 2}).json()
        assert all(d["author"]["country"]["name"] == "Germany" for d in body)
        return quire.store.queries - before

    small = run(5)
    for model in ("posts", "authors", "countries"):
        for doc in blog.get(f"/api/content/items/{model}").json():
            blog.delete(f"/api/content/item/{model}/{doc['_id']}")
    assert run(20) == small


# -- link filter --------------------------------------------------------------


def test_link_filter_on_linked_item_field(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    bob = create_item(blog, "authors", {"name": "Bob"})
    create_item(blog, "posts", {"title": "by Ann", "author": link("authors", ann)})
    create_item(blog, "posts", {"title": "by Bob", "author": link("authors", bob)})
    create_item(blog, "posts", {"title": "by Ann too", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"filter": '{"@author.name": "Ann"}'}).json()
    assert [d["title"] for d in body] == ["by Ann", "by Ann too"]


def test_link_filter_ignores_draft_linked_items(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann", "_state": 0})
    create_item(blog, "posts", {"title": "by Ann", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"filter": '{"@author.name": "Ann"}'}).json()
    assert body == []


def test_link_filter_combines_with_other_conditions(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "one", "author": link("authors", ann)})
    create_item(blog, "posts", {"title": "two", "author": link("authors", ann)})
    body = blog.get(
        "/api/content/items/posts",
        params={"filter": '{"@author.name": "Ann", "title": "two"}'},
    ).json()
    assert [d["title"] for d in body] == ["two"]


def test_link_filter_on_non_link_field_is_400(blog: Api) -> None:
    response = blog.get("/api/content/items/posts", params={"filter": '{"@title.name": "Ann"}'})
    assert response.status_code == 400
    assert "title" in response.json()["error"]


def test_link_filter_on_unreadable_linked_model_is_refused(blog: Api) -> None:
    reader = role_key(blog, "postreader", {"content/posts/read": True})
    response = reader.get("/api/content/items/posts", params={"filter": '{"@author.name": "Ann"}'})
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}


def test_populate_resolves_each_link_of_a_multiple_link_field(admin: Api) -> None:
    put_model(admin, "tags", fields=[{"name": "name", "type": "text"}])
    put_model(
        admin,
        "posts",
        fields=[
            {"name": "tags", "type": "contentItemLink", "multiple": True, "opts": {"link": "tags"}}
        ],
    )
    a = create_item(admin, "tags", {"name": "a"})
    hidden = create_item(admin, "tags", {"name": "hidden", "_state": 0})
    b = create_item(admin, "tags", {"name": "b"})
    create_item(admin, "posts", {"tags": [link("tags", a), link("tags", hidden), link("tags", b)]})
    body = admin.get("/api/content/items/posts", params={"populate": 1}).json()
    tags = body[0]["tags"]
    assert [t["name"] if t else None for t in tags] == ["a", None, "b"]


def test_populate_same_item_linked_twice_resolves_both(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "one", "author": link("authors", ann)})
    create_item(blog, "posts", {"title": "two", "author": link("authors", ann)})
    body = blog.get("/api/content/items/posts", params={"populate": 1}).json()
    assert [d["author"]["name"] for d in body] == ["Ann", "Ann"]


def test_populate_above_cap_is_accepted(blog: Api) -> None:
    de = create_item(blog, "countries", {"name": "Germany"})
    ann = create_item(blog, "authors", {"name": "Ann", "country": link("countries", de)})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    response = blog.get("/api/content/items/posts", params={"populate": 99})
    assert response.status_code == 200
    assert response.json()[0]["author"]["country"]["name"] == "Germany"


def test_populate_with_fields_projection_resolves_kept_link(blog: Api) -> None:
    ann = create_item(blog, "authors", {"name": "Ann"})
    create_item(blog, "posts", {"title": "P", "author": link("authors", ann)})
    body = blog.get(
        "/api/content/items/posts",
        params={"populate": 1, "fields": '{"author": 1, "_id": 0}'},
    ).json()
    assert body[0]["author"]["name"] == "Ann"
    assert set(body[0]) == {"author"}


def test_batch_applies_populate_and_locale(admin: Api) -> None:
    admin.put("/api/system/locales", json=LOCALES)
    put_model(admin, "authors", fields=[{"name": "name", "type": "text", "i18n": True}])
    put_model(
        admin,
        "posts",
        fields=[{"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}],
    )
    ann = create_item(admin, "authors", {"name": "Ann", "name_de": "Anna"})
    create_item(admin, "posts", {"author": link("authors", ann)})
    response = admin.get(
        "/api/content/items",
        params={
            "models": '{"posts": {"populate": 1, "locale": "de"}, "authors": {"locale": "de"}}'
        },
    )
    assert response.status_code == 200
    body = response.json()
    assert body["posts"][0]["author"]["name"] == "Anna"
    assert body["authors"][0]["name"] == "Anna"
    assert "name_de" not in body["authors"][0]


def test_a_locale_code_with_an_underscore_holds_localized_values(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "pt_BR", "name": "Português"}])
    put_model(admin, "notes", fields=[{"name": "title", "type": "text", "i18n": True}])
    saved = admin.post("/api/content/item/notes", json={"data": {"title": "Hello", "title_pt_BR": "Olá"}})
    assert saved.status_code == 200, saved.text
    read = admin.get(f"/api/content/item/notes/{saved.json()['_id']}", params={"locale": "pt_BR"})
    assert read.json()["title"] == "Olá"
