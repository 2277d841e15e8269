"""The API keys page: create (shown once), use, revoke, errors, CSRF
(issue 8, point 2)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from quire.app import Quire
from tests.admin.conftest import Browser, csrf_of, logged_in
from tests.conftest import Api, create_item, put_model


@pytest.fixture
def posts(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "Hello"})


@pytest.fixture
def ann(app: Any) -> Browser:
    return logged_in(app)


def _create(browser: Browser, name: str = "ci", role: str = "admin") -> Any:
    csrf = csrf_of(browser.get("/admin/keys").text)
    return browser.post("/admin/keys", data={"csrf": csrf, "action": "create", "name": name, "role": role})


def _shown_key(html: str) -> str:
    found = re.search(r'<code class="key" id="new-key">(qk_[^<]+)</code>', html)
    assert found, "the new key is not on the page"
    return found.group(1)


def _key_id(quire: Quire, name: str) -> str:
    return str(next(k["_id"] for k in quire.auth.list_keys() if k["name"] == name))


def test_keys_page_lists_keys_without_their_secret(ann: Browser, quire: Quire, admin_key: str) -> None:
    response = ann.get("/admin/keys")
    assert response.status_code == 200
    assert "test admin" in response.text
    assert f"…{admin_key[-4:]}" in response.text
    assert admin_key not in response.text


def test_created_key_is_shown_once(ann: Browser) -> None:
    response = _create(ann)
    assert response.status_code == 200
    key = _shown_key(response.text)
    assert "it is shown only once" in response.text
    later = ann.get("/admin/keys")
    assert key not in later.text
    assert "ci" in later.text and f"…{key[-4:]}" in later.text


def test_created_key_works_against_the_api_and_revoking_it_makes_it_fail(
        ann: Browser, anon: Api, quire: Quire, posts: None) -> None:
    key = _shown_key(_create(ann, "reader key").text)
    response = anon.get("/api/content/items/posts", headers={"api-key": key})
    assert response.status_code == 200
    assert response.json()[0]["title"] == "Hello"
    key_id = _key_id(quire, "reader key")
    revoked = ann.post("/admin/keys", data={"csrf": csrf_of(ann.get("/admin/keys").text),
                                            "action": "revoke", "id": key_id})
    assert revoked.status_code == 200
    assert "reader key" not in revoked.text
    response = anon.get("/api/content/items/posts", headers={"api-key": key})
    assert response.status_code == 401
    assert response.json() == {"error": "Authentication failed"}


def test_created_key_has_the_chosen_role(ann: Browser, anon: Api, quire: Quire, posts: None) -> None:
    quire.auth.save_role("nothing", {"permissions": {}})
    key = _shown_key(_create(ann, "weak", "nothing").text)
    assert anon.get("/api/content/items/posts", headers={"api-key": key}).status_code == 403


def test_unknown_role_is_a_400_page_with_the_message(ann: Browser, quire: Quire) -> None:
    response = _create(ann, "ghostly", "ghost")
    assert response.status_code == 400
    assert "Role ghost does not exist" in response.text
    assert response.headers["content-type"].startswith("text/html")
    assert all(k["name"] != "ghostly" for k in quire.auth.list_keys())


def test_empty_key_name_is_a_400_page(ann: Browser) -> None:
    response = _create(ann, "  ")
    assert response.status_code == 400
    assert "Key name is required" in response.text


def test_revoking_an_unknown_key_says_so(ann: Browser) -> None:
    response = ann.post("/admin/keys", data={"csrf": csrf_of(ann.get("/admin/keys").text),
                                             "action": "revoke", "id": "nope"})
    assert response.status_code == 400
    assert "Key not found" in response.text


def test_error_messages_and_key_names_are_escaped(ann: Browser) -> None:
    response = _create(ann, "ok", "<img src=x onerror=alert(1)>")
    assert "<img src=x" not in response.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in response.text
    response = _create(ann, "<b>bold</b>")
    assert "<b>bold</b>" not in response.text and "&lt;b&gt;bold&lt;/b&gt;" in response.text


def test_creating_a_key_needs_the_csrf_token(ann: Browser, quire: Quire) -> None:
    before = len(quire.auth.list_keys())
    response = ann.post("/admin/keys", data={"action": "create", "name": "csrf-less", "role": "admin"})
    assert response.status_code == 403
    response = ann.post("/admin/keys", data={"csrf": "forged", "action": "create", "name": "forged",
                                             "role": "admin"})
    assert response.status_code == 403
    assert len(quire.auth.list_keys()) == before


def test_creating_a_key_from_a_foreign_origin_is_403(ann: Browser, quire: Quire) -> None:
    csrf = csrf_of(ann.get("/admin/keys").text)
    response = ann.post("/admin/keys", data={"csrf": csrf, "action": "create", "name": "x", "role": "admin"},
                        headers={"origin": "https://evil.example"})
    assert response.status_code == 403
    assert all(k["name"] != "x" for k in quire.auth.list_keys())


def test_revoking_a_key_needs_the_csrf_token(ann: Browser, anon: Api, quire: Quire, admin_key: str,
                                             posts: None) -> None:
    response = ann.post("/admin/keys", data={"action": "revoke", "id": _key_id(quire, "test admin")})
    assert response.status_code == 403
    assert anon.get("/api/content/items/posts", headers={"api-key": admin_key}).status_code == 200


def test_keys_page_needs_a_session(browser: Browser, quire: Quire) -> None:
    response = browser.post("/admin/keys", data={"action": "create", "name": "anon", "role": "admin"})
    assert response.status_code == 303
    assert response.headers["location"].startswith("/auth/login")
    assert all(k["name"] != "anon" for k in quire.auth.list_keys())


def test_a_new_key_starts_with_no_role_chosen(ann: Browser, quire: Quire) -> None:
    page = ann.get("/admin/keys").text
    assert '<select name="role" required><option value="" selected disabled>Choose a role…</option>' in page
    before = len(quire.auth.list_keys())
    answer = _create(ann, "site", "")
    assert answer.status_code == 400 and "A key needs a role" in answer.text
    assert len(quire.auth.list_keys()) == before
