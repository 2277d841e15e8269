"""The admin pages in a real browser (the fixtures of tests/studio/browsing.py):
every page fits a 390 px phone, the Users table fits its card at 1280 px,
the skip link is the first thing Tab reaches, a saved form's flash message
takes the focus, and no page logs an error (the favicon included)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.serving import quire_server
from tests.studio.browsing import (
    NARROW,
    Studio,
    assert_clean,
    browser,
    login,
    make_users,
    new_context,
    open_page,
    screenshot,
    wait_until,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = ["browser", "new_context"]

PAGES = ["/", "/admin/keys", "/admin/users", "/system/api", "/auth/logout"]
USERS = {"ann": "admin", "bob-with-a-rather-long-name": "admin", "carla": "editor", "dan": "editor"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    """A server with a few users (one of them not a manager), a model with a
    long name and a few API keys."""
    data = tmp_path_factory.mktemp("admin") / "data"
    make_users(data, USERS, {"editor": {"content/*/read": True}})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        site = Studio(base, key, dict(USERS))
        site.call("PUT", "/api/system/models/press_releases_and_announcements", {
            "name": "press_releases_and_announcements", "label": "Press releases and announcements",
            "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        for name in ("website front end", "nightly import job"):
            site.call("POST", "/api/system/keys", {"name": name, "role": "admin"})
        yield site


def _width(page: Page) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth"))


def test_every_admin_page_fits_a_phone(site: Studio, new_context: Callable[..., Any]) -> None:
    page = open_page(new_context(NARROW))
    page.goto(site.base + "/auth/login")
    assert _width(page) <= 390, f"the login page is {_width(page)} px wide on a 390 px screen"
    login(page, site)
    for path in PAGES:
        page.goto(site.base + path)
        assert _width(page) <= 390, f"{path} is {_width(page)} px wide on a 390 px screen"
        if path == "/admin/users":
            screenshot(page, "admin-users-phone.png")
    assert_clean(page)


def test_the_not_allowed_page_fits_a_phone(site: Studio, new_context: Callable[..., Any]) -> None:
    page = open_page(new_context(NARROW))
    login(page, site, "carla")
    response = page.goto(site.base + "/admin/users")
    assert response is not None and response.status == 403
    assert page.get_by_role("heading", level=1).text_content() == "Not allowed"
    assert _width(page) <= 390, f"the message page is {_width(page)} px wide on a 390 px screen"
    assert_clean(page)


def test_the_nav_wraps_on_a_phone(site: Studio, new_context: Callable[..., Any]) -> None:
    page = open_page(new_context(NARROW))
    login(page, site)
    page.get_by_role("button", name="Menu").click()  # the sections sit behind it on a phone
    nav = page.get_by_role("navigation").bounding_box()
    assert nav is not None and nav["x"] >= 0 and nav["x"] + nav["width"] <= 390
    for link in page.get_by_role("navigation").get_by_role("link").all():
        box = link.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 390, f"{link.text_content()} is off screen"


def test_user_rows_stay_inside_their_card_on_a_wide_screen(site: Studio, new_context: Callable[..., Any]) -> None:
    page = open_page(new_context())
    login(page, site)
    page.goto(site.base + "/admin/users")
    card = page.locator("section.card", has=page.get_by_role("heading", name="Users", exact=True)).bounding_box()
    assert card is not None
    for button in page.get_by_role("button", name="Delete").all() + page.get_by_role("button", name="Save").all():
        box = button.bounding_box()
        assert box is not None and box["x"] + box["width"] <= card["x"] + card["width"], "a button sticks out"
    assert _width(page) <= 1280
    assert_clean(page)


FIRST_FOCUSABLE = "document.querySelector('a[href], button, input:not([type=hidden]), select, textarea').textContent"


def test_tab_first_reaches_the_skip_link_and_enter_moves_to_main(site: Studio,
                                                                 new_context: Callable[..., Any]) -> None:
    page = open_page(new_context())
    # The login page puts the focus in its first field (autofocus); the skip
    # link still comes first in the order of the page.
    page.goto(site.base + "/auth/login")
    assert page.evaluate(FIRST_FOCUSABLE) == "Skip to main"
    login(page, site)
    for path in ("/", "/admin/users", "/admin/keys"):
        page.goto(site.base + path)
        skip = page.get_by_role("link", name="Skip to main")
        hidden = skip.bounding_box()
        assert hidden is not None and hidden["y"] + hidden["height"] <= 0, "the skip link shows before it is focused"
        page.keyboard.press("Tab")
        focused = page.evaluate("[document.activeElement.tagName, document.activeElement.textContent]")
        assert focused == ["A", "Skip to main"], path
        shown = skip.bounding_box()
        assert shown is not None and shown["y"] >= 0 and shown["width"] > 20, "the focused skip link is not visible"
        page.keyboard.press("Enter")
        wait_until(page, "document.activeElement.id === 'main'")
        assert page.evaluate("document.activeElement.tagName") == "MAIN"
        page.keyboard.press("Tab")  # and on from the page's content, not the bar
        assert page.evaluate("document.activeElement.closest('header')") is None, path
    assert_clean(page)


def test_a_new_user_flash_takes_the_focus(site: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, site)
    page.goto(site.base + "/admin/users")
    form = page.locator("form", has=page.get_by_role("button", name="Create user"))
    assert form.get_by_label("Role").input_value() == ""
    form.get_by_label("User").fill("erin")
    form.get_by_label("E-mail").fill("erin@example.org")
    form.get_by_label("Role").select_option("editor")
    form.get_by_label("Password").fill("a long enough password")
    form.get_by_role("button", name="Create user").click()
    flash = page.get_by_role("status").filter(has_text="User erin created.")
    expect(flash).to_be_visible()
    # admin.js, the page's last script, moves the focus: it may run after the
    # message shows (a click navigated, and Playwright did not wait for load)
    expect(flash).to_be_focused()
    assert page.evaluate("document.activeElement.id") == "flash"
    assert page.evaluate("document.activeElement.className") == "flash"
    assert_clean(page)
