"""Content lists in a real browser: see items, sort by clicking a column,
filter with a Mongo filter (and see a bad one explained), batch-publish
three items, reorder a tree by keyboard and by drag and drop (the stored
order checked through the API), an editor without delete rights, and the
list at 390 px."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

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
    next_frames,
    open_page,
    screenshot,
    section,
    wait_until,
)

__all__ = ["browser", "new_context"]

EDITOR = {"content/posts/read": True, "content/posts/create": True, "content/posts/update": True,
          "content/posts/publish": True}


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    """The admin `ann` and `eve`, an editor who may publish but not delete."""
    data = tmp_path_factory.mktemp("lists") / "data"
    make_users(data, {"ann": "admin", "eve": "editor"}, {"editor": EDITOR})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        server = Studio(base, key, {"ann": "admin", "eve": "editor"})
        server.call("PUT", "/api/system/models/posts", {
            "name": "posts", "type": "collection", "indexes": ["views"],
            "fields": [{"name": "title", "type": "text"}, {"name": "views", "type": "number"},
                       {"name": "kind", "type": "select", "opts": {"options": ["news", "guide"]}},
                       {"name": "published", "type": "boolean"}]})
        titles = ["Gardening in spring", "Sailing basics", "A recipe for bread", "Winter tyres", "Tea",
                  "Night skies", "Old maps", "Rivers of Europe"]
        for n, title in enumerate(titles):
            server.call("POST", "/api/content/item/posts", {"data": {
                "title": title, "views": (n * 37) % 100, "kind": "news" if n % 2 else "guide",
                "published": n % 3 == 0, "_state": 0 if n >= 5 else 1}})
        server.call("PUT", "/api/system/models/nav", {"name": "nav", "type": "tree",
                                                      "fields": [{"name": "label", "type": "text"}]})
        for label in ("Home", "About", "Blog"):
            server.call("POST", "/api/content/item/nav", {"data": {"label": label}})
        yield server


def _row_titles(page: Any) -> list[str]:
    return [t.strip() for t in page.locator("table.items tbody th[scope=row] a").all_inner_texts()]


def test_list_sort_and_filter(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    section(page, "Content").click()
    page.get_by_role("link", name="posts", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("posts")
    expect(page.locator(".list-total")).to_have_text("1–8 of 8")
    assert _row_titles(page)[0] == "Gardening in spring"
    page.get_by_role("link", name="views", exact=True).click()
    expect(page.locator("th[aria-sort=ascending]")).to_contain_text("views")
    views = [int(v) for v in page.locator("table.items tbody tr td:nth-child(3)").all_inner_texts()]
    assert views == sorted(views) and len(views) == 8
    assert "sort=views" in page.url  # pushed: reload and back work
    page.get_by_role("link", name="views", exact=True).click()
    expect(page.locator("th[aria-sort=descending]")).to_contain_text("views")
    views = [int(v) for v in page.locator("table.items tbody tr td:nth-child(3)").all_inner_texts()]
    assert views == sorted(views, reverse=True)
    page.reload()
    expect(page.locator("th[aria-sort=descending]")).to_contain_text("views")

    page.get_by_text("Filter", exact=True).click()
    page.get_by_label("Filter as JSON").fill('{"kind": "news", "views": {"$gt": 20}}')
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".list-total")).to_contain_text("of 3")
    assert set(_row_titles(page)) == {"Sailing basics", "Night skies", "Rivers of Europe"}
    screenshot(page, "studio-list.png")
    page.get_by_label("Filter as JSON").fill('{"views": {"$near": 3}}')
    page.get_by_role("button", name="Apply").click()
    expect(page.locator("#filter-error")).to_contain_text("$near")
    expect(page.get_by_label("Filter as JSON")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".list-total")).to_contain_text("of 8")  # shown without the filter it cannot apply
    page.go_back()
    expect(page.locator(".list-total")).to_contain_text("of 3")
    assert_clean(page)


def test_batch_publish_three_items(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/content/posts?filter=" + '{"_state": 0}')
    expect(page.locator(".list-total")).to_have_text("1–3 of 3")
    drafts = _row_titles(page)
    for title in drafts:
        page.get_by_label(f"Select {title}").check()
    page.get_by_role("button", name="Publish", exact=True).click()
    expect(page.locator("#flash")).to_have_text("Published 3 items.")
    expect(page.locator(".list-total")).to_have_text("No items match.")  # back to the same list
    published = {p["title"] for p in studio.call("GET", "/api/content/items/posts")}
    assert set(drafts) <= published and len(published) == 8
    assert_clean(page)


def test_select_all_and_delete_with_confirmation(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("POST", "/api/content/item/posts", {"data": {"title": "Doomed one"}})
    studio.call("POST", "/api/content/item/posts", {"data": {"title": "Doomed two"}})
    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/content/posts")
    page.get_by_label("Search").press_sequentially("doomed")  # searched as one types
    expect(page.locator(".list-total")).to_have_text("1–2 of 2")
    page.get_by_role("link", name="title", exact=True).click()
    expect(page.locator("th[aria-sort=ascending]")).to_contain_text("title")
    page.get_by_label("Select all items on this page").check()
    page.get_by_role("button", name="Delete…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Delete 2 items of posts?")
    page.get_by_role("button", name="Delete", exact=True).click()
    expect(page.locator("#flash")).to_have_text("Deleted 2 items.")
    assert "q=doomed" in page.url and "sort=title" in page.url  # back to the list as it was shown
    assert not [p for p in studio.call("GET", "/api/content/items/posts") if p["title"].startswith("Doomed")]
    assert_clean(page)


def _nav(studio: Studio) -> list[Any]:
    def walk(nodes: list[dict[str, Any]]) -> list[Any]:
        return [(n["label"], walk(n["_children"])) if n["_children"] else n["label"] for n in nodes]
    return walk(studio.call("GET", "/api/content/tree/nav"))


def test_reorder_a_tree_by_keyboard_and_by_drag_and_drop(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/content/nav")
    expect(page.locator("#tree .tree-node")).to_have_count(3)
    # keyboard: focus "Move Blog up", press Enter twice (focus stays on it)
    page.get_by_role("button", name="Move Blog up").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#tree > ul > li").nth(1)).to_contain_text("Blog")
    wait_until(page, "document.activeElement && document.activeElement.isConnected"
                     " && document.activeElement.textContent.includes('Move Blog up')")
    page.keyboard.press("Enter")
    expect(page.locator("#tree > ul > li").first).to_contain_text("Blog")
    assert _nav(studio) == ["Blog", "Home", "About"]
    page.get_by_role("button", name="Indent About").click()  # under Home, the item above
    expect(page.locator('.tree-node[data-id] .tree-node')).to_have_count(1)
    assert _nav(studio) == ["Blog", ("Home", ["About"])]
    screenshot(page, "studio-tree.png")
    page.get_by_role("button", name="Outdent About").click()
    expect(page.locator('.tree-node[data-id] .tree-node')).to_have_count(0)
    assert _nav(studio) == ["Blog", "Home", "About"]

    # drag and drop: About's handle onto the top of Blog's row
    handle = page.locator('.tree-node:has(> .tree-row a:text-is("About")) > .tree-row .tree-handle')
    target = page.locator('.tree-node:has(> .tree-row a:text-is("Blog")) > .tree-row')
    box_from, box_to = handle.bounding_box(), target.bounding_box()
    assert box_from and box_to
    first_row = page.locator("#tree > ul > li:first-child > .tree-row a").first
    page.mouse.move(box_from["x"] + box_from["width"] / 2, box_from["y"] + box_from["height"] / 2)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(box_to["x"] + 40, box_from["y"] + (box_to["y"] + 4 - box_from["y"]) * step / 10)
        # each move handled before the next (Sortable reorders on animation
        # frames): on a loaded machine, moves queued faster than the page
        # handles them were read as a drop into Blog rather than above it
        next_frames(page)
    expect(first_row).to_have_text("About")  # the row is above Blog before it is let go
    page.mouse.up()
    expect(first_row).to_have_text("About")
    deadline = time.monotonic() + 30  # the drop's request is answered well within; a loaded machine is slower
    while _nav(studio)[0] != "About" and time.monotonic() < deadline:
        page.wait_for_timeout(100)  # a poll interval: the loop waits for the stored order
    assert _nav(studio) == ["About", "Blog", "Home"]
    page.reload()
    expect(page.locator("#tree > ul > li").first).to_contain_text("About")
    assert_clean(page)


def test_editor_without_delete_rights(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio, "eve")
    page.goto(studio.base + "/studio/content/posts")
    expect(page.get_by_role("button", name="Publish", exact=True)).to_be_hidden()  # until an item is selected
    page.locator('input[name="ids"]').first.check()
    expect(page.get_by_role("button", name="Publish", exact=True)).to_be_visible()
    expect(page.get_by_role("button", name="Delete…")).to_have_count(0)
    victim = studio.call("GET", "/api/content/items/posts")[0]
    status = page.evaluate(
        """async (id) => {
            const token = document.querySelector('meta[name="csrf-token"]').content;
            const body = new URLSearchParams({csrf: token, action: "delete", confirm: "yes", ids: id});
            const response = await fetch("/studio/content/posts/batch", {method: "POST", body});
            return response.status;
        }""", victim["_id"])
    assert status == 403
    assert studio.call("GET", f"/api/content/item/posts/{victim['_id']}")["_id"] == victim["_id"]
    assert_clean(page)


def test_the_list_on_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/content/posts")
    expect(page.locator(".list-total")).to_contain_text("of ")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the page is {width} px wide on a 390 px screen"
    page.get_by_label("Search").fill("sailing")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".list-total")).to_have_text("1–1 of 1")
    page.get_by_label("Search").fill("")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".list-total")).not_to_have_text("1–1 of 1")
    screenshot(page, "studio-list-phone.png")
    assert_clean(page)
