"""Hostile input on the Studio II screens answers a 4xx (or the safe
default), never a 500: an Origin header that is no address, a `back`
field that does not parse, page numbers of thousands of digits, weights
that are not finite numbers."""

from __future__ import annotations

from typing import Any

from quire.studio.settings_search import parse
from quire.studio.web import Form
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
