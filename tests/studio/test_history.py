"""An item's history in the studio over HTTP: reached from the editor,
listing who changed what, one revision side by side (and against the item
now), restoring a version and a deleted item, and who may see it."""

from __future__ import annotations

import html
import re
from typing import Any

from quire.app import Quire
from tests.conftest import Api, create_item, put_model, role_key
from tests.studio.conftest import logged_in, post_form

FIELDS = [{"name": "title", "type": "text", "label": "Title"}, {"name": "body", "type": "longtext", "label": "Body"}]


def _post(admin: Api) -> dict[str, Any]:
    put_model(admin, "posts", type="collection", fields=FIELDS)
    item = create_item(admin, "posts", {"title": "First title", "body": "Old body"})
    create_item(admin, "posts", {"_id": item["_id"], "title": "Second title"})
    return item


def _text(page: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", page))


def test_the_editor_links_the_history_which_lists_who_changed_what(app: Any, admin: Api) -> None:
    item = _post(admin)
    ann = logged_in(app)
    editor = ann.get(f"/studio/content/posts/item/{item['_id']}").text
    link = f"/studio/content/posts/item/{item['_id']}/history"
    assert f'href="{link}"' in editor
    page = ann.get(link)
    assert page.status_code == 200
    text = " ".join(_text(page.text).split())
    assert "2 revisions kept" in text
    assert "Revision 2" in text and "Revision 1" in text
    assert "API key test admin" in text and "Changed" in text and "Created" in text
    row = re.search(r"Revision 2</a></th>(.*?)</tr>", page.text, re.S)
    assert row and "Title" in row.group(1) and "Body" not in row.group(1)


def test_a_revision_side_by_side_and_against_the_item_now(app: Any, admin: Api) -> None:
    item = _post(admin)
    ann = logged_in(app)
    base = f"/studio/content/posts/item/{item['_id']}/history"
    page = ann.get(f"{base}/2").text
    assert "<del>First</del> title" in page and "<ins>Second</ins> title" in page  # the words that changed
    assert "Body" not in _text(page).split("Restoring")[0].split("Field")[-1]  # body did not change in revision 2
    against = ann.get(f"{base}/1?against=current").text
    assert "<del>First</del> title" in against and "<ins>Second</ins> title" in against
    assert "Restore this version" in against


def test_restoring_a_version_from_the_studio(app: Any, admin: Api, quire: Quire) -> None:
    item = _post(admin)
    ann = logged_in(app)
    base = f"/studio/content/posts/item/{item['_id']}/history"
    done = post_form(ann, f"{base}/1/restore", {}, token_from=base, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == f"/studio/content/posts/item/{item['_id']}"
    stored = admin.get(f"/api/content/item/posts/{item['_id']}").json()
    assert stored["title"] == "First title" and stored["_rev"] == 3
    newest = admin.get(f"/api/revisions/content/posts/{item['_id']}").json()["data"][0]
    assert newest["action"] == "restore" and newest["who"]["kind"] == "user" and newest["who"]["name"] == "ann"
    editor = ann.get(done.headers["location"]).text
    assert "Restored the version of revision 1." in editor


def test_a_deleted_item_is_restored_from_its_history(app: Any, admin: Api) -> None:
    item = _post(admin)
    assert admin.delete(f"/api/content/item/posts/{item['_id']}").status_code == 200
    ann = logged_in(app)
    base = f"/studio/content/posts/item/{item['_id']}/history"
    listing = ann.get(base)
    assert listing.status_code == 200 and "This was deleted" in listing.text
    deletion = ann.get(f"{base}/3").text
    assert "Restore this version" not in deletion and "deletion" in deletion
    done = post_form(ann, f"{base}/2/restore", {}, token_from=base, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert admin.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "Second title"


def test_the_history_needs_the_update_permission(app: Any, admin: Api) -> None:
    item = _post(admin)
    role_key(admin, "reader", {"content/posts/read": True})
    reader = logged_in(app, "rita", "reader")
    editor_page = reader.get(f"/studio/content/posts/item/{item['_id']}").text
    assert "/history" not in editor_page
    assert reader.get(f"/studio/content/posts/item/{item['_id']}/history").status_code == 403
    assert reader.get(f"/studio/content/posts/item/{item['_id']}/history/1").status_code == 403
    ann = logged_in(app)
    assert ann.get("/studio/content/posts/item/not-an-id/history").status_code == 404
    assert ann.get(f"/studio/content/posts/item/{item['_id']}/history/x").status_code == 400
    assert ann.get(f"/studio/content/posts/item/{item['_id']}/history/9").status_code == 404
    assert ann.get(f"/studio/content/posts/item/{'0' * 24}/history").status_code == 404


def test_a_page_has_a_history_in_the_studio_and_is_restored(app: Any, admin: Api) -> None:
    response = admin.post("/api/pages/page", json={"data": {"title": "About", "slug": "about"}})
    assert response.status_code == 200, response.text
    page = response.json()
    assert admin.post("/api/pages/page", json={"data": {"_id": page["_id"], "title": "About us"}}).status_code == 200
    ann = logged_in(app)
    editor = ann.get(f"/studio/pages/{page['_id']}").text
    base = f"/studio/pages/{page['_id']}/history"
    assert f'href="{base}"' in editor
    listing = ann.get(base)
    assert listing.status_code == 200 and "2 revisions kept" in " ".join(_text(listing.text).split())
    shown = ann.get(f"{base}/2").text
    assert "<del>About</del>" in shown and "<ins>About us</ins>" in shown
    done = post_form(ann, f"{base}/1/restore", {}, token_from=base, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"/studio/pages/{page['_id']}"
    assert admin.get(f"/api/pages/page/{page['_id']}").json()["title"] == "About"
    role_key(admin, "writer", {"content/posts/read": True})
    writer = logged_in(app, "wanda", "writer")
    assert writer.get(base).status_code == 403


def test_the_page_settings_have_a_history_in_the_studio(app: Any, admin: Api) -> None:
    for title in ("First", "Second"):
        assert admin.post("/api/pages/settings", json={"data": {"seo": {"title": title}}}).status_code == 200
    ann = logged_in(app)
    assert 'href="/studio/pages/settings/history"' in ann.get("/studio/pages/settings").text
    listing = ann.get("/studio/pages/settings/history")
    assert listing.status_code == 200 and "2 revisions kept" in " ".join(_text(listing.text).split())
    assert "Second" in ann.get("/studio/pages/settings/history/2").text
    base = "/studio/pages/settings/history"
    done = post_form(ann, f"{base}/1/restore", {}, token_from=base, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == "/studio/pages/settings"
    assert admin.get("/api/pages/settings").json()["seo"] == {"title": "First"}


def test_a_fetched_part_of_a_page_leaves_the_flash_to_the_page(app: Any, admin: Api) -> None:
    item = _post(admin)
    ann = logged_in(app)
    base = f"/studio/content/posts/item/{item['_id']}/history"
    done = post_form(ann, f"{base}/1/restore", {}, token_from=base, follow_redirects=False)
    assert done.status_code == 303
    # a script's request landing between the redirect and the page
    ann.get(base, headers={"hx-request": "true"})
    ann.get(base, headers={"sec-fetch-mode": "cors"})
    assert "Restored the version of revision 1." in ann.get(done.headers["location"]).text
