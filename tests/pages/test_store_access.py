"""Pages, menus and settings live in the store collections `pages/pages`,
`pages/menus` and `pages/settings`: what the API writes is there, and what
server-side code writes there (or through the services) the API reads."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from quire.app import Quire
from quire.errors import Conflict, Forbidden, NotFound
from quire.ids import new_id
from quire.pages.service import PageOptions
from tests.conftest import Api
from tests.pages.conftest import by_route, make_page, page_id_at


def test_api_writes_land_in_the_store_collections(de: Api, quire: Quire) -> None:
    page = make_page(de, title="About", title_de="Über uns")
    menu = de.post("/api/pages/menu", json={"data": {"name": "main", "links": [
        {"title": "About", "url": f"pages://{page['_id']}"}]}}).json()
    pages = quire.store.collection("pages/pages").find()
    assert pages == [page]
    assert pages[0]["_r"] == "/about" and pages[0]["_r_de"] == "/uber-uns"
    menus = quire.store.collection("pages/menus").find()
    assert menus == [menu]
    assert menus[0]["links"][0]["url"] == f"pages://{page['_id']}"
    assert "route" not in menus[0]["links"][0]  # routes are answered, never stored


def test_documents_written_by_server_code_are_read_by_the_api(de: Api, quire: Quire) -> None:
    now = int(time.time())
    page_id = new_id()
    quire.store.collection("pages/pages").replace({
        "_id": page_id, "type": "layout", "title": "Imported", "title_de": "Importiert", "slug": "imported",
        "slug_de": "importiert", "data": {}, "seo": {}, "layout": [], "_pid": None, "_o": 0, "_state": 1,
        "_created": now, "_modified": now, "_cby": None, "_mby": None, "_r": "/imported", "_r_de": "/importiert",
    })
    quire.store.collection("pages/menus").replace({
        "_id": new_id(), "name": "footer", "label": "Footer", "_created": now, "_modified": now,
        "links": [{"title": "", "url": f"pages://{page_id}"}, {"title": "Off", "url": "/off", "active": False}],
    })
    assert page_id_at(de, "/imported") == page_id
    body = by_route(de, "/importiert", locale="de").json()
    assert (body["_id"], body["title"]) == (page_id, "Importiert")
    links = de.get("/api/pages/menu/footer", params={"locale": "de"}).json()["links"]
    assert [(link["title"], link["route"]) for link in links] == [("Importiert", "/importiert")]
    # a child made through the API builds on the stored route
    kid = make_page(de, title="Kid", _pid=page_id)
    assert (kid["_r"], kid["_r_de"]) == ("/imported/kid", "/importiert/kid")


@pytest.mark.anyio
async def test_services_write_and_read_server_side(de: Api, quire: Quire, admin_key: str) -> None:
    identity = quire.auth.identify(admin_key)
    top = await quire.pages.save({"title": "Services", "slug_de": "dienste"}, identity)
    kid = await quire.pages.save({"title": "Kid", "_pid": top["_id"]}, identity)
    assert quire.store.collection("pages/pages").get(kid["_id"]) == kid
    found = quire.pages.by_route("/dienste/kid", PageOptions(locale="de"), identity)
    assert found["_id"] == kid["_id"]
    assert [e["route"] for e in quire.pages.routes("de", identity)["de"]] == ["/dienste", "/dienste/kid"]
    with pytest.raises(Conflict):
        await quire.pages.save({"title": "Services"}, identity)
    menu = await quire.menus.save({"name": "side", "links": [{"url": f"pages://{kid['_id']}"}]}, identity)
    assert quire.store.collection("pages/menus").get(menu["_id"]) == menu
    assert quire.menus.get("side", "de", identity)["links"][0]["route"] == "/dienste/kid"
    settings = await quire.menus.save_settings({"meta": {"a": 1}}, identity)
    assert settings["meta"] == {"a": 1}
    assert quire.store.collection("pages/settings").get("settings")["meta"] == {"a": 1}  # type: ignore[index]
    await quire.pages.delete(top["_id"], identity)
    assert quire.store.collection("pages/pages").find() == []
    with pytest.raises(NotFound):
        quire.pages.by_id(top["_id"], PageOptions(), identity)


@pytest.mark.anyio
async def test_services_check_permissions(admin: Api, quire: Quire) -> None:
    reader = admin.with_key(None)
    response = admin.put("/api/system/roles/reader", json={"permissions": {"pages/read": True}})
    assert response.status_code == 200
    key = admin.post("/api/system/keys", json={"name": "r", "role": "reader"}).json()["key"]
    identity = quire.auth.identify(key)
    with pytest.raises(Forbidden):
        await quire.pages.save({"title": "No"}, identity)
    assert quire.pages.find(PageOptions(), identity) == ([], None)
    assert reader.get("/api/pages/pages").status_code == 401


@pytest.mark.anyio
async def test_concurrent_saves_of_one_route_store_one_page(quire: Quire, admin_key: str) -> None:
    """Before-handlers that await let other saves interleave; the route check
    and the write still happen as one unit per save."""
    identity = quire.auth.identify(admin_key)

    async def slow(**_: Any) -> None:
        await asyncio.sleep(0.01)

    quire.events.on("pages.page.save.before", slow)
    results = await asyncio.gather(*(quire.pages.save({"title": "Same"}, identity) for _ in range(5)),
                                   return_exceptions=True)
    saved = [r for r in results if isinstance(r, dict)]
    assert len(saved) == 1
    assert all(isinstance(r, Conflict) for r in results if not isinstance(r, dict))
    assert [p["_id"] for p in quire.store.collection("pages/pages").find()] == [saved[0]["_id"]]


def test_store_documents_answer_unchanged_without_locale(de: Api, quire: Quire) -> None:
    page: dict[str, Any] = make_page(de, title="Raw", title_de="Roh", data={"a": 1}, data_de={"a": 2})
    assert de.get(f"/api/pages/page/{page['_id']}").json() == quire.store.collection("pages/pages").get(page["_id"])
