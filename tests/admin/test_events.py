"""The session's event stream `/system/events` (Server-Sent Events) and the
logout events left for SSO sessions (issue 8, points 2 and 5).

TestClient collects a whole response before returning it, so the open
stream is driven at the ASGI level here, plus once over real HTTP against
the real server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import orjson
import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.studio import shell as admin_routes
from tests.admin.conftest import SESSION_COOKIE, Browser, logged_in, make_user, new_browser
from tests.serving import quire_server
from tests.streams import open_stream

ISSUER = "https://idp.example"
LOGOUT = {"type": "logout", "data": {"message": "You have been logged out from another application."}}


def _sso_session(quire: Quire, user: str = "ann", sub: str = "sub-ann", sid: str = "sid-1") -> tuple[str, str]:
    """(cookie token, session id) of a new SSO session."""
    found = quire.users.by_name(user)
    doc = found if found is not None else make_user(quire, user)
    token, session = quire.sessions.start(doc, sso={"iss": ISSUER, "sub": sub, "sid": sid})
    return token, session["_id"]


def open_events(app: Any, token: str | None) -> Any:
    """`GET /system/events`, with the session cookie `token`."""
    return open_stream(app, "/system/events",
                       [(b"cookie", f"{SESSION_COOKIE}={token}".encode())] if token else [])


# -- over HTTP in process -------------------------------------------------------------


def test_events_without_a_session_is_401_json(browser: Browser) -> None:
    response = browser.get("/system/events")
    assert response.status_code == 401
    assert response.headers["content-type"].startswith("application/json")
    assert "error" in response.json()


def test_events_with_an_ended_session_is_401(app: Any, quire: Quire) -> None:
    token, session_id = _sso_session(quire)
    quire.sessions.end(session_id)
    browser = new_browser(app)
    browser.cookies.set(SESSION_COOKIE, token)
    assert browser.get("/system/events").status_code == 401


# -- the open stream, at the ASGI level -------------------------------------------------


@pytest.mark.anyio
async def test_events_with_a_session_is_an_event_stream_starting_with_retry(app: Any) -> None:
    browser = logged_in(app)
    async with open_events(app, browser.cookies.get(SESSION_COOKIE)) as stream:
        assert stream.start["status"] == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        assert stream.headers["cache-control"] == "no-store"
        first = await stream.chunk()
        assert first.startswith(b"retry:")
        assert not stream.finished


@pytest.mark.anyio
async def test_logout_event_of_an_sso_session_is_delivered_and_the_stream_ends(app: Any, quire: Quire) -> None:
    token, session_id = _sso_session(quire)
    async with open_events(app, token) as stream:
        assert (await stream.chunk()).startswith(b"retry:")
        ended = quire.sessions.end_sso(ISSUER, "sub-ann", "sid-1", LOGOUT)
        assert ended == [session_id]
        received = b""
        while not stream.finished:  # the server closes the stream after a logout event
            received += await stream.chunk()
    data_lines = [line for line in received.split(b"\n") if line.startswith(b"data: ")]
    assert len(data_lines) == 1
    assert orjson.loads(data_lines[0][len(b"data: "):]) == LOGOUT
    assert quire.sessions.sessions.get(session_id) is None


@pytest.mark.anyio
async def test_a_password_session_stream_gets_no_sso_event(app: Any, quire: Quire) -> None:
    browser = logged_in(app)
    _sso_session(quire, "ann", sub="sub-ann")
    async with open_events(app, browser.cookies.get(SESSION_COOKIE)) as stream:
        await stream.chunk()
        quire.sessions.end_sso(ISSUER, "sub-ann", None, LOGOUT)
        with anyio.move_on_after(1.5):
            await stream.chunk()
            pytest.fail("a password session received an event")
        assert not stream.finished


@pytest.mark.anyio
async def test_every_open_tab_of_the_session_gets_the_logout_event(app: Any, quire: Quire) -> None:
    token, _ = _sso_session(quire)
    async with open_events(app, token) as first, open_events(app, token) as second:
        await first.chunk()
        await second.chunk()
        quire.sessions.end_sso(ISSUER, "sub-ann", None, LOGOUT)
        for stream in (first, second):
            received = b""
            while not stream.finished:
                received += await stream.chunk()
            assert b"data: " + orjson.dumps(LOGOUT) in received


@pytest.mark.anyio
async def test_stream_of_a_session_ended_without_an_event_closes(
        app: Any, quire: Quire, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_routes, "KEEPALIVE_SECONDS", 1.0)
    browser = logged_in(app)
    token = browser.cookies.get(SESSION_COOKIE)
    async with open_events(app, token) as stream:
        await stream.chunk()
        quire.sessions.end_token(token)  # e.g. an administrator ended it
        with anyio.fail_after(5):
            while not stream.finished:
                assert b"data:" not in await stream.chunk()


@pytest.mark.anyio
async def test_stream_of_a_live_session_sends_keep_alives(
        app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(admin_routes, "KEEPALIVE_SECONDS", 1.0)
    browser = logged_in(app)
    async with open_events(app, browser.cookies.get(SESSION_COOKIE)) as stream:
        await stream.chunk()
        assert (await stream.chunk()).startswith(b": keep-alive")
        assert (await stream.chunk()).startswith(b": keep-alive")
        assert not stream.finished


# -- the stored events ---------------------------------------------------------------------


def _events(quire: Quire, session_id: str) -> list[dict[str, Any]]:
    return [{"type": e["type"], "data": e["data"]} for e in quire.sessions.events_of(session_id)]


def test_end_sso_leaves_the_event_only_for_matching_sessions(quire: Quire) -> None:
    _, by_sub = _sso_session(quire, "ann", sub="sub-ann", sid="sid-a")
    _, by_sid = _sso_session(quire, "ann", sub="sub-other", sid="sid-shared")
    _, other = _sso_session(quire, "bob", sub="sub-bob", sid="sid-b")
    bob = quire.users.by_name("bob")
    assert bob is not None
    _, password = quire.sessions.start(bob)
    ended = quire.sessions.end_sso(ISSUER, "sub-ann", "sid-shared", LOGOUT)
    assert sorted(ended) == sorted([by_sub, by_sid])
    assert _events(quire, by_sub) == [LOGOUT]
    assert _events(quire, by_sid) == [LOGOUT]
    assert _events(quire, other) == []
    assert _events(quire, password["_id"]) == []
    assert quire.sessions.sessions.get(other) is not None
    assert quire.sessions.sessions.get(password["_id"]) is not None


def test_events_stay_for_every_tab(quire: Quire) -> None:
    _, session_id = _sso_session(quire)
    quire.sessions.end_sso(ISSUER, "sub-ann", None, LOGOUT)
    assert _events(quire, session_id) == [LOGOUT]
    assert _events(quire, session_id) == [LOGOUT]  # reading takes nothing away


def test_end_sso_of_another_issuer_or_with_nothing_to_match_ends_nothing(quire: Quire) -> None:
    _, session_id = _sso_session(quire)
    assert quire.sessions.end_sso("https://other-idp.example", "sub-ann", "sid-1", LOGOUT) == []
    assert quire.sessions.end_sso(ISSUER, None, None, LOGOUT) == []
    assert quire.sessions.sessions.get(session_id) is not None
    assert _events(quire, session_id) == []


def test_a_stream_has_a_reason_to_go_on_while_its_session_lives_or_an_event_waits(quire: Quire) -> None:
    _, ended_quietly = _sso_session(quire, "ann", sub="sub-ann", sid="sid-a")
    _, ended_by_sso = _sso_session(quire, "bob", sub="sub-bob", sid="sid-b")
    assert quire.sessions.has_stream(ended_quietly) and quire.sessions.has_stream(ended_by_sso)
    quire.sessions.end(ended_quietly)
    quire.sessions.end_sso(ISSUER, "sub-bob", None, LOGOUT)
    assert not quire.sessions.has_stream(ended_quietly)
    assert quire.sessions.has_stream(ended_by_sso)


# -- the real server ------------------------------------------------------------------------


def test_logout_event_reaches_an_open_stream_on_the_real_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    local = build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
    quire: Quire = local.state.quire
    try:
        token, session_id = _sso_session(quire)
        with quire_server(data) as (base, _key, _log), httpx2.Client(timeout=httpx2.Timeout(10.0)) as http:
            http.cookies.set(SESSION_COOKIE, token)
            with http.stream("GET", base + "/system/events") as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                lines = response.iter_lines()
                assert next(lines).startswith("retry:")
                assert quire.sessions.end_sso(ISSUER, "sub-ann", "sid-1", LOGOUT) == [session_id]
                rest = list(lines)  # ends when the server closes the stream
            data_lines = [line for line in rest if line.startswith("data: ")]
            assert [orjson.loads(line[len("data: "):]) for line in data_lines] == [LOGOUT]
            assert http.get(base + "/system/events").status_code == 401
    finally:
        quire.close()
