"""Revisions of pages and of the pages' settings over the API: saves,
moves and deletions record them; a page comes back whole (and after its
deletion, with its id and its route); the settings too; pages/manage is
needed."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, role_key
from tests.pages.conftest import make_page, page_id_at, update_page


def history(api: Api, path: str) -> dict[str, Any]:
    response = api.get(path)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_a_page_has_a_history_and_is_restored_whole(admin: Api) -> None:
    page = make_page(admin, title="About", slug="about", data={"intro": "Hello"})
    update_page(admin, page["_id"], title="About us", seo={"title": "About us, the team"})
    listed = history(admin, f"/api/revisions/pages/{page['_id']}")
    assert [r["action"] for r in listed["data"]] == ["update", "create"]
    assert "title" in listed["data"][0]["fields"] and "seo" in listed["data"][0]["fields"]
    restored = admin.post(f"/api/revisions/pages/{page['_id']}/1/restore")
    assert restored.status_code == 200, restored.text
    body = restored.json()
    assert body["title"] == "About" and body["seo"] == {}  # as the old version had it
    assert history(admin, f"/api/revisions/pages/{page['_id']}")["data"][0]["action"] == "restore"
    assert page_id_at(admin, "/about") == page["_id"]


def test_a_deleted_page_comes_back_with_its_id_and_route(admin: Api) -> None:
    page = make_page(admin, title="Imprint", slug="imprint")
    assert admin.delete(f"/api/pages/page/{page['_id']}").status_code == 200
    assert page_id_at(admin, "/imprint") is None
    listed = history(admin, f"/api/revisions/pages/{page['_id']}")
    assert [r["action"] for r in listed["data"]] == ["delete", "create"]
    assert admin.post(f"/api/revisions/pages/{page['_id']}/2/restore").status_code == 400
    back = admin.post(f"/api/revisions/pages/{page['_id']}/1/restore")
    assert back.status_code == 200, back.text
    assert back.json()["_id"] == page["_id"]
    assert page_id_at(admin, "/imprint") == page["_id"]
    assert history(admin, f"/api/revisions/pages/{page['_id']}")["data"][0]["action"] == "restore"


def test_the_pages_settings_have_a_history(admin: Api) -> None:
    assert admin.post("/api/pages/settings", json={"data": {"seo": {"title": "Site"}}}).status_code == 200
    assert admin.post("/api/pages/settings", json={"data": {"seo": {"title": "New"},
                                                             "meta": {"a": 1}}}).status_code == 200
    listed = history(admin, "/api/revisions/pages/settings")
    assert [r["n"] for r in listed["data"]] == [2, 1]
    diff = history(admin, "/api/revisions/pages/settings/diff")
    paths = {c["path"] for c in diff["changes"]}
    assert "/seo/title" in paths and "/meta" in paths
    restored = admin.post("/api/revisions/pages/settings/1/restore")
    assert restored.status_code == 200, restored.text
    now = admin.get("/api/pages/settings").json()
    assert now["seo"] == {"title": "Site"} and now["meta"] == {}


def test_page_histories_need_pages_manage(admin: Api) -> None:
    page = make_page(admin, title="T", slug="t")
    reader = role_key(admin, "reader", {"pages/read": True})
    for path in (f"/api/revisions/pages/{page['_id']}", "/api/revisions/pages/settings",
                 f"/api/revisions/pages/{page['_id']}/1"):
        assert reader.get(path).status_code == 403
    assert reader.post(f"/api/revisions/pages/{page['_id']}/1/restore").status_code == 403
    assert admin.get("/api/revisions/pages/not-an-id").status_code == 404
    assert admin.get(f"/api/revisions/pages/{page['_id']}/5").status_code == 404
