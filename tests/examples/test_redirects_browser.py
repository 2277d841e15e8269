"""The redirects example in a real browser, as an editor meets it after
`pip install`: its screen is reached from the dashboard through the
sidebar, a rule is added with the keyboard through the field type's own
input, a refused one shows why next to the field, and the model builder
offers the package's field type."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.serving import quire_server
from tests.studio.browsing import (
    Studio,
    assert_clean,
    browser,
    login,
    make_users,
    new_context,
    open_page,
    screenshot,
    scripts_ran,
    section,
)

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("redirects") / "data"
    make_users(data, {"ann": "admin"})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true", "QUIRE_MODULES_PACKAGES": "true"}) as (base, key, _):
        yield Studio(base, key, {"ann": "admin"})


def test_a_rule_is_added_from_the_sidebar_with_the_keyboard(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    section(page, "Redirects").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Redirects")
    scripts_ran(page)
    expect(page.get_by_text("No redirects yet.")).to_be_visible()
    source = page.get_by_label("From")
    source.focus()
    page.keyboard.type("winter")  # not a path: the browser holds the form back (the input's pattern)
    page.keyboard.press("Tab")
    page.keyboard.type("/sale")
    page.get_by_role("button", name="Add redirect").press("Enter")
    assert source.evaluate("input => input.validity.patternMismatch")
    expect(page.get_by_text("No redirects yet.")).to_be_visible()
    source.fill("//winter")  # passes the pattern, refused by the server, the reason at the field
    page.get_by_role("button", name="Add redirect").press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("from must be a path of the site")
    expect(page.get_by_label("From")).to_have_value("//winter")
    scripts_ran(page)
    page.get_by_label("From").fill("/winter")
    page.get_by_label("Status").select_option("302")
    page.get_by_label("Note").fill("the winter sale page")
    # Quire's colour field type, its record's input and script: the picker fills the text
    page.get_by_label("Colour: pick a colour").fill("#ff8800")
    expect(page.get_by_label("Colour", exact=True)).to_have_value("#ff8800")
    page.get_by_role("button", name="Add redirect").press("Enter")
    expect(page.locator("#flash")).to_contain_text("Redirect from /winter added.")
    row = page.get_by_role("row").filter(has_text="/winter")
    expect(row).to_contain_text("/sale")
    expect(row).to_contain_text("302")
    screenshot(page, "studio-redirects.png")
    assert studio.call("GET", "/api/redirects/resolve?path=/winter") == {"from": "/winter", "to": "/sale",
                                                                         "status": 302}
    assert [r["color"] for r in studio.call("GET", "/api/redirects")["data"]] == ["#ff8800"]
    assert_clean(page)


def test_the_model_builder_offers_the_packages_field_type(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/models/new")
    scripts_ran(page)
    select = page.locator(".type-select").first
    select.select_option("urlPath")
    expect(select.locator("option:checked")).to_have_text("URL path")
    expect(page.locator(".default-hint").first).to_have_text("as typed; empty for none")
    assert_clean(page)


def test_the_screen_fits_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    from tests.studio.browsing import NARROW

    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/redirects")
    scripts_ran(page)
    expect(page.get_by_role("heading", level=1)).to_have_text("Redirects")
    expect(page.get_by_label("From")).to_be_visible()
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")  # no sideways scrolling
    screenshot(page, "studio-redirects-phone.png")
    assert_clean(page)
