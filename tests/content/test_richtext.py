"""Rich text (`wysiwyg`) is cleaned by an allow-list on every save: no
script, no event handler attribute, no javascript: link, through the API,
inside sets and on import alike; a field may set its own list."""

from __future__ import annotations

from typing import Any

from quire.app import Quire
from tests.conftest import Api, create_item, put_model

HOSTILE = ('<p onclick="x()">Hello <b>world</b><script>alert(1)</script>'
           '<img src="/a.png" onerror="alert(2)" alt="a"><a href="javascript:alert(3)">x</a>'
           '<a href="https://example.com/" target="_blank">ok</a><style>p{}</style><iframe src="//e"></iframe></p>')


def _model(admin: Api, **opts: Any) -> None:
    put_model(admin, "posts", fields=[
        {"name": "title", "type": "text"},
        {"name": "body", "type": "wysiwyg", **({"opts": opts} if opts else {})},
        {"name": "blocks", "type": "set", "multiple": True, "opts": {"fields": [{"name": "html", "type": "wysiwyg"}]}},
    ])


def test_script_and_event_handlers_are_not_stored(admin: Api) -> None:
    _model(admin)
    item = create_item(admin, "posts", {"title": "<script>kept as text</script>", "body": HOSTILE})
    stored = admin.get(f"/api/content/item/posts/{item['_id']}").json()
    body = stored["body"]
    for bad in ("<script", "alert(1)", "onerror", "onclick", "javascript:", "<style", "<iframe"):
        assert bad not in body
    assert "<b>world</b>" in body and 'alt="a"' in body and 'src="/a.png"' in body
    assert 'href="https://example.com/"' in body and 'rel="noopener noreferrer"' in body
    assert item["body"] == body  # the save answers what is stored
    assert stored["title"] == "<script>kept as text</script>"  # text is not HTML: left as sent


def test_rich_text_inside_a_set_is_cleaned_too(admin: Api) -> None:
    _model(admin)
    item = create_item(admin, "posts", {"blocks": [{"html": '<p>a<img src=x onerror="alert(1)"></p>'}]})
    assert item["blocks"] == [{"html": '<p>a<img src="x"></p>'}]


def test_a_field_sets_its_own_allow_list(admin: Api) -> None:
    _model(admin, html={"tags": ["p", "a", "em"], "attributes": {"a": ["href"]}})
    item = create_item(admin, "posts", {"body": '<p class="x"><em>e</em><b>b</b><a href="/x" target="_blank">l</a></p>'})
    assert item["body"] == '<p><em>e</em>b<a href="/x" rel="noopener noreferrer">l</a></p>'


def test_an_allow_list_that_would_let_scripts_in_is_refused(admin: Api) -> None:
    for html, word in (({"tags": ["p", "script"]}, "script"), ({"attributes": {"img": ["onerror"]}}, "onerror"),
                       ({"attributes": {"p": ["style"]}}, "style"), ({"tag": ["p"]}, "unknown keys"),
                       ("p", "must be an object")):
        response = admin.put("/api/system/models/posts", json={"name": "posts", "fields": [
            {"name": "body", "type": "wysiwyg", "opts": {"html": html}}]})
        assert response.status_code == 400, html
        assert word in response.json()["error"]
    assert admin.get("/api/system/models/posts").status_code == 404  # nothing stored


def test_an_import_cleans_rich_text_like_an_api_write(quire: Quire, admin: Api) -> None:
    import asyncio

    from quire.bundle import import_bundle

    bundle = {"quire": 1, "models": [{"name": "posts", "type": "collection", "fields": [
        {"name": "body", "type": "wysiwyg"}]}],
        "items": {"posts": [{"_id": "6b0000000000000000000001", "body": '<p>x<script>bad()</script></p>'}]}}
    asyncio.run(import_bundle(quire, bundle))
    assert admin.get("/api/content/item/posts/6b0000000000000000000001").json()["body"] == "<p>x</p>"
