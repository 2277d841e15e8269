"""Translations in the studio over HTTP: who may see and change what, CSRF,
the grid's filter, search and pages, one cell saved at a time, keys added,
renamed and deleted, projects created, changed and deleted, and files
imported (all or nothing) and exported."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.conftest import Api
from tests.studio.conftest import logged_in, page_csrf

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _site(admin: Api, keys: int = 3) -> None:
    body = {"label": "Website", "locales": ["en", "de", "fr"], "keys": {
        "hello": {"en": "Hello", "de": "Hallo", "fr": "Bonjour"},
        "menu.file": {"en": "File"},
        "menu.edit": {"en": "Edit", "fr": "Éditer"},
        **{f"extra.{n:04d}": {"en": f"Extra {n}"} for n in range(keys - 3)},
    }}
    response = admin.put("/api/l10n/project/site", json=body)
    assert response.status_code == 200, response.text


def _project(admin: Api, name: str = "site") -> dict[str, Any]:
    return admin.get(f"/api/l10n/project/{name}").json()  # type: ignore[no-any-return]


def _post(browser: Any, path: str, pairs: list[tuple[str, str]], **headers: str) -> Any:
    token = page_csrf(browser.get("/studio/l10n").text)
    return browser.post(path, content=urlencode([("csrf", token), *pairs]), headers={**FORM, **headers})


def _upload(browser: Any, name: str, filename: str, raw: bytes, fmt: str, locale: str = "",
            token: str | None = None, **headers: str) -> Any:
    csrf = page_csrf(browser.get("/studio/l10n").text) if token is None else token
    return browser.post(f"/studio/l10n/{name}/import", data={"csrf": csrf, "format": fmt, "locale": locale},
                        files={"file": (filename, raw, "application/octet-stream")}, headers=headers)


def _reader(app: Any, admin: Api, name: str = "rita", permissions: dict[str, bool] | None = None) -> Any:
    admin.put("/api/system/roles/reader", json={"permissions": permissions or {"l10n/read": True}})
    return logged_in(app, name, "reader")


# -- permissions ------------------------------------------------------------------


GETS = ["/studio/l10n", "/studio/l10n/site", "/studio/l10n/site/settings", "/studio/l10n/site/delete",
        "/studio/l10n/site/export?format=po&locale=de"]
POSTS = ["/studio/l10n", "/studio/l10n/site/cell", "/studio/l10n/site/keys", "/studio/l10n/site/keys/rename",
         "/studio/l10n/site/keys/delete", "/studio/l10n/site/settings", "/studio/l10n/site/delete"]


def test_logged_out_visitors_are_sent_to_the_login(app: Any, admin: Api, client: Any) -> None:
    _site(admin)
    for path in GETS:
        response = client.get(path, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/auth/login?next="), path
    for path in POSTS:
        assert client.post(path, content="name=x", headers=FORM).status_code == 401, path


def test_a_role_without_l10n_permissions_gets_403_and_no_sidebar_link(app: Any, admin: Api) -> None:
    _site(admin)
    nobody = _reader(app, admin, "nora", {"content/*/read": True})
    assert 'href="/studio/l10n"' not in nobody.get("/").text
    for path in GETS:
        assert nobody.get(path).status_code == 403, path
    token = page_csrf(nobody.get("/studio/content").text)
    for path in POSTS:
        response = nobody.post(path, content=urlencode({"csrf": token, "key": "hello", "locale": "de",
                                                        "value": "x", "name": "x", "locales": "en",
                                                        "confirm": "site"}), headers=FORM)
        assert response.status_code == 403, path
    assert _project(admin)["hello"]["de"] == "Hallo"


def test_a_reader_sees_the_grid_and_exports_but_changes_nothing(app: Any, admin: Api) -> None:
    _site(admin)
    rita = _reader(app, admin)
    home = rita.get("/").text
    assert 'href="/studio/l10n"' in home
    page = rita.get("/studio/l10n/site")
    assert page.status_code == 200 and "Hallo" in page.text
    assert "<textarea" not in page.text and "New key" not in page.text and 'id="l10n-import"' not in page.text
    listed = rita.get("/studio/l10n").text
    assert "New project" not in listed and "/studio/l10n/site/delete" not in listed
    exported = rita.get("/studio/l10n/site/export?format=po&locale=de")
    assert exported.status_code == 200 and 'msgstr "Hallo"' in exported.text
    for path in POSTS:
        response = _post(rita, path, [("key", "hello"), ("locale", "de"), ("value", "Servus"), ("name", "x"),
                                      ("locales", "en"), ("confirm", "site")])
        assert response.status_code == 403, path
    assert _post(rita, "/studio/l10n/site/cell", [("key", "hello"), ("locale", "de"), ("value", "Servus")],
                 **{"hx-request": "true"}).status_code == 403
    assert _upload(rita, "site", "x.po", b'msgid "hello"\nmsgstr "Servus"\n', "po", "de").status_code == 403
    assert _project(admin)["hello"]["de"] == "Hallo"
    assert rita.get("/studio/l10n/site/settings").status_code == 403


def test_writes_without_the_token_are_refused_and_store_nothing(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    pairs = {"key": "hello", "locale": "de", "value": "Servus", "name": "blog", "locales": "en", "new": "hi",
             "confirm": "site"}
    for path in POSTS:
        assert ann.post(path, content=urlencode(pairs), headers=FORM).status_code == 403, path
        assert ann.post(path, content=urlencode({**pairs, "csrf": "forged"}), headers=FORM).status_code == 403
    assert _upload(ann, "site", "x.po", b'msgid "hello"\nmsgstr "Servus"\n', "po", "de",
                   token="forged").status_code == 403
    other = _post(ann, "/studio/l10n/site/cell", list(pairs.items()), origin="https://evil.example")
    assert other.status_code == 403
    assert _project(admin)["hello"]["de"] == "Hallo"
    assert [p["name"] for p in admin.get("/api/l10n/projects").json()] == ["site"]


# -- the grid -----------------------------------------------------------------------


def _rows(html: str) -> list[str]:
    return re.findall(r'<code class="l10n-key">([^<]*)</code>', html)


def test_the_grid_filters_missing_translations_searches_and_pages(app: Any, admin: Api) -> None:
    _site(admin, keys=130)
    ann = logged_in(app)
    page = ann.get("/studio/l10n/site").text
    assert _rows(page)[:3] == ["extra.0000", "extra.0001", "extra.0002"] and len(_rows(page)) == 50
    assert "1–50 of 130 keys" in page and "Only missing in de (129)" in page
    assert 'class="l10n-cell missing"' in page
    de = ann.get("/studio/l10n/site", params={"missing": "de", "limit": "100", "page": "2"}).text
    assert "101–129 of 129 keys missing in de" in de and "hello" not in _rows(de)
    fr = ann.get("/studio/l10n/site", params={"missing": "fr", "q": "menu"}).text
    assert _rows(fr) == ["menu.file"]
    anywhere = ann.get("/studio/l10n/site", params={"missing": "*", "q": "ÉDITER"}).text  # values, any case
    assert _rows(anywhere) == ["menu.edit"]
    none = ann.get("/studio/l10n/site", params={"q": "nothing like this"}).text
    assert "No keys match" in none
    fragment = ann.get("/studio/l10n/site", params={"missing": "de"}, headers={"hx-request": "true"})
    assert fragment.text.lstrip().startswith("<section id=\"l10n-grid\"") and "<html" not in fragment.text


def test_hostile_grid_parameters_answer_4xx_or_fall_back(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    for params in ({"page": "x"}, {"page": "-4"}, {"page": "²"}, {"limit": "7"}, {"limit": "9" * 40},
                   {"q": "x" * 5000}, {"q": "a\x00b"}, {"page": "99999999999999999999"}, {"page": "٥"}):
        assert ann.get("/studio/l10n/site", params=params).status_code == 200, params
    assert "past the end" not in ann.get("/studio/l10n/site", params={"page": "٥"}).text  # ٥ is not page 5
    bad = ann.get("/studio/l10n/site", params={"missing": "xx"})
    assert bad.status_code == 400 and "xx is not a locale of this project" in bad.text
    assert ann.get("/studio/l10n/nope").status_code == 404
    assert ann.get("/studio/l10n/" + "x" * 300).status_code == 404
    assert ann.get("/studio/l10n/site/export?format=exe").status_code == 400
    assert ann.get("/studio/l10n/site/export?format=po").status_code == 400
    assert ann.get("/studio/l10n/site/export?format=po&locale=it").status_code == 404


def test_a_cell_is_saved_alone_and_answers_itself(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    saved = _post(ann, "/studio/l10n/site/cell", [("key", "menu.file"), ("locale", "de"), ("value", "Datei"),
                                                   ("back", "/studio/l10n/site?missing=de")],
                  **{"hx-request": "true"})
    assert saved.status_code == 200 and "Saved" in saved.text and ">Datei</textarea>" in saved.text
    assert saved.text.lstrip().startswith("<td") and "missing" not in saved.text.split(">")[0]
    assert _project(admin)["menu.file"] == {"en": "File", "de": "Datei", "fr": None}
    emptied = _post(ann, "/studio/l10n/site/cell", [("key", "menu.file"), ("locale", "de"), ("value", "")],
                    **{"hx-request": "true"})
    assert emptied.status_code == 200 and 'l10n-cell missing' in emptied.text
    assert _project(admin)["menu.file"]["de"] is None
    gone = _post(ann, "/studio/l10n/site/cell", [("key", "renamed.meanwhile"), ("locale", "de"), ("value", "x")],
                 **{"hx-request": "true"})
    assert gone.status_code == 404 and "renamed or deleted meanwhile" in gone.text and "<td" in gone.text
    wrong = _post(ann, "/studio/l10n/site/cell", [("key", "hello"), ("locale", "it"), ("value", "Ciao")],
                  **{"hx-request": "true"})
    assert wrong.status_code == 404 and "not configured" in wrong.text
    plain = _post(ann, "/studio/l10n/site/cell", [("key", "hello"), ("locale", "fr"), ("value", "Salut"),
                                                   ("back", "https://evil.example/x")])
    assert plain.status_code == 303 and plain.headers["location"] == "/studio/l10n/site"
    nul = _post(ann, "/studio/l10n/site/cell", [("key", "hello"), ("locale", "de"), ("value", "a\x00b")],
                **{"hx-request": "true"})
    assert nul.status_code == 200
    assert _project(admin)["hello"] == {"en": "Hello", "de": "a\x00b", "fr": "Salut"}


def test_keys_are_added_renamed_and_deleted(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    added = _post(ann, "/studio/l10n/site/keys", [("key", "menu.view")])
    assert added.status_code == 303 and added.headers["location"] == "/studio/l10n/site?q=menu.view"
    assert _project(admin)["menu.view"] == {"en": None, "de": None, "fr": None}
    twice = _post(ann, "/studio/l10n/site/keys", [("key", "hello")])
    assert twice.status_code == 400 and "Key &#39;hello&#39; exists already" in twice.text
    long = _post(ann, "/studio/l10n/site/keys", [("key", "k" * 1001)])
    assert long.status_code == 400 and "A key must be 1 to 1,000 characters long" in long.text
    assert _post(ann, "/studio/l10n/site/keys", [("key", "")]).status_code == 400
    renamed = _post(ann, "/studio/l10n/site/keys/rename", [("key", "hello"), ("new", "greeting"),
                                                           ("back", "/studio/l10n/site?q=hel")])
    assert renamed.status_code == 303 and renamed.headers["location"] == "/studio/l10n/site?q=hel"
    project = _project(admin)
    assert "hello" not in project and project["greeting"] == {"en": "Hello", "de": "Hallo", "fr": "Bonjour"}
    clash = _post(ann, "/studio/l10n/site/keys/rename", [("key", "greeting"), ("new", "menu.file")])
    assert clash.status_code == 400 and "exists already" in clash.text and "aria-invalid" in clash.text
    assert _post(ann, "/studio/l10n/site/keys/rename", [("key", "nope"), ("new", "x")]).status_code == 404
    deleted = _post(ann, "/studio/l10n/site/keys/delete", [("key", "greeting")])
    assert deleted.status_code == 303 and "greeting" not in _project(admin)
    assert _post(ann, "/studio/l10n/site/keys/delete", [("key", "greeting")]).status_code == 404


# -- projects ------------------------------------------------------------------------


def test_projects_are_created_changed_and_deleted_with_a_confirmation(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    assert "No translation projects yet" in ann.get("/studio/l10n").text
    created = _post(ann, "/studio/l10n", [("name", "app"), ("label", "Mobile app"), ("locales", "en, de_ch")])
    assert created.status_code == 303 and created.headers["location"] == "/studio/l10n/app"
    assert admin.get("/api/l10n/projects").json()[0]["locales"] == ["en", "de-CH"]
    again = _post(ann, "/studio/l10n", [("name", "app"), ("locales", "en")])
    assert again.status_code == 400 and "exists already" in again.text
    bad_name = _post(ann, "/studio/l10n", [("name", "no spaces"), ("locales", "en")])
    assert bad_name.status_code == 400 and "Project name must match" in bad_name.text
    bad_locale = _post(ann, "/studio/l10n", [("name", "web"), ("locales", "en, klingon")])
    assert bad_locale.status_code == 400 and "locales[1] is not a known locale code" in bad_locale.text
    assert 'id="locales-error"' in bad_locale.text and 'value="en, klingon"' in bad_locale.text
    assert _post(ann, "/studio/l10n", [("name", "web"), ("locales", "")]).status_code == 400
    assert [p["name"] for p in admin.get("/api/l10n/projects").json()] == ["app"]
    admin.request("PATCH", "/api/l10n/project/app", json={"keys": {"hi": {"en": "Hi", "de-CH": "Grüezi"}}})
    relabel = _post(ann, "/studio/l10n/app/settings", [("label", "App"), ("locales", "en, de-CH, fr")])
    assert relabel.status_code == 303
    stored = admin.get("/api/l10n/projects").json()[0]
    assert stored["label"] == "App" and stored["locales"] == ["en", "de-CH", "fr"]
    dropping = _post(ann, "/studio/l10n/app/settings", [("label", "App"), ("locales", "en, fr")])
    assert dropping.status_code == 400 and "1 value in de-CH" in dropping.text and 'name="confirm"' in dropping.text
    assert admin.get("/api/l10n/projects").json()[0]["locales"] == ["en", "de-CH", "fr"]
    confirmed = _post(ann, "/studio/l10n/app/settings", [("label", "App"), ("locales", "en, fr"),
                                                         ("confirm", "de-CH")])
    assert confirmed.status_code == 303 and _project(admin, "app")["hi"] == {"en": "Hi", "fr": None}
    page = ann.get("/studio/l10n/app/delete")
    assert page.status_code == 200 and "1 key" in page.text
    unconfirmed = _post(ann, "/studio/l10n/app/delete", [])
    assert unconfirmed.status_code == 400 and admin.get("/api/l10n/projects").json()
    deleted = _post(ann, "/studio/l10n/app/delete", [("confirm", "app")])
    assert deleted.status_code == 303 and deleted.headers["location"] == "/studio/l10n"
    assert admin.get("/api/l10n/projects").json() == []
    assert "Deleted project app and its 1 key." in ann.get("/studio/l10n").text


# -- files ----------------------------------------------------------------------------


def test_an_import_is_stored_and_reported(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    po = b'msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "menu.file"\nmsgstr "Datei"\n\nmsgid "menu.new"\nmsgstr "Neu"\n'
    answer = _upload(ann, "site", "site.de.po", po, "po", accept="application/json")
    assert answer.status_code == 200, answer.text
    assert answer.json()["message"].startswith("Imported site.de.po (po)") and answer.json()["url"] == "/studio/l10n/site"
    project = _project(admin)
    assert project["menu.file"]["de"] == "Datei" and project["menu.new"]["de"] == "Neu"
    plain = _upload(ann, "site", "site.fr.json", b'{"menu": {"file": "Fichier"}}', "i18next", "fr")
    assert plain.status_code == 303 and plain.headers["location"] == "/studio/l10n/site"
    assert _project(admin)["menu.file"]["fr"] == "Fichier"
    exported = ann.get("/studio/l10n/site/export?format=i18next&locale=fr")
    assert exported.json() == {"hello": "Bonjour", "menu": {"edit": "Éditer", "file": "Fichier"}}
    assert 'filename="site.fr.json"' in exported.headers["content-disposition"]


BROKEN = [
    ("po", "de", b'msgid "hello"\nmsgstr "Servus"\n\nmsgid "menu.file"\nmsgstr "Datei"\ngarbage here\n',
     "line 6: not a keyword with a quoted string: &#39;garbage here&#39;"),
    ("po", "de", b'msgid "hello"\nmsgstr "Servus"\n\nmsgid "menu.file\nmsgstr "Datei"\n',
     "line 4: not a keyword with a quoted string"),  # an unclosed quote: Babel alone would drop the entry
    ("po", "de", b'msgid "hello"\nmsgstr "Servus"\n\nmsgid "hello"\nmsgstr "Hallo"\n',
     "PO entry &#39;hello&#39; appears twice (lines 1 and 4)"),
    ("po", "de", b'msgid "hello"\nmsgstr "Servus"\n\nmsgid "apple"\nmsgid_plural "apples"\nmsgstr[0] "Apfel"\n',
     "PO entry &#39;apple&#39;: plural entries are not supported"),
    ("i18next", "de", b'{"hello": "Servus",\n "menu": {"file": 3}}', "Value of &#39;menu.file&#39; must be a string"),
    ("i18next", "de", b'{"hello": "Servus",\n "menu": {"file": "Datei",}}', "at line 2"),
    ("json", "", b'{"locales": ["en"], "keys": {"hello": {"en": "Hi", "xx": "?"}}}',
     "keys.hello.xx is not a locale of this project"),
    ("po", "fr", b'msgid ""\nmsgstr ""\n"Language: de\\n"\n\nmsgid "hello"\nmsgstr "Servus"\n',
     "The PO file is for locale de, not fr"),
    ("po", "de", b"\x00\x01binary", "File is not a valid PO file"),
]


@pytest.mark.parametrize(("fmt", "locale", "raw", "reason"), BROKEN)
def test_a_file_that_does_not_parse_is_refused_whole(app: Any, admin: Api, fmt: str, locale: str, raw: bytes,
                                                     reason: str) -> None:
    _site(admin)
    before = admin.get("/api/l10n/project/site/export?format=json").content
    ann = logged_in(app)
    page = _upload(ann, "site", f"broken.{fmt}", raw, fmt, locale)
    assert page.status_code == 400 and reason in page.text and "Nothing was imported" in page.text
    assert 'href="/studio/l10n/site">Back to the project' in page.text
    answer = _upload(ann, "site", f"broken.{fmt}", raw, fmt, locale, accept="application/json")
    assert answer.status_code == 400 and reason.replace("&#39;", "'") in answer.json()["error"]
    assert admin.get("/api/l10n/project/site/export?format=json").content == before  # nothing stored


def test_hostile_imports_answer_4xx(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    token = page_csrf(ann.get("/studio/l10n").text)
    no_file = ann.post("/studio/l10n/site/import", data={"csrf": token, "format": "po"},
                       files={"other": ("x", b"", "text/plain")})
    assert no_file.status_code == 400 and "Choose a file" in no_file.text
    bad_format = _upload(ann, "site", "x.csv", b"a,b", "csv")
    assert bad_format.status_code == 400 and "Choose the file&#39;s format" in bad_format.text
    bad_locale = _upload(ann, "site", "x.json", b"{}", "i18next", "klingon")
    assert bad_locale.status_code == 400 and "is not a known locale" in bad_locale.text
    urlencoded = _post(ann, "/studio/l10n/site/import", [("format", "po")])
    assert urlencoded.status_code == 400 and "multipart" in urlencoded.text
    garbled = ann.post("/studio/l10n/site/import", content=b"--x\r\nnonsense",
                       headers={"content-type": "multipart/form-data; boundary=x"})
    assert garbled.status_code in (400, 403)
    assert _upload(ann, "nope", "x.po", b"", "po", "de").status_code == 404
    assert _project(admin)["hello"]["de"] == "Hallo"
