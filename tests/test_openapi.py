"""The OpenAPI document describes every route and method the app serves."""

from __future__ import annotations

from typing import Any

from quire.asgi import Route
from tests.conftest import Api

ADMIN_PAGES = ("/auth/", "/admin/", "/system/api")


def test_openapi_lists_every_route_and_method(anon: Api, app: Any) -> None:
    spec = anon.get("/api/openapi.json").json()
    assert spec["openapi"].startswith("3.1")
    for route in app.routes:
        if not isinstance(route, Route) or route.path == "/" or route.path.startswith(ADMIN_PAGES):
            continue  # the admin's HTML pages are not part of the API
        path = route.path.replace(":path}", "}")
        assert path in spec["paths"], f"{path} missing from openapi.json"
        for method in route.methods or []:
            if method != "HEAD":
                assert method.lower() in spec["paths"][path], f"{method} {path} missing"


def test_openapi_operations_declare_parameters_and_error_responses(anon: Api) -> None:
    spec = anon.get("/api/openapi.json").json()
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            names = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            expected = {seg[1:-1] for seg in path.split("/") if seg.startswith("{")}
            assert names == expected, (method, path)
            assert "500" in op["responses"]
            for status, response in op["responses"].items():
                if path.startswith("/sso/") and "text/html" in response.get("content", {}):
                    continue  # behaviour.md §9: a failed login is an HTML page for the browser
                if status not in ("200", "303", "304", "307"):
                    schema = response["content"]["application/json"]["schema"]
                    assert schema == {"$ref": "#/components/schemas/Error"}


def test_openapi_documents_every_content_query_parameter(anon: Api) -> None:
    spec = anon.get("/api/openapi.json").json()
    params = {p["name"] for p in spec["paths"]["/api/content/items/{model}"]["get"]["parameters"]}
    assert {"filter", "sort", "fields", "limit", "skip", "populate", "locale"} <= params
