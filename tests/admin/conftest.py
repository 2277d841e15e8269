"""Browsers for the admin shell: in-process TestClients that keep cookies
and do not follow redirects, users, and logging in through the form."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events
from tests.client import TestClient

PASSWORD = "correct horse battery"
SESSION_COOKIE = "quire_session"
LOGIN_CSRF_COOKIE = "quire_login_csrf"

Browser = TestClient
Cookie = tuple[str, dict[str, str | bool]]


def new_browser(app: Any, base_url: str = "http://testserver") -> Browser:
    """A browser of its own: its own cookie jar, redirects not followed."""
    return TestClient(app, base_url=base_url, follow_redirects=False, raise_server_exceptions=False)


@pytest.fixture
def browser(app: Any) -> Browser:
    return new_browser(app)


@pytest.fixture
def browsers(app: Any) -> Callable[[], Browser]:
    """More browsers on the same app (other people, other devices)."""
    return lambda: new_browser(app)


@pytest.fixture
def app_with(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Build an app with settings overrides, like `app_with(admin={...})`,
    on a data dir of its own (or `data=` one); closed after the test."""
    built: list[Any] = []

    def build(data: Path | None = None, **overrides: dict[str, Any]) -> Any:
        folder = data or tmp_path / f"data-{len(built)}"
        settings = load_settings(folder, env={"QUIRE_SERVER_QUIET": "true"}, overrides=overrides)
        application = build_app(settings, Events())
        built.append(application)
        return application

    yield build
    for application in built:
        application.state.quire.close()


def make_user(quire: Quire, user: str = "ann", role: str = "admin", password: str | None = PASSWORD,
              **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"user": user, "email": f"{user}@example.org", "role": role, **fields}
    if password is not None:
        body["password"] = password
    return quire.users.create(body)


def csrf_of(html: str) -> str:
    """The first CSRF field of a page."""
    found = re.search(r'name="csrf" value="([^"]*)"', html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def field_value(html: str, name: str) -> str | None:
    found = re.search(rf'name="{name}"[^>]*?value="([^"]*)"', html) or re.search(
        rf'value="([^"]*)"[^>]*?name="{name}"', html)
    return found.group(1) if found else None


def login(browser: Browser, user: str = "ann", password: str = PASSWORD, next: str | None = None,
          headers: dict[str, str] | None = None, csrf: str | None = None) -> Any:
    """Open the login page (for its CSRF token and cookie), then submit the form."""
    page = browser.get("/auth/login")
    assert page.status_code == 200, page.text
    form = {"csrf": csrf_of(page.text) if csrf is None else csrf, "user": user, "password": password}
    if next is not None:
        form["next"] = next
    return browser.post("/auth/login", data=form, headers=headers or {})


def logged_in(app: Any, user: str = "ann", role: str = "admin", password: str = PASSWORD,
              create: bool = True) -> Browser:
    """A new browser where `user` (created first unless `create` is false) is logged in."""
    if create:
        make_user(app.state.quire, user, role, password)
    browser = new_browser(app)
    response = login(browser, user, password)
    assert response.status_code == 303, response.text
    assert browser.cookies.get(SESSION_COOKIE)
    return browser


def set_cookies(response: Any) -> dict[str, Cookie]:
    """The response's Set-Cookie headers: name -> (value, attributes with
    lower-case names; flags are True)."""
    out: dict[str, Cookie] = {}
    for header in response.headers.get_list("set-cookie"):
        first, *rest = [part.strip() for part in header.split(";")]
        name, _, value = first.partition("=")
        attrs: dict[str, str | bool] = {}
        for part in rest:
            key, eq, val = part.partition("=")
            attrs[key.lower()] = val if eq else True
        out[name] = (value, attrs)
    return out


def session_token(browser: Browser) -> str:
    token = browser.cookies.get(SESSION_COOKIE)
    assert token
    return str(token)


def session_of(quire: Quire, browser: Browser) -> dict[str, Any]:
    """The stored session behind a browser's cookie."""
    session = quire.sessions.lookup(session_token(browser))
    assert session is not None
    return session
