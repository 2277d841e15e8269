"""Hostile input on the Studio II screens answers a 4xx (or the safe
default), never a 500: an Origin header that is no address, a `back`
field that does not parse, page numbers of thousands of digits, weights
that are not finite numbers."""

from __future__ import annotations

from typing import Any

from quire.searchmod.screens import parse
from quire.ui.screens import Form
from tests.assets.helpers import solid, upload_one
from tests.conftest import Api, put_model
from tests.studio.conftest import logged_in, page_csrf, post_form


def test_an_origin_that_is_no_address_is_refused_not_a_crash(app: Any) -> None:
    ann = logged_in(app)
    csrf = page_csrf(ann.get("/studio/content").text)
    for path in ("/studio/settings/roles", "/studio/assets/folders", "/studio/l10n"):
        response = ann.post(path, data={"csrf": csrf, "name": "x"}, headers={"origin": "http://["})
        assert response.status_code == 403, (path, response.status_code)
    response = ann.post("/auth/login", data={"user": "ann", "password": "x"}, headers={"origin": "http://["})
    assert response.status_code < 500


def test_a_back_field_that_does_not_parse_returns_to_the_screen(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    response = post_form(ann, "/studio/assets/view", {"view": "list", "back": "//[x"}, token_from="/studio/assets",
                         follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/studio/assets"
    admin.put("/api/l10n/project/site", json={"locales": ["en", "de"], "keys": {"hi": {"en": "Hi"}}})
    response = post_form(ann, "/studio/l10n/site/keys/rename", {"key": "hi", "new": "hello", "back": "//[x"},
                         token_from="/studio/l10n/site", follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/studio/l10n/site"
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    response = post_form(ann, "/studio/content/posts/batch", {"action": "publish", "back": "//[x"},
                         follow_redirects=False)
    assert response.status_code < 500


def test_numbers_of_thousands_of_digits_are_a_4xx(app: Any, admin: Api) -> None:
    form = admin.post("/api/inbox/forms", json={"data": {"name": "Contact"}}).json()
    ann = logged_in(app)
    response = ann.get(f"/studio/forms/{form['_id']}/submissions", params={"page": "9" * 5000})
    assert response.status_code == 400
    response = ann.get(f"/studio/forms/{form['_id']}/submissions/{'a' * 24}/files/cv/{'9' * 5000}")
    assert 400 <= response.status_code < 500


def test_weights_that_are_not_finite_numbers_are_a_message_on_the_form() -> None:
    for bad in ("nan", "inf", "-inf", "1e999", "three"):
        form, _ = parse(Form([("model", "posts"), ("fields", "title"), ("weights", f"title = {bad}")]), "posts")
        assert form.errors["weights"] == "line 1: write field = number, like title = 3", bad
    form, body = parse(Form([("model", "posts"), ("fields", "title"), ("weights", "title = 3\nbody = 0.5")]), "posts")
    assert not form.errors and body["weights"] == {"title": 3, "body": 0.5}


def test_who_may_only_read_pages_or_assets_is_refused_every_write(app: Any, admin: Api) -> None:
    """Every POST of the pages, menus and assets screens answers 403 to a
    role that may only read them, whatever it posts, and stores nothing."""
    page = admin.post("/api/pages/page", json={"data": {"title": "About"}}).json()
    admin.post("/api/pages/menu", json={"data": {"name": "main", "links": [{"url": "/a", "title": "A"}]}})
    asset = upload_one(admin, "a.png", solid(8, 8), "image/png", title="A")
    admin.put("/api/system/roles/viewer", json={"permissions": {"pages/read": True, "assets/read": True}})
    viewer = logged_in(app, "vera", "viewer")
    writes = {
        "/studio/pages/new": {"title": "Sneaky", "type": "layout"},
        f"/studio/pages/{page['_id']}": {"title": "Changed", "type": "layout"},
        f"/studio/pages/{page['_id']}/delete": {},
        "/studio/pages/move": {"id": page["_id"], "parent": "", "position": "0"},
        "/studio/pages/settings": {"site_title": "Changed"},
        "/studio/menus": {"name": "footer"},
        "/studio/menus/main": {"name": "main"},
        "/studio/menus/main/delete": {},
        "/studio/assets/move": {"ids": asset["_id"], "folder": ""},
        "/studio/assets/folders": {"name": "Sneaky"},
        f"/studio/assets/{asset['_id']}": {"title": "Changed"},
        f"/studio/assets/{asset['_id']}/delete": {},
    }
    for path, fields in writes.items():
        response = post_form(viewer, path, fields, token_from="/studio/pages")
        assert response.status_code == 403, (path, response.status_code)
    assert admin.get(f"/api/pages/page/{page['_id']}").json()["title"] == "About"
    assert [p["title"] for p in admin.get("/api/pages/pages").json()] == ["About"]
    assert [m["name"] for m in admin.get("/api/pages/menus").json()] == ["main"]
    assert admin.get(f"/api/assets/{asset['_id']}").json()["title"] == "A"
    assert admin.get("/api/assets/folders").json() == []
