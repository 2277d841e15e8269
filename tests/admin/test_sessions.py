"""Server-side admin sessions: stored hashed, listed and ended by an
administrator, idle and absolute lifetimes, and logout (issue 8, point 1)."""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Any

import orjson
import pytest

from quire.app import Quire
from tests.admin.conftest import (
    SESSION_COOKIE,
    csrf_of,
    logged_in,
    login,
    make_user,
    new_browser,
    session_of,
    session_token,
    set_cookies,
)
from tests.conftest import hold_write_lock

# -- storage -------------------------------------------------------------------------


def test_session_is_stored_under_the_hash_of_the_cookie_never_the_cookie(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    token = session_token(browser)
    stored = quire.sessions.sessions.find()
    assert len(stored) == 1
    assert token.encode() not in orjson.dumps(stored)
    assert stored[0]["_id"] == hashlib.sha256(token.encode()).hexdigest()
    assert stored[0]["user"] == quire.users.by_name("ann")["_id"]  # type: ignore[index]


def test_every_login_gets_its_own_token_and_session(app: Any, quire: Quire) -> None:
    first = logged_in(app)
    second = logged_in(app, create=False)
    assert session_token(first) != session_token(second)
    assert len(quire.sessions.sessions.find()) == 2


def test_a_made_up_or_overlong_cookie_is_no_session(app: Any, quire: Quire) -> None:
    logged_in(app)
    for token in ("made-up", "x" * 500):
        browser = new_browser(app)
        browser.cookies.set(SESSION_COOKIE, token)
        assert browser.get("/").status_code == 303
    assert quire.sessions.lookup("x" * 500) is None


# -- listing and ending sessions on /admin/users ----------------------------------------


def test_admin_sees_every_live_session_on_the_users_page(app: Any, quire: Quire) -> None:
    ann = logged_in(app, "ann")
    bob = logged_in(app, "bob", role="admin")
    html = ann.get("/admin/users").text
    sessions = html[html.index("<h2>Sessions</h2>"):]
    assert "ann <small>(this one)</small>" in sessions
    assert "bob" in sessions
    assert session_of(quire, bob)["_id"] in sessions
    # neither cookie tokens nor another session's CSRF token are on the page
    assert session_token(ann) not in html and session_token(bob) not in html
    assert session_of(quire, bob)["csrf"] not in html


def test_admin_ends_another_users_session_and_that_browser_goes_to_login(app: Any, quire: Quire) -> None:
    ann = logged_in(app, "ann")
    bob = logged_in(app, "bob", role="admin")
    bob_session = session_of(quire, bob)["_id"]
    page = ann.get("/admin/users").text
    response = ann.post("/admin/users", data={"csrf": csrf_of(page), "action": "end-session",
                                              "session": bob_session})
    assert response.status_code == 200
    assert "Session ended." in response.text
    assert quire.sessions.sessions.get(bob_session) is None
    redirected = bob.get("/")
    assert redirected.status_code == 303 and redirected.headers["location"] == "/auth/login"
    assert bob.get("/admin/users").headers["location"].startswith("/auth/login?next=")
    assert ann.get("/").status_code == 200


def test_ending_a_session_needs_the_csrf_token(app: Any, quire: Quire) -> None:
    ann = logged_in(app, "ann")
    bob = logged_in(app, "bob", role="admin")
    bob_session = session_of(quire, bob)["_id"]
    response = ann.post("/admin/users", data={"action": "end-session", "session": bob_session})
    assert response.status_code == 403
    assert quire.sessions.sessions.get(bob_session) is not None
    assert bob.get("/").status_code == 200


def test_ending_an_unknown_session_says_so(app: Any) -> None:
    ann = logged_in(app)
    response = ann.post("/admin/users", data={"csrf": csrf_of(ann.get("/admin/users").text),
                                              "action": "end-session", "session": "nope"})
    assert response.status_code == 400
    assert "Session not found" in response.text


# -- lifetimes ----------------------------------------------------------------------------


def _started(quire: Quire) -> tuple[str, dict[str, Any]]:
    return quire.sessions.start(make_user(quire))


def test_session_ends_after_the_idle_lifetime(quire: Quire) -> None:
    token, doc = _started(quire)
    idle = quire.sessions.idle
    assert quire.sessions.lookup(token, now=doc["created"] + idle - 1) is not None
    assert quire.sessions.lookup(token, now=doc["created"] + 2 * idle) is None
    assert quire.sessions.sessions.get(doc["_id"]) is None  # removed, not only refused
    assert quire.sessions.lookup(token) is None


def test_activity_moves_the_idle_deadline(quire: Quire) -> None:
    token, doc = _started(quire)
    idle = quire.sessions.idle
    assert quire.sessions.lookup(token, now=doc["created"] + idle - 60) is not None
    assert quire.sessions.lookup(token, now=doc["created"] + idle + 60) is not None


def test_session_ends_after_the_absolute_lifetime_even_when_active(quire: Quire) -> None:
    token, doc = _started(quire)
    idle, absolute = quire.sessions.idle, quire.sessions.absolute
    assert absolute > idle
    now = doc["created"]
    while now + idle // 2 <= doc["created"] + absolute:
        now += idle // 2
        assert quire.sessions.lookup(token, now=now) is not None
    assert quire.sessions.lookup(token, now=doc["created"] + absolute + 1) is None
    assert quire.sessions.sessions.get(doc["_id"]) is None


def test_lifetimes_come_from_the_admin_settings(app_with: Any) -> None:
    app = app_with(admin={"session_idle_seconds": 120, "session_max_seconds": 600})
    quire = app.state.quire
    token, doc = _started(quire)
    assert quire.sessions.lookup(token, now=doc["created"] + 119) is not None
    assert quire.sessions.lookup(token, now=doc["created"] + 240) is None
    token, doc = _started_again(quire)
    for step in range(1, 6):
        assert quire.sessions.lookup(token, now=doc["created"] + 100 * step) is not None
    assert quire.sessions.lookup(token, now=doc["created"] + 601) is None


def _started_again(quire: Quire) -> tuple[str, dict[str, Any]]:
    user = quire.users.by_name("ann")
    assert user is not None
    return quire.sessions.start(user)


def test_expired_sessions_are_not_listed(quire: Quire) -> None:
    _, doc = _started(quire)
    assert [s["_id"] for s in quire.sessions.list_all()] == [doc["_id"]]
    quire.sessions.sessions.update(doc["_id"], {"seen": doc["seen"] - quire.sessions.idle - 1})
    assert quire.sessions.list_all() == []


# -- logout ----------------------------------------------------------------------------------


def test_get_logout_shows_a_confirm_page_and_keeps_the_session(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    response = browser.get("/auth/logout")
    assert response.status_code == 200
    assert '<form method="post" action="/auth/logout">' in response.text
    assert csrf_of(response.text) == session_of(quire, browser)["csrf"]
    assert browser.get("/").status_code == 200


def test_logout_with_csrf_ends_the_session_and_clears_the_cookie(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    token = session_token(browser)
    session_id = session_of(quire, browser)["_id"]
    response = browser.post("/auth/logout", data={"csrf": csrf_of(browser.get("/auth/logout").text)})
    assert response.status_code == 303
    assert response.headers["location"] == "/auth/login"
    value, attrs = set_cookies(response)[SESSION_COOKIE]
    assert value in ("", '""')
    assert attrs.get("max-age") == "0" or "expires" in attrs
    assert attrs.get("path") == "/"
    assert quire.sessions.sessions.get(session_id) is None
    # the old token no longer works, even when a browser still sends it
    replay = new_browser(app)
    replay.cookies.set(SESSION_COOKIE, token)
    assert replay.get("/").status_code == 303


def test_logout_without_csrf_is_403_and_the_session_lives(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    session_id = session_of(quire, browser)["_id"]
    response = browser.post("/auth/logout", data={})
    assert response.status_code == 403
    assert SESSION_COOKIE not in set_cookies(response)
    assert quire.sessions.sessions.get(session_id) is not None
    assert browser.get("/").status_code == 200


def test_logout_with_a_wrong_csrf_or_foreign_origin_is_403(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    token = csrf_of(browser.get("/auth/logout").text)
    assert browser.post("/auth/logout", data={"csrf": "forged"}).status_code == 403
    response = browser.post("/auth/logout", data={"csrf": token}, headers={"origin": "https://evil.example"})
    assert response.status_code == 403
    assert browser.get("/").status_code == 200


def test_logout_ends_only_this_browsers_session(app: Any, quire: Quire) -> None:
    laptop = logged_in(app)
    phone = logged_in(app, create=False)
    laptop.post("/auth/logout", data={"csrf": csrf_of(laptop.get("/auth/logout").text)})
    assert laptop.get("/").status_code == 303
    assert phone.get("/").status_code == 200


def test_csrf_token_belongs_to_one_session(app: Any) -> None:
    ann = logged_in(app, "ann")
    bob = logged_in(app, "bob")
    bob_token = csrf_of(bob.get("/auth/logout").text)
    assert ann.post("/auth/logout", data={"csrf": bob_token}).status_code == 403
    assert ann.get("/").status_code == 200


def test_session_page_shows_the_address_and_kind(app: Any) -> None:
    ann = logged_in(app)
    html = ann.get("/admin/users").text
    row = re.search(r"ann <small>\(this one\)</small>.*?</tr>", html, re.S)
    assert row is not None
    assert "testclient" in row.group(0) and "password" in row.group(0)


# -- the write lock held elsewhere (a long import) ----------------------------------------



@pytest.mark.sqlite_only
def test_login_waits_for_a_write_lock_held_elsewhere(app: Any, quire: Quire, monkeypatch: Any) -> None:
    make_user(quire)
    limiter = quire.login_limiter
    real_give_back = limiter.give_back
    held: list[threading.Thread] = []

    async def give_back_then_lock(*args: Any) -> Any:
        await real_give_back(*args)
        held.append(hold_write_lock(quire, 0.5))  # the password was right; the session starts next

    monkeypatch.setattr(limiter, "give_back", give_back_then_lock)
    browser = new_browser(app)
    response = login(browser)
    held[0].join()
    assert response.status_code == 303, response.text
    assert session_of(quire, browser)


@pytest.mark.sqlite_only
def test_logout_and_an_expired_session_wait_for_a_write_lock_held_elsewhere(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    page = browser.get("/auth/logout")
    held = hold_write_lock(quire, 0.5)
    response = browser.post("/auth/logout", data={"csrf": csrf_of(page.text)})
    held.join()
    assert response.status_code == 303, response.text
    assert quire.sessions.sessions.find() == []
    # a page view that finds its session expired removes it, waiting for the lock
    other = logged_in(app, create=False)
    stored = session_of(quire, other)
    quire.sessions.sessions.update(stored["_id"], {"seen": stored["seen"] - 2 * quire.sessions.idle})
    held = hold_write_lock(quire, 0.5)
    response = other.get("/")
    held.join()
    assert response.status_code == 303, response.text
    assert response.headers["location"].startswith("/auth/login")
    assert quire.sessions.sessions.find() == []
