"""Writing projects: PUT, PATCH, DELETE, validation, permissions, events."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from quire.events import Reject
from tests.conftest import Api, role_key
from tests.l10n.conftest import SITE, patch, put_project


def stored(admin: Api, name: str) -> Any:
    response = admin.get(f"/api/l10n/project/{name}")
    return response.json() if response.status_code == 200 else None


def test_put_creates_and_answers_the_stored_document(admin: Api, quire: Quire) -> None:
    response = admin.put("/api/l10n/project/site", json={
        "label": "Website", "locales": ["en", "pt_br", "zh-hant-tw"],
        "keys": {"hello": {"en": "Hello", "pt-br": "Olá", "zh_Hant_TW": "你好"}, "bye": {"en": "Bye"}},
    })
    assert response.status_code == 200
    doc = response.json()
    assert set(doc) == {"_id", "name", "label", "locales", "keys", "_created", "_modified"}
    assert len(doc["_id"]) == 24 and doc["name"] == "site" and doc["label"] == "Website"
    assert doc["locales"] == ["en", "pt-BR", "zh-Hant-TW"]  # canonical
    assert doc["keys"] == {"bye": {"en": "Bye"}, "hello": {"en": "Hello", "pt-BR": "Olá", "zh-Hant-TW": "你好"}}
    assert isinstance(doc["_created"], int) and doc["_created"] == doc["_modified"]
    assert quire.store.collection("l10n/projects").find_one({"name": "site"}) == doc


def test_put_accepts_the_body_wrapped_in_data_and_defaults_label_and_keys(admin: Api) -> None:
    doc = put_project(admin, "app", {"data": {"locales": ["de"]}})
    assert doc["label"] == "app" and doc["keys"] == {} and doc["locales"] == ["de"]


def test_put_replaces_keeping_id_and_created(admin: Api, site: dict[str, Any]) -> None:
    doc = put_project(admin, "site", {"locales": ["fr"], "keys": {"oui": {"fr": "Oui"}}})
    assert doc["_id"] == site["_id"] and doc["_created"] == site["_created"]
    assert doc["label"] == "site"  # replaced: the default again
    assert doc["keys"] == {"oui": {"fr": "Oui"}}
    assert len(admin.get("/api/l10n/projects").json()) == 1  # names stay unique


def test_put_accepts_a_stored_document_sent_back(admin: Api, site: dict[str, Any]) -> None:
    changed = {**site, "label": "Renamed", "name": "ignored"}
    doc = put_project(admin, "site", changed)
    assert doc["label"] == "Renamed" and doc["name"] == "site" and doc["keys"] == site["keys"]


def test_null_and_empty_values_are_not_stored(admin: Api) -> None:
    doc = put_project(admin, "p", {"locales": ["en", "de"], "keys": {
        "a": {"en": "A", "de": None}, "b": {"en": ""}, "gone": None,
    }})
    assert doc["keys"] == {"a": {"en": "A"}, "b": {}}
    assert admin.get("/api/l10n/project/p").json()["b"] == {"en": None, "de": None}


@pytest.mark.parametrize(("body", "fields"), [
    ({"keys": {}}, ["locales"]),
    ({"locales": []}, ["locales"]),
    ({"locales": "en"}, ["locales"]),
    ({"locales": ["en", "de", "xx"]}, ["locales[2]"]),
    ({"locales": ["en", "en-GB-oxendict"]}, ["locales[1]"]),
    ({"locales": ["en", "de-CH-1996"]}, ["locales[1]"]),
    ({"locales": ["en", 5]}, ["locales[1]"]),
    ({"locales": ["pt-BR", "pt_br"]}, ["locales[1]"]),
    ({"locales": ["en"], "label": 3}, ["label"]),
    ({"locales": ["en"], "keys": []}, ["keys"]),
    ({"locales": ["en"], "keys": {"a": "text"}}, ["keys.a"]),
    ({"locales": ["en"], "keys": {"a": {"en": 1}}}, ["keys.a.en"]),
    ({"locales": ["en"], "keys": {"a": {"en": ["x"]}}}, ["keys.a.en"]),
    ({"locales": ["en"], "keys": {"a": {"fr": "x"}}}, ["keys.a.fr"]),
    ({"locales": ["en"], "keys": {"a": {"en": "x", "EN": "y"}}}, ["keys.a.EN"]),
    ({"locales": ["en"], "keys": {"": {"en": "x"}}}, ["keys."]),
    ({"locales": ["en"], "keys": {"k" * 1001: {"en": "x"}}}, ["keys." + "k" * 1001]),
    ({"locales": ["en"], "colour": "red"}, ["colour"]),
])
def test_put_refuses_bad_bodies_naming_the_field(admin: Api, body: dict[str, Any], fields: list[str]) -> None:
    response = admin.put("/api/l10n/project/p", json=body)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["fields"] == fields
    assert answer["error"].startswith("Invalid project: " + fields[0])
    assert stored(admin, "p") is None  # nothing stored


def test_a_key_of_exactly_1000_characters_is_fine(admin: Api) -> None:
    doc = put_project(admin, "p", {"locales": ["en"], "keys": {"k" * 1000: {"en": "x"}}})
    assert list(doc["keys"]) == ["k" * 1000]


def test_every_bad_field_is_named_at_once(admin: Api) -> None:
    response = admin.put("/api/l10n/project/p", json={
        "locales": ["en", "zz"], "label": [], "keys": {"a": {"en": 1}, "b": 2},
    })
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"locales[1]", "label", "keys.a.en", "keys.b"}


@pytest.mark.parametrize("body", [b"", b"[1, 2]", b'"text"', b"null"])
def test_a_missing_or_non_object_body_is_400(admin: Api, body: bytes) -> None:
    response = admin.put("/api/l10n/project/p", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)


def test_malformed_json_is_400(admin: Api) -> None:
    response = admin.put("/api/l10n/project/p", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 400
    assert response.json() == {"error": "Request body is not valid JSON"}


@pytest.mark.parametrize("name", ["-x", ".x", "a b", "x" * 101, "ü"])
def test_put_refuses_a_bad_project_name(admin: Api, name: str) -> None:
    response = admin.put(f"/api/l10n/project/{name}", json={"locales": ["en"]})
    assert response.status_code == 400
    assert response.json()["fields"] == ["name"]


@pytest.mark.parametrize("name", ["a", "site.v2", "my_app-1", "X" * 100])
def test_put_accepts_good_project_names(admin: Api, name: str) -> None:
    assert admin.put(f"/api/l10n/project/{name}", json={"locales": ["en"]}).status_code == 200


def test_a_body_over_the_limit_is_413_and_nothing_is_stored(admin: Api, quire: Quire) -> None:
    quire.max_body = 2048
    big = {"locales": ["en"], "keys": {"a": {"en": "x" * 4096}}}
    assert admin.put("/api/l10n/project/p", json=big).status_code == 413
    put_project(admin, "p", {"locales": ["en"]})
    response = patch(admin, "p", {"keys": {"a": {"en": "x" * 4096}}})
    assert response.status_code == 413
    assert response.json() == {"error": "Request body is larger than 2048 bytes"}
    assert admin.get("/api/l10n/project/p").json() == {}


# -- PATCH ---------------------------------------------------------------


def test_patch_sets_and_removes_single_values(admin: Api, site: dict[str, Any]) -> None:
    response = patch(admin, "site", {"keys": {
        "menu.edit": {"de": "Bearbeiten"},  # set one value
        "hello": {"pt-br": None},           # remove one value (any spelling)
        "new": {"en": "New"},               # add a key
    }})
    assert response.status_code == 200
    keys = response.json()["keys"]
    assert keys["menu.edit"] == {"en": "Edit", "de": "Bearbeiten"}
    assert keys["hello"] == {"en": "Hello", "de": "Hallo"}
    assert keys["new"] == {"en": "New"}
    assert keys["menu.file"] == SITE["keys"]["menu.file"]  # untouched
    assert response.json()["label"] == "Website"


def test_patch_with_null_removes_a_key_and_empty_object_keeps_it(admin: Api, site: dict[str, Any]) -> None:
    keys = patch(admin, "site", {"keys": {"menu.file": None, "hello": {}, "absent": None}}).json()["keys"]
    assert "menu.file" not in keys and "absent" not in keys
    assert keys["hello"] == SITE["keys"]["hello"]


def test_patch_replaces_label_and_locales_dropping_values_of_removed_ones(admin: Api, site: dict[str, Any]) -> None:
    doc = patch(admin, "site", {"label": "Site", "locales": ["de", "en", "fr"]}).json()
    assert doc["label"] == "Site"
    assert doc["locales"] == ["de", "en", "fr"]
    assert doc["keys"]["hello"] == {"de": "Hallo", "en": "Hello"}  # pt-BR gone, new order
    assert doc["_created"] == site["_created"] and doc["_id"] == site["_id"]
    assert admin.get("/api/l10n/project/site/pt-BR").status_code == 404
    assert admin.get("/api/l10n/project/site/fr").json()["hello"] is None


def test_patch_checks_key_locales_against_the_new_locales(admin: Api, site: dict[str, Any]) -> None:
    ok = patch(admin, "site", {"locales": ["en", "fr"], "keys": {"hello": {"fr": "Bonjour"}}})
    assert ok.json()["keys"]["hello"] == {"en": "Hello", "fr": "Bonjour"}
    bad = patch(admin, "site", {"keys": {"hello": {"de": "Hallo"}}})
    assert bad.status_code == 400
    assert bad.json()["fields"] == ["keys.hello.de"]


def test_a_refused_patch_changes_nothing(admin: Api, site: dict[str, Any]) -> None:
    before = admin.get("/api/l10n/project/site").json()
    response = patch(admin, "site", {"label": "X", "keys": {"hello": {"en": "Hi"}, "bye": {"it": "Ciao"}}})
    assert response.status_code == 400
    assert response.json()["fields"] == ["keys.bye.it"]
    assert admin.get("/api/l10n/project/site").json() == before
    assert admin.get("/api/l10n/projects").json()[0]["label"] == "Website"


def test_patch_of_a_missing_project_is_404(admin: Api) -> None:
    response = patch(admin, "nope", {"label": "x"})
    assert response.status_code == 404
    assert response.json() == {"error": "Project 'nope' not found"}
    assert admin.get("/api/l10n/projects").json() == []


def test_patch_refuses_empty_locales(admin: Api, site: dict[str, Any]) -> None:
    response = patch(admin, "site", {"locales": []})
    assert response.status_code == 400
    assert response.json()["fields"] == ["locales"]


# -- DELETE --------------------------------------------------------------


def test_delete_removes_the_project(admin: Api, site: dict[str, Any]) -> None:
    response = admin.delete("/api/l10n/project/site")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    assert admin.get("/api/l10n/project/site").status_code == 404
    again = admin.delete("/api/l10n/project/site")
    assert again.status_code == 404
    assert again.json() == {"error": "Project 'site' not found"}


# -- permissions ---------------------------------------------------------


def test_writes_need_l10n_manage(anon: Api, admin: Api, site: dict[str, Any]) -> None:
    reader = role_key(admin, "reader", {"l10n/read": True})
    writer = role_key(admin, "writer", {"l10n/manage": True})
    calls = [
        ("PUT", "/api/l10n/project/site", {"locales": ["en"]}),
        ("PATCH", "/api/l10n/project/site", {"label": "x"}),
        ("DELETE", "/api/l10n/project/site", None),
        ("POST", "/api/l10n/project/site/import", {"locales": ["en"]}),
    ]
    for method, url, body in calls:
        assert anon.request(method, url, json=body).status_code == 401, (method, url)
        response = reader.request(method, url, json=body)
        assert response.status_code == 403, (method, url)
        assert response.json() == {"error": "Permission denied"}
    assert stored(admin, "site") is not None
    assert admin.get("/api/l10n/projects").json()[0]["label"] == "Website"
    assert writer.request("PATCH", "/api/l10n/project/site", json={"label": "W"}).status_code == 200
    assert writer.get("/api/l10n/project/site").status_code == 403  # manage does not include read


def test_permission_comes_before_the_body_limit(anon: Api, quire: Quire) -> None:
    quire.max_body = 2048
    response = anon.put("/api/l10n/project/p", content=b"x" * 4096)
    assert response.status_code == 401


def test_unknown_method_is_405_with_allow(admin: Api) -> None:
    response = admin.post("/api/l10n/project/site", json={})
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "PUT", "PATCH", "DELETE"}


# -- events --------------------------------------------------------------


def test_save_and_remove_emit_events_with_project_and_identity(admin: Api, quire: Quire) -> None:
    seen: list[tuple[str, Any, Any]] = []
    quire.events.on("l10n.project.save", lambda project, identity: seen.append(("save", dict(project), identity)))
    quire.events.on("l10n.project.remove", lambda project, identity: seen.append(("remove", project, identity)))
    doc = put_project(admin, "p", {"locales": ["en"]})
    patch(admin, "p", {"label": "L"})
    admin.delete("/api/l10n/project/p")
    assert [s[0] for s in seen] == ["save", "save", "remove"]
    assert seen[0][1] == doc
    assert seen[1][1]["label"] == "L"
    assert seen[2][1]["_id"] == doc["_id"]
    assert all(s[2].is_admin for s in seen)


def test_a_rejecting_save_handler_gives_412_and_stores_nothing(admin: Api, quire: Quire) -> None:
    def refuse(project: dict[str, Any], identity: Any) -> None:
        if "forbidden" in project["keys"]:
            raise Reject("No forbidden keys here")

    quire.events.on("l10n.project.save", refuse)
    response = admin.put("/api/l10n/project/p", json={"locales": ["en"], "keys": {"forbidden": {"en": "x"}}})
    assert response.status_code == 412
    assert response.json() == {"error": "No forbidden keys here"}
    assert stored(admin, "p") is None
    put_project(admin, "p", {"locales": ["en"]})
    assert patch(admin, "p", {"keys": {"forbidden": {}}}).status_code == 412
    assert admin.get("/api/l10n/project/p").json() == {}


def test_a_rejecting_remove_handler_gives_412_and_keeps_the_project(admin: Api, quire: Quire, site: Any) -> None:
    async def refuse(project: dict[str, Any], identity: Any) -> None:
        raise Reject("Project is locked")

    quire.events.on("l10n.project.remove", refuse)
    response = admin.delete("/api/l10n/project/site")
    assert response.status_code == 412
    assert response.json() == {"error": "Project is locked"}
    assert stored(admin, "site") is not None


def test_a_save_handler_may_change_the_project_before_it_is_stored(admin: Api, quire: Quire) -> None:
    def stamp(project: dict[str, Any], identity: Any) -> None:
        project["label"] = project["label"].upper()

    quire.events.on("l10n.project.save", stamp)
    assert put_project(admin, "p", {"label": "shout", "locales": ["en"]})["label"] == "SHOUT"
    assert admin.get("/api/l10n/projects").json()[0]["label"] == "SHOUT"
