"""Routes are unique per locale across all pages, drafts too: a write that
would give two pages one route is a 409 naming the slug and stores nothing."""

from __future__ import annotations

from typing import Any

from quire.app import Quire
from tests.conftest import Api
from tests.pages.conftest import (
    all_stored,
    error_of,
    make_page,
    page_id_at,
    post_page,
    stored,
    update_page,
)


def conflict(api: Api, quire: Quire, data: dict[str, Any], route: str, holder: str,
             field: str = "slug", locale: str | None = None) -> None:
    """POST `data`: a 409 for `route` held by `holder`, and nothing stored."""
    before = all_stored(quire)
    where = f" in locale {locale}" if locale else ""
    response = post_page(api, data)
    assert error_of(response, 409) == {
        "error": f"Route {route}{where} is already taken by page {holder}",
        "fields": [field],
    }
    assert all_stored(quire) == before


def test_sibling_with_the_same_slug_is_409(admin: Api, quire: Quire) -> None:
    first = make_page(admin, title="About")
    conflict(admin, quire, {"title": "About"}, "/about", first["_id"])
    conflict(admin, quire, {"title": "Other", "slug": "about"}, "/about", first["_id"])


def test_same_slug_under_different_parents_is_fine(admin: Api) -> None:
    a = make_page(admin, title="A")
    b = make_page(admin, title="B")
    assert make_page(admin, title="Team", _pid=a["_id"])["_r"] == "/a/team"
    assert make_page(admin, title="Team", _pid=b["_id"])["_r"] == "/b/team"


def test_slugs_differ_by_case(admin: Api) -> None:
    make_page(admin, title="x", slug="Case")
    assert make_page(admin, title="y", slug="case")["_r"] == "/case"


def test_same_localized_slug_is_409_naming_the_localized_slug(de: Api, quire: Quire) -> None:
    first = make_page(de, title="About", slug_de="ueber")
    conflict(de, quire, {"title": "Other", "slug_de": "ueber"}, "/ueber", first["_id"], "slug_de", "de")


def test_localized_title_making_a_taken_localized_slug_is_409(de: Api, quire: Quire) -> None:
    first = make_page(de, title="About", title_de="Über")
    conflict(de, quire, {"title": "Other", "title_de": "Über"}, "/uber", first["_id"], "slug_de", "de")


def test_localized_slug_equal_to_a_default_route_without_translation_is_409(de: Api, quire: Quire) -> None:
    # "contact" has no German slug, so its German route is /contact too
    contact = make_page(de, title="Contact")
    conflict(de, quire, {"title": "Kontakt", "slug": "kontakt", "slug_de": "contact"}, "/contact",
             contact["_id"], "slug_de", "de")


def test_page_without_translation_colliding_with_a_localized_route_is_409(de: Api, quire: Quire) -> None:
    about = make_page(de, title="About", slug_de="ueber")
    # default route /ueber is free, but its German route (the default one) is taken
    conflict(de, quire, {"title": "Ueber"}, "/ueber", about["_id"], "slug_de", "de")


def test_localized_slug_may_equal_another_pages_default_slug_when_that_one_is_translated(
    de: Api,
) -> None:
    make_page(de, title="A", slug="x", slug_de="y")
    page = make_page(de, title="B", slug="y", slug_de="x")
    assert (page["_r"], page["_r_de"]) == ("/y", "/x")
    assert page_id_at(de, "/x", locale="de") == page["_id"]
    assert page_id_at(de, "/x") != page["_id"]


def test_home_child_and_top_level_page_collide(admin: Api, quire: Quire) -> None:
    home = make_page(admin, title="Home", slug="")
    kid = make_page(admin, title="X", _pid=home["_id"])
    conflict(admin, quire, {"title": "X"}, "/x", kid["_id"])
    top = make_page(admin, title="Y")
    conflict(admin, quire, {"title": "Y", "_pid": home["_id"]}, "/y", top["_id"])


def test_second_home_page_is_409(admin: Api, quire: Quire) -> None:
    home = make_page(admin, title="Home", slug="")
    conflict(admin, quire, {"title": "Start", "slug": ""}, "/", home["_id"])


def test_a_draft_holds_its_route(admin: Api, quire: Quire) -> None:
    draft = make_page(admin, title="Soon", _state=0)
    conflict(admin, quire, {"title": "Soon"}, "/soon", draft["_id"])
    archived = make_page(admin, title="Old", _state=-1)
    conflict(admin, quire, {"title": "Old"}, "/old", archived["_id"])


def test_a_page_under_a_draft_holds_its_route(admin: Api, quire: Quire) -> None:
    draft = make_page(admin, title="Draft", _state=0)
    kid = make_page(admin, title="Kid", _pid=draft["_id"])
    other = make_page(admin, title="Other", slug="draft2")
    conflict(admin, quire, {"_id": other["_id"], "_pid": draft["_id"], "slug": "kid"}, "/draft/kid", kid["_id"])


def test_renaming_into_a_taken_slug_is_409_and_changes_nothing(de: Api, quire: Quire) -> None:
    about = make_page(de, title="About")
    team = make_page(de, title="Team", _pid=about["_id"])
    contact = make_page(de, title="Contact", slug_de="kontakt")
    conflict(de, quire, {"_id": about["_id"], "slug": "contact", "title": "Changed"}, "/contact", contact["_id"])
    conflict(de, quire, {"_id": about["_id"], "slug_de": "kontakt"}, "/kontakt", contact["_id"], "slug_de", "de")
    assert stored(quire, about["_id"]) == about
    assert stored(quire, team["_id"]) == team
    assert page_id_at(de, "/about/team") == team["_id"]


def test_moving_next_to_a_sibling_with_the_same_slug_is_409(de: Api, quire: Quire) -> None:
    a = make_page(de, title="A")
    b = make_page(de, title="B")
    team_a = make_page(de, title="Team", _pid=a["_id"])
    team_b = make_page(de, title="Team", _pid=b["_id"])
    make_page(de, title="Deep", _pid=team_b["_id"])
    conflict(de, quire, {"_id": team_b["_id"], "_pid": a["_id"]}, "/a/team", team_a["_id"])
    assert page_id_at(de, "/b/team/deep") is not None


def test_update_keeping_its_own_route_is_no_conflict(de: Api) -> None:
    page = make_page(de, title="Same", slug_de="gleich")
    kid = make_page(de, title="Kid", _pid=page["_id"])
    assert update_page(de, page["_id"], slug="same", slug_de="gleich")["_r"] == "/same"
    assert update_page(de, kid["_id"], title="Kid 2")["_r"] == "/same/kid"


def test_swapping_slugs_through_a_free_name(admin: Api) -> None:
    a = make_page(admin, title="A")
    b = make_page(admin, title="B")
    update_page(admin, a["_id"], slug="tmp")
    update_page(admin, b["_id"], slug="a")
    update_page(admin, a["_id"], slug="b")
    assert page_id_at(admin, "/a") == b["_id"]
    assert page_id_at(admin, "/b") == a["_id"]
