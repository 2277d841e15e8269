"""A seeded translation project for the l10n tests."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Api

SITE: dict[str, Any] = {
    "label": "Website",
    "locales": ["en", "de", "pt-BR"],
    "keys": {
        "hello": {"en": "Hello", "de": "Hallo", "pt-BR": "Olá"},
        "menu.file": {"en": "File", "de": "Datei"},
        "menu.file.open": {"en": "Open", "de": "Öffnen"},
        "menu.edit": {"en": "Edit"},
        "Loading...": {"en": "Loading…"},
        "empty": {},
    },
}


def put_project(api: Api, name: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.put(f"/api/l10n/project/{name}", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def patch(api: Api, name: str, body: Any) -> Any:
    return api.request("PATCH", f"/api/l10n/project/{name}", json=body)


@pytest.fixture
def site(admin: Api) -> dict[str, Any]:
    return put_project(admin, "site", SITE)
