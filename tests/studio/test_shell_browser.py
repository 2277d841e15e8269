"""The studio's shell in a real browser: reached from `/` after logging in,
no script or CSP errors, usable at 390 px."""

from __future__ import annotations

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
    scripts_ran,
    section,
    studio,
)

__all__ = ["browser", "new_context", "studio"]


def test_content_is_reached_from_the_dashboard(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/models/notes", {"name": "notes", "type": "collection",
                                                    "fields": [{"name": "title", "type": "text"}]})
    page = open_page(new_context())
    login(page, studio)
    section(page, "Content").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Content")
    expect(page.get_by_role("link", name="notes")).to_be_visible()
    # the scripts come last in the page: its text shows before they have run
    scripts_ran(page)
    assert_clean(page)


def test_the_shell_fits_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/content")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide on a 390 px screen"
    assert_clean(page)
