"""The OpenAPI document describes every route and method the app serves."""

from __future__ import annotations

from typing import Any

from quire.asgi import Route
from tests.conftest import Api

ADMIN_PAGES = ("/auth/", "/admin/", "/system/api", "/studio/", "/favicon.ico")


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
                if status not in ("200", "202", "303", "304", "307"):  # 202: queued, its task
                    schema = response["content"]["application/json"]["schema"]
                    if path == "/mcp":  # the protocol's own refusals hold a JSON-RPC error object under `error`
                        assert schema == {"type": "object", "required": ["error"]}
                        continue
                    assert schema == {"$ref": "#/components/schemas/Error"}


def test_openapi_documents_every_content_query_parameter(anon: Api) -> None:
    spec = anon.get("/api/openapi.json").json()
    params = {p["name"] for p in spec["paths"]["/api/content/items/{model}"]["get"]["parameters"]}
    assert {"filter", "sort", "fields", "limit", "skip", "populate", "locale"} <= params


def test_keys_are_security_schemes_not_parameters(anon: Api) -> None:
    spec = anon.get("/api/openapi.json").json()
    schemes = spec["components"]["securitySchemes"]
    assert schemes["apiKey"] == {**schemes["apiKey"], "type": "apiKey", "in": "header", "name": "api-key"}
    assert schemes["apiKeyQuery"] == {**schemes["apiKeyQuery"], "type": "apiKey", "in": "query", "name": "api_key"}
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    for path, operations in spec["paths"].items():
        for method, op in operations.items():
            assert "api_key" not in {p["name"] for p in op["parameters"]}, (method, path)
            names = [next(iter(req), None) for req in op["security"]]
            assert names in ([], ["apiKey", "apiKeyQuery", "bearer", None]), (method, path)
            if names:
                assert "401" in op["responses"], (method, path)
    public = ["/api/system/healthcheck", "/api/openapi.json", "/api/inbox/submit/{token}", "/storage/uploads/{path}"]
    for path in public:
        assert all(op["security"] == [] for op in spec["paths"][path].values()), path


def test_constraints_the_server_enforces_are_declared(anon: Api) -> None:
    paths = anon.get("/api/openapi.json").json()["paths"]
    params = {p["name"]: p for p in paths["/api/content/items/{model}"]["get"]["parameters"]}
    assert params["model"]["required"] and params["model"]["schema"]["pattern"] == "^[A-Za-z][A-Za-z0-9_]*$"
    assert params["limit"]["schema"] == {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
    for name in ("filter", "sort", "fields", "persona_vars"):
        assert params[name]["content"]["application/json"]["schema"]["type"] == "object", name
        assert "schema" not in params[name]
    item = {p["name"]: p for p in paths["/api/content/item/{model}/{id}"]["get"]["parameters"]}
    assert item["id"]["schema"]["pattern"] == "^[0-9a-f]{24}$"
    models = paths["/api/content/items"]["get"]["parameters"][0]
    assert models["name"] == "models" and models["required"]
    image = {p["name"]: p["schema"] for p in paths["/api/assets/image/{id}"]["get"]["parameters"]}
    assert image["q"] == {"type": "integer", "minimum": 1, "maximum": 100} and image["w"]["minimum"] == 1
    assert paths["/api/searchmod/search/{index}"]["get"]["parameters"][2]["schema"]["maximum"] == 1000


def test_answers_declare_their_content_types(anon: Api) -> None:
    paths = anon.get("/api/openapi.json").json()["paths"]

    def types(path: str, method: str = "get") -> set[str]:
        return set(paths[path][method]["responses"]["200"]["content"])

    assert types("/api/pages/sitemap.xml") == {"application/xml"}
    assert types("/api/inbox/submissions/export.csv") == {"text/csv"}
    assert types("/api/assets/image/{id}") == {"text/plain", "image/*"}
    assert types("/storage/uploads/{path}") == {"*/*"}
    assert types("/api/inbox/submissions/{id}/attachments/{field}/{n}") == {"*/*"}
    assert types("/api/content/items/{model}") == {"application/json"}
    listing = paths["/api/content/items/{model}"]["get"]["responses"]["200"]["content"]["application/json"]
    assert listing["schema"] == {"$ref": "#/components/schemas/List"}


def test_the_document_is_built_once_per_process(anon: Api, monkeypatch: Any) -> None:
    from quire import openapi

    first = anon.get("/api/openapi.json").content
    calls: list[int] = []
    monkeypatch.setattr(openapi, "document", lambda: calls.append(1) or {})
    assert anon.get("/api/openapi.json").content == first
    assert calls == []
