"""The bar's search box in a real browser: typing a name and Enter jumps to
an item, a page and an asset; words with several matches list them."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Callable
from typing import Any

from tests.assets.helpers import solid
from tests.inbox.conftest import multipart
from tests.studio.browsing import (
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


def _find(page: Any, words: str) -> None:
    box = page.get_by_role("searchbox", name="Find a model, item, page or asset")
    box.fill(words)
    box.press("Enter")


def test_the_search_box_jumps_to_an_item_a_page_and_an_asset(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection",
                                                    "fields": [{"name": "title", "type": "text"}]})
    item = studio.call("POST", "/api/content/item/posts", {"data": {"title": "Lighthouse keepers"}})
    other = studio.call("POST", "/api/content/item/posts", {"data": {"title": "Lighthouse history"}})
    pg = studio.call("POST", "/api/pages/page", {"data": {"title": "Opening hours", "type": "layout"}})
    body, headers = multipart([("title", "Quay at night"), ("files", "quay.png", solid(16, 16), "image/png")])
    request = urllib.request.Request(studio.base + "/api/assets", data=body, method="POST",
                                     headers={**headers, "api-key": studio.key})
    with urllib.request.urlopen(request, timeout=30) as response:
        asset = json.loads(response.read())[0]

    page = open_page(new_context())
    login(page, studio)
    _find(page, "keepers")
    page.wait_for_url(re.compile(rf"/studio/content/posts/item/{item['_id']}$"))
    _find(page, "opening hours")
    page.wait_for_url(re.compile(rf"/studio/pages/{pg['_id']}$"))
    _find(page, "quay")
    page.wait_for_url(re.compile(rf"/studio/assets/{asset['_id']}$"))
    _find(page, "lighthouse")  # two items: the list of what was found
    page.wait_for_url(re.compile(r"/studio/find\?q=lighthouse$"))
    expect(page.get_by_role("heading", name="Items")).to_be_visible()
    page.get_by_role("link", name="Lighthouse history").click()
    page.wait_for_url(re.compile(rf"/studio/content/posts/item/{other['_id']}$"))
    page.go_back()
    screenshot(page, "studio-find.png")
    assert_clean(page)
