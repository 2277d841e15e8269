"""POST /api/pages/page and DELETE /api/pages/page/{id}: defaults, slugs made
from titles, validation (each error names its field), type rules, partial
updates, localized nulls and subtree deletes."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, put_model, role_key
from tests.pages.conftest import all_stored, error_of, make_page, post_page, stored, update_page

STORED_KEYS = {"_id", "type", "title", "slug", "data", "seo", "layout", "_pid", "_o", "_state",
               "_created", "_modified", "_cby", "_mby", "_r"}


# -- create: defaults ---------------------------------------------------------


def test_create_with_a_title_only_fills_every_default(admin: Api, quire: Quire, admin_key: str) -> None:
    page = make_page(admin, title="Welcome")
    assert set(page) == STORED_KEYS
    assert page["type"] == "layout"
    assert page["title"] == "Welcome"
    assert page["slug"] == "welcome"
    assert page["_r"] == "/welcome"
    assert page["data"] == {} and page["seo"] == {} and page["layout"] == []
    assert page["_pid"] is None
    assert page["_o"] == 0
    assert page["_state"] == 1
    assert isinstance(page["_created"], int) and page["_created"] == page["_modified"]
    actor = quire.auth.identify(admin_key).key_id
    assert page["_cby"] == actor and page["_mby"] == actor
    assert len(page["_id"]) == 24 and int(page["_id"], 16) >= 0


def test_create_answer_is_what_is_stored_and_read_back(admin: Api, quire: Quire) -> None:
    page = make_page(admin, title="Welcome", seo={"title": "W"}, data={"hero": "x"})
    assert stored(quire, page["_id"]) == page
    assert admin.get(f"/api/pages/page/{page['_id']}").json() == page


def test_stored_page_carries_localized_keys_only_where_given(de: Api) -> None:
    page = make_page(de, title="About", title_de="Über uns", data={"a": 1}, data_de={"a": 2},
                     seo={"t": "x"}, seo_de={"t": "y"})
    assert set(page) == STORED_KEYS | {"title_de", "slug_de", "data_de", "seo_de", "_r_de"}
    assert page["slug_de"] == "uber-uns"
    assert page["_r_de"] == "/uber-uns"
    plain = make_page(de, title="Plain")
    assert set(plain) == STORED_KEYS


@pytest.mark.parametrize(
    ("title", "slug"),
    [
        ("Über uns!", "uber-uns"),
        ("  Hello   World  ", "hello-world"),
        ("Crème Brûlée", "creme-brulee"),
        ("snake_case__name", "snake-case-name"),
        ("Foo -- Bar", "foo-bar"),
        ("ÀÉÎ 2024", "aei-2024"),
        ("C'est la vie?", "c-est-la-vie"),
        ("UPPER", "upper"),
    ],
)
def test_missing_slug_is_made_from_the_title(admin: Api, title: str, slug: str) -> None:
    page = make_page(admin, title=title)
    assert page["slug"] == slug
    assert page["_r"] == f"/{slug}"


def test_given_slug_is_kept_as_sent(admin: Api) -> None:
    page = make_page(admin, title="Something else", slug="My-Slug.v2")
    assert page["slug"] == "My-Slug.v2"
    assert page["_r"] == "/My-Slug.v2"


def test_localized_slug_is_made_from_localized_title_on_create(de: Api) -> None:
    page = make_page(de, title="Prices", title_de="Preise & Tarife")
    assert page["slug"] == "prices"
    assert page["slug_de"] == "preise-tarife"
    assert page["_r_de"] == "/preise-tarife"


def test_localized_slug_given_wins_over_localized_title(de: Api) -> None:
    page = make_page(de, title="Prices", title_de="Preise", slug_de="kosten")
    assert page["slug_de"] == "kosten"
    assert page["_r_de"] == "/kosten"


def test_home_page_with_a_localized_title_stays_home_in_every_locale(de: Api) -> None:
    home = make_page(de, title="Home", title_de="Startseite", slug="")
    assert "slug_de" not in home and "_r_de" not in home
    kid = make_page(de, title="Contact", title_de="Kontakt", _pid=home["_id"])
    assert (kid["_r"], kid["_r_de"]) == ("/contact", "/kontakt")
    routes = de.get("/api/pages/routes").json()
    assert [e["route"] for e in routes["de"]] == ["/", "/kontakt"]


def test_a_sent_slug_serves_every_locale_without_its_own(de: Api) -> None:
    # docs/pages.md: slug_<code> is made from title_<code> only when `slug` is left out
    page = make_page(de, title="Prices", title_de="Preise", slug="prices")
    assert "slug_de" not in page and "_r_de" not in page
    assert de.get(f"/api/pages/page/{page['_id']}", params={"locale": "de"}).json()["_r"] == "/prices"


def test_no_localized_slug_without_localized_title(de: Api) -> None:
    page = make_page(de, title="Prices")
    assert "slug_de" not in page and "_r_de" not in page


def test_localized_slug_is_not_remade_when_title_changes_on_update(de: Api) -> None:
    page = make_page(de, title="Prices")
    changed = update_page(de, page["_id"], title="Costs", title_de="Kosten")
    assert changed["slug"] == "prices"
    assert "slug_de" not in changed


def test_new_pages_get_the_next_order_among_their_siblings(admin: Api) -> None:
    first = make_page(admin, title="First")
    second = make_page(admin, title="Second")
    kid = make_page(admin, title="Kid", _pid=first["_id"])
    kid2 = make_page(admin, title="Kid two", _pid=first["_id"])
    placed = make_page(admin, title="Placed", _o=10)
    after = make_page(admin, title="After")
    assert (first["_o"], second["_o"], placed["_o"], after["_o"]) == (0, 1, 10, 11)
    assert (kid["_o"], kid2["_o"]) == (0, 1)


def test_state_can_be_given_on_create(admin: Api) -> None:
    draft = make_page(admin, title="Draft", _state=0)
    assert draft["_state"] == 0
    archived = make_page(admin, title="Old", _state=-1)
    assert archived["_state"] == -1


def test_layout_of_nested_components_is_stored(admin: Api) -> None:
    layout = [
        {"component": "section", "label": "Top", "data": {"bg": "red"},
         "children": [{"component": "text", "data": {"text": "hi"}, "children": []}]},
        {"component": "image"},
    ]
    page = make_page(admin, title="Composed", layout=layout)
    assert page["layout"] == layout
    assert admin.get(f"/api/pages/page/{page['_id']}").json()["layout"] == layout


def test_read_only_fields_sent_are_ignored(admin: Api) -> None:
    page = make_page(admin, title="Guarded", _r="/hijack", _created=1, _cby="someone")
    assert page["_r"] == "/guarded"
    assert page["_created"] != 1
    assert page["_cby"] != "someone"


# -- create: errors -----------------------------------------------------------


def test_missing_data_is_412(admin: Api, quire: Quire) -> None:
    bodies: list[Any] = [{}, {"data": None}, {"data": []}, {"data": "x"}, {"other": {"title": "x"}}, []]
    for body in bodies:
        response = admin.post("/api/pages/page", json=body)
        assert error_of(response, 412) == {"error": "Item data is missing"}
    assert all_stored(quire) == []


def test_body_that_is_not_json_is_400(admin: Api) -> None:
    response = admin.post("/api/pages/page", content=b"{nope", headers={"content-type": "application/json"})
    error_of(response, 400)


@pytest.mark.parametrize("title", [None, "", "   "])
def test_title_is_required(admin: Api, quire: Quire, title: Any) -> None:
    data: dict[str, Any] = {} if title is None else {"title": title}
    data["slug"] = "x"
    body = error_of(post_page(admin, data), 400)
    assert body["fields"] == ["title"]
    assert "title" in body["error"]
    assert all_stored(quire) == []


def test_localized_title_must_be_a_string(de: Api) -> None:
    body = error_of(post_page(de, {"title": "T", "title_de": 5}), 400)
    assert body["fields"] == ["title_de"]
    body = error_of(post_page(de, {"title": "T", "data_de": [], "seo_de": "x"}), 400)
    assert body["fields"] == ["data_de", "seo_de"]


def test_empty_localized_slug_falls_back_to_the_default_slug(de: Api) -> None:
    parent = make_page(de, title="Parent", slug_de="eltern")
    kid = make_page(de, title="Kid", title_de="Kind", slug_de="", _pid=parent["_id"])
    assert (kid["_r"], kid["_r_de"]) == ("/parent/kid", "/eltern/kid")


def test_title_must_be_a_string(admin: Api) -> None:
    body = error_of(post_page(admin, {"title": 5}), 400)
    assert body["fields"] == ["title"]
    assert "title must be a string" in body["error"]


@pytest.mark.parametrize(
    "slug", ["a/b", "a?b", "a#b", "a%20b", "a\\b", "a b", "tab\there", "line\nbreak", ".", "..", "x" * 201]
)
def test_bad_slugs_are_400_naming_slug(admin: Api, quire: Quire, slug: str) -> None:
    body = error_of(post_page(admin, {"title": "T", "slug": slug}), 400)
    assert body["fields"] == ["slug"]
    assert body["error"].startswith("Invalid page data: slug ")
    assert all_stored(quire) == []


def test_slug_of_200_characters_is_fine(admin: Api) -> None:
    page = make_page(admin, title="T", slug="x" * 200)
    assert page["_r"] == "/" + "x" * 200


def test_slug_must_be_a_string(admin: Api) -> None:
    assert error_of(post_page(admin, {"title": "T", "slug": 3}), 400)["fields"] == ["slug"]


def test_bad_localized_slug_names_slug_de(de: Api, quire: Quire) -> None:
    body = error_of(post_page(de, {"title": "T", "slug_de": "a/b"}), 400)
    assert body["fields"] == ["slug_de"]
    assert all_stored(quire) == []


def test_long_title_makes_a_slug_within_the_limit(admin: Api) -> None:
    page = make_page(admin, title="word " * 100)
    assert 0 < len(page["slug"]) <= 200
    assert not page["slug"].endswith("-")


def test_empty_slug_is_refused_below_the_top_level(admin: Api, quire: Quire) -> None:
    parent = make_page(admin, title="Parent")
    body = error_of(post_page(admin, {"title": "Kid", "slug": "", "_pid": parent["_id"]}), 400)
    assert body["fields"] == ["slug"]
    # a title without letters or digits makes an empty slug: refused for a child too
    body = error_of(post_page(admin, {"title": "★ ★", "_pid": parent["_id"]}), 400)
    assert body["fields"] == ["slug"]
    assert len(all_stored(quire)) == 1


def test_empty_slug_at_the_top_level_is_the_home_page(admin: Api) -> None:
    home = make_page(admin, title="Home", slug="")
    assert home["slug"] == ""
    assert home["_r"] == "/"


def test_unknown_fields_are_400_naming_each(de: Api, quire: Quire) -> None:
    body = error_of(post_page(de, {"title": "T", "foo": 1, "title_fr": "x", "layout_de": []}), 400)
    assert body["fields"] == ["foo", "layout_de", "title_fr"]
    for name in body["fields"]:
        assert f"{name} is not a page field" in body["error"]
    assert all_stored(quire) == []


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("type", "blog"),
        ("type", None),
        ("data", []),
        ("data", "x"),
        ("seo", ["x"]),
        ("seo", None),
        ("_o", "1"),
        ("_o", True),
        ("_state", 2),
        ("_state", True),
        ("_state", "1"),
        ("_pid", "not-an-id"),
        ("_pid", 5),
        ("layout", {"component": "x"}),
        ("layout", [{"label": "no component"}]),
        ("layout", [{"component": ""}]),
        ("layout", ["text"]),
        ("layout", [{"component": "x", "label": 3}]),
        ("layout", [{"component": "x", "data": []}]),
        ("layout", [{"component": "x", "children": [{"component": 1}]}]),
        ("layout", [{"component": "x", "children": {"component": "y"}}]),
    ],
)
def test_wrong_values_are_400_naming_the_field(admin: Api, quire: Quire, field: str, value: Any) -> None:
    body = error_of(post_page(admin, {"title": "T", field: value}), 400)
    assert body["fields"] == [field]
    assert f" {field} " in f" {body['error']}"
    assert all_stored(quire) == []


def test_several_bad_fields_are_all_named(admin: Api) -> None:
    body = error_of(post_page(admin, {"title": 1, "slug": "a/b", "_o": "x"}), 400)
    assert body["fields"] == ["_o", "slug", "title"]


def test_pid_of_a_missing_page_is_400(admin: Api, quire: Quire) -> None:
    body = error_of(post_page(admin, {"title": "T", "_pid": "0" * 24}), 400)
    assert body["fields"] == ["_pid"]
    assert all_stored(quire) == []


def test_id_of_a_missing_page_is_404(admin: Api, quire: Quire) -> None:
    response = post_page(admin, {"_id": "0" * 24, "title": "T"})
    assert error_of(response, 404) == {"error": "Page not found"}
    response = post_page(admin, {"_id": "nope", "title": "T"})
    assert error_of(response, 404) == {"error": "Page not found"}
    assert all_stored(quire) == []


def test_id_that_is_not_a_string_is_400(admin: Api) -> None:
    body = error_of(post_page(admin, {"_id": 12, "title": "T"}), 400)
    assert body["fields"] == ["_id"]


# -- type rules -----------------------------------------------------------------


@pytest.fixture
def models(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                          {"name": "slug", "type": "text"}])
    put_model(admin, "site", type="singleton", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    return admin


def test_collection_page_binds_a_collection_model(models: Api) -> None:
    page = make_page(models, title="Blog", type="collection", data={"model": "posts"})
    assert page["type"] == "collection"
    assert page["data"] == {"model": "posts"}
    page = make_page(models, title="Shop", type="collection", data={"model": "posts", "slugField": "title"})
    assert page["data"]["slugField"] == "title"


@pytest.mark.parametrize(
    ("kind", "data", "field"),
    [
        ("collection", {}, "data.model"),
        ("collection", {"model": 5}, "data.model"),
        ("collection", {"model": "missing"}, "data.model"),
        ("collection", {"model": "site"}, "data.model"),
        ("collection", {"model": "nav"}, "data.model"),
        ("collection", {"model": "posts", "slugField": ""}, "data.slugField"),
        ("collection", {"model": "posts", "slugField": 3}, "data.slugField"),
        ("singleton", {}, "data.model"),
        ("singleton", {"model": "posts"}, "data.model"),
        ("singleton", {"model": "missing"}, "data.model"),
        ("link", {}, "data.url"),
        ("link", {"url": ""}, "data.url"),
        ("link", {"url": 5}, "data.url"),
    ],
)
def test_type_rules_are_400_naming_the_data_field(
    models: Api, quire: Quire, kind: str, data: dict[str, Any], field: str
) -> None:
    body = error_of(post_page(models, {"title": "T", "type": kind, "data": data}), 400)
    assert body["fields"] == [field]
    assert field in body["error"]
    assert all_stored(quire) == []


def test_singleton_page_binds_a_singleton_model(models: Api) -> None:
    page = make_page(models, title="Site", type="singleton", data={"model": "site"})
    assert page["type"] == "singleton" and page["data"] == {"model": "site"}


@pytest.mark.parametrize(
    "url",
    ["https://example.org/x?y=1", "http://example.org", "HTTPS://EXAMPLE.ORG", "mailto:a@example.org",
     "tel:+49301234", "/local/path", "#anchor", "?q=1"],
)
def test_link_page_accepts_safe_urls(admin: Api, url: str) -> None:
    page = make_page(admin, title="Out", type="link", data={"url": url})
    assert page["data"]["url"] == url


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "JavaScript:alert(1)", " javascript:alert(1)", "data:text/html,<b>x</b>",
     "vbscript:x", "ftp://example.org", "https://", "http:/example.org", "example.org/page",
     "pages://" + "a" * 24],
)
def test_link_page_refuses_other_urls(admin: Api, quire: Quire, url: str) -> None:
    body = error_of(post_page(admin, {"title": "Out", "type": "link", "data": {"url": url}}), 400)
    assert body["fields"] == ["data.url"]
    assert all_stored(quire) == []


def test_localized_link_url_is_checked_too(de: Api, quire: Quire) -> None:
    response = post_page(de, {"title": "Out", "type": "link", "data": {"url": "https://example.org"},
                              "data_de": {"url": "javascript:alert(1)"}})
    # actual: 200, and GET /api/pages/page/<id>?locale=de answers data.url "javascript:alert(1)"
    assert response.status_code == 400
    assert [f for f in response.json()["fields"] if f.startswith("data_de")]
    assert all_stored(quire) == []


def test_localized_link_url_is_answered_in_its_locale(de: Api) -> None:
    page = make_page(de, title="Out", type="link", data={"url": "https://example.org/en"},
                     data_de={"url": "https://example.org/de"})
    body = de.get(f"/api/pages/page/{page['_id']}", params={"locale": "de"}).json()
    assert body["data"]["url"] == "https://example.org/de"


def test_type_rules_apply_to_the_merged_page_on_update(models: Api, quire: Quire) -> None:
    page = make_page(models, title="Plain")
    body = error_of(post_page(models, {"_id": page["_id"], "type": "link"}), 400)
    assert body["fields"] == ["data.url"]
    assert stored(quire, page["_id"]) == page
    changed = update_page(models, page["_id"], type="link", data={"url": "https://example.org"})
    assert changed["type"] == "link"
    # a later update of another field keeps the type valid without resending data
    assert update_page(models, page["_id"], title="Renamed")["data"] == {"url": "https://example.org"}


# -- updates ----------------------------------------------------------------


def test_update_changes_only_the_fields_sent(admin: Api, quire: Quire) -> None:
    page = make_page(admin, title="Before", seo={"t": 1}, data={"a": 1}, layout=[{"component": "x"}])
    other = role_key(admin, "editor", {"pages/manage": True, "pages/read": True})
    changed = update_page(other, page["_id"], title="After")
    assert changed["title"] == "After"
    assert changed["slug"] == "before"  # a slug is made on create only
    for key in ("seo", "data", "layout", "_o", "_pid", "_state", "_created", "_cby", "_r", "type"):
        assert changed[key] == page[key], key
    assert changed["_modified"] >= page["_modified"]
    assert changed["_mby"] != page["_mby"]
    assert changed["_mby"] == quire.auth.identify(other.key).key_id
    assert stored(quire, page["_id"]) == changed


def test_update_replaces_objects_whole(admin: Api) -> None:
    page = make_page(admin, title="P", data={"a": 1, "b": 2})
    assert update_page(admin, page["_id"], data={"b": 3})["data"] == {"b": 3}


def test_localized_key_sent_as_null_removes_that_value(de: Api, quire: Quire) -> None:
    page = make_page(de, title="About", title_de="Über", slug_de="ueber", data={"a": 1}, data_de={"a": 2},
                     seo_de={"t": "x"})
    changed = update_page(de, page["_id"], title_de=None, data_de=None, seo_de=None, slug_de=None)
    for key in ("title_de", "data_de", "seo_de", "slug_de", "_r_de"):
        assert key not in changed, key
        assert key not in stored(quire, page["_id"]), key  # type: ignore[operator]
    assert changed["title"] == "About" and changed["data"] == {"a": 1}


def test_update_can_publish_and_unpublish(admin: Api) -> None:
    page = make_page(admin, title="P", _state=0)
    assert admin.get(f"/api/pages/page/{page['_id']}").status_code == 404
    update_page(admin, page["_id"], _state=1)
    assert admin.get(f"/api/pages/page/{page['_id']}").status_code == 200
    update_page(admin, page["_id"], _state=0)
    assert admin.get(f"/api/pages/page/{page['_id']}").status_code == 404


def test_update_validation_error_stores_nothing(admin: Api, quire: Quire) -> None:
    page = make_page(admin, title="P")
    error_of(post_page(admin, {"_id": page["_id"], "title": "", "seo": {"x": 1}}), 400)
    error_of(post_page(admin, {"_id": page["_id"], "title": "Q", "bogus": 1}), 400)
    assert stored(quire, page["_id"]) == page


def test_pid_cannot_be_the_page_itself_or_a_descendant(admin: Api, quire: Quire) -> None:
    top = make_page(admin, title="Top")
    mid = make_page(admin, title="Mid", _pid=top["_id"])
    low = make_page(admin, title="Low", _pid=mid["_id"])
    before = {p["_id"]: p for p in all_stored(quire)}
    for pid in (top["_id"], mid["_id"], low["_id"]):
        body = error_of(post_page(admin, {"_id": top["_id"], "_pid": pid}), 400)
        assert body["fields"] == ["_pid"]
    assert {p["_id"]: p for p in all_stored(quire)} == before


def test_moving_a_page_gives_it_the_next_order_of_its_new_siblings(admin: Api) -> None:
    a = make_page(admin, title="A")
    b = make_page(admin, title="B")
    make_page(admin, title="B1", _pid=b["_id"])
    make_page(admin, title="B2", _pid=b["_id"], _o=7)
    moved = update_page(admin, a["_id"], _pid=b["_id"])
    assert moved["_o"] == 8
    placed = update_page(admin, a["_id"], _pid=None, _o=3)
    assert placed["_o"] == 3 and placed["_pid"] is None


def test_order_is_kept_when_the_parent_does_not_change(admin: Api) -> None:
    a = make_page(admin, title="A", _o=5)
    make_page(admin, title="B")
    assert update_page(admin, a["_id"], _pid=None, title="A2")["_o"] == 5


# -- permissions of writes ---------------------------------------------------------


def test_writes_need_pages_manage(admin: Api, anon: Api, quire: Quire) -> None:
    page = make_page(admin, title="P")
    reader = role_key(admin, "reader", {"pages/read": True})
    for api, status in ((anon, 401), (reader, 403)):
        response = post_page(api, {"title": "New"})
        expected = {"error": "Authentication failed"} if status == 401 else {"error": "Permission denied"}
        assert error_of(response, status) == expected
        response = post_page(api, {"_id": page["_id"], "title": "Changed"})
        assert error_of(response, status) == expected
        response = api.delete(f"/api/pages/page/{page['_id']}")
        assert error_of(response, status) == expected
    assert all_stored(quire) == [page]


def test_a_manage_key_can_write_pages(admin: Api, quire: Quire) -> None:
    manager = role_key(admin, "manager", {"pages/manage": True})
    page = make_page(manager, title="Managed")
    assert update_page(manager, page["_id"], title="Changed")["title"] == "Changed"
    assert manager.delete(f"/api/pages/page/{page['_id']}").json() == {"success": True}
    assert all_stored(quire) == []


def test_public_role_can_be_granted_manage(admin: Api, anon: Api) -> None:
    assert admin.put("/api/system/roles/public", json={"permissions": {"pages/manage": True}}).status_code == 200
    page = make_page(anon, title="By anyone")
    # no key, no actor (the key is left out of the stored page rather than null)
    assert page.get("_cby") is None and page.get("_mby") is None
    assert page["_r"] == "/by-anyone"


# -- delete -------------------------------------------------------------------


def test_delete_removes_the_page_and_its_subtree(admin: Api, quire: Quire) -> None:
    top = make_page(admin, title="Top")
    mid = make_page(admin, title="Mid", _pid=top["_id"])
    low = make_page(admin, title="Low", _pid=mid["_id"], _state=0)
    other = make_page(admin, title="Other")
    kept = make_page(admin, title="Kept", _pid=other["_id"])
    response = admin.delete(f"/api/pages/page/{top['_id']}")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    for page in (top, mid, low):
        assert stored(quire, page["_id"]) is None
        assert error_of(admin.get(f"/api/pages/page/{page['_id']}"), 404) == {"error": "Page not found"}
    assert {p["_id"] for p in all_stored(quire)} == {other["_id"], kept["_id"]}
    assert admin.get("/api/pages/page", params={"route": "/top"}).status_code == 404


def test_delete_of_a_draft_page_works(admin: Api, quire: Quire) -> None:
    draft = make_page(admin, title="Draft", _state=0)
    assert admin.delete(f"/api/pages/page/{draft['_id']}").json() == {"success": True}
    assert all_stored(quire) == []


def test_delete_frees_the_route(admin: Api) -> None:
    page = make_page(admin, title="Free")
    admin.delete(f"/api/pages/page/{page['_id']}")
    assert make_page(admin, title="Free")["_r"] == "/free"


@pytest.mark.parametrize("page_id", ["0" * 24, "nope"])
def test_delete_of_an_unknown_page_is_404(admin: Api, page_id: str) -> None:
    make_page(admin, title="Stays")
    assert error_of(admin.delete(f"/api/pages/page/{page_id}"), 404) == {"error": "Page not found"}


def test_wrong_methods_are_405(admin: Api) -> None:
    response = admin.request("PUT", "/api/pages/page")
    error_of(response, 405)
    assert "POST" in response.headers["allow"]
    response = admin.request("POST", "/api/pages/page/" + "0" * 24)
    error_of(response, 405)
