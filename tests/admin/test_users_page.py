"""The users page: create, update, deactivate, delete, and what it
refuses (issue 8, points 1-2)."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.admin.conftest import (
    PASSWORD,
    Browser,
    csrf_of,
    logged_in,
    login,
    make_user,
    new_browser,
    session_of,
)

NEW_PASSWORD = "another long password"


@pytest.fixture
def ann(app: Any) -> Browser:
    return logged_in(app)


def _post(browser: Browser, **form: str) -> Any:
    csrf = csrf_of(browser.get("/admin/users").text)
    return browser.post("/admin/users", data={"csrf": csrf, **form})


def _create(browser: Browser, user: str = "carl", **form: str) -> Any:
    fields = {"user": user, "email": f"{user}@example.org", "name": "", "role": "admin", "password": PASSWORD}
    return _post(browser, action="create", **{**fields, **form})


def _update(browser: Browser, target: dict[str, Any], **form: str | None) -> Any:
    """The row form of `target` as the page sends it: every field, `active` when ticked."""
    fields = {"id": target["_id"], "user": target["user"], "email": target["email"],
              "name": target["name"], "role": target["role"], "active": "on", "password": ""}
    sent: dict[str, str] = {k: v for k, v in {**fields, **form}.items() if v is not None}
    return _post(browser, action="update", **sent)


def _stored(quire: Quire, name: str) -> dict[str, Any]:
    doc = quire.users.by_name(name)
    assert doc is not None
    return doc


def _can_log_in(app: Any, user: str, password: str) -> bool:
    return int(login(new_browser(app), user, password).status_code) == 303


def test_users_page_lists_users_without_password_hashes(ann: Browser, quire: Quire) -> None:
    make_user(quire, "bob")
    html = ann.get("/admin/users").text
    assert 'value="ann"' in html and 'value="bob"' in html
    assert "bob@example.org" in html
    assert "$argon2" not in html


def test_create_user_stores_an_argon2_hash_and_the_user_can_log_in(app: Any, ann: Browser,
                                                                   quire: Quire) -> None:
    response = _create(ann, "carl", name="Carl C")
    assert response.status_code == 200
    assert "User carl created." in response.text
    stored = _stored(quire, "carl")
    assert stored["password"].startswith("$argon2")
    assert PASSWORD not in stored["password"]
    assert stored["name"] == "Carl C" and stored["role"] == "admin" and stored["active"] is True
    assert _can_log_in(app, "carl", PASSWORD)


def test_create_user_without_a_password_makes_a_user_who_cannot_log_in(app: Any, ann: Browser,
                                                                       quire: Quire) -> None:
    assert _create(ann, "sso-only", password="").status_code == 200
    assert "password" not in _stored(quire, "sso-only")
    assert not _can_log_in(app, "sso-only", "")


def test_update_with_empty_password_keeps_the_old_one(app: Any, ann: Browser, quire: Quire) -> None:
    carl = make_user(quire, "carl")
    old_hash = _stored(quire, "carl")["password"]
    response = _update(ann, carl, name="Carl Renamed", password="")
    assert response.status_code == 200
    assert "User carl saved." in response.text
    stored = _stored(quire, "carl")
    assert stored["name"] == "Carl Renamed"
    assert stored["password"] == old_hash
    assert _can_log_in(app, "carl", PASSWORD)


def test_update_with_a_new_password_replaces_the_old_one(app: Any, ann: Browser, quire: Quire) -> None:
    carl = make_user(quire, "carl")
    assert _update(ann, carl, password=NEW_PASSWORD).status_code == 200
    assert _stored(quire, "carl")["password"].startswith("$argon2")
    assert _can_log_in(app, "carl", NEW_PASSWORD)
    assert not _can_log_in(app, "carl", PASSWORD)


def test_too_short_password_is_refused(ann: Browser, quire: Quire) -> None:
    response = _create(ann, "carl", password="short")
    assert response.status_code == 400
    assert "Password must have at least 8 characters" in response.text
    assert quire.users.by_name("carl") is None


def test_deactivating_a_user_ends_their_sessions(app: Any, ann: Browser, quire: Quire) -> None:
    carl_browser = logged_in(app, "carl")
    session_id = session_of(quire, carl_browser)["_id"]
    carl = _stored(quire, "carl")
    response = _update(ann, carl, active=None)  # the box is not ticked: the field is not sent
    assert response.status_code == 200
    assert _stored(quire, "carl")["active"] is False
    assert quire.sessions.sessions.get(session_id) is None
    redirected = carl_browser.get("/")
    assert redirected.status_code == 303 and redirected.headers["location"] == "/auth/login"
    assert not _can_log_in(app, "carl", PASSWORD)


def test_reactivated_user_can_log_in_again(app: Any, ann: Browser, quire: Quire) -> None:
    carl = make_user(quire, "carl", active=False)
    assert not _can_log_in(app, "carl", PASSWORD)
    assert _update(ann, carl).status_code == 200
    assert _can_log_in(app, "carl", PASSWORD)


def test_deleting_a_user_removes_them_and_ends_their_sessions(app: Any, ann: Browser, quire: Quire) -> None:
    carl_browser = logged_in(app, "carl")
    carl = _stored(quire, "carl")
    response = _post(ann, action="delete", id=carl["_id"])
    assert response.status_code == 200
    assert "User deleted." in response.text
    assert quire.users.get(carl["_id"]) is None
    assert quire.sessions.list_all(carl["_id"]) == []
    assert carl_browser.get("/").status_code == 303
    assert not _can_log_in(app, "carl", PASSWORD)


def test_admin_cannot_delete_themself(ann: Browser, quire: Quire) -> None:
    me = _stored(quire, "ann")
    response = _post(ann, action="delete", id=me["_id"])
    assert response.status_code == 400
    assert "You cannot delete yourself" in response.text
    assert quire.users.get(me["_id"]) is not None
    assert ann.get("/").status_code == 200


def test_admin_cannot_deactivate_themself(ann: Browser, quire: Quire) -> None:
    me = _stored(quire, "ann")
    response = _update(ann, me, active=None)
    assert response.status_code == 400
    assert "You cannot deactivate yourself" in response.text
    assert _stored(quire, "ann")["active"] is True
    assert ann.get("/").status_code == 200


def test_admin_cannot_change_their_own_role(ann: Browser, quire: Quire) -> None:
    me = _stored(quire, "ann")
    response = _update(ann, me, role="public")
    assert response.status_code == 400
    assert "change your own role" in response.text
    assert _stored(quire, "ann")["role"] == "admin"


def test_admin_may_save_their_own_row_unchanged_but_renamed(ann: Browser, quire: Quire) -> None:
    me = _stored(quire, "ann")
    assert _update(ann, me, name="Ann A").status_code == 200
    assert _stored(quire, "ann")["name"] == "Ann A"


def test_duplicate_user_name_is_refused_with_a_message(ann: Browser, quire: Quire) -> None:
    response = _create(ann, "ann", email="other@example.org")
    assert response.status_code == 400
    assert "Another user has this name" in response.text
    assert len(quire.users.list_all()) == 1


def test_duplicate_email_is_refused_with_a_message(ann: Browser, quire: Quire) -> None:
    response = _create(ann, "carl", email="ann@example.org")
    assert response.status_code == 400
    assert "Another user has this e-mail" in response.text
    assert quire.users.by_name("carl") is None


def test_renaming_onto_another_users_name_or_email_is_refused(ann: Browser, quire: Quire) -> None:
    carl = make_user(quire, "carl")
    response = _update(ann, carl, user="ann")
    assert response.status_code == 400 and "Another user has this name" in response.text
    response = _update(ann, carl, email="ann@example.org")
    assert response.status_code == 400 and "Another user has this e-mail" in response.text
    assert _stored(quire, "carl")["email"] == "carl@example.org"


@pytest.mark.parametrize("email", ["no-at-sign", "a@b", "two@@example.org", "sp ace@example.org",
                                   "<a>@example.org", "carl@example.org\n", ""])
def test_invalid_email_is_refused(ann: Browser, quire: Quire, email: str) -> None:
    response = _create(ann, "carl", email=email)
    assert response.status_code == 400
    assert "Invalid email format" in response.text
    assert quire.users.by_name("carl") is None


@pytest.mark.parametrize("name", ["a<b", "a>b", 'a"b', "a'b", "<script>", "  "])
def test_user_names_with_markup_characters_or_blank_are_refused(ann: Browser, quire: Quire,
                                                               name: str) -> None:
    response = _create(ann, name, email="carl@example.org")
    assert response.status_code == 400
    assert "User name is required and may not contain" in response.text
    assert len(quire.users.list_all()) == 1


def test_unknown_role_is_refused(ann: Browser, quire: Quire) -> None:
    response = _create(ann, "carl", role="ghost")
    assert response.status_code == 400
    assert "Role does not exist" in response.text


def test_users_form_needs_the_csrf_token(ann: Browser, quire: Quire) -> None:
    form = {"action": "create", "user": "carl", "email": "carl@example.org", "role": "admin",
            "password": PASSWORD}
    assert ann.post("/admin/users", data=form).status_code == 403
    assert ann.post("/admin/users", data={**form, "csrf": "forged"}).status_code == 403
    assert quire.users.by_name("carl") is None


def test_deleting_needs_the_csrf_token(ann: Browser, quire: Quire) -> None:
    carl = make_user(quire, "carl")
    assert ann.post("/admin/users", data={"action": "delete", "id": carl["_id"]}).status_code == 403
    assert quire.users.get(carl["_id"]) is not None


def test_unknown_action_is_refused(ann: Browser) -> None:
    response = _post(ann, action="promote")
    assert response.status_code == 400
    assert "Unknown action" in response.text


# -- roles -------------------------------------------------------------------------------


def test_roles_are_edited_in_the_matrix_not_here(ann: Browser, quire: Quire) -> None:
    page = ann.get("/admin/users").text
    assert 'href="/studio/settings/roles"' in page and 'value="save-role"' not in page
    response = _post(ann, action="save-role", role_name="writer", permissions="assets/read")
    assert response.status_code == 400 and "Unknown action" in response.text
    assert not quire.auth.role_exists("writer")
