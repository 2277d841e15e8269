"""Menus: POST /api/pages/menu creates or replaces a menu by name, links to
pages are stored as `pages://<id>` and answered with the page's route in the
request's locale; inactive links and links to unpublished pages are left
out with their children."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, role_key
from tests.pages.conftest import error_of, make_page, update_page


def post_menu(api: Api, data: Any) -> Any:
    return api.post("/api/pages/menu", json={"data": data})


def make_menu(api: Api, **data: Any) -> dict[str, Any]:
    response = post_menu(api, data)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def menus_stored(quire: Quire) -> list[dict[str, Any]]:
    return quire.store.collection("pages/menus").find()


@pytest.fixture
def site(tree: dict[str, dict[str, Any]], de: Api) -> dict[str, Any]:
    """A menu over the tree fixture's pages, external URLs, in two locales."""
    links = [
        {"title": "", "url": f"pages://{tree['home']['_id']}"},
        {"title": "", "url": f"pages://{tree['about']['_id']}", "children": [
            {"title": "Our team", "title_de": "Unser Team", "url": f"pages://{tree['team']['_id']}",
             "children": [{"url": f"pages://{tree['ann']['_id']}"}]},
            {"title": "Jobs", "url": f"pages://{tree['jobs']['_id']}", "active": False,
             "children": [{"title": "Hidden", "url": "https://example.org/hidden"}]},
        ]},
        {"title": "Docs", "title_de": "Doku", "url": "https://example.org/docs", "target": "_blank",
         "data": {"icon": "book"}},
        {"title": "Mail", "url": "mailto:hello@example.org", "active": True},
        {"title": "Search", "url": "/search?q=1"},
    ]
    menu = make_menu(de, name="main", label="Main menu", links=links)
    return {"menu": menu, "links": links, "tree": tree}


def test_menu_is_stored_as_sent(de: Api, site: dict[str, Any], quire: Quire) -> None:
    menu = site["menu"]
    assert menu["name"] == "main" and menu["label"] == "Main menu"
    assert menu["links"] == site["links"]
    assert len(menu["_id"]) == 24
    assert isinstance(menu["_created"], int) and isinstance(menu["_modified"], int)
    assert menus_stored(quire) == [menu]


def test_menu_answers_page_routes_and_urls(de: Api, site: dict[str, Any]) -> None:
    response = de.get("/api/pages/menu/main")
    assert response.status_code == 200
    body = response.json()
    assert (body["_id"], body["name"], body["label"]) == (site["menu"]["_id"], "main", "Main menu")
    links = body["links"]
    assert [link["route"] for link in links] == ["/", "/about", "https://example.org/docs",
                                                   "mailto:hello@example.org", "/search?q=1"]
    # an empty title takes the page's title
    assert [link["title"] for link in links] == ["Home", "About", "Docs", "Mail", "Search"]
    about = links[1]
    assert [c["route"] for c in about["children"]] == ["/about/team"]  # Jobs is inactive
    team = about["children"][0]
    assert team["title"] == "Our team"
    assert team["children"][0]["route"] == "/about/team/ann"
    assert team["children"][0]["title"] == "Ann"
    assert team["children"][0]["children"] == []
    docs = links[2]
    assert docs["target"] == "_blank" and docs["data"] == {"icon": "book"}
    assert docs["url"] == "https://example.org/docs"
    assert links[0]["url"] == f"pages://{site['tree']['home']['_id']}"
    for link in _walk(links):
        assert link["active"] is True
        assert isinstance(link["children"], list)
        assert not [k for k in link if k.startswith("title_")]


def test_menu_in_a_locale(de: Api, site: dict[str, Any]) -> None:
    links = de.get("/api/pages/menu/main", params={"locale": "de"}).json()["links"]
    assert [link["route"] for link in links] == ["/", "/ueber-uns", "https://example.org/docs",
                                                   "mailto:hello@example.org", "/search?q=1"]
    assert [link["title"] for link in links] == ["Startseite", "Über uns", "Doku", "Mail", "Search"]
    team = links[1]["children"][0]
    assert (team["title"], team["route"]) == ("Unser Team", "/ueber-uns/mannschaft")
    ann = team["children"][0]
    assert (ann["title"], ann["route"]) == ("Ann", "/ueber-uns/mannschaft/ann")
    assert not [k for link in _walk(links) for k in link if k.startswith("title_")]


def test_menu_routes_follow_page_renames(de: Api, site: dict[str, Any]) -> None:
    update_page(de, site["tree"]["about"]["_id"], slug="company", slug_de="firma", title="Company")
    links = de.get("/api/pages/menu/main").json()["links"]
    assert links[1]["route"] == "/company" and links[1]["title"] == "Company"
    assert links[1]["children"][0]["children"][0]["route"] == "/company/team/ann"
    links = de.get("/api/pages/menu/main", params={"locale": "de"}).json()["links"]
    assert links[1]["children"][0]["route"] == "/firma/mannschaft"


def test_links_to_unpublished_or_deleted_pages_are_left_out_with_children(de: Api, site: dict[str, Any]) -> None:
    update_page(de, site["tree"]["team"]["_id"], _state=0)
    links = de.get("/api/pages/menu/main").json()["links"]
    assert links[1]["children"] == []  # team is a draft: it and its child Ann are left out
    de.delete(f"/api/pages/page/{site['tree']['about']['_id']}")
    links = de.get("/api/pages/menu/main").json()["links"]
    assert [link["route"] for link in links] == ["/", "https://example.org/docs", "mailto:hello@example.org",
                                                   "/search?q=1"]


def test_menus_lists_every_menu_sorted_by_name(de: Api, site: dict[str, Any]) -> None:
    make_menu(de, name="zeta", links=[{"title": "Z", "url": "https://z.example"}])
    make_menu(de, name="footer", label="Footer", links=[{"url": f"pages://{site['tree']['contact']['_id']}"}])
    response = de.get("/api/pages/menus")
    assert response.status_code == 200
    body = response.json()
    assert [m["name"] for m in body] == ["footer", "main", "zeta"]
    assert body[0]["links"][0]["route"] == "/contact"
    assert body[0]["links"][0]["title"] == "Contact"
    assert body[1] == de.get("/api/pages/menu/main").json()
    body = de.get("/api/pages/menus", params={"locale": "de"}).json()
    assert body[0]["links"][0]["route"] == "/kontakt"
    assert body[0]["links"][0]["title"] == "Kontakt"


def test_no_menus(admin: Api) -> None:
    assert admin.get("/api/pages/menus").json() == []


def test_new_menu_label_defaults_to_its_name(admin: Api) -> None:
    menu = make_menu(admin, name="footer")
    assert (menu["label"], menu["links"]) == ("footer", [])


def _walk(links: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for link in links:
        out.append(link)
        out += _walk(link["children"])
    return out


# -- create or replace, rename --------------------------------------------------------


def test_posting_the_same_name_replaces_that_menu(admin: Api, quire: Quire) -> None:
    first = make_menu(admin, name="main", label="One", links=[{"title": "A", "url": "/a"}, {"title": "B", "url": "/b"}])
    second = make_menu(admin, name="main", label="Two", links=[{"title": "C", "url": "/c"}])
    assert second["_id"] == first["_id"]
    assert second["_created"] == first["_created"]
    assert second["label"] == "Two"
    assert second["links"] == [{"title": "C", "url": "/c"}]
    assert menus_stored(quire) == [second]
    assert [link["route"] for link in admin.get("/api/pages/menu/main").json()["links"]] == ["/c"]


def test_rename_with_id(admin: Api, quire: Quire) -> None:
    menu = make_menu(admin, name="main", links=[{"title": "A", "url": "/a"}])
    renamed = make_menu(admin, _id=menu["_id"], name="primary")
    assert renamed["_id"] == menu["_id"]
    assert renamed["links"] == menu["links"]
    assert error_of(admin.get("/api/pages/menu/main"), 404) == {"error": "Menu not found"}
    assert admin.get("/api/pages/menu/primary").json()["links"][0]["route"] == "/a"
    assert len(menus_stored(quire)) == 1


def test_change_with_id_keeps_fields_not_sent(admin: Api) -> None:
    menu = make_menu(admin, name="main", label="Main", links=[{"title": "A", "url": "/a"}])
    changed = make_menu(admin, _id=menu["_id"], label="Changed")
    assert (changed["name"], changed["label"], changed["links"]) == ("main", "Changed", menu["links"])


def test_id_of_a_missing_menu_is_404(admin: Api, quire: Quire) -> None:
    for menu_id in ("0" * 24, "nope", 5):
        assert error_of(post_menu(admin, {"_id": menu_id, "name": "x"}), 404) == {"error": "Menu not found"}
    assert menus_stored(quire) == []


def test_rename_to_a_name_of_another_menu_is_400(admin: Api, quire: Quire) -> None:
    main = make_menu(admin, name="main")
    make_menu(admin, name="footer")
    body = error_of(post_menu(admin, {"_id": main["_id"], "name": "footer"}), 400)
    assert body["fields"] == ["name"]
    assert "footer" in body["error"]
    assert sorted(m["name"] for m in menus_stored(quire)) == ["footer", "main"]


# -- validation -----------------------------------------------------------------


def test_name_is_required_on_create(admin: Api, quire: Quire) -> None:
    body = error_of(post_menu(admin, {"label": "No name"}), 400)
    assert body["fields"] == ["name"]
    assert menus_stored(quire) == []


@pytest.mark.parametrize("name", ["", "1main", "-main", "main menu", "main/x", "märz", "a" * 65, 5, None])
def test_bad_names_are_400(admin: Api, quire: Quire, name: Any) -> None:
    body = error_of(post_menu(admin, {"name": name}), 400)
    assert body["fields"] == ["name"]
    assert menus_stored(quire) == []


@pytest.mark.parametrize("name", ["a", "Main", "footer-links", "nav_2", "a" * 64])
def test_good_names(admin: Api, name: str) -> None:
    assert make_menu(admin, name=name)["name"] == name
    assert admin.get(f"/api/pages/menu/{name}").json()["name"] == name


@pytest.mark.parametrize(
    ("links", "field"),
    [
        ("x", "links"),
        ({"url": "/a"}, "links"),
        (["x"], "links[0]"),
        ([{"title": "No url"}], "links[0].url"),
        ([{"url": None}], "links[0].url"),
        ([{"url": ""}], "links[0].url"),
        ([{"url": "javascript:alert(1)"}], "links[0].url"),
        ([{"url": "data:text/html,x"}], "links[0].url"),
        ([{"url": "pages://ABC"}], "links[0].url"),
        ([{"url": "pages://" + "A" * 24}], "links[0].url"),
        ([{"url": "/a", "foo": 1}], "links[0].foo"),
        ([{"url": "/a", "title_fr": "x"}], "links[0].title_fr"),
        ([{"url": "/a", "title": 5}], "links[0].title"),
        ([{"url": "/a", "target": "_new"}], "links[0].target"),
        ([{"url": "/a", "active": "yes"}], "links[0].active"),
        ([{"url": "/a", "active": 1}], "links[0].active"),
        ([{"url": "/a", "data": []}], "links[0].data"),
        ([{"url": "/a", "children": "x"}], "links[0].children"),
        ([{"url": "/a"}, {"url": "/b", "children": [{"url": "/c"}, {"url": "/d", "bad": 1}]}],
         "links[1].children[1].bad"),
    ],
)
def test_bad_links_are_400_naming_the_link_field(de: Api, quire: Quire, links: Any, field: str) -> None:
    body = error_of(post_menu(de, {"name": "main", "links": links}), 400)
    assert field in body["fields"]
    assert body["error"].startswith("Invalid menu: ")
    assert field in body["error"]
    assert menus_stored(quire) == []


def test_link_to_a_page_that_does_not_exist_is_400(admin: Api, quire: Quire) -> None:
    page = make_page(admin, title="P")
    missing = "0" * 24
    body = error_of(post_menu(admin, {"name": "main", "links": [
        {"url": f"pages://{page['_id']}", "children": [{"url": f"pages://{missing}"}]}]}), 400)
    assert body["fields"] == ["links"]
    assert missing in body["error"]
    assert menus_stored(quire) == []


def test_link_to_a_draft_page_is_stored_but_left_out(admin: Api) -> None:
    draft = make_page(admin, title="Draft", _state=0)
    make_menu(admin, name="main", links=[{"url": f"pages://{draft['_id']}"}, {"title": "X", "url": "/x"}])
    assert [link["route"] for link in admin.get("/api/pages/menu/main").json()["links"]] == ["/x"]
    update_page(admin, draft["_id"], _state=1)
    assert [link["route"] for link in admin.get("/api/pages/menu/main").json()["links"]] == ["/draft", "/x"]


def test_link_fields_that_are_fine(de: Api) -> None:
    link: dict[str, Any] = {"title": None, "title_de": None, "url": "tel:+4930", "target": "_top", "active": True,
            "data": None, "children": []}
    assert make_menu(de, name="main", links=[link])["links"] == [link]


def test_unknown_menu_field_and_bad_label_are_400(admin: Api) -> None:
    body = error_of(post_menu(admin, {"name": "main", "color": "red", "label": 5}), 400)
    assert body["fields"] == ["color", "label"]


def test_missing_data_is_412(admin: Api) -> None:
    bodies: list[Any] = [{}, {"data": []}, {"data": "main"}]
    for body in bodies:
        assert error_of(admin.post("/api/pages/menu", json=body), 412) == {"error": "Item data is missing"}


# -- read and delete errors ---------------------------------------------------------


def test_unknown_menu_is_404(admin: Api) -> None:
    make_menu(admin, name="main")
    assert error_of(admin.get("/api/pages/menu/other"), 404) == {"error": "Menu not found"}
    assert error_of(admin.get("/api/pages/menu/Main"), 404) == {"error": "Menu not found"}


def test_delete_menu(admin: Api, quire: Quire) -> None:
    make_menu(admin, name="main")
    footer = make_menu(admin, name="footer")
    response = admin.delete("/api/pages/menu/main")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert error_of(admin.get("/api/pages/menu/main"), 404) == {"error": "Menu not found"}
    assert menus_stored(quire) == [footer]
    assert error_of(admin.delete("/api/pages/menu/main"), 404) == {"error": "Menu not found"}


def test_menu_writes_need_pages_manage(admin: Api, anon: Api, quire: Quire) -> None:
    make_menu(admin, name="main")
    reader = role_key(admin, "reader", {"pages/read": True})
    for api, expected in ((anon, (401, "Authentication failed")), (reader, (403, "Permission denied"))):
        assert error_of(post_menu(api, {"name": "other"}), expected[0]) == {"error": expected[1]}
        assert error_of(api.delete("/api/pages/menu/main"), expected[0]) == {"error": expected[1]}
    assert [m["name"] for m in menus_stored(quire)] == ["main"]
    manager = role_key(admin, "manager", {"pages/manage": True})
    assert post_menu(manager, {"name": "other"}).status_code == 200
    assert manager.delete("/api/pages/menu/other").json() == {"success": True}
