"""Events of the pages module: page save (before/after), page remove (per
page of a subtree), menu save/remove and settings save. A before-handler
may change what is saved; raising Reject answers 412 and stores nothing."""

from __future__ import annotations

from typing import Any

from quire.app import Quire
from quire.events import Events, Reject
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


def record(events: Events, *names: str) -> list[tuple[str, dict[str, Any]]]:
    seen: list[tuple[str, dict[str, Any]]] = []
    for name in names:
        events.on(name, lambda name=name, **payload: seen.append((name, dict(payload))))
    return seen


def test_page_save_events_on_create_and_update(admin: Api, events: Events, quire: Quire, admin_key: str) -> None:
    seen = record(events, "pages.page.save.before", "pages.page.save.after")
    page = make_page(admin, title="P")
    update_page(admin, page["_id"], title="Q")
    assert [n for n, _ in seen] == ["pages.page.save.before", "pages.page.save.after"] * 2
    assert [p["is_update"] for _, p in seen] == [False, False, True, True]
    for _, payload in seen:
        assert set(payload) == {"page", "is_update", "identity"}
        assert payload["page"]["_id"] == page["_id"]
        assert payload["identity"].key_id == quire.auth.identify(admin_key).key_id
    # the after event sees the page as stored, route included
    assert seen[3][1]["page"] == stored(quire, page["_id"])
    assert seen[1][1]["page"]["_r"] == "/p"


def test_before_handler_can_change_the_page(admin: Api, events: Events, quire: Quire) -> None:
    def stamp(page: dict[str, Any], **_: Any) -> None:
        page["seo"] = {**page.get("seo", {}), "robots": "index"}
        page["title"] = page["title"].upper()

    events.on("pages.page.save.before", stamp)
    page = make_page(admin, title="quiet", seo={"title": "x"})
    assert page["title"] == "QUIET"
    assert page["seo"] == {"title": "x", "robots": "index"}
    assert stored(quire, page["_id"]) == page
    assert admin.get(f"/api/pages/page/{page['_id']}").json()["title"] == "QUIET"


def test_before_handler_changing_the_slug_moves_the_route(admin: Api, events: Events) -> None:
    def reslug(page: dict[str, Any], **_: Any) -> None:
        page["slug"] = "changed"

    events.on("pages.page.save.before", reslug)
    page = make_page(admin, title="Hook")
    assert page["slug"] == "changed"
    assert page["_r"] == "/changed"
    assert page_id_at(admin, "/changed") == page["_id"]
    assert page_id_at(admin, "/hook") is None


def test_before_handler_changes_are_checked(admin: Api, events: Events, quire: Quire) -> None:
    taken = make_page(admin, title="Taken")

    def meddle(page: dict[str, Any], **_: Any) -> None:
        if page["title"] == "Blank me":
            page["title"] = ""
        elif page["title"] == "Collide":
            page["slug"] = "taken"
        elif page["title"] == "Loop":
            page["_pid"] = page["_id"]

    events.on("pages.page.save.before", meddle)
    assert error_of(post_page(admin, {"title": "Blank me"}), 400)["fields"] == ["title"]
    assert error_of(post_page(admin, {"title": "Collide"}), 409)["error"] == (
        f"Route /taken is already taken by page {taken['_id']}")
    assert error_of(post_page(admin, {"_id": taken["_id"], "title": "Loop"}), 400)["fields"] == ["_pid"]
    assert all_stored(quire) == [taken]


def test_reject_on_create_is_412_and_stores_nothing(admin: Api, events: Events, quire: Quire) -> None:
    async def refuse(page: dict[str, Any], is_update: bool, **_: Any) -> None:
        if not is_update:
            raise Reject("No new pages today")

    events.on("pages.page.save.before", refuse)
    after = record(events, "pages.page.save.after")
    assert error_of(post_page(admin, {"title": "P"}), 412) == {"error": "No new pages today"}
    assert all_stored(quire) == []
    assert after == []


def test_reject_on_update_leaves_the_subtree_alone(admin: Api, events: Events, quire: Quire) -> None:
    top = make_page(admin, title="Top")
    kid = make_page(admin, title="Kid", _pid=top["_id"])
    before = all_stored(quire)

    def refuse(page: dict[str, Any], is_update: bool, **_: Any) -> None:
        if is_update:
            raise Reject("Frozen")

    events.on("pages.page.save.before", refuse)
    assert error_of(post_page(admin, {"_id": top["_id"], "slug": "moved"}), 412) == {"error": "Frozen"}
    assert all_stored(quire) == before
    assert page_id_at(admin, "/top/kid") == kid["_id"]


def test_after_handler_failure_does_not_undo_the_save(admin: Api, events: Events, quire: Quire) -> None:
    def broken(**_: Any) -> None:
        raise RuntimeError("integration down")

    events.on("pages.page.save.after", broken)
    page = make_page(admin, title="Kept")
    assert stored(quire, page["_id"]) == page


def test_no_after_event_for_refused_writes(admin: Api, events: Events, quire: Quire) -> None:
    first = make_page(admin, title="A")
    seen = record(events, "pages.page.save.after")
    before = record(events, "pages.page.save.before")
    post_page(admin, {"title": "A", "bogus": 1})  # 400 before anything is loaded
    post_page(admin, {"_id": "0" * 24, "title": "x"})  # 404
    assert before == []
    post_page(admin, {"title": ""})  # 400
    post_page(admin, {"title": "A"})  # 409
    post_page(admin, {"_id": first["_id"], "_pid": first["_id"]})  # 400
    assert seen == []
    assert all_stored(quire) == [first]


def test_remove_event_per_page_of_the_subtree(admin: Api, events: Events) -> None:
    top = make_page(admin, title="Top")
    mid = make_page(admin, title="Mid", _pid=top["_id"])
    make_page(admin, title="Low", _pid=mid["_id"])
    make_page(admin, title="Mid2", _pid=top["_id"])
    make_page(admin, title="Other")
    seen = record(events, "pages.page.remove")
    admin.delete(f"/api/pages/page/{top['_id']}")
    assert sorted(p["page"]["title"] for _, p in seen) == ["Low", "Mid", "Mid2", "Top"]
    assert all("identity" in p for _, p in seen)


def test_reject_on_remove_is_412_and_deletes_nothing(admin: Api, events: Events, quire: Quire) -> None:
    top = make_page(admin, title="Top")
    make_page(admin, title="Kid", _pid=top["_id"])
    before = all_stored(quire)

    def refuse(page: dict[str, Any], **_: Any) -> None:
        if page["title"] == "Kid":
            raise Reject("Kid is protected")

    events.on("pages.page.remove", refuse)
    assert error_of(admin.delete(f"/api/pages/page/{top['_id']}"), 412) == {"error": "Kid is protected"}
    assert all_stored(quire) == before


def test_menu_events(admin: Api, events: Events, quire: Quire) -> None:
    seen = record(events, "pages.menu.save", "pages.menu.remove")
    menu = admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [{"url": "/a"}]}}).json()
    admin.delete("/api/pages/menu/main")
    assert [n for n, _ in seen] == ["pages.menu.save", "pages.menu.remove"]
    assert seen[0][1]["menu"] == menu
    assert seen[1][1]["menu"]["_id"] == menu["_id"]
    assert all("identity" in p for _, p in seen)


def test_menu_save_handler_can_change_or_reject(admin: Api, events: Events, quire: Quire) -> None:
    def guard(menu: dict[str, Any], **_: Any) -> None:
        if menu["name"] == "blocked":
            raise Reject("Not this menu")
        menu["label"] = "Checked"

    events.on("pages.menu.save", guard)
    response = admin.post("/api/pages/menu", json={"data": {"name": "blocked"}})
    assert error_of(response, 412) == {"error": "Not this menu"}
    assert quire.store.collection("pages/menus").find() == []
    menu = admin.post("/api/pages/menu", json={"data": {"name": "main"}}).json()
    assert menu["label"] == "Checked"
    assert admin.get("/api/pages/menu/main").json()["label"] == "Checked"


def test_menu_remove_reject_keeps_the_menu(admin: Api, events: Events) -> None:
    admin.post("/api/pages/menu", json={"data": {"name": "main"}})

    def refuse(**_: Any) -> None:
        raise Reject("Keep it")

    events.on("pages.menu.remove", refuse)
    assert error_of(admin.delete("/api/pages/menu/main"), 412) == {"error": "Keep it"}
    assert admin.get("/api/pages/menu/main").status_code == 200


def test_settings_save_event(admin: Api, events: Events) -> None:
    seen = record(events, "pages.settings.save")
    admin.post("/api/pages/settings", json={"data": {"seo": {"a": 1}}})
    assert len(seen) == 1
    assert seen[0][1]["settings"]["seo"] == {"a": 1}
    assert "identity" in seen[0][1]


def test_settings_save_reject_stores_nothing(admin: Api, events: Events) -> None:
    admin.post("/api/pages/settings", json={"data": {"seo": {"a": 1}}})

    def refuse(settings: dict[str, Any], **_: Any) -> None:
        if settings.get("scripts"):
            raise Reject("No scripts")

    events.on("pages.settings.save", refuse)
    response = admin.post("/api/pages/settings", json={"data": {"scripts": {"x": "y"}, "seo": {"b": 2}}})
    assert error_of(response, 412) == {"error": "No scripts"}
    body = admin.get("/api/pages/settings").json()
    assert body["seo"] == {"a": 1} and body["scripts"] == {}
