"""Machine translation in the studio, in a real browser, reached from `/`
after logging in: every item of a model translated into German by a local
fake of DeepL, the task followed until done without reloading, the items
not reviewed yet listed, and one opened in the editor, which says so."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.chromium import screenshot
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
from tests.translate.fakes import fake_provider

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("translate") / "data"
    make_users(data, {"ann": "admin"})
    with fake_provider() as provider:
        env = {"QUIRE_SERVER_QUIET": "true", "QUIRE_TRANSLATE_PROVIDER": "deepl", "QUIRE_TRANSLATE_URL": provider.url,
               "QUIRE_TRANSLATE_API_KEY": provider.key, "QUIRE_TRANSLATE_SOURCE_LANGUAGE": "en"}
        with quire_server(data, env=env) as (base, key, _log):
            yield Studio(base, key, {"ann": "admin"})


def test_an_editor_translates_a_models_items_and_finds_them_to_review(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/locales", [{"i18n": "de", "name": "Deutsch"}])
    studio.call("PUT", "/api/system/models/recipes", {"name": "recipes", "type": "collection", "fields": [
        {"name": "title", "type": "text", "i18n": True}]})
    for title in ("Apple pie", "Lemon tart"):
        studio.call("POST", "/api/content/item/recipes", {"data": {"title": title}})
    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Machine translation").click()
    expect(page.get_by_role("heading", name="Machine translation", level=1)).to_be_visible()
    scripts_ran(page)
    page.get_by_label("Every item of a model").check()
    page.get_by_label("Model or project").select_option("recipes")
    page.get_by_label("Deutsch (de)").check()
    page.get_by_role("button", name="Translate what is missing").click()
    expect(page.get_by_text("Translating what is missing of the items of recipes into de")).to_be_visible()
    tasks = page.get_by_role("table", name="Machine translations asked for, the newest first")
    expect(tasks.get_by_role("row").nth(1)).to_contain_text("done", timeout=30_000)  # refreshed by itself
    expect(tasks.get_by_role("row").nth(1)).to_contain_text("2 of 2, 2 values written")
    page.reload()
    review = page.get_by_role("region", name="Not reviewed yet")
    expect(review).to_contain_text("2 items")
    screenshot(page, "studio-translate.png")
    review.get_by_role("link", name="Apple pie").click()
    expect(page).to_have_url(re.compile(r"/studio/content/recipes/item/\w+$"))
    expect(page.get_by_text("title_de")).to_be_visible()
    assert_clean(page)
