"""Spaces in the main site's studio, in a real browser, reached from `/`
after logging in: a space made, forked (the fork's progress refreshing by
itself until it is done), compared, merged back by its plan, served
through an alias switched and switched back, and removed."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.chromium import screenshot
from tests.commands import run_quire
from tests.serving import quire_server
from tests.studio.browsing import (
    Studio,
    assert_clean,
    browser,
    login,
    make_users,
    new_context,
    open_page,
    scripts_ran,
)

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("spaces") / "data"
    make_users(data, {"ann": "admin"})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        found = Studio(base, key, {"ann": "admin"})
        found.data = data  # type: ignore[attr-defined]
        yield found


def test_an_admin_makes_forks_merges_and_switches_spaces(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Spaces").click()
    expect(page.get_by_role("heading", name="Spaces", level=1)).to_be_visible()
    scripts_ran(page)
    page.get_by_label("Name", exact=True).fill("shop")
    page.get_by_label("Label").fill("The shop")
    page.get_by_role("button", name="Create space").click()
    expect(page.get_by_role("heading", name=re.compile("The shop"))).to_be_visible()
    expect(page.get_by_text("Created space shop.")).to_be_visible()

    # a key of shop's, made on its page and shown once; content through shop's own API with it
    expect(page.get_by_text("No keys yet")).to_be_visible()
    page.get_by_label("New key").fill("site")
    page.get_by_label("with the role").select_option("admin")
    page.get_by_role("button", name="Make key").click()
    expect(page.get_by_text("Key site made.")).to_be_visible()
    key = page.get_by_label("The key").input_value()
    expect(page.get_by_role("table", name="The space's API keys").get_by_role("row").nth(1)).to_contain_text("site")
    assert key not in page.get_by_role("table", name="The space's API keys").inner_text()
    shop = Studio(studio.base + "/shop", key, {})
    shop.call("PUT", "/api/system/models/posts",
              {"name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]})
    first = shop.call("POST", "/api/content/item/posts", {"data": {"title": "first"}})

    # a fork, in the background: its row refreshes by itself until it is done
    page.get_by_role("link", name="All spaces").click()
    scripts_ran(page)
    page.get_by_label("Name", exact=True).fill("shop-staging")
    page.get_by_label("Start from").select_option("shop")
    page.get_by_role("button", name="Create space").click()
    expect(page.get_by_text("Forking shop into shop-staging")).to_be_visible()
    tasks = page.get_by_role("table", name="Forks and merges, the newest first")
    expect(tasks.get_by_role("row").nth(1)).to_contain_text("done", timeout=30_000)
    page.reload()
    page.get_by_role("table", name="Spaces").get_by_role("link", name="shop-staging").click()
    expect(page.get_by_text("shop-staging and shop hold the same items.")).to_be_visible()

    staging = Studio(studio.base + "/shop-staging", key, {})  # a fork has its origin's keys
    staging.call("POST", "/api/content/item/posts", {"data": {"_id": first["_id"], "title": "edited in staging"}})
    staging.call("POST", "/api/content/item/posts", {"data": {"title": "new in staging"}})
    page.reload()
    diff = page.get_by_role("table", name="Items changed on each side, per model")
    expect(diff.get_by_role("row").nth(1)).to_contain_text("posts")
    expect(page.get_by_text("add 1, change 1, remove 0")).to_be_visible()
    screenshot(page, "studio-space-fork.png")
    page.get_by_role("button", name="Merge 2 changes into shop").click()
    expect(page.get_by_text("Merging shop-staging into its origin")).to_be_visible()
    expect(page.get_by_role("table", name="Forks and merges, the newest first").get_by_role("row").nth(1)
           ).to_contain_text("merged 2 changes into shop", timeout=30_000)
    titles = sorted(p["title"] for p in shop.call("GET", "/api/content/items/posts"))
    assert titles == ["edited in staging", "new in staging"]

    # an alias: made, switched, switched back (the rollback)
    page.get_by_label("New alias").fill("production")
    page.get_by_label("serving").select_option("shop")
    page.get_by_role("button", name="Add alias").click()
    expect(page.get_by_text("/production/ now serves shop.")).to_be_visible()
    assert len(Studio(studio.base + "/production", key, {}).call("GET", "/api/content/items/posts")) == 2
    page.get_by_label("Space production serves").select_option("shop-staging")
    page.get_by_role("button", name="Switch").click()
    expect(page.get_by_text("/production/ now serves shop-staging (it served shop).")).to_be_visible()
    aliases = page.get_by_role("table", name="Aliases and the space each serves")
    expect(aliases.get_by_role("row").nth(1)).to_contain_text("shop-staging")
    expect(page.get_by_label("Space production serves")).to_have_value("shop")  # offered: the way back
    screenshot(page, "studio-spaces.png")
    page.get_by_role("button", name="Switch").click()
    expect(page.get_by_text("/production/ now serves shop (it served shop-staging).")).to_be_visible()
    page.get_by_role("button", name="Remove production").click()
    expect(page.get_by_text("Removed alias production.")).to_be_visible()

    # removed, once its name is typed
    page.get_by_role("table", name="Spaces").get_by_role("link", name="shop-staging").click()
    page.get_by_role("button", name="Remove space shop-staging").click()  # the field is required: nothing sent
    expect(page).to_have_url(re.compile(r"/studio/settings/spaces/shop-staging$"))
    page.get_by_label(re.compile("Type shop-staging to remove it")).fill("shop-staging")
    page.get_by_role("button", name="Remove space shop-staging").click()
    expect(page.get_by_text("Removed space shop-staging and everything in it.")).to_be_visible()
    expect(page.get_by_role("table", name="Spaces").get_by_role("link", name="shop-staging")).to_have_count(0)
    assert_clean(page)


def test_a_bad_name_is_said_beside_the_form(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/settings/spaces")
    page.get_by_label("Name", exact=True).fill("studio")
    page.get_by_role("button", name="Create space").click()
    expect(page.get_by_role("alert")).to_contain_text("main site serves")
    expect(page.get_by_label("Name", exact=True)).to_have_value("studio")
    expect(page.get_by_label("Name", exact=True)).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Name", exact=True).fill("blog")
    page.get_by_role("button", name="Create space").click()
    page.get_by_role("button", name="Make key").click()  # no name: the browser asks for one
    page.get_by_label("New key").fill("k")
    page.get_by_label("with the role").select_option("admin")
    page.get_by_role("button", name="Make key").click()
    expect(page.get_by_text("Key k made.")).to_be_visible()
    data = str(studio.data)  # type: ignore[attr-defined]
    listed = run_quire("keys", "list", "--space", "blog", "--data", data).stdout
    assert "k" in listed.split()


def test_a_spaces_own_studio_is_opened_from_its_page_and_left_by_the_switcher(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    from tests.assets.helpers import RED, solid
    from tests.studio.test_assets_browser import DROP, _b64

    studio.call("POST", "/api/system/spaces", {"name": "shelf", "label": "The shelf"})
    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Spaces").click()
    page.get_by_role("table", name="Spaces").get_by_role("link", name="shelf").click()
    page.get_by_role("link", name="Open the studio of The shelf").click()
    expect(page).to_have_url(studio.base + "/shelf/")
    expect(page.get_by_text("shelf", exact=True)).to_be_visible()  # the switcher says where the page is
    scripts_ran(page)

    # an upload by the assets screen's script lands in the shelf, not in the main site
    page.get_by_role("link", name="Assets", exact=True).click()
    expect(page).to_have_url(studio.base + "/shelf/studio/assets")
    transfer = page.evaluate_handle(DROP, [[["tin.png", "image/png", _b64(solid(40, 30, RED))]]])
    page.locator("#upload-zone").dispatch_event("drop", {"dataTransfer": transfer})
    stored = page.locator("#upload-list .upload-row").get_by_role("link", name="Stored")
    expect(stored).to_have_attribute("href", re.compile(r"^/shelf/studio/assets/"))
    stored.click()
    expect(page).to_have_url(re.compile(r"/shelf/studio/assets/\w+$"))
    screenshot(page, "studio-space-studio.png")
    assert [a["title"] for a in studio.call("GET", "/api/assets")] == []
    made = studio.call("POST", "/api/system/spaces/shelf/keys", {"name": "site", "role": "admin"})
    assert [a["title"] for a in Studio(studio.base + "/shelf", made["key"], {}).call("GET", "/api/assets")] == ["tin.png"]

    # the switcher, by keyboard: Escape closes it; back to the main site
    page.get_by_text("shelf", exact=True).focus()
    page.keyboard.press("Enter")
    main_site = page.get_by_role("link", name=re.compile("^Main site"))
    expect(main_site).to_be_visible()
    page.keyboard.press("Escape")
    expect(main_site).to_be_hidden()
    page.keyboard.press("Enter")
    page.get_by_role("link", name=re.compile("^Main site")).click()
    expect(page).to_have_url(studio.base + "/")
    assert_clean(page)
