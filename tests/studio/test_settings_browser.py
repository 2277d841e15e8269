"""Settings and search in a real browser: a role given read-only rights
on one model in the matrix sees only that model; a locale renamed
(de -> de-DE) answers its German value under the new code; a search
index rebuilt with its progress shown, then a query tried."""

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
    section,
)

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    """The admin `ann` and `rita`, of the role `readers` that may do nothing yet."""
    data = tmp_path_factory.mktemp("settings") / "data"
    make_users(data, {"ann": "admin", "rita": "readers"}, {"readers": {}})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        server = Studio(base, key, {"ann": "admin", "rita": "readers"})
        server.call("PUT", "/api/system/locales", [{"i18n": "de", "name": "Deutsch"}])
        for name in ("posts", "secrets"):
            server.call("PUT", f"/api/system/models/{name}", {
                "name": name, "type": "collection", "label": name.title(),
                "fields": [{"name": "title", "type": "text", "i18n": True}, {"name": "body", "type": "text"}]})
        server.call("POST", "/api/content/item/posts", {"data": {"title": "Harbour lights", "title_de": "Hafenlichter",
                                                                 "body": "Ships come in at night"}})
        server.call("POST", "/api/content/item/posts", {"data": {"title": "Mountain huts", "body": "Far from any harbour"}})
        server.call("POST", "/api/content/item/secrets", {"data": {"title": "Plans"}})
        yield server


def test_a_role_read_only_on_one_model_sees_only_that_model(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    section(page, "Roles").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Roles")
    screenshot(page, "studio-settings-roles.png")
    page.get_by_role("link", name="Edit role readers").click()
    # the column's "all" ticks read for every model (and the wildcard row); again clears it
    page.get_by_role("button", name="Toggle read of every model").click()
    expect(page.get_by_label("secrets: read", exact=True)).to_be_checked()
    page.get_by_role("button", name="Toggle read of every model").click()
    expect(page.get_by_label("secrets: read", exact=True)).not_to_be_checked()
    page.get_by_label("posts: read", exact=True).focus()
    page.keyboard.press("Space")
    expect(page.get_by_label("secrets: read", exact=True)).not_to_be_checked()
    page.get_by_role("button", name="Save role").click()
    expect(page.locator("#flash")).to_have_text("Saved role readers.")
    expect(page.get_by_label("posts: read", exact=True)).to_be_checked()
    screenshot(page, "studio-settings-role-matrix.png")
    assert studio.call("GET", "/api/system/roles/readers")["permissions"] == {"content/posts/read": True}
    assert_clean(page)

    reader = open_page(new_context())
    login(reader, studio, "rita")
    nav = reader.get_by_role("navigation")
    expect(nav.get_by_role("link", name="Roles")).to_have_count(0)
    nav.get_by_role("link", name="Content").click()
    main = reader.locator("main")
    expect(main.get_by_role("link", name="Posts")).to_be_visible()
    expect(main.get_by_text("Secrets")).to_have_count(0)
    reader.goto(studio.base + "/studio/content/secrets")
    expect(reader.get_by_role("heading", level=1)).to_have_text("Not allowed")
    assert_clean(reader)


def test_rename_a_locale_and_read_the_german_value_under_the_new_code(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    section(page, "Locales").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Locales")
    page.get_by_label("Code", exact=True).fill("fr")
    page.get_by_label("Name", exact=True).fill("Français")
    page.get_by_role("button", name="Add locale").click()
    expect(page.locator("#flash")).to_have_text("Added locale fr.")
    screenshot(page, "studio-settings-locales.png")
    page.get_by_role("link", name="Remove locale de").click()
    expect(page.get_by_role("alert")).to_contain_text("1 item holds values in de")
    screenshot(page, "studio-settings-locale-remove.png")
    page.get_by_role("link", name="Cancel").click()
    page.get_by_label("Locale", exact=True).select_option("de")
    page.get_by_label("New code").fill("de-DE")
    page.get_by_role("button", name="Rename").click()
    expect(page.locator("#rename-job")).to_contain_text("Renamed de to de-DE", timeout=20_000)
    screenshot(page, "studio-settings-locale-renamed.png")
    items = studio.call("GET", "/api/content/items/posts?locale=de-DE&sort=%7B%22title%22%3A1%7D")
    assert items[0]["title"] == "Hafenlichter"
    assert [loc["i18n"] for loc in studio.call("GET", "/api/system/locales")] == ["default", "de-DE", "fr"]
    page.get_by_role("button", name="Dismiss").click()
    expect(page.locator("#rename-job")).to_have_count(0)
    assert_clean(page)


def test_rebuild_the_search_index_and_try_a_query(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    section(page, "Search").click()
    page.get_by_role("link", name="New index").click()
    page.get_by_label("Index name").fill("posts")
    page.get_by_label("Model", exact=True).select_option("posts")
    page.get_by_label("Fields to search").fill("title, nope")
    page.get_by_role("button", name="Create and build").click()
    expect(page.get_by_role("alert").first).to_contain_text("fields must be fields of posts")
    page.get_by_label("Fields to search").fill("title, body")
    page.get_by_label("Weights").fill("title = 3")
    page.get_by_role("button", name="Create and build").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Index posts")
    page.get_by_role("link", name="Search", exact=True).first.click()
    expect(page.locator("table.indexes")).to_contain_text("2")
    screenshot(page, "studio-search-indexes.png")
    page.get_by_role("link", name="posts").click()
    page.get_by_role("button", name="Rebuild", exact=True).click()
    expect(page.locator("#build-posts")).to_contain_text("Built", timeout=20_000)
    page.reload()
    expect(page.locator("#build-posts")).to_contain_text("Built")
    page.get_by_label("Query", exact=True).fill("harbour")
    page.get_by_role("button", name="Search", exact=True).click()
    hits = page.locator("ol.hits > li")
    expect(hits).to_have_count(2)
    expect(hits.first.locator("mark").first).to_have_text("Harbour")
    screenshot(page, "studio-search-index.png")
    assert_clean(page)


@pytest.mark.parametrize("width", [1280, 390])
def test_end_every_preview_link_from_settings_by_keyboard(studio: Studio, new_context: Callable[..., Any],
                                                          width: int) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context({"width": width, "height": 800}))
    login(page, studio)
    section(page, "Preview links").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Preview links")
    button = page.get_by_role("button", name="End every preview link")
    button.focus()
    expect(button).to_be_focused()
    fits = page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    assert fits, f"the page is wider than {width} px"
    if width == 390:
        screenshot(page, "studio-settings-previews-390.png")
    page.keyboard.press("Enter")
    expect(page.get_by_role("status")).to_contain_text("has stopped working")
    assert_clean(page)
