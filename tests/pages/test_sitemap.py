"""GET /api/pages/sitemap (JSON: published non-link pages, then the items of
collection pages) and GET /api/pages/sitemap.xml (sitemaps.org with hreflang
alternates, absolute URLs from the configured site URL)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire
from quire.config import load_settings
from quire.errors import ConfigError
from tests.conftest import Api, create_item, put_model, role_key
from tests.pages.conftest import (
    DE,
    W3C,
    by_route,
    custom_app,
    error_of,
    make_page,
    set_locales,
    update_page,
    w3c,
)

NS = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9", "x": "http://www.w3.org/1999/xhtml"}


def build_site(api: Api) -> dict[str, Any]:
    """Home, About (translated) with a child, a draft, a link page, and a
    collection page /blog (de: /blog-de) over `posts` with a published
    item, an untranslated item and a draft item."""
    set_locales(api, DE)
    put_model(api, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                       {"name": "slug", "type": "text", "i18n": True}])
    site: dict[str, Any] = {}
    site["home"] = make_page(api, title="Home", slug="")
    site["about"] = make_page(api, title="About", slug_de="ueber-uns")
    site["team"] = make_page(api, title="Team", _pid=site["about"]["_id"])
    site["draft"] = make_page(api, title="Draft", _state=0)
    site["link"] = make_page(api, title="Out", type="link", data={"url": "https://example.org"})
    site["blog"] = make_page(api, title="Blog", slug_de="blog-de", type="collection", data={"model": "posts"})
    site["hello"] = create_item(api, "posts", {"title": "Hello", "slug": "hello", "slug_de": "hallo"})
    site["plain"] = create_item(api, "posts", {"title": "Plain", "slug": "plain"})
    site["secret"] = create_item(api, "posts", {"title": "Secret", "slug": "secret", "_state": 0})
    site["noslug"] = create_item(api, "posts", {"title": "No slug"})
    return site


PAGE_ROUTES = [
    ({"default": "/", "de": "/"}, "layout"),
    ({"default": "/about", "de": "/ueber-uns"}, "layout"),
    ({"default": "/about/team", "de": "/ueber-uns/team"}, "layout"),
    ({"default": "/blog", "de": "/blog-de"}, "collection"),
]
ITEM_ROUTES = [
    {"default": "/blog/hello", "de": "/blog-de/hallo"},
    {"default": "/blog/plain", "de": "/blog-de/plain"},
]


# -- JSON ---------------------------------------------------------------------


def test_sitemap_lists_pages_then_items(admin: Api, quire: Quire) -> None:
    site = build_site(admin)
    response = admin.get("/api/pages/sitemap")
    assert response.status_code == 200
    body = response.json()
    assert [(e["routes"], e["type"]) for e in body[:4]] == PAGE_ROUTES
    for entry, name in zip(body[:4], ["home", "about", "team", "blog"], strict=True):
        assert set(entry) == {"routes", "type", "lastmod"}
        assert W3C.match(entry["lastmod"])
        assert entry["lastmod"] == w3c(quire.store.collection("pages/pages").get(site[name]["_id"])["_modified"])
    items = body[4:]
    assert [e["routes"] for e in items] == ITEM_ROUTES
    for entry, name in zip(items, ["hello", "plain"], strict=True):
        assert set(entry) == {"routes", "type", "model", "lastmod"}
        assert (entry["type"], entry["model"]) == ("item", "posts")
        assert entry["lastmod"] == w3c(site[name]["_modified"])


def test_every_sitemap_route_resolves(admin: Api) -> None:
    site = build_site(admin)
    for entry in admin.get("/api/pages/sitemap").json():
        for locale, route in entry["routes"].items():
            params = {} if locale == "default" else {"locale": locale}
            response = by_route(admin, route, **params)
            assert response.status_code == 200, (locale, route)
            if entry["type"] == "item":
                assert response.json()["_id"] == site["blog"]["_id"]
                assert response.json()["data"]["item"]["_id"] in (site["hello"]["_id"], site["plain"]["_id"])


def test_sitemap_lists_only_item_routes_that_resolve(admin: Api) -> None:
    build_site(admin)
    create_item(admin, "posts", {"title": "Slashed", "slug": "a/b"})
    create_item(admin, "posts", {"title": "Spaced", "slug": "x y"})
    entries = admin.get("/api/pages/sitemap").json()
    # actual: /blog/a/b is listed and answers 404 Page not found
    for entry in entries:
        assert by_route(admin, entry["routes"]["default"]).status_code == 200, entry["routes"]["default"]


def test_sitemap_items_need_content_read(admin: Api) -> None:
    build_site(admin)
    reader = role_key(admin, "pages-only", {"pages/read": True})
    body = reader.get("/api/pages/sitemap").json()
    assert [(e["routes"], e["type"]) for e in body] == PAGE_ROUTES


def test_sitemap_follows_publishing_and_renames(admin: Api) -> None:
    site = build_site(admin)
    update_page(admin, site["about"]["_id"], slug="company")
    update_page(admin, site["draft"]["_id"], _state=1)
    create_item(admin, "posts", {"_id": site["secret"]["_id"], "_state": 1})
    body = admin.get("/api/pages/sitemap").json()
    routes = [e["routes"]["default"] for e in body]
    assert routes == ["/", "/company", "/company/team", "/draft", "/blog", "/blog/hello", "/blog/plain",
                      "/blog/secret"]


def test_draft_collection_page_lists_no_items(admin: Api) -> None:
    site = build_site(admin)
    update_page(admin, site["blog"]["_id"], _state=0)
    body = admin.get("/api/pages/sitemap").json()
    assert [e["routes"]["default"] for e in body] == ["/", "/about", "/about/team"]


def test_sitemap_without_pages(admin: Api) -> None:
    assert admin.get("/api/pages/sitemap").json() == []


def test_sitemap_is_capped(data_dir: Path) -> None:
    with custom_app(data_dir, {"QUIRE_PAGES_MAX_SITEMAP_URLS": "5"}) as (api, _):
        build_site(api)
        body = api.get("/api/pages/sitemap").json()
        assert [e["routes"]["default"] for e in body] == ["/", "/about", "/about/team", "/blog", "/blog/hello"]


# -- XML ------------------------------------------------------------------------


def parse(response: Any) -> list[dict[str, Any]]:
    """[{loc, lastmod, alternates: {hreflang: href}}] of a sitemap.xml answer."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/xml")
    root = ET.fromstring(response.content)
    assert root.tag == "{http://www.sitemaps.org/schemas/sitemap/0.9}urlset"
    out = []
    for url in root.findall("s:url", NS):
        links = url.findall("x:link", NS)
        assert all(link.get("rel") == "alternate" for link in links)
        out.append({
            "loc": url.findtext("s:loc", namespaces=NS),
            "lastmod": url.findtext("s:lastmod", namespaces=NS),
            "alternates": {link.get("hreflang"): link.get("href") for link in links},
        })
    return out


def test_sitemap_xml_with_a_site_url(data_dir: Path) -> None:
    with custom_app(data_dir, {"QUIRE_PAGES_SITE_URL": "https://example.com/"}) as (api, _):
        build_site(api)
        json_entries = api.get("/api/pages/sitemap").json()
        urls = parse(api.get("/api/pages/sitemap.xml"))
        locs = [u["loc"] for u in urls]
        assert locs == [
            "https://example.com/", "https://example.com/de/",
            "https://example.com/about", "https://example.com/de/ueber-uns",
            "https://example.com/about/team", "https://example.com/de/ueber-uns/team",
            "https://example.com/blog", "https://example.com/de/blog-de",
            "https://example.com/blog/hello", "https://example.com/de/blog-de/hallo",
            "https://example.com/blog/plain", "https://example.com/de/blog-de/plain",
        ]
        for i, entry in enumerate(json_entries):
            pair = urls[2 * i: 2 * i + 2]
            expected = {
                "en": "https://example.com" + entry["routes"]["default"],
                "de": "https://example.com/de" + entry["routes"]["de"],
                "x-default": "https://example.com" + entry["routes"]["default"],
            }
            for url in pair:
                assert url["alternates"] == expected
                assert url["lastmod"] == entry["lastmod"]


def test_sitemap_xml_default_language_and_no_locale_prefix(data_dir: Path) -> None:
    env = {"QUIRE_PAGES_SITE_URL": "https://example.com", "QUIRE_PAGES_DEFAULT_LANGUAGE": "en-GB",
           "QUIRE_PAGES_LOCALE_PREFIX": "false"}
    with custom_app(data_dir, env) as (api, _):
        build_site(api)
        urls = parse(api.get("/api/pages/sitemap.xml"))
        by_loc: dict[str, list[dict[str, str]]] = {}
        for url in urls:
            by_loc.setdefault(url["loc"], []).append(url["alternates"])
        # pages whose locales share one URL are written once, without alternates
        assert by_loc["https://example.com/"] == [{}]
        assert by_loc["https://example.com/blog/plain"] == [{
            "en-GB": "https://example.com/blog/plain", "de": "https://example.com/blog-de/plain",
            "x-default": "https://example.com/blog/plain"}]
        about = {"en-GB": "https://example.com/about", "de": "https://example.com/ueber-uns",
                 "x-default": "https://example.com/about"}
        assert by_loc["https://example.com/about"] == [about]
        assert by_loc["https://example.com/ueber-uns"] == [about]
        assert len(urls) == len(by_loc)  # every URL once


def test_sitemap_xml_without_locales_has_no_alternates(data_dir: Path) -> None:
    with custom_app(data_dir, {"QUIRE_PAGES_SITE_URL": "https://example.com"}) as (api, _):
        make_page(api, title="Home", slug="")
        make_page(api, title="About")
        urls = parse(api.get("/api/pages/sitemap.xml"))
        assert [(u["loc"], u["alternates"]) for u in urls] == [
            ("https://example.com/", {}), ("https://example.com/about", {})]


def test_sitemap_xml_falls_back_to_the_public_url(data_dir: Path) -> None:
    with custom_app(data_dir, {"QUIRE_SERVER_PUBLIC_URL": "https://public.example"}) as (api, _):
        make_page(api, title="About")
        assert [u["loc"] for u in parse(api.get("/api/pages/sitemap.xml"))] == ["https://public.example/about"]


def test_site_url_wins_over_the_public_url(data_dir: Path) -> None:
    env = {"QUIRE_SERVER_PUBLIC_URL": "https://public.example", "QUIRE_PAGES_SITE_URL": "https://site.example/"}
    with custom_app(data_dir, env) as (api, _):
        make_page(api, title="About")
        assert [u["loc"] for u in parse(api.get("/api/pages/sitemap.xml"))] == ["https://site.example/about"]


def test_sitemap_xml_falls_back_to_the_request_base_url(admin: Api) -> None:
    set_locales(admin, DE)
    make_page(admin, title="About", slug_de="ueber")
    urls = parse(admin.get("/api/pages/sitemap.xml"))
    assert [u["loc"] for u in urls] == ["http://testserver/about", "http://testserver/de/ueber"]
    assert urls[0]["alternates"]["x-default"] == "http://testserver/about"


def test_sitemap_xml_percent_encodes_urls(data_dir: Path) -> None:
    with custom_app(data_dir, {"QUIRE_PAGES_SITE_URL": "https://example.com"}) as (api, _):
        make_page(api, title="Grüße", slug="grüße")
        make_page(api, title="A&B", slug="a&b")
        make_page(api, title="Q", slug="it's<1>")
        urls = parse(api.get("/api/pages/sitemap.xml"))
        locs = [u["loc"] for u in urls]
        assert locs[0] == "https://example.com/gr%C3%BC%C3%9Fe"
        assert locs[1] == "https://example.com/a&b"  # escaped in the XML, read back by the parser
        assert "<" not in locs[2] and locs[2].startswith("https://example.com/it")
        assert all(loc.isascii() and " " not in loc for loc in locs)


def test_sitemap_xml_is_capped(data_dir: Path) -> None:
    env = {"QUIRE_PAGES_SITE_URL": "https://example.com", "QUIRE_PAGES_MAX_SITEMAP_URLS": "3"}
    with custom_app(data_dir, env) as (api, _):
        for title in "ABCDE":
            make_page(api, title=title)
        assert [u["loc"] for u in parse(api.get("/api/pages/sitemap.xml"))] == [
            "https://example.com/a", "https://example.com/b", "https://example.com/c"]


def test_sitemap_xml_empty(admin: Api) -> None:
    assert parse(admin.get("/api/pages/sitemap.xml")) == []


def test_sitemap_xml_needs_pages_read(admin: Api, anon: Api) -> None:
    make_page(admin, title="About")
    response = anon.get("/api/pages/sitemap.xml")
    assert error_of(response, 401) == {"error": "Authentication failed"}
    assert admin.put("/api/system/roles/public", json={"permissions": {"pages/read": True}}).status_code == 200
    assert [u["loc"] for u in parse(anon.get("/api/pages/sitemap.xml"))] == ["http://testserver/about"]


@pytest.mark.parametrize("bad", ["example.com", "ftp://example.com"])
def test_site_url_must_be_http(data_dir: Path, bad: str) -> None:
    with pytest.raises(ConfigError, match="pages.site_url"):
        load_settings(data_dir, env={"QUIRE_PAGES_SITE_URL": bad})
