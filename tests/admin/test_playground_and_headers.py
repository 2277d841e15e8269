"""The API playground and its local files, and the security and CORS
headers of admin pages (issue 8, points 2-3)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.admin.conftest import Browser, logged_in, new_browser

ADMIN_PAGES = ["/", "/admin/keys", "/admin/users", "/system/api", "/auth/logout"]
NO_CORS_PATHS = ["/", "/auth/login", "/auth/logout", "/admin/keys", "/admin/users", "/system/api",
                 "/admin/static/admin.js", "/system/api/static/swagger-ui-bundle.js"]


@pytest.fixture
def ann(app: Any) -> Browser:
    return logged_in(app)


# -- the playground ---------------------------------------------------------------------


def test_playground_renders_for_an_admin_with_local_scripts(ann: Browser) -> None:
    response = ann.get("/system/api")
    assert response.status_code == 200
    html = response.text
    assert '<script src="/system/api/static/swagger-ui-bundle.js"></script>' in html
    assert '<script src="/admin/static/playground.js"></script>' in html
    assert 'data-spec="/api/openapi.json"' in html
    assert 'id="api-key"' in html


def test_playground_loads_nothing_from_other_hosts(ann: Browser) -> None:
    html = ann.get("/system/api").text
    sources = re.findall(r'<(?:script|link)[^>]*?(?:src|href)="([^"]+)"', html)
    assert sources
    assert all(s.startswith("/") and not s.startswith("//") for s in sources), sources


@pytest.mark.parametrize(("path", "kind"), [
    ("/system/api/static/swagger-ui-bundle.js", "javascript"),
    ("/system/api/static/swagger-ui.css", "text/css"),
    ("/admin/static/playground.js", "javascript"),
    ("/admin/static/admin.js", "javascript"),
    ("/admin/static/admin.css", "text/css"),
])
def test_playground_and_admin_files_are_served_locally(browser: Browser, path: str, kind: str) -> None:
    response = browser.get(path)
    assert response.status_code == 200
    assert kind in response.headers["content-type"]
    assert response.headers["x-content-type-options"] == "nosniff"
    assert len(response.content) > 100


def test_swagger_bundle_is_the_swagger_ui_library(browser: Browser) -> None:
    assert b"SwaggerUIBundle" in browser.get("/system/api/static/swagger-ui-bundle.js").content


def test_openapi_document_of_the_playground_is_served(browser: Browser) -> None:
    response = browser.get("/api/openapi.json")
    assert response.status_code == 200
    assert "openapi" in response.json()


@pytest.mark.parametrize("path", [
    "/admin/static/nope.js",
    "/system/api/static/nope.js",
    "/admin/static/web.py",
    "/admin/static/base.html",
    "/admin/static/",
    "/system/api/static/index.html",
])
def test_unknown_static_names_are_404(browser: Browser, path: str) -> None:
    assert browser.get(path).status_code == 404


@pytest.mark.parametrize("path", [
    "/admin/static/..%2Fweb.py",
    "/admin/static/..%2F..%2Fconfig.py",
    "/admin/static/%2e%2e%2fweb.py",
    "/admin/static/..%2Ftemplates%2Fbase.html",
    "/admin/static/..%5Cweb.py",
    "/system/api/static/..%2F..%2F..%2Fquire%2Fadmin%2Fweb.py",
    "/admin/static/%2Fetc%2Fpasswd",
])
def test_path_traversal_in_static_names_is_404(browser: Browser, path: str) -> None:
    response = browser.get(path)
    assert response.status_code == 404
    assert b"import" not in response.content and b"root:" not in response.content


# -- security headers -----------------------------------------------------------------------


def _assert_admin_headers(response: Any) -> None:
    csp = response.headers["content-security-policy"]
    assert "default-src 'self'" in csp
    assert "frame-ancestors 'none'" in csp
    assert "http:" not in csp and "https:" not in csp and "*" not in csp
    assert "unsafe-eval" not in csp
    script_src = next(d for d in csp.split(";") if d.strip().startswith("script-src"))
    assert "unsafe-inline" not in script_src
    assert response.headers["x-frame-options"] == "DENY"
    assert "no-store" in response.headers["cache-control"]
    assert response.headers["x-content-type-options"] == "nosniff"


@pytest.mark.parametrize("path", ADMIN_PAGES)
def test_admin_pages_have_the_security_headers(ann: Browser, path: str) -> None:
    response = ann.get(path)
    assert response.status_code == 200
    _assert_admin_headers(response)


def test_login_page_and_its_error_pages_have_the_security_headers(browser: Browser) -> None:
    _assert_admin_headers(browser.get("/auth/login"))
    failed = browser.post("/auth/login", data={"user": "x", "password": "y"})
    assert failed.status_code == 403
    _assert_admin_headers(failed)


def test_forbidden_page_has_the_security_headers(app: Any) -> None:
    app.state.quire.auth.save_role("reader", {"permissions": {}})
    response = logged_in(app, "rita", role="reader").get("/admin/keys")
    assert response.status_code == 403
    _assert_admin_headers(response)


def test_redirects_to_login_are_not_stored(browser: Browser) -> None:
    response = browser.get("/admin/users")
    assert response.status_code == 303
    assert "no-store" in response.headers["cache-control"]


# -- CORS --------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", NO_CORS_PATHS)
def test_admin_pages_send_no_cors_headers_even_with_an_origin(ann: Browser, path: str) -> None:
    response = ann.get(path, headers={"origin": "https://elsewhere.example"})
    assert response.status_code in (200, 303)
    assert not any(k.lower().startswith("access-control-") for k in response.headers)


def test_event_stream_answer_has_no_cors_headers(browser: Browser) -> None:
    # an open stream never ends in TestClient: the 401 answer stands in for it
    response = browser.get("/system/events", headers={"origin": "https://elsewhere.example"})
    assert response.status_code == 401
    assert "access-control-allow-origin" not in response.headers


@pytest.mark.parametrize("path", ["/auth/login", "/admin/keys", "/admin/users", "/auth/logout"])
def test_admin_forms_answer_no_cors_preflight(browser: Browser, path: str) -> None:
    response = browser.options(path, headers={"origin": "https://elsewhere.example",
                                              "access-control-request-method": "POST"})
    assert "access-control-allow-origin" not in response.headers
    assert "access-control-allow-methods" not in response.headers


def test_api_routes_keep_their_cors_headers(browser: Browser) -> None:
    response = browser.get("/api/system/healthcheck", headers={"origin": "https://elsewhere.example"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] == "*"
    preflight = browser.options("/api/content/items/posts", headers={
        "origin": "https://elsewhere.example", "access-control-request-method": "GET"})
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"


def test_admin_pages_send_no_cors_headers_to_a_configured_origin(app_with: Callable[..., Any]) -> None:
    app = app_with(api={"cors_origins": ["https://app.example"]})
    browser = new_browser(app)
    login_page = browser.get("/auth/login", headers={"origin": "https://app.example"})
    assert "access-control-allow-origin" not in login_page.headers
    api = browser.get("/api/system/healthcheck", headers={"origin": "https://app.example"})
    assert api.headers["access-control-allow-origin"] == "https://app.example"
