"""Hostile input on the Studio III screens answers a 4xx or the safe
default, never a 500 and never a write: the visual filter's conditions,
saved views, bulk edit, presence, the live preview and Your settings."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form

NASTY = ["\x00", "'; DROP TABLE x; --", "{\"$where\": \"1\"}", "\u202e", "a" * 100_000, "../../etc/passwd",
         "<script>alert(1)</script>", "NaN", "1e309", "-0", "[" * 5000]


def _site(admin: Api) -> dict[str, Any]:
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"}, {"name": "n", "type": "number"}, {"name": "when", "type": "date"},
        {"name": "tags", "type": "tags"}, {"name": "kind", "type": "select", "opts": {"options": ["a", "b"]}}])
    return create_item(admin, "posts", {"title": "Kept", "n": 1, "tags": ["x"]})


def test_conditions_of_any_shape_are_explained_or_ignored(app: Any, admin: Api) -> None:
    _site(admin)
    ann = logged_in(app)
    for value in NASTY:
        for field, op in (("n", "gt"), ("when", "on"), ("title", "contains"), ("kind", "is"), ("tags", "has"),
                          ("_created", "before"), ("title", "links"), (value, value)):
            answer = ann.get("/studio/content/posts", params=[("w", field[:3000]), ("o", op[:3000]), ("v", value[:3000])])
            assert answer.status_code < 500, (field, op, value[:20], answer.status_code)
            assert "<script>alert(1)</script>" not in answer.text
    many = [pair for n in range(500) for pair in (("w", "n"), ("o", "gt"), ("v", str(n)))]
    assert ann.get("/studio/content/posts", params=many).status_code == 200
    assert ann.get("/studio/content/posts", params=[("w", "n"), ("w", "n"), ("o", "gt")]).status_code == 200


def test_views_bulk_presence_live_and_settings_refuse_nonsense(app: Any, admin: Api) -> None:
    item = _site(admin)
    ann = logged_in(app)
    before = admin.get("/api/content/items/posts").json()
    for value in NASTY:
        for path, fields in (
                ("/studio/content/posts/views", {"name": value, "query": value, "shared": value}),
                ("/studio/content/posts/bulk", {"scope": value, "list": value, "ids": value}),
                ("/studio/content/posts/bulk/check", {"scope": "all", "list": value, "field": value, "op": "set",
                                                      "value": value}),
                ("/studio/content/posts/bulk/check", {"scope": "selected", "ids": item["_id"], "field": "n",
                                                      "op": value, "value": value}),
                ("/studio/content/posts/bulk/run", {"scope": "selected", "ids": item["_id"], "field": "kind",
                                                    "op": "set", "value": value, "token": value}),
                ("/studio/presence", {"resource": value, "action": "join"}),
                ("/studio/presence", {"resource": f"content/posts/{item['_id']}", "action": value}),
                (f"/studio/content/posts/item/{item['_id']}/live", {"f.n": value, "f.title": value}),
                ("/studio/me", {"timezone": value}),
                (f"/studio/content/posts/bulk/{value[:30].strip(chr(0))}/undo", {})):
            answer = post_form(ann, path, fields)
            assert answer.status_code < 500, (path, value[:20], answer.status_code)
    after = admin.get("/api/content/items/posts").json()
    assert [(i["title"], i["n"]) for i in after] == [(i["title"], i["n"]) for i in before]  # nothing written
    reader_views = ann.get("/studio/content/posts").text
    assert "<script>alert(1)</script>" not in reader_views


def test_a_progress_or_undo_of_someone_else_is_not_theirs(app: Any, admin: Api) -> None:
    item = _site(admin)
    admin.put("/api/system/roles/editor", json={"permissions": {
        "content/posts/read": True, "content/posts/update": True}})
    ann, eve = logged_in(app), logged_in(app, "eve", "editor")
    done = post_form(ann, "/studio/content/posts/bulk/run", {"scope": "selected", "ids": item["_id"], "field": "n",
                                                              "op": "set", "value": "5", "token": "secret-token-1"})
    assert "Changed 1 item." in done.text
    assert eve.get("/studio/content/posts/bulk/progress/secret-token-1").json() == {"done": 0, "total": 0}
    assert ann.get("/studio/content/posts/bulk/progress/secret-token-1").json() == {"done": 1, "total": 1}


def test_the_shared_blocks_screens_refuse_nonsense_and_store_nothing(app: Any, admin: Api) -> None:
    put_model(admin, "landing", type="collection", fields=[{"name": "body", "type": "layout"}])
    admin.put("/api/system/components/quote", json={"fields": [{"name": "text", "type": "text"}]})
    ann = logged_in(app)
    for value in NASTY:
        for path, fields in (("/studio/blocks/new", {"name": value, "label": value, "group": value, "fields": value}),
                             ("/studio/blocks/new", {"name": "card", "fields": f'[{{"name": "x", "type": "{value[:200]}"}}]'}),
                             ("/studio/blocks/quote", {"label": value, "fields": value}),
                             (f"/studio/blocks/{value[:30].strip(chr(0))}/delete", {})):
            answer = post_form(ann, path, fields)
            assert answer.status_code < 500, (path, value[:20], answer.status_code)
            assert "<script>alert(1)</script>" not in answer.text
        shown = ann.get("/studio/blocks/" + value[:30].strip(chr(0)))
        assert shown.status_code < 500
    assert [c["name"] for c in admin.get("/api/system/components").json()] == ["quote"]
    assert admin.get("/api/system/components/quote").json()["fields"][0]["name"] == "text"  # unchanged
