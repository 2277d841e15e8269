"""The screens of the forms inbox, search, roles, locales and the search
box fit a 390 px phone: nothing wider than the screen, no sideways scroll
(the assets, pages and translations screens have their own phone checks)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from typing import Any

from tests.studio.browsing import (
    NARROW,
    Studio,
    assert_clean,
    browser,
    login,
    new_context,
    open_page,
    screenshot,
    studio,
)

__all__ = ["browser", "new_context", "studio"]


def test_the_inbox_search_and_settings_screens_fit_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    studio.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection",
                                                    "fields": [{"name": "title", "type": "text"}]})
    studio.call("POST", "/api/content/item/posts", {"data": {"title": "A rather long title about the harbour"}})
    studio.call("PUT", "/api/searchmod/indexes/posts", {"model": "posts", "fields": ["title"]})
    studio.call("PUT", "/api/system/roles/editors", {"permissions": {"content/posts/read": True}})
    form = studio.call("POST", "/api/inbox/forms", {"data": {"name": "Contact", "fields": ["name", "message"]}})
    request = urllib.request.Request(f"{studio.base}/api/inbox/submit/{form['token']}", method="POST",
                                     data=json.dumps({"data": {"name": "Ann", "message": "word " * 80}}).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        submission = json.loads(answer.read())["record"]
    page = open_page(new_context(NARROW))
    login(page, studio)
    screens = {
        "/studio/forms": "studio-inbox-forms-phone.png",
        f"/studio/forms/{form['_id']}": None,
        f"/studio/forms/{form['_id']}/submissions": None,
        f"/studio/forms/{form['_id']}/submissions/{submission['_id']}": "studio-inbox-submission-phone.png",
        "/studio/search": None,
        "/studio/search/posts": "studio-search-index-phone.png",
        "/studio/settings/roles": None,
        "/studio/settings/roles/editors": "studio-settings-role-phone.png",
        "/studio/settings/locales": None,
        "/studio/find?q=harbour": None,
    }
    too_wide = {}
    for path, shot in screens.items():
        response = page.goto(studio.base + path)
        assert response is not None and response.status == 200, path
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > 390:
            too_wide[path] = width
        if shot:
            screenshot(page, shot)
    assert not too_wide, f"wider than a 390 px screen: {too_wide}"
    assert_clean(page)
