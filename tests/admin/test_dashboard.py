"""The dashboard, and pages kept to roles that may manage the system
(issue 8, point 2)."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.admin.conftest import Browser, csrf_of, logged_in
from tests.conftest import Api, create_item, put_model

MANAGER_PAGES = ["/admin/keys", "/admin/users", "/system/api"]


@pytest.fixture
def content(admin: Api, quire: Quire) -> None:
    """Two models with an item each, and a role that reads only one."""
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "secrets", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "Hello world"})
    create_item(admin, "secrets", {"title": "Classified plans"})
    quire.auth.save_role("reader", {"permissions": {"content/posts/read": True}})
    quire.auth.save_role("manager", {"permissions": {"system/manage": True}})


def _nav(html: str) -> str:
    return html[html.index("<nav "):html.index("</nav>")]


def test_dashboard_lists_models_recent_items_and_the_user(app: Any, content: None) -> None:
    browser = logged_in(app, "ann")
    response = browser.get("/")
    assert response.status_code == 200
    html = response.text
    assert "<code>posts</code>" in html and "<code>secrets</code>" in html
    assert "Hello world" in html and "Classified plans" in html
    assert "Welcome, ann" in html
    assert "<dd>ann@example.org</dd>" in html and "<dd>admin</dd>" in html


def test_dashboard_shows_only_models_the_role_can_read(app: Any, content: None) -> None:
    html = logged_in(app, "rita", role="reader").get("/").text
    assert "<code>posts</code>" in html and "Hello world" in html
    assert "secrets" not in html and "Classified plans" not in html
    assert "<dd>reader</dd>" in html


def test_dashboard_lists_the_most_recent_items_first(app: Any, admin: Api, content: None) -> None:
    create_item(admin, "posts", {"title": "Newest post"})
    html = logged_in(app).get("/").text
    recent = html[html.index("Recent items"):]
    assert recent.index("Newest post") < recent.index("Hello world")


def test_dashboard_escapes_item_titles(app: Any, admin: Api, content: None) -> None:
    create_item(admin, "posts", {"title": "<script>alert(1)</script>"})
    html = logged_in(app).get("/").text
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_dashboard_without_models_says_so(app: Any) -> None:
    html = logged_in(app).get("/").text
    assert "No models you can read yet." in html


@pytest.mark.parametrize("path", MANAGER_PAGES)
def test_role_without_system_manage_gets_403_on_manager_pages(app: Any, content: None, path: str) -> None:
    response = logged_in(app, "rita", role="reader").get(path)
    assert response.status_code == 403
    assert "Your role does not allow this page." in response.text


@pytest.mark.parametrize("path", ["/admin/keys", "/admin/users"])
def test_role_without_system_manage_cannot_post_manager_forms(
        app: Any, quire: Quire, content: None, path: str) -> None:
    browser = logged_in(app, "rita", role="reader")
    csrf = csrf_of(browser.get("/auth/logout").text)
    form = {"csrf": csrf, "action": "create", "name": "sneaky", "role": "admin", "user": "mallory",
            "email": "mallory@example.org", "password": "long enough password"}
    assert browser.post(path, data=form).status_code == 403
    assert all(k["name"] != "sneaky" for k in quire.auth.list_keys())
    assert quire.users.by_name("mallory") is None


def test_nav_of_a_role_without_system_manage_has_no_manager_links(app: Any, content: None) -> None:
    nav = _nav(logged_in(app, "rita", role="reader").get("/").text)
    assert 'href="/"' in nav
    for path in MANAGER_PAGES:
        assert f'href="{path}"' not in nav


def test_nav_of_an_admin_links_every_manager_page(app: Any) -> None:
    nav = _nav(logged_in(app).get("/").text)
    for path in MANAGER_PAGES:
        assert f'href="{path}"' in nav


@pytest.mark.parametrize("path", MANAGER_PAGES)
def test_role_with_system_manage_may_open_manager_pages(app: Any, content: None, path: str) -> None:
    assert logged_in(app, "max", role="manager").get(path).status_code == 200


@pytest.mark.parametrize("path", ["/", "/admin/keys", "/admin/users", "/system/api", "/auth/logout"])
def test_every_logged_in_page_subscribes_to_the_event_stream(app: Any, path: str) -> None:
    html = logged_in(app).get(path).text
    assert '<body data-events="/system/events" data-tz="' in html
    assert '<script src="/admin/static/admin.js"></script>' in html


def test_login_page_does_not_subscribe_to_the_event_stream(browser: Browser) -> None:
    assert "data-events" not in browser.get("/auth/login").text


def test_a_role_change_applies_to_the_open_session(app: Any, quire: Quire, content: None) -> None:
    browser = logged_in(app, "rita", role="reader")
    assert browser.get("/admin/keys").status_code == 403
    user = quire.users.by_name("rita")
    assert user is not None
    quire.users.update(user["_id"], {"role": "manager"})
    assert browser.get("/admin/keys").status_code == 200
