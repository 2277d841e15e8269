"""Renaming a locale code: every localized value, page title/slug/route,
menu link title, translation and search locale of the code moves to the
new one, as a job recorded in the store that a re-run finishes after a
crash half-way, with nothing lost."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from quire.content.locales import RENAME, LocaleRenamer
from tests.conftest import Api, create_item, put_model


def _site(admin: Api) -> dict[str, Any]:
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"},
                                                  {"i18n": "fr", "name": "Français"}]).status_code == 200
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True},
                                                        {"name": "body", "type": "text"}])
    put_model(admin, "tags", type="collection", fields=[{"name": "name", "type": "text", "i18n": True}])
    post = create_item(admin, "posts", {"title": "Harbour", "title_de": "Hafen", "title_fr": "Port", "body": "x"})
    create_item(admin, "tags", {"name": "Sea", "name_de": "Meer"})
    page = admin.post("/api/pages/page", json={"data": {"title": "About", "title_de": "Über uns",
                                                        "slug_de": "ueber-uns"}}).json()
    assert admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [
        {"title": "About", "title_de": "Über", "url": f"pages://{page['_id']}",
         "children": [{"title": "Home", "title_de": "Start", "url": "/"}]}]}}).status_code == 200
    assert admin.post("/api/pages/settings", json={"data": {"seo_de": {"title": "Seite"}}}).status_code == 200
    assert admin.put("/api/l10n/project/site", json={"locales": ["en", "de"], "keys": {
        "hello": {"en": "Hello", "de": "Hallo"}}}).status_code == 200
    assert admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title"],
                                                           "locales": ["de"]}).status_code == 200
    return {"post": post, "page": page}


def _check_renamed(admin: Api, site: dict[str, Any]) -> None:
    codes = [loc["i18n"] for loc in admin.get("/api/system/locales").json()]
    assert codes == ["default", "de-DE", "fr"]
    post = admin.get(f"/api/content/item/posts/{site['post']['_id']}", params={"locale": "de-DE"}).json()
    assert post["title"] == "Hafen"
    raw = admin.get(f"/api/content/item/posts/{site['post']['_id']}").json()
    assert raw["title_de-DE"] == "Hafen" and "title_de" not in raw and raw["title_fr"] == "Port"
    tag = admin.get("/api/content/items/tags", params={"locale": "de-DE"}).json()
    assert [t["name"] for t in tag] == ["Meer"]
    page = admin.get(f"/api/pages/page/{site['page']['_id']}").json()
    assert page["title_de-DE"] == "Über uns" and page["_r_de-DE"] == "/ueber-uns" and "title_de" not in page
    routed = admin.get("/api/pages/page", params={"route": "/ueber-uns", "locale": "de-DE"})
    assert routed.status_code == 200 and routed.json()["title"] == "Über uns"
    menu = admin.get("/api/pages/menu/main", params={"locale": "de-DE"}).json()
    assert menu["links"][0]["title"] == "Über" and menu["links"][0]["children"][0]["title"] == "Start"
    settings = admin.get("/api/pages/settings", params={"locale": "de-DE"}).json()
    assert settings["seo"]["title"] == "Seite"
    projects = admin.get("/api/l10n/projects").json()
    assert [p["locales"] for p in projects] == [["en", "de-DE"]]
    assert admin.get("/api/l10n/project/site/de-DE").json() == {"hello": "Hallo"}
    index = admin.get("/api/searchmod/indexes/posts").json()
    assert index["locales"] == ["de-DE"]
    hits = admin.get("/api/searchmod/search/posts", params={"q": "hafen", "locale": "de-DE"}).json()
    assert [h["_id"] for h in hits["hits"]] == [site["post"]["_id"]]


def test_a_rename_moves_every_value_of_the_code(quire: Any, admin: Api) -> None:
    site = _site(admin)
    renamer: LocaleRenamer = quire.locales.renamer
    asyncio.run(renamer.start("de", "de-DE"))
    assert asyncio.run(renamer.run()) is True
    assert renamer.progress()["state"] == "done"  # type: ignore[index]
    _check_renamed(admin, site)


def test_a_crash_half_way_is_finished_by_a_rerun(quire: Any, admin: Api) -> None:
    site = _site(admin)
    renamer: LocaleRenamer = quire.locales.renamer
    asyncio.run(renamer.start("de", "de-DE"))
    # the worker dies in the middle of the pages' part: its menus unit raises
    pages = next(p for p in renamer.parts if p.name == "pages")

    def dying(unit: str, old: str, new: str) -> None:
        if unit == "menus":
            raise KeyboardInterrupt("killed")
        pages.rename(unit, old, new)

    renamer.parts[renamer.parts.index(pages)] = replace(pages, rename=dying)
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(renamer.run())
    job = quire.store.collection("system/config").get(RENAME)
    assert job["state"] == "running"
    assert job["done"] == {"content:posts": "done", "content:tags": "done", "pages:pages": "done"}
    assert admin.get("/api/system/locales").json()[1]["i18n"] == "de"  # switched only at the end
    raw = admin.get(f"/api/content/item/posts/{site['post']['_id']}").json()
    assert raw["title_de-DE"] == "Hafen"  # done units stay done
    # a new process: another runner takes over once the dead one's beat is stale
    renamer.parts[renamer.parts.index(replace(pages, rename=dying))] = pages
    fresh = LocaleRenamer(quire.locales)
    fresh.parts = renamer.parts
    assert asyncio.run(fresh.run()) is False  # the dead runner's lease is still fresh
    quire.store.collection("system/config").update(RENAME, {"beat": 0})
    assert asyncio.run(fresh.run()) is True
    _check_renamed(admin, site)
    assert asyncio.run(fresh.run()) is False  # nothing left


def test_refusals(quire: Any, admin: Api) -> None:
    _site(admin)
    renamer: LocaleRenamer = quire.locales.renamer
    from quire.errors import BadRequest
    for old, new, message in (("xx", "de-DE", "not a locale"), ("de", "fr", "exists already"),
                              ("de", "no way", "not a locale code"), ("de", "default", "not a locale code")):
        with pytest.raises(BadRequest, match=message):
            asyncio.run(renamer.start(old, new))
    asyncio.run(renamer.start("de", "de-DE"))
    with pytest.raises(BadRequest, match="being renamed already"):
        asyncio.run(renamer.start("fr", "fr-FR"))
    refused = admin.put("/api/system/locales", json=[{"i18n": "it", "name": "Italiano"}])
    assert refused.status_code == 400 and "being renamed" in refused.text


def test_a_server_start_resumes_a_rename_left_running(quire: Any, admin: Api) -> None:
    site = _site(admin)
    renamer: LocaleRenamer = quire.locales.renamer
    asyncio.run(renamer.start("de", "de-DE"))

    async def start() -> None:
        renamer.resume()  # what the server's start hook runs
        assert renamer._task is not None
        await renamer._task

    asyncio.run(start())
    _check_renamed(admin, site)
