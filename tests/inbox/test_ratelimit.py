"""Per-client, per-form rate limit of submissions (`[inbox] rate_limit` per
`rate_window_seconds`): 429 with Retry-After, checked right after the token,
off with 0, shared through the database by every worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.ratelimit import RateLimiter
from tests.client import TestClient
from tests.conftest import Api
from tests.inbox.conftest import make_form, stored, submit


def limited(response: Any) -> int:
    assert response.status_code == 429, response.text
    assert "error" in response.json()
    retry = int(response.headers["retry-after"])
    assert retry >= 1
    return retry


def test_default_is_ten_per_minute_per_client_and_form(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin)
    other = make_form(admin, name="Other")
    for i in range(10):
        assert submit(client, form["token"], json={"data": {"n": i}}).status_code == 200
    retry = limited(submit(client, form["token"], json={"data": {"n": 10}}))
    assert retry <= 60
    assert len(stored(quire, form["_id"])) == 10
    assert submit(client, other["token"], json={"data": {"n": 0}}).status_code == 200  # per form


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_RATE_LIMIT": "2", "QUIRE_INBOX_RATE_WINDOW_SECONDS": "3600"}])
def test_limit_is_checked_right_after_the_token(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    assert submit(client, form["token"], json={"data": {}}).status_code == 412  # counted although it failed
    assert submit(client, form["token"], json={"data": {"a": "1"}}).status_code == 200
    # over the limit: 429 even before the data is looked at
    assert 3000 < limited(submit(client, form["token"], json={"data": {}})) <= 3600
    limited(submit(client, form["token"], json={"data": {"a": "2"}}))
    assert submit(client, "unknown", json={"data": {"a": "1"}}).status_code == 404  # token first
    assert len(stored(quire)) == 1


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_RATE_LIMIT": "2"}])
def test_forwarded_for_is_ignored_unless_trusted(client: TestClient, form: dict[str, Any]) -> None:
    for i in range(2):
        response = submit(client, form["token"], json={"data": {"a": "1"}}, headers={"X-Forwarded-For": f"10.0.0.{i}"})
        assert response.status_code == 200
    limited(submit(client, form["token"], json={"data": {"a": "1"}}, headers={"X-Forwarded-For": "10.0.0.9"}))


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_RATE_LIMIT": "2", "QUIRE_SERVER_PROXY_HOPS": "1"}])
def test_behind_one_proxy_each_client_is_limited(client: TestClient, form: dict[str, Any]) -> None:
    def post(address: str) -> Any:  # what the proxy sends: the client's address appended
        return submit(client, form["token"], json={"data": {"a": "1"}}, headers={"X-Forwarded-For": address})

    assert [post("203.0.113.5").status_code for _ in range(2)] == [200, 200]
    limited(post("203.0.113.5"))
    assert post("203.0.113.6").status_code == 200
    assert submit(client, form["token"], json={"data": {"a": "1"}}).status_code == 200  # no header: the peer


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_RATE_LIMIT": "3", "QUIRE_SERVER_PROXY_HOPS": "1"}])
def test_a_client_spoofing_x_forwarded_for_behind_the_proxy_stays_limited(
        client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    # The client writes X-Forwarded-For itself; the proxy appends the real
    # address (203.0.113.7), on the same line or on a line of its own.
    statuses = []
    for i in range(30):
        spoof = f"10.1.{i}.{i}"
        headers = ([("X-Forwarded-For", f"{spoof}, 1.2.3.4"), ("X-Forwarded-For", "203.0.113.7")] if i % 2
                   else [("X-Forwarded-For", f"{spoof}, 203.0.113.7")])
        statuses.append(submit(client, form["token"], json={"data": {"n": i}}, headers=headers).status_code)
    assert statuses == [200] * 3 + [429] * 27
    assert len(stored(quire, form["_id"])) == 3


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_RATE_LIMIT": "2", "QUIRE_INBOX_TRUST_FORWARDED_FOR": "true"}])
def test_deprecated_trust_forwarded_for_is_one_hop(client: TestClient, form: dict[str, Any]) -> None:
    def post(header: str) -> Any:
        return submit(client, form["token"], json={"data": {"a": "1"}}, headers={"X-Forwarded-For": header})

    assert [post(f"10.0.0.{i}, 203.0.113.5").status_code for i in range(2)] == [200, 200]
    limited(post("10.0.0.9, 203.0.113.5"))  # the first entry is the client's own: not who it is
    assert post("10.0.0.9, 203.0.113.6").status_code == 200


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_RATE_LIMIT": "0"}])
def test_zero_turns_the_limit_off(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    for i in range(30):
        assert submit(client, form["token"], json={"data": {"n": i}}).status_code == 200
    assert len(stored(quire)) == 30


@pytest.mark.anyio
async def test_sliding_window(quire: Quire) -> None:
    limiter = RateLimiter(quire.store, limit=2, window=60)
    assert await limiter.hit("form", "1.2.3.4", now=1000.0) is None
    assert await limiter.hit("form", "1.2.3.4", now=1001.0) is None
    assert await limiter.hit("form", "1.2.3.4", now=1002.0) == 58  # until the first hit leaves the window
    assert await limiter.hit("form", "1.2.3.4", now=1059.5) == 1
    assert await limiter.hit("other", "1.2.3.4", now=1002.0) is None
    assert await limiter.hit("form", "5.6.7.8", now=1002.0) is None
    assert await limiter.hit("form", "1.2.3.4", now=1060.5) is None  # 1000 left the window
    assert await limiter.hit("form", "1.2.3.4", now=1061.0) is None  # 1001 left too
    assert await limiter.hit("form", "1.2.3.4", now=1061.5) == 59
    assert await limiter.hit("form", "1.2.3.4", now=1200.0) is None


@pytest.mark.anyio
async def test_no_client_address_is_stored(quire: Quire) -> None:
    limiter = RateLimiter(quire.store, limit=5, window=60)
    await limiter.hit("f1", "198.51.100.77")
    text = repr(quire.store.collection("inbox/rates").find())
    assert "198.51.100.77" not in text and "198.51.100" not in text


@pytest.fixture
def two_apps(data_dir: Path, app_env: dict[str, str]) -> Iterator[tuple[Any, Any]]:
    """Two instances on one data dir, like two worker processes."""
    env = {**app_env, "QUIRE_INBOX_RATE_LIMIT": "3"}
    first = build_app(load_settings(data_dir, env=env))
    second = build_app(load_settings(data_dir, env=env))
    yield first, second
    first.state.quire.close()
    second.state.quire.close()


def test_the_count_is_shared_by_every_worker(two_apps: tuple[Any, Any]) -> None:
    first, second = (TestClient(a, raise_server_exceptions=False) for a in two_apps)
    key = two_apps[0].state.quire.auth.create_key("k", "admin")["key"]
    form = make_form(Api(first, key))
    statuses = [submit(c, form["token"], json={"data": {"n": i}}).status_code
                for i, c in enumerate([first, second, first, second, first, second])]
    assert statuses == [200, 200, 200, 429, 429, 429]
