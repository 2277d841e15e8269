"""Collection pages resolve `<page route>/<item slug>` to the page with the
published item in `data.item`; singleton pages carry their singleton; link
pages carry their URL; `populate` resolves content links in page data and
layout."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api, create_item, put_model, role_key
from tests.pages.conftest import by_route, error_of, make_page, page_id_at, update_page


@pytest.fixture
def blog(de: Api) -> dict[str, Any]:
    """A collection page /blog (de: /blog-de) bound to `posts`, whose `slug`
    field is localized; one published post, one draft, one link to an
    author."""
    put_model(de, "authors", type="collection", fields=[{"name": "name", "type": "text", "i18n": True}])
    put_model(de, "posts", type="collection", fields=[
        {"name": "title", "type": "text", "i18n": True},
        {"name": "slug", "type": "text", "i18n": True},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    ])
    author = create_item(de, "authors", {"name": "Ann", "name_de": "Anna"})
    hello = create_item(de, "posts", {"title": "Hello world", "title_de": "Hallo Welt", "slug": "hello",
                                      "slug_de": "hallo", "author": {"_model": "authors", "_id": author["_id"]}})
    other = create_item(de, "posts", {"title": "Other", "slug": "other"})
    draft = create_item(de, "posts", {"title": "Secret", "slug": "secret", "_state": 0})
    page = make_page(de, title="Blog", slug="blog", slug_de="blog-de", type="collection",
                     data={"model": "posts", "intro": "All posts"}, data_de={"intro": "Alle Beiträge"})
    return {"page": page, "hello": hello, "other": other, "draft": draft, "author": author}


# -- collection pages -------------------------------------------------------------


def test_collection_page_resolves_an_item_by_slug(de: Api, blog: dict[str, Any]) -> None:
    response = by_route(de, "/blog/hello")
    assert response.status_code == 200
    body = response.json()
    assert body["_id"] == blog["page"]["_id"]
    assert body["type"] == "collection"
    assert body["data"]["model"] == "posts"
    assert body["data"]["intro"] == "All posts"
    item = body["data"]["item"]
    assert item["_id"] == blog["hello"]["_id"]
    assert item["title"] == "Hello world"
    assert item["author"] == {"_model": "authors", "_id": blog["author"]["_id"]}
    # a different slug, a different item
    assert by_route(de, "/blog/other/").json()["data"]["item"]["_id"] == blog["other"]["_id"]


def test_collection_page_itself_has_no_item(de: Api, blog: dict[str, Any]) -> None:
    body = by_route(de, "/blog").json()
    assert body["_id"] == blog["page"]["_id"]
    assert "item" not in body["data"]


def test_collection_item_in_a_locale(de: Api, blog: dict[str, Any]) -> None:
    body = by_route(de, "/blog-de/hallo", locale="de").json()
    assert body["_id"] == blog["page"]["_id"]
    assert body["title"] == "Blog" and body["data"]["intro"] == "Alle Beiträge"
    assert body["data"]["item"]["_id"] == blog["hello"]["_id"]
    assert body["data"]["item"]["title"] == "Hallo Welt"
    assert "title_de" not in body["data"]["item"]
    # the default slug of an item serves too, and an untranslated item by its slug
    assert by_route(de, "/blog-de/hello", locale="de").json()["data"]["item"]["_id"] == blog["hello"]["_id"]
    assert by_route(de, "/blog-de/other", locale="de").json()["data"]["item"]["_id"] == blog["other"]["_id"]


def test_localized_item_slug_needs_its_locale(de: Api, blog: dict[str, Any]) -> None:
    assert page_id_at(de, "/blog/hallo") is None
    assert page_id_at(de, "/blog-de/hello") is None  # the German page route needs locale=de
    assert page_id_at(de, "/blog/hello", locale="de") is None  # /blog is not the German page route


@pytest.mark.parametrize("route", ["/blog/secret", "/blog/unknown", "/blog/hello/more", "/blog/Hello"])
def test_draft_or_unknown_item_is_404(de: Api, blog: dict[str, Any], route: str) -> None:
    assert error_of(by_route(de, route), 404) == {"error": "Page not found"}


def test_item_becomes_visible_when_published(de: Api, blog: dict[str, Any]) -> None:
    assert page_id_at(de, "/blog/secret") is None
    create_item(de, "posts", {"_id": blog["draft"]["_id"], "_state": 1})
    assert by_route(de, "/blog/secret").json()["data"]["item"]["_id"] == blog["draft"]["_id"]


def test_key_without_content_read_gets_404_for_items(de: Api, blog: dict[str, Any]) -> None:
    reader = role_key(de, "pages-only", {"pages/read": True})
    assert error_of(by_route(reader, "/blog/hello"), 404) == {"error": "Page not found"}
    assert page_id_at(reader, "/blog") == blog["page"]["_id"]
    other = role_key(de, "other-model", {"pages/read": True, "content/authors/read": True})
    assert page_id_at(other, "/blog/hello") is None
    allowed = role_key(de, "blog-reader", {"pages/read": True, "content/posts/read": True})
    assert by_route(allowed, "/blog/hello").json()["data"]["item"]["_id"] == blog["hello"]["_id"]
    wildcard = role_key(de, "all-reader", {"pages/read": True, "content/*/read": True})
    assert page_id_at(wildcard, "/blog/hello") == blog["page"]["_id"]


def test_collection_item_populate(de: Api, blog: dict[str, Any]) -> None:
    item = by_route(de, "/blog/hello", populate=1).json()["data"]["item"]
    assert item["author"]["_id"] == blog["author"]["_id"]
    assert item["author"]["name"] == "Ann"
    item = by_route(de, "/blog-de/hallo", populate=1, locale="de").json()["data"]["item"]
    assert item["author"]["name"] == "Anna"


def test_collection_item_fields(de: Api, blog: dict[str, Any]) -> None:
    fields = json.dumps({"data.item.title": 1, "_id": 0})
    assert by_route(de, "/blog/hello", fields=fields).json() == {"data": {"item": {"title": "Hello world"}}}


def test_a_child_page_wins_over_an_item_slug(de: Api, blog: dict[str, Any]) -> None:
    archive = make_page(de, title="Hello", slug="hello", _pid=blog["page"]["_id"])
    body = by_route(de, "/blog/hello").json()
    assert body["_id"] == archive["_id"]
    assert "item" not in body["data"]


def test_slug_field_is_configurable(de: Api) -> None:
    put_model(de, "products", type="collection", fields=[{"name": "name", "type": "text"},
                                                          {"name": "handle", "type": "text"}])
    shoe = create_item(de, "products", {"name": "Shoe", "handle": "red-shoe"})
    page = make_page(de, title="Shop", type="collection", data={"model": "products", "slugField": "handle"})
    body = by_route(de, "/shop/red-shoe").json()
    assert body["_id"] == page["_id"]
    assert body["data"]["item"]["_id"] == shoe["_id"]
    assert page_id_at(de, "/shop/Shoe") is None


def test_slug_field_that_is_not_localized_uses_the_default_value(de: Api) -> None:
    put_model(de, "docs", type="collection", fields=[{"name": "slug", "type": "text"}])
    doc = create_item(de, "docs", {"slug": "intro"})
    make_page(de, title="Docs", slug_de="doku", type="collection", data={"model": "docs"})
    assert by_route(de, "/doku/intro", locale="de").json()["data"]["item"]["_id"] == doc["_id"]


def test_nested_collection_page(de: Api, blog: dict[str, Any]) -> None:
    news = make_page(de, title="News", slug_de="neues")
    update_page(de, blog["page"]["_id"], _pid=news["_id"])
    assert by_route(de, "/news/blog/hello").json()["data"]["item"]["_id"] == blog["hello"]["_id"]
    assert by_route(de, "/neues/blog-de/hallo", locale="de").json()["data"]["item"]["_id"] == blog["hello"]["_id"]
    assert page_id_at(de, "/blog/hello") is None


def test_collection_home_page_resolves_items_at_the_top(de: Api, blog: dict[str, Any]) -> None:
    home = make_page(de, title="Home", slug="", type="collection", data={"model": "posts"})
    body = by_route(de, "/other").json()
    assert body["_id"] == home["_id"]
    assert body["data"]["item"]["_id"] == blog["other"]["_id"]


def test_draft_collection_page_resolves_nothing(de: Api, blog: dict[str, Any]) -> None:
    update_page(de, blog["page"]["_id"], _state=0)
    assert page_id_at(de, "/blog/hello") is None


def test_layout_page_does_not_resolve_items(de: Api, blog: dict[str, Any]) -> None:
    update_page(de, blog["page"]["_id"], type="layout")
    assert page_id_at(de, "/blog/hello") is None


def test_list_of_pages_does_not_carry_collection_items(de: Api, blog: dict[str, Any]) -> None:
    body = de.get("/api/pages/pages").json()
    assert [p["_id"] for p in body] == [blog["page"]["_id"]]
    assert "item" not in body[0]["data"]


# -- singleton pages --------------------------------------------------------------


@pytest.fixture
def site(de: Api) -> dict[str, Any]:
    put_model(de, "site", type="singleton", fields=[{"name": "name", "type": "text", "i18n": True},
                                                   {"name": "motto", "type": "text", "default": "Hi"}])
    item = create_item(de, "site", {"name": "Quire", "name_de": "Quire DE", "motto": "Go"})
    page = make_page(de, title="Site", type="singleton", data={"model": "site", "extra": 1})
    return {"page": page, "item": item}


def test_singleton_page_carries_its_item_everywhere(de: Api, site: dict[str, Any]) -> None:
    page_id = site["page"]["_id"]
    for body in (de.get(f"/api/pages/page/{page_id}").json(), by_route(de, "/site").json(),
                 de.get("/api/pages/pages").json()[0]):
        assert body["_id"] == page_id
        assert body["data"]["model"] == "site" and body["data"]["extra"] == 1
        assert body["data"]["item"]["_id"] == site["item"]["_id"]
        assert body["data"]["item"]["name"] == "Quire"


def test_singleton_item_is_localized(de: Api, site: dict[str, Any]) -> None:
    body = de.get(f"/api/pages/page/{site['page']['_id']}", params={"locale": "de"}).json()
    assert body["data"]["item"]["name"] == "Quire DE"
    assert "name_de" not in body["data"]["item"]


def test_singleton_item_is_not_stored_in_the_page(de: Api, site: dict[str, Any], quire: Any) -> None:
    de.get(f"/api/pages/page/{site['page']['_id']}")
    assert quire.store.collection("pages/pages").get(site["page"]["_id"])["data"] == {"model": "site", "extra": 1}


def test_singleton_item_is_null_without_content_read(de: Api, site: dict[str, Any]) -> None:
    reader = role_key(de, "pages-only", {"pages/read": True})
    body = reader.get(f"/api/pages/page/{site['page']['_id']}").json()
    assert body["data"]["item"] is None
    assert body["data"]["model"] == "site"
    allowed = role_key(de, "site-reader", {"pages/read": True, "content/site/read": True})
    assert allowed.get(f"/api/pages/page/{site['page']['_id']}").json()["data"]["item"]["name"] == "Quire"


def test_singleton_never_saved_answers_its_defaults(de: Api) -> None:
    put_model(de, "footer", type="singleton", fields=[{"name": "text", "type": "text", "default": "(c)"}])
    page = make_page(de, title="Footer", type="singleton", data={"model": "footer"})
    item = de.get(f"/api/pages/page/{page['_id']}").json()["data"]["item"]
    assert item["text"] == "(c)"
    assert item["_model"] == "footer"


def test_singleton_item_is_null_when_its_model_is_gone(de: Api, site: dict[str, Any]) -> None:
    assert de.delete("/api/system/models/site").status_code == 200
    body = de.get(f"/api/pages/page/{site['page']['_id']}").json()
    assert body["data"]["item"] is None


def test_singleton_item_survives_populate(de: Api, site: dict[str, Any]) -> None:
    body = de.get(f"/api/pages/page/{site['page']['_id']}", params={"populate": 1}).json()
    assert body["data"]["item"]["_id"] == site["item"]["_id"]
    assert body["data"]["item"]["name"] == "Quire"


# -- link pages -----------------------------------------------------------------


def test_link_page_carries_its_url(admin: Api) -> None:
    page = make_page(admin, title="GitHub", type="link", data={"url": "https://github.com/quire"})
    body = by_route(admin, "/github").json()
    assert body["_id"] == page["_id"]
    assert body["type"] == "link"
    assert body["data"] == {"url": "https://github.com/quire"}
    assert admin.get(f"/api/pages/page/{page['_id']}").json()["data"]["url"] == "https://github.com/quire"


def test_link_page_url_can_be_localized(de: Api) -> None:
    page = make_page(de, title="Docs", type="link", data={"url": "https://example.org/en"},
                     data_de={"url": "https://example.org/de"})
    body = de.get(f"/api/pages/page/{page['_id']}", params={"locale": "de"}).json()
    assert body["data"]["url"] == "https://example.org/de"


# -- populate ---------------------------------------------------------------------


@pytest.fixture
def linked(de: Api) -> dict[str, Any]:
    put_model(de, "authors", type="collection", fields=[{"name": "name", "type": "text", "i18n": True}])
    ann = create_item(de, "authors", {"name": "Ann", "name_de": "Anna"})
    bob = create_item(de, "authors", {"name": "Bob"})
    draft = create_item(de, "authors", {"name": "Draft", "_state": 0})
    page = make_page(
        de, title="Team", seo={"author": {"_model": "authors", "_id": ann["_id"]}},
        data={"lead": {"_model": "authors", "_id": ann["_id"]},
              "list": [{"_model": "authors", "_id": bob["_id"]}, {"_model": "authors", "_id": draft["_id"]}]},
        layout=[{"component": "card", "data": {"who": {"_model": "authors", "_id": bob["_id"]}},
                 "children": [{"component": "quote", "data": {"by": {"_model": "authors", "_id": ann["_id"]}}}]}],
    )
    return {"page": page, "ann": ann, "bob": bob, "draft": draft}


def test_without_populate_links_stay_links(de: Api, linked: dict[str, Any]) -> None:
    body = de.get(f"/api/pages/page/{linked['page']['_id']}").json()
    assert body["data"] == linked["page"]["data"]
    assert body["layout"] == linked["page"]["layout"]


def test_populate_resolves_links_in_data_and_layout(de: Api, linked: dict[str, Any]) -> None:
    for body in (de.get(f"/api/pages/page/{linked['page']['_id']}", params={"populate": 1}).json(),
                 by_route(de, "/team", populate=1).json(),
                 de.get("/api/pages/pages", params={"populate": 1}).json()[0]):
        assert body["data"]["lead"]["_id"] == linked["ann"]["_id"]
        assert body["data"]["lead"]["name"] == "Ann"
        assert body["data"]["list"][0]["name"] == "Bob"
        assert body["data"]["list"][1] is None  # a draft is not resolved
        assert body["layout"][0]["data"]["who"]["name"] == "Bob"
        assert body["layout"][0]["children"][0]["data"]["by"]["name"] == "Ann"
        assert body["seo"]["author"]["name"] == "Ann"


def test_populate_with_locale(de: Api, linked: dict[str, Any]) -> None:
    body = de.get(f"/api/pages/page/{linked['page']['_id']}", params={"populate": 1, "locale": "de"}).json()
    assert body["data"]["lead"]["name"] == "Anna"
    assert "name_de" not in body["data"]["lead"]


def test_populate_needs_content_read(de: Api, linked: dict[str, Any]) -> None:
    reader = role_key(de, "pages-only", {"pages/read": True})
    body = reader.get(f"/api/pages/page/{linked['page']['_id']}", params={"populate": 1}).json()
    assert body["data"]["lead"] is None
    assert body["layout"][0]["data"]["who"] is None


def test_populate_bad_value_is_400(de: Api, linked: dict[str, Any]) -> None:
    error_of(de.get(f"/api/pages/page/{linked['page']['_id']}", params={"populate": "x"}), 400)
