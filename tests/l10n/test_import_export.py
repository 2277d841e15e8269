"""Export and import through the API: json, po and i18next."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quire.app import Quire
from quire.events import Reject
from tests.conftest import Api, role_key
from tests.l10n.conftest import SITE
from tests.l10n.test_formats import HAND_WRITTEN_PO

PO_TYPE = "text/x-gettext-translation; charset=utf-8"


def do_import(api: Api, name: str, body: bytes, **params: str) -> Any:
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return api.post(f"/api/l10n/project/{name}/import?{query}", content=body)


def test_json_export_is_the_project_as_an_attachment(admin: Api, site: dict[str, Any]) -> None:
    response = admin.get("/api/l10n/project/site/export")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="site.json"'
    assert response.json() == {"name": "site", "label": "Website", "locales": ["en", "de", "pt-BR"],
                               "keys": site["keys"]}
    assert admin.get("/api/l10n/project/site/export?format=json").content == response.content


def test_po_export_has_gettext_headers_and_every_key(admin: Api, site: dict[str, Any]) -> None:
    response = admin.get("/api/l10n/project/site/export?format=po&locale=pt_br")
    assert response.status_code == 200
    assert response.headers["content-type"] == PO_TYPE
    assert response.headers["content-disposition"] == 'attachment; filename="site.pt-BR.po"'
    text = response.text
    assert '"Language: pt_BR\\n"' in text
    assert 'msgid "hello"\nmsgstr "Olá"' in text
    assert 'msgid "menu.file"\nmsgstr ""' in text  # missing: empty msgstr
    assert text.count("msgid ") == 1 + len(SITE["keys"])  # the header and every key


def test_i18next_export_is_nested_without_missing_values(admin: Api, site: dict[str, Any]) -> None:
    response = admin.get("/api/l10n/project/site/export?format=i18next&locale=de")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.headers["content-disposition"] == 'attachment; filename="site.de.json"'
    assert response.json() == {"hello": "Hallo", "menu": {"file": "Datei"}, "menu.file.open": "Öffnen"}


@pytest.mark.parametrize("fmt", ["po", "i18next"])
def test_po_and_i18next_export_need_a_locale(admin: Api, site: dict[str, Any], fmt: str) -> None:
    response = admin.get(f"/api/l10n/project/site/export?format={fmt}")
    assert response.status_code == 400
    assert response.json() == {"error": f"<locale> parameter is required for format {fmt}"}
    missing = admin.get(f"/api/l10n/project/site/export?format={fmt}&locale=fr")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Locale 'fr' not configured for this project"}


def test_export_errors(admin: Api, site: dict[str, Any]) -> None:
    bad = admin.get("/api/l10n/project/site/export?format=xliff")
    assert bad.status_code == 400
    assert bad.json() == {"error": "<format> must be json, po or i18next"}
    gone = admin.get("/api/l10n/project/nope/export")
    assert gone.status_code == 404
    assert gone.json() == {"error": "Project 'nope' not found"}


@pytest.mark.parametrize("fmt", ["po", "i18next"])
def test_export_then_import_into_a_fresh_project_gives_the_same_values(
    admin: Api, site: dict[str, Any], fmt: str
) -> None:
    for locale in SITE["locales"]:
        exported = admin.get(f"/api/l10n/project/site/export?format={fmt}&locale={locale}")
        response = do_import(admin, "copy", exported.content, format=fmt, locale=locale)
        assert response.status_code == 200, response.text
    copy = admin.get("/api/l10n/project/copy").json()
    original = admin.get("/api/l10n/project/site").json()
    assert copy["menu.file.open"] == original["menu.file.open"]
    if fmt == "po":  # PO lists every key, translated or not
        assert copy == original
    else:  # i18next leaves missing values out, so keys without any value are not in the files
        assert copy == {k: v for k, v in original.items() if any(v.values())}
    assert admin.get("/api/l10n/projects").json()[0]["locales"] == ["en", "de", "pt-BR"]


def test_json_export_then_import_copies_the_project(admin: Api, site: dict[str, Any]) -> None:
    exported = admin.get("/api/l10n/project/site/export").content
    response = do_import(admin, "copy", exported)
    assert response.status_code == 200
    doc = response.json()
    assert doc["name"] == "copy"  # the path wins over the file's name
    assert doc["label"] == "Website" and doc["keys"] == site["keys"]
    assert doc["_id"] != site["_id"]


def test_json_import_replaces_like_put(admin: Api, site: dict[str, Any]) -> None:
    body = json.dumps({"name": "site", "label": "New", "locales": ["fr"], "keys": {"a": {"fr": "b"}}}).encode()
    doc = do_import(admin, "site", body, format="json").json()
    assert doc["locales"] == ["fr"] and doc["keys"] == {"a": {"fr": "b"}} and doc["_id"] == site["_id"]


def test_json_import_validates_like_put(admin: Api) -> None:
    response = do_import(admin, "p", b'{"locales": ["en", "qq"]}')
    assert response.status_code == 400
    assert response.json()["fields"] == ["locales[1]"]
    bad = do_import(admin, "p", b"{nope")
    assert bad.status_code == 400
    assert bad.json() == {"error": "File is not valid JSON: unexpected character, expected a string key at line 1, column 2"}
    assert admin.get("/api/l10n/projects").json() == []


def test_po_import_merges_one_locale_and_keeps_what_the_file_does_not_translate(
    admin: Api, site: dict[str, Any]
) -> None:
    response = do_import(admin, "site", HAND_WRITTEN_PO.encode(), format="po", locale="de-de")
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["locales"] == ["en", "de", "pt-BR", "de-DE"]  # added
    assert doc["keys"]["hello"]["de-DE"] == "Hallo"
    assert doc["keys"]["multi.line"] == {"de-DE": 'Erste Zeile\nzweite "Zeile"'}
    assert doc["keys"]["menu.edit"] == {"en": "Edit"}  # untranslated in the file: nothing set
    assert "de-DE" not in doc["keys"]["menu.file"]  # fuzzy: skipped
    assert doc["keys"]["menu.file"] == SITE["keys"]["menu.file"]
    assert doc["label"] == "Website"


def test_po_import_overwrites_values_of_that_locale_only(admin: Api, site: dict[str, Any]) -> None:
    po = b'msgid "hello"\nmsgstr "Servus"\n\nmsgid "menu.file"\nmsgstr ""\n'
    doc = do_import(admin, "site", po, format="po", locale="de").json()
    assert doc["keys"]["hello"] == {"en": "Hello", "de": "Servus", "pt-BR": "Olá"}
    assert doc["keys"]["menu.file"] == {"en": "File", "de": "Datei"}  # empty msgstr keeps the value


def test_po_import_takes_the_locale_from_the_header(admin: Api) -> None:
    response = do_import(admin, "fresh", HAND_WRITTEN_PO.encode(), format="po")
    assert response.status_code == 200
    doc = response.json()
    assert doc["label"] == "fresh" and doc["locales"] == ["de-DE"]
    assert set(doc["keys"]) == {"hello", "menu.edit", "multi.line"}
    assert doc["keys"]["menu.edit"] == {}  # known key, no translation


def test_po_import_locale_errors(admin: Api) -> None:
    no_header = b'msgid "a"\nmsgstr "b"\n'
    response = do_import(admin, "p", no_header, format="po")
    assert response.status_code == 400
    assert response.json() == {"error": "<locale> parameter is required: the PO file names no Language"}
    wrong = do_import(admin, "p", HAND_WRITTEN_PO.encode(), format="po", locale="fr")
    assert wrong.status_code == 400
    assert wrong.json() == {"error": "The PO file is for locale de-DE, not fr"}
    unknown = do_import(admin, "p", no_header, format="po", locale="xx")
    assert unknown.status_code == 400
    assert unknown.json()["fields"] == ["locale"]
    bad_header = HAND_WRITTEN_PO.replace("de_DE", "klingon").encode()
    response = do_import(admin, "p", bad_header, format="po")
    assert response.status_code == 400
    assert response.json() == {"error": "The PO file's Language 'klingon' is not a known locale"}
    assert admin.get("/api/l10n/projects").json() == []


def test_po_import_refuses_plural_entries_and_broken_files(admin: Api, site: dict[str, Any]) -> None:
    plural = b'msgid "apple"\nmsgid_plural "apples"\nmsgstr[0] "Apfel"\nmsgstr[1] "\xc3\x84pfel"\n'
    response = do_import(admin, "site", plural, format="po", locale="de")
    assert response.status_code == 400
    assert response.json() == {"error": "PO entry 'apple': plural entries are not supported"}
    broken = do_import(admin, "site", b"hello there", format="po", locale="de")
    assert broken.status_code == 400
    assert broken.json()["error"].startswith("File is not a valid PO file")
    assert admin.get("/api/l10n/project/site").json()["hello"]["de"] == "Hallo"


def test_i18next_import_accepts_nested_and_flat_keys(admin: Api, site: dict[str, Any]) -> None:
    body = json.dumps({"menu": {"edit": "Editar", "file": {"open": "Abrir"}}, "hello": "Oi",
                       "count_one": "{{count}} item", "count_other": "{{count}} itens", "x.y": ""}).encode()
    response = do_import(admin, "site", body, format="i18next", locale="pt_BR")
    assert response.status_code == 200, response.text
    keys = response.json()["keys"]
    assert keys["menu.edit"]["pt-BR"] == "Editar"
    assert keys["menu.file.open"]["pt-BR"] == "Abrir"
    assert keys["hello"]["pt-BR"] == "Oi"
    assert keys["count_one"] == {"pt-BR": "{{count}} item"}  # plural suffixes are just keys
    assert keys["x.y"] == {}
    assert response.json()["locales"] == ["en", "de", "pt-BR"]  # already there


def test_i18next_import_errors(admin: Api) -> None:
    body = b'{"a": {"b": 3}}'
    response = do_import(admin, "p", body, format="i18next", locale="en")
    assert response.status_code == 400
    assert response.json() == {"error": "Value of 'a.b' must be a string"}
    need = do_import(admin, "p", b'{"a": "b"}', format="i18next")
    assert need.status_code == 400
    assert need.json() == {"error": "<locale> parameter is required for format i18next"}
    array = do_import(admin, "p", b'["a"]', format="i18next", locale="en")
    assert array.status_code == 400
    assert array.json() == {"error": "An i18next file must hold a JSON object"}
    long_key = json.dumps({"k" * 1001: "x"}).encode()
    too_long = do_import(admin, "p", long_key, format="i18next", locale="en")
    assert too_long.status_code == 400
    assert too_long.json()["fields"] == ["keys." + "k" * 1001]
    assert admin.get("/api/l10n/projects").json() == []


def test_import_of_a_new_project_checks_the_name(admin: Api) -> None:
    response = do_import(admin, "-bad", b'{"a": "b"}', format="i18next", locale="en")
    assert response.status_code == 400
    assert response.json()["fields"] == ["name"]


def test_import_format_must_be_known(admin: Api) -> None:
    response = do_import(admin, "p", b"{}", format="csv")
    assert response.status_code == 400
    assert response.json() == {"error": "<format> must be json, po or i18next"}


def test_import_body_over_the_limit_is_413(admin: Api, quire: Quire) -> None:
    quire.max_body = 2048
    response = do_import(admin, "p", b'msgid "a"\nmsgstr "' + b"x" * 4096 + b'"\n', format="po", locale="en")
    assert response.status_code == 413
    assert admin.get("/api/l10n/projects").json() == []


def test_import_goes_through_the_save_event(admin: Api, quire: Quire) -> None:
    def refuse(project: dict[str, Any], identity: Any) -> None:
        raise Reject("Imports are closed")

    quire.events.on("l10n.project.save", refuse)
    response = do_import(admin, "p", b'{"a": "b"}', format="i18next", locale="en")
    assert response.status_code == 412
    assert response.json() == {"error": "Imports are closed"}
    assert admin.get("/api/l10n/projects").json() == []


def test_export_is_a_read_and_import_a_write(admin: Api, site: dict[str, Any]) -> None:
    reader = role_key(admin, "reader", {"l10n/read": True})
    assert reader.get("/api/l10n/project/site/export?format=po&locale=en").status_code == 200
    assert do_import(reader, "site", b'{"a": "b"}', format="i18next", locale="en").status_code == 403


def test_export_and_import_are_not_locales(admin: Api, site: dict[str, Any]) -> None:
    # GET of .../import is a wrong method, not a lookup of a locale named "import"
    response = admin.get("/api/l10n/project/site/import")
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
