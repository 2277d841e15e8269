"""Reading projects: full and single-locale forms, nesting, lookups, errors."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, role_key
from tests.l10n.conftest import put_project


def test_full_form_has_every_key_and_locale_with_null_for_missing(admin: Api, site: dict[str, Any]) -> None:
    response = admin.get("/api/l10n/project/site")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.json() == {
        "Loading...": {"en": "Loading…", "de": None, "pt-BR": None},
        "empty": {"en": None, "de": None, "pt-BR": None},
        "hello": {"en": "Hello", "de": "Hallo", "pt-BR": "Olá"},
        "menu.edit": {"en": "Edit", "de": None, "pt-BR": None},
        "menu.file": {"en": "File", "de": "Datei", "pt-BR": None},
        "menu.file.open": {"en": "Open", "de": "Öffnen", "pt-BR": None},
    }


def test_keys_come_sorted_and_values_in_the_order_of_the_locales(admin: Api, site: dict[str, Any]) -> None:
    body = admin.get("/api/l10n/project/site").json()
    assert list(body) == sorted(body)
    assert all(list(values) == ["en", "de", "pt-BR"] for values in body.values())


def test_single_locale_form_has_every_key_with_null_for_missing(admin: Api, site: dict[str, Any]) -> None:
    response = admin.get("/api/l10n/project/site/de")
    assert response.status_code == 200
    assert response.json() == {
        "Loading...": None, "empty": None, "hello": "Hallo", "menu.edit": None,
        "menu.file": "Datei", "menu.file.open": "Öffnen",
    }


@pytest.mark.parametrize("spelling", ["pt-BR", "pt_BR", "pt-br", "PT_br"])
def test_a_path_locale_is_compared_canonically(admin: Api, site: dict[str, Any], spelling: str) -> None:
    response = admin.get(f"/api/l10n/project/site/{spelling}")
    assert response.status_code == 200
    assert response.json()["hello"] == "Olá"


def test_unknown_project_is_404_with_its_name(admin: Api) -> None:
    for url in ("/api/l10n/project/nope", "/api/l10n/project/nope/en"):
        response = admin.get(url)
        assert response.status_code == 404
        assert response.json() == {"error": "Project 'nope' not found"}


@pytest.mark.parametrize("locale", ["fr", "pt", "en-US", "not-a-locale", "xx"])
def test_unconfigured_locale_is_404_with_the_locale_as_sent(admin: Api, site: dict[str, Any], locale: str) -> None:
    response = admin.get(f"/api/l10n/project/site/{locale}")
    assert response.status_code == 404
    assert response.json() == {"error": f"Locale '{locale}' not configured for this project"}


def test_nested_full_form_nests_dotted_keys_with_locale_maps_as_leaves(admin: Api, site: dict[str, Any]) -> None:
    for flag in ("1", "true", "TRUE"):
        body = admin.get(f"/api/l10n/project/site?nested={flag}").json()
        assert body == {
            "Loading...": {"en": "Loading…", "de": None, "pt-BR": None},
            "empty": {"en": None, "de": None, "pt-BR": None},
            "hello": {"en": "Hello", "de": "Hallo", "pt-BR": "Olá"},
            "menu": {
                "edit": {"en": "Edit", "de": None, "pt-BR": None},
                "file": {"en": "File", "de": "Datei", "pt-BR": None},
            },
            # collides with the leaf menu.file, so it stays flat
            "menu.file.open": {"en": "Open", "de": "Öffnen", "pt-BR": None},
        }


def test_nested_single_locale_form_keeps_null_leaves_and_their_collisions(admin: Api, site: dict[str, Any]) -> None:
    body = admin.get("/api/l10n/project/site/pt-BR?nested=1").json()
    assert body == {
        "Loading...": None,
        "empty": None,
        "hello": "Olá",
        "menu": {"edit": None, "file": None},
        "menu.file.open": None,  # menu.file is a (null) leaf: it still takes the place
    }


def test_nested_zero_or_false_is_the_flat_form(admin: Api, site: dict[str, Any]) -> None:
    flat = admin.get("/api/l10n/project/site/de").json()
    assert admin.get("/api/l10n/project/site/de?nested=0").json() == flat
    assert admin.get("/api/l10n/project/site/de?nested=false").json() == flat


def test_nesting_places_shorter_keys_first_whatever_the_stored_order(admin: Api) -> None:
    put_project(admin, "deep", {"locales": ["en"], "keys": {
        "a.b.c": {"en": "abc"}, "a.b": {"en": "ab"}, "a": {"en": "a"}, "x.y.z": {"en": "xyz"}, "x.w": {"en": "xw"},
        "..": {"en": "dots"}, ".lead": {"en": "lead"}, "trail.": {"en": "trail"}, "p..q": {"en": "double"},
    }})
    body = admin.get("/api/l10n/project/deep/en?nested=1").json()
    assert body == {
        "..": "dots", ".lead": "lead", "a": "a", "a.b": "ab", "a.b.c": "abc", "p..q": "double",
        "trail.": "trail", "x": {"w": "xw", "y": {"z": "xyz"}},
    }


@pytest.mark.parametrize("flag", ["yes", "2", "on"])
def test_a_bad_nested_value_is_400(admin: Api, site: dict[str, Any], flag: str) -> None:
    for url in ("/api/l10n/project/site", "/api/l10n/project/site/en"):
        response = admin.get(f"{url}?nested={flag}")
        assert response.status_code == 400
        assert response.json() == {"error": "<nested> must be 1, true, 0 or false"}


def test_list_of_projects_is_sorted_by_name_and_counts_keys(admin: Api, site: dict[str, Any]) -> None:
    put_project(admin, "app", {"label": "App", "locales": ["fr"], "keys": {"ok": {"fr": "d'accord"}}})
    response = admin.get("/api/l10n/projects")
    assert response.status_code == 200
    listed = response.json()
    assert [p["name"] for p in listed] == ["app", "site"]
    assert listed[1] == {
        "name": "site", "label": "Website", "locales": ["en", "de", "pt-BR"], "keys": 6,
        "_created": site["_created"], "_modified": site["_modified"],
    }


def test_list_is_empty_without_projects(admin: Api) -> None:
    assert admin.get("/api/l10n/projects").json() == []


READ_URLS = [
    "/api/l10n/projects",
    "/api/l10n/project/site",
    "/api/l10n/project/site/en",
    "/api/l10n/project/site/export",
]


def test_reads_need_l10n_read(anon: Api, admin: Api, site: dict[str, Any]) -> None:
    writer = role_key(admin, "writer", {"l10n/manage": True})
    reader = role_key(admin, "reader", {"l10n/read": True})
    for url in READ_URLS:
        assert anon.get(url).status_code == 401, url
        assert anon.get(url).json() == {"error": "Authentication failed"}
        assert writer.get(url).status_code == 403, url
        assert writer.get(url).json() == {"error": "Permission denied"}
        assert reader.get(url).status_code == 200, url
    assert anon.with_key("qk_unknown").get(READ_URLS[1]).status_code == 401


def test_permission_is_checked_before_the_project_is_looked_up(anon: Api, admin: Api) -> None:
    # a caller without the permission must not learn which projects exist
    assert anon.get("/api/l10n/project/nope").status_code == 401
    other = role_key(admin, "other", {"pages/read": True})
    assert other.get("/api/l10n/project/nope/en").status_code == 403


def test_the_public_role_can_be_given_l10n_read(anon: Api, admin: Api, site: dict[str, Any]) -> None:
    assert admin.put("/api/system/roles/public", json={"permissions": {"l10n/read": True}}).status_code == 200
    assert anon.get("/api/l10n/project/site/en").json()["hello"] == "Hello"
    assert anon.request("DELETE", "/api/l10n/project/site").status_code == 401


def test_server_side_code_reads_the_collection(quire: Quire, site: dict[str, Any]) -> None:
    stored = quire.store.collection("l10n/projects").find_one({"name": "site"})
    assert stored is not None
    assert stored["keys"]["hello"] == {"en": "Hello", "de": "Hallo", "pt-BR": "Olá"}
    assert stored["locales"] == ["en", "de", "pt-BR"]
    assert quire.l10n.find("site") == stored
    assert quire.l10n.find("nope") is None


def test_head_of_a_project_is_answered(admin: Api, site: dict[str, Any]) -> None:
    assert admin.request("HEAD", "/api/l10n/project/site").status_code == 200
