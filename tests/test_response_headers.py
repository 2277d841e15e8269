"""Headers every answer carries: `X-Content-Type-Options: nosniff` on every
API answer (errors and streamed lists included), the admin's security
headers on its redirects too, and CORS preflights that let the headers
browsers' fetch libraries send through (configurable)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.asgi import Route
from quire.config import CORS_HEADERS, load_settings
from quire.errors import ConfigError
from quire.events import Events
from quire.ui.web import SECURITY_HEADERS
from tests.admin.conftest import PASSWORD, logged_in, login, make_user, new_browser
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model
from tests.test_errors import _concrete


@pytest.fixture
def seeded(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.item_id = create_item(admin, "posts", {"title": "x"})["_id"]  # type: ignore[attr-defined]
    return admin


@pytest.fixture
def client_with(tmp_path: Path) -> Iterator[Callable[..., TestClient]]:
    """A client of an app built with settings overrides, like `client_with(api={...})`."""
    built: list[Any] = []

    def build(**overrides: dict[str, Any]) -> TestClient:
        settings = load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "true"}, overrides=overrides)
        built.append(build_app(settings, Events()))
        return TestClient(built[-1])

    yield build
    for app in built:
        app.state.quire.close()


def _api_routes(app: Any) -> list[tuple[str, str]]:
    return [(method, route.path) for route in app.routes if isinstance(route, Route)
            and route.path.startswith(("/api/", "/storage/")) for method in sorted(route.methods)]


def test_every_api_answer_carries_nosniff(seeded: Api, app: Any) -> None:
    """Each route and method, as an admin, without a key and with a wrong
    one, with good and bad parameters: whatever the status, nosniff."""
    seen = set()
    for method, path in _api_routes(app):
        url = _concrete(path, seeded.item_id)  # type: ignore[attr-defined]
        for api in (seeded, seeded.with_key(None), seeded.with_key("qk_wrong")):
            for query in ("", "?filter={bad", "?limit=2&skip=0"):
                response = api.request(method, url + query, json={"data": {}})
                assert response.headers.get("x-content-type-options") == "nosniff", (method, url, response.status_code)
                seen.add(response.status_code)
    assert {200, 400, 401, 404} <= seen
    for extra in ("/no/such/route", "/api/content/items/posts"):  # 404 of no route; a streamed list
        assert seeded.get(extra).headers["x-content-type-options"] == "nosniff"
    assert seeded.request("PATCH", "/api/content/items/posts").headers["x-content-type-options"] == "nosniff"


def test_a_500_carries_nosniff(seeded: Api, quire: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(quire.content, "list_page", lambda *a, **k: 1 / 0)
    response = seeded.get("/api/content/items/posts?limit=1")
    assert response.status_code == 500 and response.headers["x-content-type-options"] == "nosniff"


def test_a_headers_own_nosniff_is_not_doubled(seeded: Api) -> None:
    response = seeded.client.get("/auth/login")
    assert response.headers.get_list("x-content-type-options") == ["nosniff"]


# ---------------------------------------------------------------- admin redirects


def assert_admin_headers(response: Any) -> None:
    assert response.status_code == 303, response.text
    for name, value in SECURITY_HEADERS.items():
        assert response.headers.get_list(name) == [value], (response.headers.get("location"), name)


def test_every_admin_redirect_carries_the_security_headers(app: Any) -> None:
    anonymous = new_browser(app)
    for path in ("/", "/admin/keys", "/admin/users", "/system/api", "/auth/logout"):
        assert_admin_headers(anonymous.get(path))  # to the login page
    make_user(app.state.quire, "ann", "admin", PASSWORD)
    browser = new_browser(app)
    assert_admin_headers(login(browser, "ann", PASSWORD, next="/admin/keys"))  # logged in
    assert_admin_headers(browser.get("/auth/login"))  # already logged in
    page = browser.get("/auth/logout")
    csrf = page.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    assert_admin_headers(browser.post("/auth/logout", data={"csrf": csrf}))  # logged out


def test_the_logged_in_redirects_keep_their_cookies(app: Any) -> None:
    browser = logged_in(app)
    assert browser.get("/auth/login").headers["location"] == "/"


# ---------------------------------------------------------------- CORS


def preflight(client: Any, headers: str, method: str = "GET") -> Any:
    return client.options("/api/content/items/posts", headers={
        "origin": "https://www.example.com", "access-control-request-method": method,
        "access-control-request-headers": headers,
    })


def allowed(response: Any) -> set[str]:
    return {h.strip() for h in response.headers["access-control-allow-headers"].split(",") if h.strip()}


def test_the_default_preflight_lets_common_fetch_headers_through(client: Any) -> None:
    response = preflight(client, "x-requested-with, cache-control, pragma, x-persona-vars")
    assert response.status_code == 204
    for header in ("x-requested-with", "cache-control", "pragma", "x-persona-audience", "x-persona-tz-offset",
                   "x-persona-vars", "api-key", "authorization", "content-type", "if-none-match"):
        assert header in allowed(response)
    methods = {m.strip() for m in response.headers["access-control-allow-methods"].split(",")}
    assert methods == {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
    assert response.headers["x-content-type-options"] == "nosniff"


def test_allowed_headers_and_methods_are_settings(client_with: Callable[..., TestClient]) -> None:
    client = client_with(api={"cors_headers": ["API-Key", "X-Custom"], "cors_methods": ["get", "post"]})
    response = preflight(client, "x-custom")
    assert allowed(response) == {"api-key", "x-custom"}
    assert response.headers["access-control-allow-methods"] == "GET, POST"


def test_a_star_allows_whatever_headers_the_browser_asks_for(client_with: Callable[..., TestClient]) -> None:
    client = client_with(api={"cors_headers": ["*"]})
    response = preflight(client, "x-anything, authorization")
    assert allowed(response) == {"x-anything", "authorization"}  # named: `*` would not cover Authorization
    assert "Access-Control-Request-Headers" in response.headers["vary"]


@pytest.mark.parametrize(("key", "value"), [("cors_headers", ["x bad"]), ("cors_methods", ["GET,POST"]),
                                            ("cors_headers", ["a:b"])])
def test_a_header_or_method_that_is_no_http_token_stops_the_start(tmp_path: Any, key: str, value: list[str]) -> None:
    with pytest.raises(ConfigError, match=f"api.{key}"):
        load_settings(tmp_path, env={}, overrides={"api": {key: value}})


def test_environment_variables_set_the_cors_lists(tmp_path: Any) -> None:
    settings = load_settings(tmp_path, env={"QUIRE_API_CORS_HEADERS": "api-key, x-requested-with"})
    assert settings.get("api", "cors_headers") == ["api-key", "x-requested-with"]
    assert load_settings(tmp_path, env={}).get("api", "cors_headers") == CORS_HEADERS


def test_hsts_is_sent_when_the_site_is_served_as_https(client_with: Callable[..., TestClient]) -> None:
    served = client_with(server={"public_url": "https://cms.example"})
    for path in ("/api/system/healthcheck", "/api/content/items/nope", "/auth/login", "/nowhere"):
        assert served.get(path).headers.get("strict-transport-security") == "max-age=31536000", path
    assert len(served.get("/auth/login").headers.get_list("strict-transport-security")) == 1
    plain = client_with(server={"public_url": "http://cms.example"})
    assert "strict-transport-security" not in plain.get("/api/system/healthcheck").headers
