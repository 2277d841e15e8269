"""The roles matrix: permissions of the page, CSRF, creating and deleting
roles, and a save that merges the boxes into the stored set (what the
matrix does not show is kept)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from tests.admin.conftest import new_browser
from tests.conftest import Api, put_model
from tests.studio.conftest import logged_in, post_form


def _role(admin: Api, name: str) -> dict[str, Any]:
    return admin.get(f"/api/system/roles/{name}").json()  # type: ignore[no-any-return]


def test_permissions_of_the_pages(app: Any, admin: Api) -> None:
    admin.put("/api/system/roles/reader", json={"permissions": {"content/*/read": True}})
    gone = new_browser(app).get("/studio/settings/roles")
    assert gone.status_code == 303 and gone.headers["location"] == "/auth/login?next=/studio/settings/roles"
    rita = logged_in(app, "rita", "reader")
    for path in ("/studio/settings/roles", "/studio/settings/roles/reader"):
        assert rita.get(path).status_code == 403
    assert post_form(rita, "/studio/settings/roles/reader", {"perm": "system/manage"}).status_code == 403
    assert post_form(rita, "/studio/settings/roles", {"name": "x"}).status_code == 403
    assert "system/manage" not in _role(admin, "reader")["permissions"]
    ann = logged_in(app)
    html = ann.get("/studio/settings/roles").text
    assert 'href="/studio/settings/roles/reader"' in html and 'href="/studio/settings/roles/public"' in html


def test_the_matrix_shows_models_and_module_permissions(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.put("/api/system/roles/editor", json={"permissions": {"content/posts/update": True}})
    ann = logged_in(app)
    html = ann.get("/studio/settings/roles/editor").text
    assert 'aria-label="posts: update"' in html and 'aria-label="all models: read"' in html
    assert 'value="content/posts/update" aria-label="posts: update"\n                   checked' in html
    for perm in ("assets/read", "assets/upload", "assets/edit", "assets/delete", "pages/read", "pages/manage",
                 "l10n/read", "l10n/manage", "inbox/manage", "inbox/submissions", "searchmod/read",
                 "searchmod/manage", "system/manage"):
        assert f'value="{perm}"' in html
    admin_html = ann.get("/studio/settings/roles/admin").text
    assert "cannot be changed" in admin_html and 'name="perm"' not in admin_html


def test_saving_merges_and_keeps_what_the_matrix_does_not_show(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "gone", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.put("/api/system/roles/editor", json={"permissions": {
        "content/gone/read": True, "content/posts/delete": True, "assets/read": True}})
    assert admin.delete("/api/system/models/gone").status_code in (200, 204)
    ann = logged_in(app)
    response = post_form(ann, "/studio/settings/roles/editor",
                         [("perm", "content/posts/read"), ("perm", "content/posts/update"), ("perm", "l10n/read")],
                         follow_redirects=False)
    assert response.status_code == 303
    assert _role(admin, "editor")["permissions"] == {
        "content/gone/read": True, "content/posts/read": True, "content/posts/update": True, "l10n/read": True}
    assert "content/gone/read" in ann.get("/studio/settings/roles/editor").text  # listed as kept


def test_csrf_and_hostile_input(app: Any, admin: Api) -> None:
    admin.put("/api/system/roles/editor", json={"permissions": {}})
    ann = logged_in(app)
    bare = ann.post("/studio/settings/roles/editor", content=urlencode({"perm": "assets/read"}),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert bare.status_code == 403 and _role(admin, "editor")["permissions"] == {}
    bad = post_form(ann, "/studio/settings/roles/editor", {"perm": "content/../read\x00" + "x" * 5000})
    assert bad.status_code == 400 and "Unknown permissions" in bad.text
    assert _role(admin, "editor")["permissions"] == {}
    assert post_form(ann, "/studio/settings/roles/admin", {"perm": "assets/read"}).status_code == 400
    assert ann.get("/studio/settings/roles/nope").status_code == 404
    assert ann.get("/studio/settings/roles/" + "x" * 3000).status_code == 404
    assert ann.get("/studio/settings/roles/a%00b").status_code in (400, 404)


def test_create_and_delete_roles(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    created = post_form(ann, "/studio/settings/roles", {"name": "writers"}, follow_redirects=False)
    assert created.status_code == 303 and created.headers["location"] == "/studio/settings/roles/writers"
    assert _role(admin, "writers")["permissions"] == {}
    again = post_form(ann, "/studio/settings/roles", {"name": "writers"})
    assert again.status_code == 400 and "exists already" in again.text
    bad = post_form(ann, "/studio/settings/roles", {"name": "no spaces"})
    assert bad.status_code == 400 and "^[a-zA-Z0-9_-]+$" in bad.text
    logged_in(app, "walt", "writers")
    used = post_form(ann, "/studio/settings/roles/writers/delete", {})
    assert used.status_code == 400 and "used by users: walt" in used.text
    assert post_form(ann, "/studio/settings/roles/public/delete", {}).status_code == 400
    post_form(ann, "/studio/settings/roles", {"name": "temp"})
    gone = post_form(ann, "/studio/settings/roles/temp/delete", {}, follow_redirects=False)
    assert gone.status_code == 303 and admin.get("/api/system/roles/temp").status_code == 404
