"""The bar's search box (`/studio/find`) and the sidebar: what a user may
read is found and linked, nothing else; the sidebar shows the sections a
role may use and marks the current one."""

from __future__ import annotations

import re
from typing import Any

from tests.assets.helpers import solid, upload_one
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in


def _sidebar(html: str) -> str:
    return html[html.index('<nav class="side"'):html.index("</nav>")]


def _blog(admin: Api) -> dict[str, Any]:
    put_model(admin, "posts", type="collection", label="Blog posts", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "secret", type="collection", fields=[{"name": "title", "type": "text"}])
    hello = create_item(admin, "posts", {"title": "Hello harbour"})
    create_item(admin, "posts", {"title": "Draft about the harbour", "_state": 0})
    create_item(admin, "secret", {"title": "Harbour plans"})
    return hello


def test_items_models_pages_and_assets_are_found_and_linked(app: Any, admin: Api) -> None:
    hello = _blog(admin)
    page = admin.post("/api/pages/page", json={"data": {"title": "Harbour tours", "type": "layout"}}).json()
    asset = upload_one(admin, "harbour.png", solid(8, 8), "image/png", title="Harbour at dawn")
    ann = logged_in(app)
    html = ann.get("/studio/find", params={"q": "  harbour "}).text
    assert f'href="/studio/content/posts/item/{hello["_id"]}"' in html
    assert "Draft about the harbour" in html and "· draft" in html  # an admin may update: drafts too
    assert "Harbour plans" in html
    assert f'href="/studio/pages/{page["_id"]}"' in html
    assert f'href="/studio/assets/{asset["_id"]}"' in html and "Harbour at dawn" in html
    jump = ann.get("/studio/find", params={"q": "blog"}, follow_redirects=False)  # one thing found: go there
    assert jump.status_code == 303 and jump.headers["location"] == "/studio/content/posts"
    jump = ann.get("/studio/find", params={"q": "tours"}, follow_redirects=False)
    assert jump.status_code == 303 and jump.headers["location"] == f"/studio/pages/{page['_id']}"
    assert "Nothing found for “zzzz”" in ann.get("/studio/find", params={"q": "zzzz"}).text


def test_only_what_the_role_may_read_is_searched(app: Any, admin: Api) -> None:
    hello = _blog(admin)
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    rita = logged_in(app, "rita", "reader")
    # the one item she may read (not the draft, not the secret model, no page, no asset): the box goes there
    found = rita.get("/studio/find", params={"q": "harbour"}, follow_redirects=False)
    assert found.status_code == 303 and found.headers["location"] == f"/studio/content/posts/item/{hello['_id']}"


def test_words_that_are_regex_syntax_are_plain_words(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "C++ (and more)"})
    ann = logged_in(app)
    create_item(admin, "posts", {"title": "C++ (and less)"})
    response = ann.get("/studio/find", params={"q": "c++ (and"})
    assert response.status_code == 200 and "C++ (and more)" in response.text and "C++ (and less)" in response.text
    assert ann.get("/studio/find", params={"q": "x" * 5000}).status_code == 200


def test_the_sidebar_shows_what_a_role_may_use_and_marks_the_current_section(app: Any, admin: Api) -> None:
    _blog(admin)
    ann = _sidebar(logged_in(app).get("/studio/content/posts").text)
    for href in ("/", "/studio/content", "/studio/models", "/admin/keys", "/admin/users", "/system/api"):
        assert f'href="{href}"' in ann
    assert re.search(r'href="/studio/content" aria-current="page"', ann)
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    rita = _sidebar(logged_in(app, "rita", "reader").get("/").text)
    assert 'href="/studio/content"' in rita and 'href="/" aria-current="page"' in rita
    for href in ("/studio/models", "/admin/keys", "/admin/users", "/system/api"):
        assert f'href="{href}"' not in rita
    found = _sidebar(logged_in(app, "ann", create=False).get("/studio/find", params={"q": "zzz"}).text)
    assert "aria-current" not in found  # no section is a start of /studio/find (not even the dashboard's /)


def test_the_sidebar_is_worked_out_for_whole_pages_only(app: Any, admin: Api, monkeypatch: Any) -> None:
    """An htmx fragment (a search index's progress bar, polled every second)
    has no sidebar, so its badges are not counted for it."""
    import quire.ui.web as web

    _blog(admin)
    admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title"]})
    ann = logged_in(app)
    calls: list[str] = []
    real = web.sidebar
    monkeypatch.setattr(web, "sidebar", lambda quire, login, path: calls.append(path) or real(quire, login, path))
    assert ann.get("/studio/search/posts/progress", headers={"hx-request": "true"}).status_code == 200
    assert calls == []
    assert ann.get("/studio/search/posts").status_code == 200
    assert calls == ["/studio/search/posts"]


def test_nul_and_lone_surrogates_in_the_search_box_are_no_crash(app: Any, admin: Api) -> None:
    _blog(admin)
    admin.post("/api/pages/page", json={"data": {"title": "Harbour tours", "type": "layout"}})
    ann = logged_in(app)
    for raw in ("a%00b", "%ED%A0%80", "%00", "harbour%00"):
        response = ann.get(f"/studio/find?q={raw}")
        assert response.status_code < 500, (raw, response.status_code)
