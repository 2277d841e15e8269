"""Routes of a three-level page tree in two locales: stored routes, GET
/api/pages/routes, look-up by (localized) route, and how renaming and
moving a page carries its whole subtree along."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api
from tests.pages.conftest import (
    W3C,
    all_stored,
    by_route,
    error_of,
    make_page,
    page_id_at,
    post_page,
    stored,
    update_page,
    w3c,
)

Tree = dict[str, dict[str, Any]]

DEFAULT_ROUTES = {
    "home": "/", "news": "/news", "about": "/about", "team": "/about/team", "ann": "/about/team/ann",
    "jobs": "/about/jobs", "contact": "/contact",
}
DE_ROUTES = {
    "home": "/", "news": "/news", "about": "/ueber-uns", "team": "/ueber-uns/mannschaft",
    "ann": "/ueber-uns/mannschaft/ann", "jobs": "/ueber-uns/jobs", "contact": "/kontakt",
}
TREE_ORDER = ["home", "news", "about", "team", "ann", "jobs", "contact"]


def routes_by_name(quire: Quire, tree: Tree) -> tuple[dict[str, str], dict[str, str]]:
    """(default routes, de routes) of the tree's pages as stored, with the
    documented fallback of `_r_de` to `_r`."""
    default, german = {}, {}
    for name, page in tree.items():
        doc = stored(quire, page["_id"])
        assert doc is not None
        default[name] = doc["_r"]
        german[name] = doc.get("_r_de", doc["_r"])
    return default, german


def lookup_all(api: Api, tree: Tree, routes: dict[str, str], **params: Any) -> None:
    for name, route in routes.items():
        assert page_id_at(api, route, **params) == tree[name]["_id"], (name, route)


# -- stored routes ----------------------------------------------------------------


def test_tree_routes_are_stored_per_locale(tree: Tree, quire: Quire) -> None:
    assert routes_by_name(quire, tree) == (DEFAULT_ROUTES, DE_ROUTES)


def test_locale_route_is_stored_only_where_it_differs(tree: Tree, quire: Quire) -> None:
    for name in ("home", "news"):
        assert "_r_de" not in stored(quire, tree[name]["_id"])  # type: ignore[operator]
    for name in ("about", "team", "ann", "jobs", "contact"):
        assert "_r_de" in stored(quire, tree[name]["_id"])  # type: ignore[operator]


def test_write_answers_carry_the_routes(tree: Tree) -> None:
    assert tree["ann"]["_r"] == "/about/team/ann"
    assert tree["ann"]["_r_de"] == "/ueber-uns/mannschaft/ann"
    assert tree["news"]["_r"] == "/news"


def test_child_of_home_adds_nothing_for_the_home_slug(admin: Api) -> None:
    home = make_page(admin, title="Home", slug="")
    kid = make_page(admin, title="X", _pid=home["_id"])
    grandkid = make_page(admin, title="Y", _pid=kid["_id"])
    assert (home["_r"], kid["_r"], grandkid["_r"]) == ("/", "/x", "/x/y")


def test_home_with_a_localized_slug_prefixes_its_children_in_that_locale(de: Api) -> None:
    home = make_page(de, title="Home", slug="", slug_de="start")
    kid = make_page(de, title="X", _pid=home["_id"])
    assert (home["_r"], home["_r_de"]) == ("/", "/start")
    assert (kid["_r"], kid["_r_de"]) == ("/x", "/start/x")


# -- GET /api/pages/routes ---------------------------------------------------------


def test_routes_lists_every_locale_in_tree_order(tree: Tree, de: Api, quire: Quire) -> None:
    response = de.get("/api/pages/routes")
    assert response.status_code == 200
    body = response.json()
    assert list(body) == ["default", "de"]
    assert [e["route"] for e in body["default"]] == [DEFAULT_ROUTES[n] for n in TREE_ORDER]
    assert [e["route"] for e in body["de"]] == [DE_ROUTES[n] for n in TREE_ORDER]
    assert [e["slug"] for e in body["default"]] == ["", "news", "about", "team", "ann", "jobs", "contact"]
    assert [e["slug"] for e in body["de"]] == ["", "news", "ueber-uns", "mannschaft", "ann", "jobs", "kontakt"]
    for locale in ("default", "de"):
        for name, entry in zip(TREE_ORDER, body[locale], strict=True):
            assert set(entry) == {"route", "slug", "type", "lastmod"}
            assert entry["type"] == "layout"
            assert W3C.match(entry["lastmod"])
            assert entry["lastmod"] == w3c(stored(quire, tree[name]["_id"])["_modified"])  # type: ignore[index]


def test_routes_with_a_locale_answers_that_locale_only(tree: Tree, de: Api) -> None:
    body = de.get("/api/pages/routes", params={"locale": "de"}).json()
    assert list(body) == ["de"]
    assert [e["route"] for e in body["de"]] == [DE_ROUTES[n] for n in TREE_ORDER]
    body = de.get("/api/pages/routes", params={"locale": "default"}).json()
    assert list(body) == ["default"]
    assert [e["route"] for e in body["default"]] == [DEFAULT_ROUTES[n] for n in TREE_ORDER]


def test_routes_without_locales_has_the_default_only(admin: Api) -> None:
    make_page(admin, title="Solo")
    body = admin.get("/api/pages/routes").json()
    assert list(body) == ["default"]
    assert [e["route"] for e in body["default"]] == ["/solo"]


def test_routes_follow_sibling_order_not_creation_order(admin: Api) -> None:
    make_page(admin, title="C", _o=3)
    a = make_page(admin, title="A", _o=1)
    make_page(admin, title="B", _o=2)
    make_page(admin, title="A2", _pid=a["_id"], _o=2)
    make_page(admin, title="A1", _pid=a["_id"], _o=1)
    routes = [e["route"] for e in admin.get("/api/pages/routes").json()["default"]]
    assert routes == ["/a", "/a/a1", "/a/a2", "/b", "/c"]
    update_page(admin, a["_id"], _o=9)
    routes = [e["route"] for e in admin.get("/api/pages/routes").json()["default"]]
    assert routes == ["/b", "/c", "/a", "/a/a1", "/a/a2"]


def test_routes_hold_published_pages_only_link_pages_included(admin: Api) -> None:
    draft = make_page(admin, title="Draft", _state=0)
    make_page(admin, title="Under draft", _pid=draft["_id"])
    make_page(admin, title="Archived", _state=-1)
    make_page(admin, title="Out", type="link", data={"url": "https://example.org"})
    entries = admin.get("/api/pages/routes").json()["default"]
    assert [(e["route"], e["type"]) for e in entries] == [("/draft/under-draft", "layout"), ("/out", "link")]


def test_routes_for_a_locale_that_is_not_configured_are_the_default_ones(tree: Tree, de: Api) -> None:
    body = de.get("/api/pages/routes", params={"locale": "fr"}).json()
    assert list(body) == ["fr"]
    assert [e["route"] for e in body["fr"]] == [DEFAULT_ROUTES[n] for n in TREE_ORDER]


def test_routes_of_a_removed_locale_are_the_default_ones(tree: Tree, de: Api) -> None:
    assert de.put("/api/system/locales", json=[]).status_code == 200
    body = de.get("/api/pages/routes", params={"locale": "de"}).json()
    assert [e["route"] for e in body["de"]] == [DEFAULT_ROUTES[n] for n in TREE_ORDER]
    for entry in body["de"]:
        assert by_route(de, entry["route"], locale="de").status_code == 200, entry["route"]


# -- look-up by route --------------------------------------------------------------


def test_every_page_is_found_by_its_default_route(tree: Tree, de: Api) -> None:
    lookup_all(de, tree, DEFAULT_ROUTES)


def test_every_page_is_found_by_its_localized_route(tree: Tree, de: Api) -> None:
    lookup_all(de, tree, DE_ROUTES, locale="de")


def test_lookup_by_localized_route_answers_the_localized_page(tree: Tree, de: Api) -> None:
    body = by_route(de, "/ueber-uns/mannschaft", locale="de").json()
    assert body["title"] == "Mannschaft"
    assert body["slug"] == "mannschaft"
    assert body["_r"] == "/ueber-uns/mannschaft"
    assert not any(key.endswith("_de") for key in body)
    # a page without its own German values falls back to the default ones
    body = by_route(de, "/ueber-uns/mannschaft/ann", locale="de").json()
    assert (body["title"], body["slug"]) == ("Ann", "ann")


def test_default_route_of_a_page_with_its_own_localized_route_is_404_in_that_locale(tree: Tree, de: Api) -> None:
    for route in ("/about", "/about/team", "/about/jobs", "/contact"):
        assert page_id_at(de, route, locale="de") is None, route


def test_localized_route_is_404_without_the_locale(tree: Tree, de: Api) -> None:
    for route in ("/ueber-uns", "/kontakt", "/ueber-uns/mannschaft/ann"):
        assert page_id_at(de, route) is None, route


def test_unknown_locale_uses_the_default_routes(tree: Tree, de: Api) -> None:
    lookup_all(de, tree, DEFAULT_ROUTES, locale="fr")
    assert page_id_at(de, "/kontakt", locale="fr") is None


@pytest.mark.parametrize("route", ["about/team", "/about/team/", "about/team/", "//about//team", "/about/team//"])
def test_route_is_normalised(tree: Tree, de: Api, route: str) -> None:
    assert page_id_at(de, route) == tree["team"]["_id"]


@pytest.mark.parametrize("route", ["", "/", "//"])
def test_empty_route_is_the_home_page(tree: Tree, de: Api, route: str) -> None:
    assert page_id_at(de, route) == tree["home"]["_id"]


def test_route_with_url_encoded_characters(admin: Api) -> None:
    page = make_page(admin, title="Grüße", slug="grüße")
    response = admin.get("/api/pages/page?route=%2Fgr%C3%BC%C3%9Fe")
    assert response.status_code == 200
    assert response.json()["_id"] == page["_id"]


def test_unknown_route_is_404(tree: Tree, de: Api) -> None:
    for route in ("/nope", "/about/nope", "/about/team/ann/deeper", "/team"):
        assert error_of(by_route(de, route), 404) == {"error": "Page not found"}


def test_missing_route_parameter_is_400(tree: Tree, de: Api) -> None:
    response = de.get("/api/pages/page")
    body = error_of(response, 400)
    assert "route" in body["error"]


def test_published_child_of_a_draft_parent_is_visible(admin: Api) -> None:
    parent = make_page(admin, title="Hidden", _state=0)
    kid = make_page(admin, title="Kid", _pid=parent["_id"])
    assert page_id_at(admin, "/hidden") is None
    assert page_id_at(admin, "/hidden/kid") == kid["_id"]


# -- renaming carries the subtree ----------------------------------------------------


def test_renaming_the_top_slug_moves_every_descendant(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["about"]["_id"], slug="company")
    default, german = routes_by_name(quire, tree)
    renamed = {n: r.replace("/about", "/company", 1) for n, r in DEFAULT_ROUTES.items()}
    assert default == renamed
    assert german == DE_ROUTES  # the German slug did not change
    lookup_all(de, tree, renamed)
    lookup_all(de, tree, DE_ROUTES, locale="de")
    for old in ("/about", "/about/team", "/about/team/ann", "/about/jobs"):
        assert page_id_at(de, old) is None


def test_renaming_the_localized_top_slug_moves_every_descendant_in_that_locale(
    tree: Tree, de: Api, quire: Quire
) -> None:
    update_page(de, tree["about"]["_id"], slug_de="firma")
    default, german = routes_by_name(quire, tree)
    assert default == DEFAULT_ROUTES
    renamed = {n: r.replace("/ueber-uns", "/firma", 1) for n, r in DE_ROUTES.items()}
    assert german == renamed
    lookup_all(de, tree, renamed, locale="de")
    assert page_id_at(de, "/ueber-uns/mannschaft/ann", locale="de") is None


def test_renaming_both_slugs_at_once_moves_both_route_sets(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["about"]["_id"], slug="company", slug_de="firma")
    default, german = routes_by_name(quire, tree)
    assert default["ann"] == "/company/team/ann"
    assert german["ann"] == "/firma/mannschaft/ann"
    assert german["jobs"] == "/firma/jobs"
    routes = de.get("/api/pages/routes").json()
    assert routes["default"][TREE_ORDER.index("ann")]["route"] == "/company/team/ann"
    assert routes["de"][TREE_ORDER.index("ann")]["route"] == "/firma/mannschaft/ann"


def test_renaming_a_middle_page_leaves_other_branches_alone(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["team"]["_id"], slug="people")
    default, german = routes_by_name(quire, tree)
    assert default["team"] == "/about/people" and default["ann"] == "/about/people/ann"
    assert german["ann"] == "/ueber-uns/mannschaft/ann"
    assert default["jobs"] == "/about/jobs" and default["about"] == "/about"


def test_removing_a_localized_slug_falls_back_for_the_subtree(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["about"]["_id"], slug_de=None)
    default, german = routes_by_name(quire, tree)
    assert german["about"] == "/about"
    assert german["team"] == "/about/mannschaft"
    assert german["ann"] == "/about/mannschaft/ann"
    # where the German route equals the default route, no `_r_de` is kept
    assert german["jobs"] == "/about/jobs"
    assert "_r_de" not in stored(quire, tree["jobs"]["_id"])  # type: ignore[operator]
    assert "_r_de" not in stored(quire, tree["about"]["_id"])  # type: ignore[operator]
    assert page_id_at(de, "/about/jobs", locale="de") == tree["jobs"]["_id"]


def test_changing_a_title_leaves_routes_alone(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["about"]["_id"], title="Company", title_de="Firma")
    assert routes_by_name(quire, tree) == (DEFAULT_ROUTES, DE_ROUTES)


# -- moving a subtree -------------------------------------------------------------


def test_moving_a_subtree_with_pid_recomputes_its_routes(tree: Tree, de: Api, quire: Quire) -> None:
    moved = update_page(de, tree["team"]["_id"], _pid=tree["contact"]["_id"])
    assert moved["_pid"] == tree["contact"]["_id"]
    assert moved["_o"] == 0  # first child of its new parent
    default, german = routes_by_name(quire, tree)
    assert default["team"] == "/contact/team" and default["ann"] == "/contact/team/ann"
    assert german["team"] == "/kontakt/mannschaft" and german["ann"] == "/kontakt/mannschaft/ann"
    assert default["jobs"] == "/about/jobs"
    lookup_all(de, tree, default)
    lookup_all(de, tree, german, locale="de")
    assert page_id_at(de, "/about/team/ann") is None
    order = [e["route"] for e in de.get("/api/pages/routes").json()["default"]]
    assert order == ["/", "/news", "/about", "/about/jobs", "/contact", "/contact/team", "/contact/team/ann"]


def test_moving_a_subtree_to_the_top_level(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["team"]["_id"], _pid=None)
    default, german = routes_by_name(quire, tree)
    assert default["ann"] == "/team/ann"
    assert german["ann"] == "/mannschaft/ann"


def test_moving_a_subtree_under_home_drops_a_segment(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["about"]["_id"], _pid=tree["home"]["_id"])
    default, german = routes_by_name(quire, tree)
    assert default == DEFAULT_ROUTES
    assert german == DE_ROUTES


def test_moving_into_a_descendant_changes_nothing(tree: Tree, de: Api, quire: Quire) -> None:
    before = all_stored(quire)
    for target in ("about", "team", "ann"):
        body = error_of(post_page(de, {"_id": tree["about"]["_id"], "_pid": tree[target]["_id"]}), 400)
        assert body["fields"] == ["_pid"]
    assert all_stored(quire) == before


def test_moving_and_renaming_in_one_write(tree: Tree, de: Api, quire: Quire) -> None:
    update_page(de, tree["ann"]["_id"], _pid=tree["contact"]["_id"], slug="anna", slug_de="anna-de")
    default, german = routes_by_name(quire, tree)
    assert default["ann"] == "/contact/anna"
    assert german["ann"] == "/kontakt/anna-de"


def test_deleting_a_subtree_removes_its_routes(tree: Tree, de: Api) -> None:
    de.delete(f"/api/pages/page/{tree['about']['_id']}")
    body = de.get("/api/pages/routes").json()
    assert [e["route"] for e in body["default"]] == ["/", "/news", "/contact"]
    assert [e["route"] for e in body["de"]] == ["/", "/news", "/kontakt"]
