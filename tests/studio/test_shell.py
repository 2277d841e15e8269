"""The studio's shell: the front page of content, the navigation that
reaches it, its scripts and styles, login and permissions."""

from __future__ import annotations

from typing import Any

from tests.admin.conftest import new_browser
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form


def _roles(admin: Api) -> None:
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})


def test_front_page_lists_readable_models_with_counts(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "secret", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "home", type="singleton", fields=[{"name": "title", "type": "text"}])
    for n in range(3):
        create_item(admin, "posts", {"title": f"p{n}"})
    create_item(admin, "posts", {"title": "draft", "_state": 0})
    ann = logged_in(app)
    page = ann.get("/studio/content")
    assert page.status_code == 200
    assert 'href="/studio/content/posts"' in page.text and ">4<" in page.text  # drafts counted
    assert 'href="/studio/models/new"' in page.text and "not saved yet" in page.text
    _roles(admin)
    bob = logged_in(app, "bob", "reader")
    page = bob.get("/studio/content")
    assert 'href="/studio/content/posts"' in page.text and ">3<" in page.text  # published only
    assert "secret" not in page.text and "/studio/models" not in page.text


def test_navigation_reaches_the_studio_from_the_dashboard(app: Any) -> None:
    ann = logged_in(app)
    home = ann.get("/")
    assert 'href="/studio/content"' in home.text and 'href="/studio/models"' in home.text


def test_logged_out_goes_to_login_and_comes_back(app: Any) -> None:
    response = new_browser(app).get("/studio/content")
    assert response.status_code == 303
    assert response.headers["location"] == "/auth/login?next=/studio/content"


def test_scripts_and_vendor_files_are_served(app: Any) -> None:
    ann = logged_in(app)
    page = ann.get("/studio/content").text
    for src in ("/admin/static/vendor/htmx.min.js", "/studio/static/studio.js", "/studio/static/studio.css"):
        assert src in page
        assert ann.get(src).status_code == 200
    assert ann.get("/admin/static/vendor/htmx.LICENSE").status_code == 200
    for bad in ("/admin/static/vendor/../web.py", "/admin/static/../routes.py", "/studio/static/nothing.js"):
        assert ann.get(bad).status_code == 404
    assert "<script>" not in page and " on" + "click=" not in page  # CSP: no inline scripts


def test_a_write_without_the_token_is_refused(app: Any) -> None:
    ann = logged_in(app)
    assert post_form(ann, "/studio/content/posts/columns", {"columns": "title"},
                     headers={"origin": "https://evil.example"}).status_code in (403, 404)
