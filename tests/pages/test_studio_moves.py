"""What the studio's page tree uses of the pages service: the outline
(every state for managers, published for readers), the route changes a
move would make (nothing stored), and a move to a parent and position
(siblings renumbered, routes of the subtree following, refusals storing
nothing)."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from quire.auth.service import Identity
from quire.errors import ApiError, Conflict, ValidationError
from quire.pages.service import PagesService
from tests.conftest import Api
from tests.pages.conftest import all_stored, make_page, page_id_at

ADMIN = Identity("admin", key_id="tests")
READER = Identity("reader", frozenset({"pages/read"}), key_id="tests")


def _service(quire: Quire) -> PagesService:
    return quire.pages  # type: ignore[no-any-return]


def _titles(nodes: list[dict[str, Any]]) -> list[Any]:
    return [(n["title"], _titles(n["_children"])) if n["_children"] else n["title"] for n in nodes]


def test_outline_nests_pages_by_order_and_hides_drafts_from_readers(
        quire: Quire, tree: dict[str, dict[str, Any]], de: Api) -> None:
    make_page(de, title="Draft", _state=0, _pid=tree["about"]["_id"])
    pages = _service(quire)
    assert _titles(pages.outline(ADMIN)) == [("Home", ["News"]), ("About", [("Team", ["Ann"]), "Jobs", "Draft"]),
                                             "Contact"]
    assert _titles(pages.outline(READER)) == [("Home", ["News"]), ("About", [("Team", ["Ann"]), "Jobs"]), "Contact"]
    with pytest.raises(ApiError):
        pages.outline(Identity("nobody", key_id="tests"))


def test_move_plan_lists_route_changes_per_locale_and_stores_nothing(
        quire: Quire, tree: dict[str, dict[str, Any]]) -> None:
    before = all_stored(quire)
    plan = _service(quire).move_plan(tree["team"]["_id"], tree["contact"]["_id"], ADMIN)
    assert {(c["title"], c["locale"], c["old"], c["new"]) for c in plan} == {
        ("Team", "default", "/about/team", "/contact/team"), ("Team", "de", "/ueber-uns/mannschaft", "/kontakt/mannschaft"),
        ("Ann", "default", "/about/team/ann", "/contact/team/ann"),
        ("Ann", "de", "/ueber-uns/mannschaft/ann", "/kontakt/mannschaft/ann")}
    assert _service(quire).move_plan(tree["team"]["_id"], tree["about"]["_id"], ADMIN) == []
    with pytest.raises(ValidationError):
        _service(quire).move_plan(tree["about"]["_id"], tree["ann"]["_id"], ADMIN)
    with pytest.raises(ApiError):
        _service(quire).move_plan(tree["about"]["_id"], None, READER)
    assert all_stored(quire) == before


@pytest.mark.anyio
async def test_move_renumbers_siblings_and_moves_routes(quire: Quire, tree: dict[str, dict[str, Any]], de: Api) -> None:
    pages = _service(quire)
    await pages.move(tree["contact"]["_id"], tree["about"]["_id"], 1, ADMIN)
    about = [n for n in pages.outline(ADMIN) if n["title"] == "About"][0]
    assert [(n["title"], n["_o"]) for n in about["_children"]] == [("Team", 0), ("Contact", 1), ("Jobs", 2)]
    assert page_id_at(de, "/ueber-uns/kontakt", locale="de") == tree["contact"]["_id"]
    await pages.move(tree["jobs"]["_id"], tree["about"]["_id"], 0, ADMIN)
    about = [n for n in pages.outline(ADMIN) if n["title"] == "About"][0]
    assert [n["title"] for n in about["_children"]] == ["Jobs", "Team", "Contact"]


@pytest.mark.anyio
async def test_a_refused_move_stores_nothing(quire: Quire, tree: dict[str, dict[str, Any]], de: Api) -> None:
    make_page(de, title="Ann", slug="ann")  # /ann at the top
    before = all_stored(quire)
    pages = _service(quire)
    with pytest.raises(Conflict):
        await pages.move(tree["ann"]["_id"], None, 0, ADMIN)
    with pytest.raises(ValidationError):
        await pages.move(tree["about"]["_id"], tree["team"]["_id"], 0, ADMIN)
    with pytest.raises(ValidationError):
        await pages.move(tree["news"]["_id"], "0" * 24, 0, ADMIN)
    with pytest.raises(ValidationError):  # only a top-level page may have the empty slug
        await pages.move(tree["home"]["_id"], tree["about"]["_id"], 0, ADMIN)
    assert all_stored(quire) == before


def test_a_locale_code_with_an_underscore_is_one_code(admin: Any) -> None:
    """`pt_BR` is one locale: `title_pt_BR` and the settings' `seo_pt_BR`
    are its values, not a field `title_pt` of a locale `BR`."""
    admin.put("/api/system/locales", json=[{"i18n": "pt_BR", "name": "Português"}])
    page = admin.post("/api/pages/page", json={"data": {"title": "About", "title_pt_BR": "Sobre"}})
    assert page.status_code == 200, page.text
    assert admin.get(f"/api/pages/page/{page.json()['_id']}", params={"locale": "pt_BR"}).json()["title"] == "Sobre"
    saved = admin.post("/api/pages/settings", json={"data": {"seo_pt_BR": {"title": "Sítio"}}})
    assert saved.status_code == 200, saved.text
    assert admin.post("/api/pages/settings", json={"data": {"seo_pt_BR": "x"}}).status_code == 400
