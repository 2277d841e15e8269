"""Routes, sitemaps and menus are answered from a cache kept until the next
commit: every write path (pages, menus, content items, locales, roles,
server-side store writes) shows in the very next read."""

from __future__ import annotations

from typing import Any

from quire.app import Quire
from tests.conftest import Api, create_item, put_model, role_key
from tests.pages.conftest import DE, make_page, set_locales, update_page


def snapshot(api: Api) -> dict[str, Any]:
    return {
        "routes": api.get("/api/pages/routes").json(),
        "routes_de": api.get("/api/pages/routes", params={"locale": "de"}).json(),
        "sitemap": api.get("/api/pages/sitemap").json(),
        "xml": api.get("/api/pages/sitemap.xml").text,
        "menus": api.get("/api/pages/menus").json(),
        "menu_de": api.get("/api/pages/menu/main", params={"locale": "de"}).json(),
    }


def site(admin: Api) -> dict[str, Any]:
    set_locales(admin, DE)
    about = make_page(admin, title="About", slug_de="ueber")
    team = make_page(admin, title="Team", _pid=about["_id"])
    assert admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [
        {"title": "", "url": f"pages://{about['_id']}"}, {"title": "", "url": f"pages://{team['_id']}"}]}}
    ).status_code == 200
    return {"about": about, "team": team}


def test_page_writes_show_at_once(admin: Api) -> None:
    pages = site(admin)
    before = snapshot(admin)
    assert snapshot(admin) == before  # answered again the same
    update_page(admin, pages["about"]["_id"], slug="company", slug_de="firma", title="Company")
    after = snapshot(admin)
    assert [e["route"] for e in after["routes"]["default"]] == ["/company", "/company/team"]
    assert [e["route"] for e in after["routes_de"]["de"]] == ["/firma", "/firma/team"]
    assert [e["routes"]["de"] for e in after["sitemap"]] == ["/firma", "/firma/team"]
    assert "/de/firma/team" in after["xml"] and "/about" not in after["xml"]
    assert [link["title"] for link in after["menus"][0]["links"]] == ["Company", "Team"]
    assert [link["route"] for link in after["menu_de"]["links"]] == ["/firma", "/firma/team"]
    update_page(admin, pages["team"]["_id"], _state=0)
    after = snapshot(admin)
    assert [e["route"] for e in after["routes"]["default"]] == ["/company"]
    assert len(after["menu_de"]["links"]) == 1
    admin.delete(f"/api/pages/page/{pages['about']['_id']}")
    after = snapshot(admin)
    assert after["routes"]["default"] == [] and after["sitemap"] == [] and after["menus"][0]["links"] == []


def test_menu_writes_show_at_once(admin: Api) -> None:
    site(admin)
    snapshot(admin)
    admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [{"title": "X", "url": "/x"}]}})
    admin.post("/api/pages/menu", json={"data": {"name": "aside"}})
    after = snapshot(admin)
    assert [m["name"] for m in after["menus"]] == ["aside", "main"]
    assert [link["route"] for link in after["menu_de"]["links"]] == ["/x"]
    admin.delete("/api/pages/menu/main")
    assert admin.get("/api/pages/menu/main").status_code == 404
    assert [m["name"] for m in admin.get("/api/pages/menus").json()] == ["aside"]


def test_content_writes_show_in_the_sitemap(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "slug", "type": "text"}])
    make_page(admin, title="Blog", type="collection", data={"model": "posts"})
    draft = create_item(admin, "posts", {"slug": "soon", "_state": 0})
    assert [e["routes"]["default"] for e in admin.get("/api/pages/sitemap").json()] == ["/blog"]
    create_item(admin, "posts", {"_id": draft["_id"], "_state": 1})
    assert [e["routes"]["default"] for e in admin.get("/api/pages/sitemap").json()] == ["/blog", "/blog/soon"]


def test_role_and_locale_changes_show_at_once(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "slug", "type": "text"}])
    make_page(admin, title="Blog", type="collection", data={"model": "posts"})
    create_item(admin, "posts", {"slug": "hello"})
    reader = role_key(admin, "reader", {"pages/read": True})
    assert len(reader.get("/api/pages/sitemap").json()) == 1
    assert len(admin.get("/api/pages/sitemap").json()) == 2
    role_key(admin, "reader", {"pages/read": True, "content/posts/read": True})
    assert len(reader.get("/api/pages/sitemap").json()) == 2
    assert list(reader.get("/api/pages/routes").json()) == ["default"]
    set_locales(admin, DE)
    assert list(reader.get("/api/pages/routes").json()) == ["default", "de"]
    assert list(reader.get("/api/pages/sitemap").json()[0]["routes"]) == ["default", "de"]
    role_key(admin, "reader", {"content/posts/read": True})
    assert reader.get("/api/pages/routes").status_code == 403


def test_server_side_store_writes_show_at_once(admin: Api, quire: Quire) -> None:
    pages = site(admin)
    snapshot(admin)
    coll = quire.store.collection("pages/pages")
    doc = coll.get(pages["team"]["_id"])
    assert doc is not None
    coll.replace({**doc, "_state": 0})
    assert [e["route"] for e in admin.get("/api/pages/routes").json()["default"]] == ["/about"]
    assert len(admin.get("/api/pages/menu/main").json()["links"]) == 1


def test_answers_handed_to_server_code_do_not_change_later_answers(admin: Api, quire: Quire,
                                                                      admin_key: str) -> None:
    site(admin)
    identity = quire.auth.identify(admin_key)
    expected = snapshot(admin)
    quire.pages.routes(None, identity)["default"].clear()
    quire.pages.sitemap(identity).clear()
    quire.menus.get("main", "de", identity)["links"].clear()
    quire.menus.all(None, identity).clear()
    # actual: GET /api/pages/routes answers {"default": [], "de": [...]}, /sitemap [], /menus [], ...
    assert snapshot(admin) == expected
