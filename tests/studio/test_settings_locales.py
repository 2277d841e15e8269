"""The locales page: permissions, CSRF, adding with the API's checks,
removing after a warning that counts the items holding values, and a
rename run as a job whose progress the page shows."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from tests.admin.conftest import new_browser
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form

PAGE = "/studio/settings/locales"


def _codes(admin: Api) -> list[str]:
    return [loc["i18n"] for loc in admin.get("/api/system/locales").json()]


def test_permissions(app: Any, admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    admin.put("/api/system/roles/reader", json={"permissions": {"content/*/read": True}})
    assert new_browser(app).get(PAGE).headers["location"] == f"/auth/login?next={PAGE}"
    rita = logged_in(app, "rita", "reader")
    for path in (PAGE, PAGE + "/job", PAGE + "/de/remove"):
        assert rita.get(path).status_code == 403
    for path, data in ((PAGE, {"code": "fr"}), (PAGE + "/rename", {"from": "de", "to": "de-DE"}),
                       (PAGE + "/de/remove", {})):
        assert post_form(rita, path, data).status_code == 403
    assert _codes(admin) == ["default", "de"]
    html = logged_in(app).get(PAGE).text
    assert "Deutsch" in html and f'href="{PAGE}/de/remove"' in html


def test_add_with_the_apis_checks_and_csrf(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    bare = ann.post(PAGE, content=urlencode({"code": "fr"}), headers={"content-type": "application/x-www-form-urlencoded"})
    assert bare.status_code == 403 and _codes(admin) == ["default"]
    added = post_form(ann, PAGE, {"code": "de", "name": "Deutsch"}, follow_redirects=False)
    assert added.status_code == 303 and _codes(admin) == ["default", "de"]
    for code, message in (("de", "Locale de exists already"), ("", "needs a code"),
                          ("not a code", "is not a locale code"), ("x" * 5000, "at most 40"),
                          ("de\x00", "is not a locale code")):
        refused = post_form(ann, PAGE, {"code": code, "name": "N"})
        assert refused.status_code == 400 and message in refused.text, code
    assert _codes(admin) == ["default", "de"]


def test_remove_warns_with_counts(app: Any, admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Fr"}])
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True}])
    for n in range(3):
        create_item(admin, "posts", {"title": f"P{n}", **({"title_de": f"D{n}"} if n else {})})
    admin.post("/api/pages/page", json={"data": {"title": "About", "title_de": "Über uns"}})
    ann = logged_in(app)
    warning = ann.get(PAGE + "/de/remove").text
    assert "2 items hold" in warning and "1 page" in warning and "<code>posts</code>: 2" in warning
    assert "No item or page holds" in ann.get(PAGE + "/fr/remove").text
    assert ann.get(PAGE + "/xx/remove").status_code == 404
    done = post_form(ann, PAGE + "/de/remove", {}, follow_redirects=False)
    assert done.status_code == 303 and _codes(admin) == ["default", "fr"]


def test_rename_runs_as_a_job_with_progress(app: Any, admin: Api, quire: Any) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True}])
    post = create_item(admin, "posts", {"title": "Harbour", "title_de": "Hafen"})
    ann = logged_in(app)
    refused = post_form(ann, PAGE + "/rename", {"from": "de", "to": "bad code"})
    assert refused.status_code == 400 and "not a locale code" in refused.text
    for old, new in (("x" * 5000, "de-DE"), ("de\x00", "de-DE"), ("de", "y" * 5000), ("de", "")):
        assert post_form(ann, PAGE + "/rename", {"from": old, "to": new}).status_code == 400
    assert ann.get(PAGE + "/" + "z" * 3000 + "/remove").status_code == 404
    started = post_form(ann, PAGE + "/rename", {"from": "de", "to": "de-DE"}, follow_redirects=False)
    assert started.status_code == 303
    asyncio.run(quire.locales.renamer.run())  # what the server's background task does (done already, or now)
    status = ann.get(PAGE + "/job").text
    assert "Renamed <code>de</code> to <code>de-DE</code>" in status and "hx-trigger" not in status
    assert _codes(admin) == ["default", "de-DE"]
    assert admin.get(f"/api/content/item/posts/{post['_id']}", params={"locale": "de-DE"}).json()["title"] == "Hafen"
    post_form(ann, PAGE + "/job/dismiss", {})
    assert 'id="rename-job"' not in ann.get(PAGE).text


def test_a_stopped_rename_shows_a_resume_button(app: Any, admin: Api, quire: Any) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    asyncio.run(quire.locales.renamer.start("de", "de-DE"))  # recorded, never run: a server killed at once
    ann = logged_in(app)
    waiting = ann.get(PAGE + "/job").text
    assert 'hx-trigger="every 1s"' in waiting and "Resume" not in waiting  # just started: polled
    quire.store.collection("system/config").update("locales.rename", {"beat": 0})  # 30 s later, nothing moved
    status = ann.get(PAGE + "/job").text
    assert "0 of" in status and "Resume the rename" in status
    assert post_form(ann, PAGE + "/job/resume", {}, follow_redirects=False).status_code == 303
    asyncio.run(quire.locales.renamer.run())
    assert _codes(admin) == ["default", "de-DE"]
