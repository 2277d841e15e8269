"""What a new user's trial of the admin pages found (and the browser test
test_admin_phone_browser.py checks on screen): the new-user form starts with
no role, refusals sit next to their field, saves show the studio's flash,
every page starts with a skip link, and the favicon is served."""

from __future__ import annotations

import re
from typing import Any

import pytest

from quire.app import Quire
from tests.admin.conftest import PASSWORD, Browser, csrf_of, logged_in, new_browser

PAGES = ["/", "/admin/keys", "/admin/users", "/system/api", "/auth/logout"]


@pytest.fixture
def ann(app: Any) -> Browser:
    return logged_in(app)


def _new_user_form(html: str) -> str:
    found = re.search(r'<form[^>]*>\s*<input type="hidden" name="csrf"[^>]*>\s*'
                      r'<input type="hidden" name="action" value="create">.*?</form>', html, re.S)
    assert found, "no new-user form"
    return found.group(0)


def _create(browser: Browser, **fields: str) -> Any:
    csrf = csrf_of(browser.get("/admin/users").text)
    return browser.post("/admin/users", data={"csrf": csrf, "action": "create", **fields})


# -- the new user's role ------------------------------------------------------------------

def test_the_new_user_form_starts_with_no_role_chosen(ann: Browser) -> None:
    form = _new_user_form(ann.get("/admin/users").text)
    select = re.search(r'<select name="role"[^>]*>(.*?)</select>', form, re.S)
    assert select, form
    assert " required" in select.group(0).split(">", 1)[0]
    options = re.findall(r"<option[^>]*>[^<]*</option>", select.group(1))
    assert options[0] == '<option value="" selected>Choose a role…</option>'
    assert [o for o in options if "selected" in o] == [options[0]], "another role is preselected"
    assert any(">admin<" in o for o in options[1:])


@pytest.mark.parametrize("role", [None, "", "  "])
def test_a_new_user_without_a_role_is_refused_next_to_the_field(ann: Browser, quire: Quire,
                                                               role: str | None) -> None:
    fields = {"user": "erin", "email": "erin@example.org", "name": "Erin E", "password": PASSWORD}
    if role is not None:
        fields["role"] = role
    response = _create(ann, **fields)
    assert response.status_code == 400
    assert quire.users.by_name("erin") is None
    form = _new_user_form(response.text)
    assert re.search(r'<select name="role" required aria-invalid="true" aria-describedby="new-role-error">', form)
    assert re.search(r'<span class="field-error" id="new-role-error" role="alert">Choose a role for the new user</span>',
                     form)
    # what was typed is kept (not the password), and no role is chosen for the user
    assert 'value="erin"' in form and 'value="erin@example.org"' in form and 'value="Erin E"' in form
    assert PASSWORD not in response.text
    assert '<option value="" selected>' in form


def test_an_unknown_role_is_refused_next_to_the_field_and_a_good_one_is_kept(ann: Browser, quire: Quire) -> None:
    response = _create(ann, user="erin", email="erin@example.org", role="nope", password=PASSWORD)
    assert response.status_code == 400 and quire.users.by_name("erin") is None
    assert 'id="new-role-error" role="alert">Role does not exist<' in response.text
    response = _create(ann, user="erin", email="not an e-mail", role="public", password=PASSWORD)
    assert response.status_code == 400
    form = _new_user_form(response.text)
    assert 'id="new-email-error" role="alert">Invalid email format<' in form
    assert "<option selected>public</option>" in form and '<option value="">' in form
    assert "new-role-error" not in form


def test_errors_of_other_actions_stay_at_the_top(ann: Browser) -> None:
    csrf = csrf_of(ann.get("/admin/users").text)
    response = ann.post("/admin/users", data={"csrf": csrf, "action": "end-session", "session": "nope"})
    assert response.status_code == 400
    assert '<p class="error" role="alert">Session not found</p>' in response.text
    assert "field-error" not in response.text.split("</form>")[0]


# -- the flash of a save ------------------------------------------------------------------

def test_a_created_user_is_announced_in_the_studio_flash(ann: Browser, quire: Quire) -> None:
    response = _create(ann, user="erin", email="erin@example.org", role="admin", password=PASSWORD)
    assert response.status_code == 200
    assert '<p class="flash" role="status" id="flash">User erin created.</p>' in response.text
    assert quire.users.by_name("erin") is not None
    assert 'class="ok"' not in response.text


def test_the_flash_look_is_in_admin_css_which_studio_pages_load_too(ann: Browser) -> None:
    css = ann.get("/admin/static/admin.css").text
    assert re.search(r"^\.flash \{[^}]*background", css, re.M)
    assert re.search(r"^\.skip:focus \{", css, re.M)
    studio = ann.get("/studio/content")
    assert studio.status_code == 200
    assert '<link rel="stylesheet" href="/admin/static/admin.css">' in studio.text


# -- the skip link --------------------------------------------------------------------------

def _first_focusable(html: str) -> str:
    body = html.split("<body", 1)[1]
    found = re.search(r"<(a|button|input(?![^>]*type=\"hidden\")|select|textarea)\b[^>]*>", body)
    assert found
    return found.group(0)


@pytest.mark.parametrize("path", PAGES + ["/studio/content"])
def test_every_page_starts_with_a_skip_link_to_main(ann: Browser, path: str) -> None:
    html = ann.get(path).text
    assert _first_focusable(html) == '<a class="skip" href="#main">'
    assert html.count('<main id="main" tabindex="-1">') == 1


def test_the_login_and_message_pages_start_with_the_skip_link(app: Any, quire: Quire) -> None:
    html = new_browser(app).get("/auth/login").text
    assert _first_focusable(html) == '<a class="skip" href="#main">'
    assert '<main id="main" tabindex="-1">' in html
    quire.auth.save_role("reader", {"permissions": {"content/*/read": True}})
    reader = logged_in(app, "rita", "reader")
    response = reader.get("/admin/users")
    assert response.status_code == 403 and "Not allowed" in response.text
    assert _first_focusable(response.text) == '<a class="skip" href="#main">'


def test_admin_js_focuses_the_flash_without_inline_script(ann: Browser) -> None:
    script = ann.get("/admin/static/admin.js").text
    assert 'getElementById("flash")' in script and ".focus()" in script
    html = ann.get("/admin/users").text
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script"


# -- the favicon ---------------------------------------------------------------------------

def test_the_favicon_is_an_svg_served_as_one(client: Any) -> None:
    response = client.get("/admin/static/favicon.svg")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("image/svg+xml")
    assert response.text.startswith("<svg") and "#2f5bd3" in response.text


def test_favicon_ico_redirects_to_the_svg(client: Any) -> None:
    response = client.get("/favicon.ico", follow_redirects=False)
    assert response.status_code in (301, 308)
    assert response.headers["location"] == "/admin/static/favicon.svg"
    assert client.get("/favicon.ico").status_code == 200


@pytest.mark.parametrize("path", ["/auth/login", "/"])
def test_pages_name_the_svg_icon(app: Any, ann: Browser, path: str) -> None:
    browser = new_browser(app) if path == "/auth/login" else ann
    html = browser.get(path).text
    assert '<link rel="icon" href="/admin/static/favicon.svg" type="image/svg+xml">' in html
