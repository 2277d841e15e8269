"""The search screens: permissions (read sees and tries, manage edits),
CSRF, the index form with the API's validation messages, rebuild progress
kept server-side, and hits whose highlights are the only markup."""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import urlencode

from quire.searchmod.screens import marked
from tests.admin.conftest import new_browser
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form

PAGE = "/studio/search"


def _posts(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True},
                                                        {"name": "body", "type": "text"}])
    create_item(admin, "posts", {"title": "Harbour <b>lights</b>", "title_de": "Hafen", "body": "ships at night"})
    create_item(admin, "posts", {"title": "Mountain", "body": "a harbour far away"})


def _index(admin: Api) -> None:
    assert admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title", "body"],
                                                           "weights": {"title": 3}}).status_code == 200


def test_permissions(app: Any, admin: Api) -> None:
    _posts(admin)
    _index(admin)
    admin.put("/api/system/roles/seeker", json={"permissions": {"searchmod/read": True}})
    admin.put("/api/system/roles/nobody", json={"permissions": {"content/posts/read": True}})
    assert new_browser(app).get(PAGE).headers["location"] == f"/auth/login?next={PAGE}"
    nobody = logged_in(app, "nina", "nobody")
    assert nobody.get(PAGE).status_code == 403 and nobody.get(PAGE + "/posts").status_code == 403
    assert 'href="/studio/search"' not in nobody.get("/").text
    seeker = logged_in(app, "sam", "seeker")
    listing = seeker.get(PAGE)
    assert listing.status_code == 200 and 'href="/studio/search/posts"' in listing.text and "New index" not in listing.text
    page = seeker.get(PAGE + "/posts", params={"q": "harbour"}).text
    assert "2 hits" in page and "Save and rebuild" not in page and "Rebuild" not in page
    assert seeker.get(PAGE + "/new").status_code == 403
    for path in (PAGE + "/new", PAGE + "/posts", PAGE + "/posts/rebuild", PAGE + "/posts/delete"):
        assert post_form(seeker, path, {"name": "x", "model": "posts", "fields": "title"}).status_code == 403
    assert admin.get("/api/searchmod/indexes/posts").status_code == 200


def test_create_with_the_apis_messages_and_csrf(app: Any, admin: Api) -> None:
    _posts(admin)
    ann = logged_in(app)
    bare = ann.post(PAGE + "/new", content=urlencode({"name": "p", "model": "posts", "fields": "title"}),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert bare.status_code == 403 and admin.get("/api/searchmod/indexes").json() == []
    bad = post_form(ann, PAGE + "/new", {"name": "p", "model": "posts", "fields": "title, nope",
                                        "weights": "title = lots", "filter": "{not json"})
    assert bad.status_code == 400
    assert "line 1: write field = number" in bad.text and "is not JSON" in bad.text
    bad = post_form(ann, PAGE + "/new", [("name", "p"), ("model", "posts"), ("fields", "title, nope"),
                                         ("weights", "body = 5000"), ("locales", "xx")])
    assert bad.status_code == 400
    for message in ("fields must be fields of posts", "weights must map indexed fields", "locales must list locales"):
        assert message in bad.text
    assert post_form(ann, PAGE + "/new", {"name": "9bad", "model": "posts", "fields": "title"}).status_code == 400
    huge = post_form(ann, PAGE + "/new", {"name": "p\x00" + "x" * 9000, "model": "m" * 9000, "fields": "\x00"})
    assert huge.status_code == 400
    assert admin.get("/api/searchmod/indexes").json() == []
    made = post_form(ann, PAGE + "/new", [("name", "posts"), ("model", "posts"), ("fields", "title, body"),
                                          ("weights", "title = 3"), ("locales", "de")], follow_redirects=False)
    assert made.status_code == 303
    index = admin.get("/api/searchmod/indexes/posts").json()
    assert index["fields"] == ["title", "body"] and index["weights"] == {"title": 3} and index["documents"] == 2
    assert "2</td>" in ann.get(PAGE).text
    again = post_form(ann, PAGE + "/new", {"name": "Posts", "model": "posts", "fields": "title"})
    assert again.status_code == 400 and "exists already" in again.text


def test_edit_rebuild_progress_and_delete(app: Any, admin: Api, quire: Any) -> None:
    _posts(admin)
    _index(admin)
    ann = logged_in(app)
    edited = post_form(ann, PAGE + "/posts", {"model": "posts", "fields": "title", "filter": '{"body": "ships at night"}'},
                       follow_redirects=False)
    assert edited.status_code == 303
    assert admin.get("/api/searchmod/indexes/posts").json()["documents"] == 1
    # a build that stopped half-way (a killed worker) leaves its progress: the page says so
    quire.store.set_meta("searchmod/progress/posts", '{"done": 500, "total": 1000, "beat": 0}')
    assert "stopped at 500 of 1,000" in ann.get(PAGE + "/posts/progress").text
    quire.store.set_meta("searchmod/progress/posts", f'{{"done": 500, "total": 1000, "beat": {2**40}}}')
    running = ann.get(PAGE + "/posts/progress").text
    assert 'hx-trigger="every 1s"' in running and 'value="500"' in running
    assert "building 50%" in ann.get(PAGE).text
    started = []
    real_rebuild = quire.search.rebuild
    quire.search.rebuild = lambda *args: started.append(args) or real_rebuild(*args)
    try:  # a build that is moving is not started again by a second click
        assert post_form(ann, PAGE + "/posts/rebuild", {}, follow_redirects=False).status_code == 303
        assert started == []
    finally:
        quire.search.rebuild = real_rebuild
    asyncio.run(quire.search.rebuild("posts", quire.auth.role_identity("admin", "x", "x")))
    assert quire.search.progress("posts") is None and "Built" in ann.get(PAGE + "/posts/progress").text
    assert post_form(ann, PAGE + "/posts/delete", {}, follow_redirects=False).status_code == 303
    assert admin.get("/api/searchmod/indexes/posts").status_code == 404
    assert ann.get(PAGE + "/posts").status_code == 404 and ann.get(PAGE + "/" + "x" * 500).status_code == 404


def test_hits_are_ranked_and_highlighted_safely(app: Any, admin: Api) -> None:
    _posts(admin)
    _index(admin)
    ann = logged_in(app)
    html = ann.get(PAGE + "/posts", params={"q": "harbour"}).text
    assert "2 hits" in html
    assert html.index("<mark>Harbour</mark> &lt;b&gt;lights&lt;/b&gt;") < html.index("a <mark>harbour</mark> far")
    assert "<b>lights" not in html
    assert ann.get(PAGE + "/posts", params={"q": "\x00" * 10 + "x" * 5000}).status_code in (200, 400)
    assert str(marked('a <mark>b</mark> &lt;script&gt; <img src=x>')) == (
        "a <mark>b</mark> &lt;script&gt; &lt;img src=x&gt;")
