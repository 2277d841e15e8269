"""GraphiQL in a real browser: the GraphQL playground reached from the
sidebar after logging in, a query typed and run with the keyboard, its
answer from the user's own schema, no console errors under the studio's
CSP."""

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
)

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("graphiql") / "data"
    make_users(data, {"ann": "admin"})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _):
        made = Studio(base, key, {"ann": "admin"})
        made.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection",
                                                      "fields": [{"name": "title", "type": "text"}]})
        made.call("POST", "/api/content/item/posts", {"data": {"title": "Harbour lights"}})
        yield made


def test_graphiql_runs_a_query_on_the_users_schema(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("navigation").get_by_role("link", name="GraphQL playground").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("GraphQL playground")
    editor = page.locator(".graphiql-query-editor .CodeMirror textarea, .graphiql-query-editor textarea").first
    expect(editor).to_be_attached(timeout=15_000)
    page.locator(".graphiql-query-editor .CodeMirror").first.click()
    page.keyboard.press("Control+a")
    page.keyboard.type("{ posts { items { title } } }")
    page.keyboard.press("Control+Enter")
    answer = page.locator(".graphiql-response")
    expect(answer).to_contain_text("Harbour lights", timeout=15_000)
    screenshot(page, "studio-graphiql.png")
    assert_clean(page)
