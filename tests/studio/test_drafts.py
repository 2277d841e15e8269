"""The editor's publishing panel: a published item's changes are saved as
its draft, published, discarded; unpublishing; the schedule; preview links
and the frame beside the editor (its CSP)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, page_csrf, post_form
from tests.studio.editorform import EditorForm, post

FIELDS = [{"name": "title", "type": "text", "required": True}, {"name": "slug", "type": "text"}]
PREVIEW = [{"name": "Site", "uri": "https://site.example/blog/{slug}?preview={token}"}]


def _stored(admin: Api, item_id: str) -> dict[str, Any]:
    return admin.get(f"/api/content/item/posts/{item_id}").json()  # type: ignore[no-any-return]


def test_a_published_items_changes_wait_as_a_draft_until_published(app: Any, admin: Api) -> None:
    put_model(admin, "posts", fields=FIELDS)
    item = create_item(admin, "posts", {"title": "Live", "slug": "live"})
    ann = logged_in(app)
    page = ann.get(f"/studio/content/posts/item/{item['_id']}").text
    assert "Save draft" in page and "Save and publish" in page and "data-draft-note" not in page
    saved = post(ann, EditorForm(page).set("f.title", "Changed"), intent="draft")
    assert saved.status_code == 303
    assert "Draft saved" in ann.get(saved.headers["location"]).text
    assert _stored(admin, item["_id"])["title"] == "Live"
    page = ann.get(f"/studio/content/posts/item/{item['_id']}").text
    form = EditorForm(page)
    assert form.get("f.title") == "Changed" and "data-draft-note" in page and "Publish draft" in page
    assert post(ann, form, intent="publish").status_code == 303
    assert _stored(admin, item["_id"])["title"] == "Changed"
    page = ann.get(f"/studio/content/posts/item/{item['_id']}").text
    assert "data-draft-note" not in page and "Discard draft" not in page


def test_discard_and_unpublish(app: Any, admin: Api) -> None:
    put_model(admin, "posts", fields=FIELDS)
    item = create_item(admin, "posts", {"title": "Live"})
    ann = logged_in(app)
    editor = f"/studio/content/posts/item/{item['_id']}"
    post(ann, EditorForm(ann.get(editor).text).set("f.title", "Unwanted"))
    assert "Discard draft" in ann.get(editor).text
    done = post_form(ann, "/studio/content/posts/discard", {"_id": item["_id"]}, token_from=editor)
    assert done.status_code == 303
    assert EditorForm(ann.get(editor).text).get("f.title") == "Live"
    off = post_form(ann, "/studio/content/posts/unpublish", {"_id": item["_id"]}, token_from=editor)
    assert off.status_code == 303
    assert admin.get(f"/api/content/item/posts/{item['_id']}").status_code == 404
    page = ann.get(editor).text
    assert 'name="_state"' in page and "Save draft" not in page  # unpublished: the item is its own draft
    # no csrf, no permission: refused
    assert ann.post("/studio/content/posts/unpublish", data={"_id": item["_id"]}).status_code in (400, 403)


def test_the_schedule_is_typed_in_utc_and_checked(app: Any, admin: Api) -> None:
    put_model(admin, "posts", fields=FIELDS)
    item = create_item(admin, "posts", {"title": "Soon", "_state": 0})
    ann = logged_in(app)
    editor = f"/studio/content/posts/item/{item['_id']}"
    form = EditorForm(ann.get(editor).text).set("_publish_at", "2031-05-01T09:30")
    assert post(ann, form).status_code == 303
    when = int(dt.datetime(2031, 5, 1, 9, 30, tzinfo=dt.UTC).timestamp())
    assert admin.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()["_publish_at"] == when
    assert 'value="2031-05-01T09:30"' in ann.get(editor).text
    for bad in ("tomorrow", "2031-13-01T09:30", "2031-05-01T25:00"):
        answer = post(ann, EditorForm(ann.get(editor).text).set("_publish_at", bad))
        assert answer.status_code == 400 and "like 2030-01-31T09:30" in answer.text
    cleared = post(ann, EditorForm(ann.get(editor).text).set("_publish_at", ""))
    assert cleared.status_code == 303
    assert "_publish_at" not in admin.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()


def test_preview_links_and_the_frame_beside_the_editor(app: Any, admin: Api) -> None:
    put_model(admin, "posts", fields=FIELDS, preview=PREVIEW)
    item = create_item(admin, "posts", {"title": "Live", "slug": "hello"})
    ann = logged_in(app)
    editor = f"/studio/content/posts/item/{item['_id']}"
    answer = ann.get(editor)
    assert 'href="https://site.example/blog/hello?preview=' in answer.text and "data-preview-beside" in answer.text
    assert "<iframe" not in answer.text
    assert answer.headers["content-security-policy"].endswith("; frame-src https://site.example")
    beside = ann.get(editor, params={"preview": 1})
    assert '<iframe src="https://site.example/blog/hello?preview=' in beside.text
    token = beside.text.split("?preview=")[1].split('"')[0]
    seen = Api(admin.client, None).get(f"/api/content/item/posts/{item['_id']}", params={"preview": token})
    assert seen.status_code == 200 and seen.json()["title"] == "Live"
    # a model without preview addresses frames nothing
    put_model(admin, "plain", fields=FIELDS)
    other = create_item(admin, "plain", {"title": "x"})
    page = ann.get(f"/studio/content/plain/item/{other['_id']}")
    assert "frame-src" not in page.headers["content-security-policy"] and "data-preview" not in page.text
    assert page_csrf(page.text)


def test_the_list_shows_when_an_item_is_scheduled(app: Any, admin: Api) -> None:
    put_model(admin, "posts", fields=FIELDS)
    create_item(admin, "posts", {"title": "Soon", "_state": 0, "_publish_at": 1_900_000_000})
    ann = logged_in(app)
    page = ann.get("/studio/content/posts").text
    assert 'publishes <time data-unix="1900000000">' in page
