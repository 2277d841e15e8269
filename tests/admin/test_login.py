"""The login page, password login, redirects after login, the session
cookie, CSRF on the login form and login throttling (issue 8, points 1-2)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from quire.app import Quire
from tests.admin.conftest import (
    LOGIN_CSRF_COOKIE,
    PASSWORD,
    SESSION_COOKIE,
    Browser,
    csrf_of,
    field_value,
    logged_in,
    login,
    make_user,
    new_browser,
    set_cookies,
)

WRONG = "Wrong user name or password."
EXPIRED = "The login form expired; please try again."


def login_next(location: str) -> str:
    """The `next` of a redirect to the login page."""
    parts = urlsplit(location)
    assert parts.path == "/auth/login"
    return parse_qs(parts.query)["next"][0]


# -- redirects to the login page --------------------------------------------------


def test_root_without_session_redirects_to_login(browser: Browser) -> None:
    response = browser.get("/")
    assert response.status_code == 303
    assert response.headers["location"] == "/auth/login"


def test_admin_page_without_session_redirects_to_login_with_next(browser: Browser) -> None:
    response = browser.get("/admin/keys?x=1")
    assert response.status_code == 303
    assert login_next(response.headers["location"]) == "/admin/keys?x=1"


@pytest.mark.parametrize("path", ["/admin/users", "/system/api"])
def test_other_admin_pages_without_session_redirect_to_login_with_next(browser: Browser, path: str) -> None:
    response = browser.get(path)
    assert response.status_code == 303
    assert login_next(response.headers["location"]) == path


def test_login_redirect_keeps_every_query_parameter_of_the_target(browser: Browser) -> None:
    response = browser.get("/admin/keys?x=1&y=2")
    assert response.status_code == 303
    location = response.headers["location"]
    assert list(parse_qs(urlsplit(location).query)) == ["next"]
    assert login_next(location) == "/admin/keys?x=1&y=2"
    html = browser.get(location).text
    assert field_value(html, "next") == "/admin/keys?x=1&amp;y=2"


def test_login_brings_the_user_back_to_the_full_target(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    location = browser.get("/admin/keys?x=1&y=2").headers["location"]
    token = csrf_of(browser.get(location).text)
    response = browser.post("/auth/login", data={"csrf": token, "user": "ann", "password": PASSWORD,
                                                 "next": login_next(location)})
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/keys?x=1&y=2"


def test_logout_page_without_session_redirects_to_login(browser: Browser) -> None:
    response = browser.get("/auth/logout")
    assert response.status_code == 303
    assert response.headers["location"] == "/auth/login"


# -- the login page -------------------------------------------------------------


def test_login_page_has_a_form_with_a_csrf_field_and_sets_the_csrf_cookie(browser: Browser) -> None:
    response = browser.get("/auth/login")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    assert '<form method="post" action="/auth/login">' in html
    assert 'name="user"' in html and 'name="password" type="password"' in html
    token = csrf_of(html)
    assert len(token) >= 20
    value, attrs = set_cookies(response)[LOGIN_CSRF_COOKIE]
    assert value == token
    assert attrs.get("httponly") is True
    assert str(attrs.get("samesite", "")).lower() == "strict"


def test_login_page_keeps_the_csrf_token_of_its_cookie(browser: Browser) -> None:
    first = csrf_of(browser.get("/auth/login").text)
    assert csrf_of(browser.get("/auth/login").text) == first


def test_login_page_has_no_sso_button_without_sso_configuration(browser: Browser) -> None:
    html = browser.get("/auth/login").text
    assert "/sso/authenticate" not in html
    assert "Login via OAuth" not in html


def test_login_page_has_the_sso_button_with_its_text_when_sso_is_configured(
        app_with: Callable[..., Any]) -> None:
    app = app_with(sso={"provider_url": "https://idp.example", "client_id": "quire",
                        "loginText": "Sign in with Example"})
    html = new_browser(app).get("/auth/login").text
    assert 'href="/sso/authenticate"' in html
    assert "Sign in with Example" in html


def test_login_page_carries_a_local_next_into_the_form(browser: Browser) -> None:
    html = browser.get("/auth/login", params={"next": "/admin/users"}).text
    assert field_value(html, "next") == "/admin/users"


def test_login_page_drops_a_foreign_next(browser: Browser) -> None:
    html = browser.get("/auth/login", params={"next": "https://evil.example/"}).text
    assert field_value(html, "next") == "/"


# -- password login ----------------------------------------------------------------


def test_login_with_the_right_password_redirects_to_next(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    response = login(browser, next="/admin/keys")
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/keys"
    assert browser.get("/admin/keys").status_code == 200


def test_login_without_next_goes_to_the_dashboard(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    response = login(browser)
    assert response.status_code == 303
    assert response.headers["location"] == "/"
    dashboard = browser.get("/")
    assert dashboard.status_code == 200
    assert "Welcome, ann" in dashboard.text


@pytest.mark.parametrize("target", [
    "https://evil.example",
    "http://evil.example/admin",
    "//evil.example",
    "//evil.example/path",
    "/\\evil",
    "/\\/evil.example",
    "\\\\evil.example",
    "javascript:alert(1)",
    "JavaScript:alert(document.cookie)",
    "data:text/html,<script>alert(1)</script>",
    "evil.example",
    " //evil.example",
    "/\t/evil.example",
    "/\n/evil.example",
])
def test_login_never_redirects_off_site(browser: Browser, quire: Quire, target: str) -> None:
    make_user(quire)
    response = login(browser, next=target)
    assert response.status_code == 303
    assert response.headers["location"] == "/"


def test_login_page_of_a_logged_in_user_redirects_to_a_local_next_only(app: Any) -> None:
    browser = logged_in(app)
    response = browser.get("/auth/login", params={"next": "/admin/users"})
    assert response.status_code == 303 and response.headers["location"] == "/admin/users"
    response = browser.get("/auth/login", params={"next": "//evil.example"})
    assert response.status_code == 303 and response.headers["location"] == "/"


def test_session_cookie_is_httponly_samesite_lax_path_root_and_not_secure_over_http(
        browser: Browser, quire: Quire) -> None:
    make_user(quire)
    response = login(browser)
    value, attrs = set_cookies(response)[SESSION_COOKIE]
    assert value
    assert attrs.get("httponly") is True
    assert str(attrs.get("samesite", "")).lower() == "lax"
    assert attrs.get("path") == "/"
    assert "secure" not in attrs


def _login_cookie_attrs(app: Any, base_url: str) -> dict[str, str | bool]:
    """Log in and return the session cookie's attributes. The login CSRF
    cookie is sent by hand: a jar keeps a Secure cookie from http pages."""
    make_user(app.state.quire)
    browser = new_browser(app, base_url)
    token = csrf_of(browser.get("/auth/login").text)
    browser.cookies.set(LOGIN_CSRF_COOKIE, token)
    response = browser.post("/auth/login", data={"csrf": token, "user": "ann", "password": PASSWORD})
    assert response.status_code == 303, response.text
    return set_cookies(response)[SESSION_COOKIE][1]


@pytest.mark.parametrize(("overrides", "base_url", "secure"), [
    ({"admin": {"secure_cookies": "always"}}, "http://testserver", True),
    ({}, "https://testserver", True),
    ({"server": {"public_url": "https://cms.example"}}, "http://testserver", True),
    ({"admin": {"secure_cookies": "never"}}, "https://testserver", False),
    ({"admin": {"secure_cookies": "auto"}}, "http://testserver", False),
], ids=["always-over-http", "auto-over-https", "auto-https-public-url", "never-over-https", "auto-over-http"])
def test_session_cookie_secure_flag_follows_the_admin_setting(
        app_with: Callable[..., Any], overrides: dict[str, Any], base_url: str, secure: bool) -> None:
    attrs = _login_cookie_attrs(app_with(**overrides), base_url)
    assert ("secure" in attrs) is secure
    assert attrs.get("httponly") is True
    assert str(attrs.get("samesite", "")).lower() == "lax"


def test_wrong_password_shows_401_with_the_message_and_keeps_the_user_name(
        browser: Browser, quire: Quire) -> None:
    make_user(quire)
    response = login(browser, password="not the password")
    assert response.status_code == 401
    assert WRONG in response.text
    assert field_value(response.text, "user") == "ann"
    assert SESSION_COOKIE not in set_cookies(response)
    assert not browser.cookies.get(SESSION_COOKIE)
    assert browser.get("/").status_code == 303


def test_unknown_user_gets_the_same_message_as_a_wrong_password(browser: Browser) -> None:
    response = login(browser, user="nobody")
    assert response.status_code == 401
    assert WRONG in response.text


def test_kept_user_name_is_escaped_on_the_page(browser: Browser) -> None:
    response = login(browser, user='x"><script>alert(1)</script>')
    assert response.status_code == 401
    assert "<script>alert(1)</script>" not in response.text
    assert "&lt;script&gt;" in response.text


def test_failed_login_page_can_be_submitted_again(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    failed = login(browser, password="not the password")
    response = browser.post("/auth/login", data={"csrf": csrf_of(failed.text), "user": "ann",
                                                 "password": PASSWORD})
    assert response.status_code == 303


def test_deactivated_user_cannot_log_in(browser: Browser, quire: Quire) -> None:
    make_user(quire, active=False)
    response = login(browser)
    assert response.status_code == 401
    assert WRONG in response.text
    assert not browser.cookies.get(SESSION_COOKIE)


def test_user_deactivated_later_cannot_log_in(browser: Browser, quire: Quire) -> None:
    user = make_user(quire)
    quire.users.update(user["_id"], {"active": False})
    assert login(browser).status_code == 401


def test_user_without_a_password_cannot_log_in_with_an_empty_one(browser: Browser, quire: Quire) -> None:
    make_user(quire, password=None)
    assert login(browser, password="").status_code == 401


def test_login_without_csrf_field_is_403(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    browser.get("/auth/login")
    response = browser.post("/auth/login", data={"user": "ann", "password": PASSWORD})
    assert response.status_code == 403
    assert EXPIRED in response.text
    assert not browser.cookies.get(SESSION_COOKIE)


def test_login_with_a_wrong_csrf_field_is_403(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    response = login(browser, csrf="forged-token-forged-token")
    assert response.status_code == 403
    assert not browser.cookies.get(SESSION_COOKIE)


def test_login_without_the_csrf_cookie_is_403(app: Any, quire: Quire) -> None:
    make_user(quire)
    token = csrf_of(new_browser(app).get("/auth/login").text)
    fresh = new_browser(app)  # has the field's value, not the cookie
    response = fresh.post("/auth/login", data={"csrf": token, "user": "ann", "password": PASSWORD})
    assert response.status_code == 403
    assert not fresh.cookies.get(SESSION_COOKIE)


@pytest.mark.parametrize("origin", ["https://evil.example", "http://testserver.evil.example", "null"])
def test_login_from_a_cross_site_origin_is_403(browser: Browser, quire: Quire, origin: str) -> None:
    make_user(quire)
    response = login(browser, headers={"origin": origin})
    assert response.status_code == 403
    assert not browser.cookies.get(SESSION_COOKIE)


def test_login_from_the_same_origin_is_accepted(browser: Browser, quire: Quire) -> None:
    make_user(quire)
    assert login(browser, headers={"origin": "http://testserver"}).status_code == 303


# -- throttling ----------------------------------------------------------------------


def _attempt(app: Any, user: str, password: str, address: str | None = None) -> Any:
    headers = {"x-forwarded-for": address} if address else None
    return login(new_browser(app), user, password, headers=headers)


def _limit(app: Any) -> int:
    return int(app.state.quire.settings.values["admin"]["login_attempts"])


def test_too_many_failures_for_a_user_are_429_with_retry_after_even_with_the_right_password(
        app: Any, quire: Quire) -> None:
    make_user(quire)
    for _ in range(_limit(app)):
        assert _attempt(app, "ann", "wrong password").status_code == 401
    browser = new_browser(app)
    response = login(browser, "ann", PASSWORD)
    assert response.status_code == 429
    assert int(response.headers["retry-after"]) > 0
    assert int(response.headers["retry-after"]) <= quire.settings.values["admin"]["login_window_seconds"]
    assert "Too many failed logins" in response.text
    assert not browser.cookies.get(SESSION_COOKIE)


def test_user_limit_holds_across_addresses(app_with: Callable[..., Any]) -> None:
    app = app_with(server={"proxy_hops": 1})
    make_user(app.state.quire)
    for n in range(_limit(app)):
        assert _attempt(app, "ann", "wrong password", f"10.0.0.{n + 1}").status_code == 401
    response = _attempt(app, "ann", PASSWORD, "10.0.1.1")
    assert response.status_code == 429
    assert re.fullmatch(r"\d+", response.headers["retry-after"])


def test_another_user_at_the_same_address_is_not_blocked_below_the_address_limit(app: Any) -> None:
    make_user(app.state.quire, "ann")
    make_user(app.state.quire, "bob")
    for _ in range(_limit(app) - 1):
        assert _attempt(app, "ann", "wrong password").status_code == 401
    assert _attempt(app, "bob", PASSWORD).status_code == 303


def test_address_limit_blocks_every_user_at_that_address_but_not_other_addresses(
        app_with: Callable[..., Any]) -> None:
    app = app_with(server={"proxy_hops": 1})
    make_user(app.state.quire, "ann")
    make_user(app.state.quire, "bob")
    for _ in range(_limit(app)):
        assert _attempt(app, "ann", "wrong password", "10.0.0.1").status_code == 401
    response = _attempt(app, "bob", PASSWORD, "10.0.0.1")
    assert response.status_code == 429
    assert "retry-after" in response.headers
    assert _attempt(app, "bob", PASSWORD, "10.0.0.2").status_code == 303


def test_a_client_spoofing_x_forwarded_for_behind_the_proxy_stays_limited_by_address(
        app_with: Callable[..., Any]) -> None:
    # The proxy appends the real address (203.0.113.7) to what the client wrote.
    app = app_with(server={"proxy_hops": 1})
    make_user(app.state.quire, "ann")
    statuses = [_attempt(app, f"user{n}", "wrong password", f"10.9.{n}.1, 203.0.113.7").status_code
                for n in range(20)]
    assert statuses == [401] * _limit(app) + [429] * (20 - _limit(app))
    assert _attempt(app, "ann", PASSWORD, "10.9.99.1, 203.0.113.7").status_code == 429
    assert _attempt(app, "ann", PASSWORD, "203.0.113.8").status_code == 303


def test_a_successful_login_does_not_count_against_the_address(app_with: Callable[..., Any]) -> None:
    app = app_with(server={"proxy_hops": 1})
    make_user(app.state.quire, "ann")
    limit = _limit(app)
    for n in range(limit - 1):
        assert _attempt(app, f"user{n}", "wrong password", "10.0.0.1").status_code == 401
    assert _attempt(app, "ann", PASSWORD, "10.0.0.1").status_code == 303
    assert _attempt(app, "nobody", "wrong password", "10.0.0.1").status_code == 401  # the last free failure
    assert _attempt(app, "ann", PASSWORD, "10.0.0.1").status_code == 429


def test_a_successful_login_clears_the_users_failures(app_with: Callable[..., Any]) -> None:
    app = app_with(server={"proxy_hops": 1})
    make_user(app.state.quire)
    limit = _limit(app)
    for n in range(limit - 1):
        assert _attempt(app, "ann", "wrong password", f"10.0.0.{n + 1}").status_code == 401
    assert _attempt(app, "ann", PASSWORD, "10.0.1.1").status_code == 303
    for n in range(limit - 1):
        assert _attempt(app, "ann", "wrong password", f"10.0.2.{n + 1}").status_code == 401
    assert _attempt(app, "ann", PASSWORD, "10.0.3.1").status_code == 303


def test_throttled_attempts_are_not_counted_as_more_failures(app_with: Callable[..., Any]) -> None:
    app = app_with(admin={"login_attempts": 2, "login_window_seconds": 60})
    make_user(app.state.quire)
    for _ in range(2):
        assert _attempt(app, "ann", "wrong password").status_code == 401
    for _ in range(3):
        assert _attempt(app, "ann", "wrong password").status_code == 429
    times = [doc["times"] for doc in app.state.quire.store.collection("system/login_failures").find()]
    assert times and all(len(t) == 2 for t in times)


def test_login_attempts_zero_turns_throttling_off(app_with: Callable[..., Any]) -> None:
    app = app_with(admin={"login_attempts": 0})
    make_user(app.state.quire)
    for _ in range(7):
        assert _attempt(app, "ann", "wrong password").status_code == 401
    assert _attempt(app, "ann", PASSWORD).status_code == 303
