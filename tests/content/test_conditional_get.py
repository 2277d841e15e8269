"""HTTP caching of the read API (quire.conditional): strong ETags made from
the answer's bytes, 304 for If-None-Match, Cache-Control safe for keyed
answers and configurable per route family for the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.conftest import Api, etag_rev, put_model


def _site(admin: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}])
    ada = admin.post("/api/content/item/authors", json={"data": {"name": "Ada", "_state": 1}}).json()
    post = admin.post("/api/content/item/posts", json={"data": {
        "title": "Hello", "_state": 1, "author": {"_model": "authors", "_id": ada["_id"]}}}).json()
    return ada, post


def test_a_list_answers_304_until_what_it_holds_changes(admin: Api) -> None:
    _site(admin)
    page = {"limit": "10"}
    first = admin.get("/api/content/items/posts", params=page)
    tag = first.headers["etag"]
    assert first.status_code == 200 and tag.startswith('"') and first.headers["cache-control"] == "private, no-cache"
    again = admin.get("/api/content/items/posts", params=page, headers={"if-none-match": tag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
    assert again.headers["cache-control"] == "private, no-cache"
    assert admin.get("/api/content/items/posts", params=page, headers={"if-none-match": f'W/{tag}, "x"'}
                     ).status_code == 304  # weak and listed tags match as RFC 9110 says
    admin.post("/api/content/item/posts", json={"data": {"title": "Second", "_state": 1}})
    changed = admin.get("/api/content/items/posts", params=page, headers={"if-none-match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag


def test_an_items_tag_changes_when_a_populated_link_changes_though_its_revision_does_not(admin: Api) -> None:
    ada, post = _site(admin)
    url, params = f"/api/content/item/posts/{post['_id']}", {"populate": "1"}
    before = admin.get(url, params=params)
    assert etag_rev(before) == post["_rev"]
    admin.post("/api/content/item/authors", json={"data": {"_id": ada["_id"], "name": "Ada Lovelace"}})
    after = admin.get(url, params=params, headers={"if-none-match": before.headers["etag"]})
    assert after.status_code == 200 and after.json()["author"]["name"] == "Ada Lovelace"
    assert etag_rev(after) == post["_rev"] and after.headers["etag"] != before.headers["etag"]
    # the read's tag still names the revision a save may ask for
    saved = admin.post("/api/content/item/posts", json={"data": {"_id": post["_id"], "title": "Edited"}},
                       headers={"if-match": after.headers["etag"]})
    assert saved.status_code == 200, saved.text
    stale = admin.post("/api/content/item/posts", json={"data": {"_id": post["_id"], "title": "Lost"}},
                       headers={"if-match": after.headers["etag"]})
    assert stale.status_code == 409


def test_pages_menus_translations_and_assets_metadata_answer_304(admin: Api) -> None:
    page = admin.post("/api/pages/page", json={"data": {"type": "layout", "title": "About", "_state": 1}}).json()
    admin.post("/api/pages/menu", json={"data": {"name": "main", "links": []}})
    admin.put("/api/l10n/project/site", json={"locales": ["en"], "keys": {"hi": {"en": "Hi"}}})
    for url in (f"/api/pages/page/{page['_id']}", "/api/pages/menu/main", "/api/pages/routes",
                "/api/l10n/project/site", "/api/assets", "/api/pages/sitemap"):
        first = admin.get(url)
        assert first.status_code == 200 and "etag" in first.headers, url
        assert admin.get(url, headers={"if-none-match": first.headers["etag"]}).status_code == 304, url


def test_a_streamed_list_has_no_tag_and_writes_are_not_touched(admin: Api) -> None:
    _site(admin)
    streamed = admin.get("/api/content/items/posts")  # no limit: sent as it is read
    assert streamed.status_code == 200 and "etag" not in streamed.headers
    made = admin.post("/api/content/item/posts", json={"data": {"title": "New"}})
    assert made.headers["etag"] == f'"{made.json()["_rev"]}"'  # a save's answer names its revision only


def test_answers_without_a_key_take_their_familys_cache_control(tmp_path: Path) -> None:
    env = {"QUIRE_SERVER_QUIET": "1", "QUIRE_API_CACHE_CONTROL": '{"content": "public, max-age=60"}'}
    app = build_app(load_settings(tmp_path, env=env))
    quire = app.state.quire
    try:
        client = TestClient(app)
        key = quire.auth.create_key("a", "admin")["key"]
        client.put("/api/system/models/posts", headers={"api-key": key},
                   json={"name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        client.put("/api/system/roles/public", headers={"api-key": key},
                   json={"permissions": {"content/posts/read": True, "pages/read": True}})
        public = client.get("/api/content/items/posts", params={"limit": "5"})
        assert public.headers["cache-control"] == "public, max-age=60"
        assert client.get("/api/pages/routes").headers["cache-control"] == "no-cache"  # the default
        keyed = client.get("/api/content/items/posts", params={"limit": "5"}, headers={"api-key": key})
        assert keyed.headers["cache-control"] == "private, no-cache"  # never shared, whatever is configured
    finally:
        quire.close()
