"""Per-key API rate limits (`[api] rate_limits`, quire.apilimits): 429 with
Retry-After and the IETF draft's RateLimit fields, per key and per client
address without one, by role, shared by the workers of a real server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx2 as httpx

from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.serving import quire_server


def _app(tmp_path: Path, limits: str, default: str = "0") -> Any:
    return build_app(load_settings(tmp_path, env={"QUIRE_SERVER_QUIET": "1", "QUIRE_API_RATE_LIMITS": limits,
                                                  "QUIRE_API_RATE_LIMIT": default}))


def _wait_for_a_fresh_minute(room: float = 15.0) -> None:
    """Start with at least `room` seconds left of the wall clock's minute:
    limits count per minute, and a minute ending in the test resets them."""
    left = 60 - time.time() % 60
    if left < room:
        time.sleep(left + 0.2)


def test_over_its_roles_limit_a_caller_gets_429_with_the_rate_fields(tmp_path: Path) -> None:
    app = _app(tmp_path, '{"public": 3, "admin": 0}', default="5")
    quire = app.state.quire
    try:
        quire.auth.save_role("editor", {"permissions": {"content/posts/read": True}})
        editor_key = quire.auth.create_key("e", "editor")["key"]
        admin_key = quire.auth.create_key("a", "admin")["key"]
        client = TestClient(app)
        _wait_for_a_fresh_minute()
        answers = [client.get("/api/content/items/nope") for _ in range(4)]
        assert [a.status_code for a in answers] == [404, 404, 404, 429]  # the public role: 3 a minute
        first, refused = answers[0], answers[3]
        assert first.headers["ratelimit-policy"] == '"minute";q=3;w=60'
        assert first.headers["ratelimit"].startswith('"minute";r=2;t=')
        assert refused.json()["error"].startswith("Too many requests: at most 3 per minute")
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert refused.headers["ratelimit"].startswith('"minute";r=0;t=')
        # a role not listed has the default (5); admin's 0 is no limit; each key counts on its own
        editor = [client.get("/api/content/items/nope", headers={"api-key": editor_key}).status_code
                  for _ in range(6)]
        assert editor == [404] * 5 + [429]
        assert all(client.get("/api/content/items/nope", headers={"api-key": admin_key}).status_code == 404
                   for _ in range(20))
        assert "ratelimit" not in client.get("/api/content/items/nope", headers={"api-key": admin_key}).headers
        # an unknown key is 401 from its route, never counted or limited
        assert client.get("/api/content/items/nope", headers={"api-key": "qk_nope"}).status_code == 401
        assert client.get("/studio").status_code != 429  # only the API is limited
    finally:
        quire.close()


def test_the_limit_is_off_by_default_and_bad_settings_are_refused(tmp_path: Path) -> None:
    app = build_app(load_settings(tmp_path, env={"QUIRE_SERVER_QUIET": "1"}))
    try:
        client = TestClient(app)
        answer = client.get("/api/content/items/nope")
        assert "ratelimit" not in answer.headers and "ratelimit-policy" not in answer.headers
    finally:
        app.state.quire.close()
    for bad in ('{"public": -1}', '{"public": "many"}', "[1]"):
        try:
            load_settings(tmp_path, env={"QUIRE_API_RATE_LIMITS": bad})
        except Exception as exc:
            assert "rate_limits" in str(exc)
        else:
            raise AssertionError(f"{bad} was accepted")


def test_two_workers_share_the_count(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_API_RATE_LIMITS": '{"public": 20}'}
    with quire_server(data, env=env) as (base, _key, _log):
        _wait_for_a_fresh_minute(room=25)
        statuses = []
        with httpx.Client(timeout=10) as http:  # a new connection each time: the kernel spreads them over workers
            for _ in range(80):
                statuses.append(http.get(f"{base}/api/content/items/nope", headers={"connection": "close"}
                                         ).status_code)
                time.sleep(0.05)
        allowed = statuses.count(404)
        # 20 a minute, shared: each worker may let through what it counts before its next sync (1 s)
        assert 20 <= allowed <= 40, statuses
        assert statuses[-20:] == [429] * 20  # once shared, refused everywhere
