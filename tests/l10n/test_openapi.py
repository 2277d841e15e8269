"""The OpenAPI document describes the translations API."""

from __future__ import annotations

from tests.conftest import Api


def test_openapi_lists_the_l10n_paths_and_methods(anon: Api) -> None:
    paths = anon.get("/api/openapi.json").json()["paths"]
    expected = {
        "/api/l10n/projects": {"get"},
        "/api/l10n/project/{name}": {"get", "put", "patch", "delete"},
        "/api/l10n/project/{name}/{locale}": {"get"},
        "/api/l10n/project/{name}/export": {"get"},
        "/api/l10n/project/{name}/import": {"post"},
    }
    for path, methods in expected.items():
        assert set(paths[path]) == methods, path
        for operation in paths[path].values():
            assert operation["tags"] == ["l10n"]
            assert "401" in operation["responses"] and "403" in operation["responses"]
    params = {p["name"] for p in paths["/api/l10n/project/{name}/export"]["get"]["parameters"]}
    assert {"name", "format", "locale"} <= params
    assert "nested" in {p["name"] for p in paths["/api/l10n/project/{name}"]["get"]["parameters"]}
    assert "404" in paths["/api/l10n/project/{name}/{locale}"]["get"]["responses"]
