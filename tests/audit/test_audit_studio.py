"""The audit log's studio screen: entries with who, action and a link to
what still exists, the GET form's filters, pages, refusals for users
without audit/read, and a bad date shown next to its field."""

from __future__ import annotations

import datetime as dt
from typing import Any

from quire.app import Quire
from quire.audit.service import AuditService
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in

AUDIT = "/studio/settings/audit"


def test_the_screen_lists_entries_and_links_what_still_exists(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    kept = create_item(admin, "posts", {"title": "Kept"})
    gone = create_item(admin, "posts", {"title": "Gone"})
    assert admin.delete(f"/api/content/item/posts/{gone['_id']}").status_code == 200
    ann = logged_in(app)
    home = ann.get("/studio/content")
    assert f'href="{AUDIT}"' in home.text  # in the sidebar
    page = ann.get(AUDIT)
    assert page.status_code == 200
    assert f'<a href="/studio/content/posts/item/{kept["_id"]}">content/posts / {kept["_id"]}</a>' in page.text
    assert f"content/posts / {gone['_id']}</td>" in page.text  # deleted: no link
    assert '<a href="/studio/models/posts">models / posts</a>' in page.text
    assert "<code>item.delete</code>" in page.text and "<code>login</code>" in page.text
    for field in ("audit-action", "audit-who", "audit-resource", "audit-from", "audit-to"):
        assert f'<label for="{field}">' in page.text and f'id="{field}"' in page.text


def test_filters_and_pages_of_the_screen(app: Any, admin: Api, quire: Quire, admin_key: str) -> None:
    audit = quire.get(AuditService)
    me = quire.auth.identify(admin_key)
    day = dt.datetime(2026, 3, 1, tzinfo=dt.UTC).timestamp()
    clock = iter(day + n * 3600 for n in range(200))
    audit.clock = lambda: next(clock)
    with quire.store.transaction():
        for n in range(120):
            audit.record("item.update", "content/news", f"n{n:03d}", me)
    ann = logged_in(app)
    first = ann.get(AUDIT, params={"action": "item.update", "from": "2026-03-01", "to": "2026-03-08"})
    assert first.status_code == 200
    # 1 March 00:00 to 8 March 23:59 UTC: 192 hours, of which 120 entries
    assert first.text.count("<code>item.update</code>") == 50
    assert "n119" in first.text and "n069" not in first.text
    assert 'rel="next"' in first.text and 'rel="prev"' not in first.text
    second = ann.get(AUDIT, params={"action": "item.update", "from": "2026-03-01", "to": "2026-03-08", "page": "3"})
    assert second.text.count("<code>item.update</code>") == 20 and 'rel="next"' not in second.text
    one_day = ann.get(AUDIT, params={"resource": "content/*", "from": "2026-03-02", "to": "2026-03-02"})
    assert one_day.text.count("<code>item.update</code>") == 24
    by_who = ann.get(AUDIT, params={"who": "nobody"})
    assert "No entries match these filters." in by_who.text


def test_a_bad_date_or_page_is_shown_next_to_its_field(app: Any) -> None:
    ann = logged_in(app)
    bad = ann.get(AUDIT, params={"from": "yesterday", "action": "x\x01y"})
    assert bad.status_code == 400
    assert 'id="audit-from" name="from" type="date" value="yesterday"' in bad.text
    assert "\x01" not in bad.text
    assert ann.get(AUDIT, params={"page": "0"}).status_code == 400
    assert ann.get(AUDIT, params={"page": "99999999999"}).status_code == 400
    assert ann.get(AUDIT, params={"to": "2026-13-01"}).status_code == 400


def test_only_users_with_audit_read_see_it(app: Any, admin: Api) -> None:
    admin.put("/api/system/roles/editor", json={"permissions": {"content/*/read": True}})
    admin.put("/api/system/roles/auditor", json={"permissions": {"audit/read": True}})
    bob = logged_in(app, "bob", "editor")
    assert bob.get(AUDIT).status_code == 403
    assert f'href="{AUDIT}"' not in bob.get("/studio/content").text
    cid = logged_in(app, "cid", "auditor")
    assert cid.get(AUDIT).status_code == 200
