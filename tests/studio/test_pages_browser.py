"""Pages, menus and page settings in a real browser: move a page under
another (by the "Move…" form, by keyboard and by drag and drop) and see
the route changes before they are saved; edit a page with a layout
component and see the API's answer; edit a menu with a German link title;
save the page settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.studio.browsing import (
    Studio,
    assert_clean,
    browser,
    login,
    new_context,
    next_frames,
    open_page,
    screenshot,
    scripts_ran,
    studio,
)

__all__ = ["browser", "new_context", "studio"]


def _page(studio: Studio, **data: Any) -> dict[str, Any]:
    return studio.call("POST", "/api/pages/page", {"data": data})  # type: ignore[no-any-return]


def _node(page: dict[str, Any]) -> str:
    return '.tree-node[data-id="' + page["_id"] + '"]'


def _route(studio: Studio, page_id: str) -> str:
    return str(studio.call("GET", f"/api/pages/page/{page_id}")["_r"])


def _site(studio: Studio) -> dict[str, dict[str, Any]]:
    studio.call("PUT", "/api/system/locales", [{"i18n": "de", "name": "Deutsch"}])
    pages = {p["_id"]: p for p in studio.call("GET", "/api/pages/pages")}
    for page in list(pages.values()):
        if page.get("_pid") is None:
            studio.call("DELETE", f"/api/pages/page/{page['_id']}")
    home = _page(studio, title="Home", slug="")
    about = _page(studio, title="About", title_de="Über uns", slug_de="ueber-uns")
    team = _page(studio, title="Team", title_de="Mannschaft")
    people = _page(studio, title="People", _pid=team["_id"])
    blog = _page(studio, title="Blog")
    return {"home": home, "about": about, "team": team, "people": people, "blog": blog}


def test_move_a_page_under_another_and_see_the_routes_change(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    pages = _site(studio)
    _page(studio, title="Old news", _state=0, _pid=pages["blog"]["_id"])
    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Pages", exact=True).click()
    expect(page.get_by_role("heading", name="Pages", exact=True)).to_be_visible()
    tree = page.locator("#tree")
    expect(tree).to_contain_text("/team")
    screenshot(page, "studio-pages-tree.png")

    page.get_by_role("link", name="Move Team under another page").click()
    page.get_by_label("Move under").select_option(label="About — /about")
    page.get_by_role("button", name="Move", exact=True).click()
    expect(page.get_by_role("heading", name="Move “Team” under About?")).to_be_visible()
    plan = page.locator(".route-changes")
    for old, new in (("/team", "/about/team"), ("/team/people", "/about/team/people"),
                     ("/ueber-uns/mannschaft", "")):
        if new:
            expect(plan.locator("tr", has_text=old).first).to_contain_text(new)
    expect(plan).to_contain_text("/ueber-uns/mannschaft")  # the German route after the move
    screenshot(page, "studio-pages-move-plan.png")
    assert _route(studio, pages["people"]["_id"]) == "/team/people"  # nothing stored yet
    page.get_by_role("button", name="Move and change routes").click()
    expect(page.locator("#flash")).to_contain_text("Moved “Team”")
    scripts_ran(page)  # the keyboard's moves below are htmx forms: set up by now
    expect(page.locator(_node(pages["people"]) + " .route").first).to_have_text("/about/team/people")
    assert _route(studio, pages["people"]["_id"]) == "/about/team/people"

    # by keyboard: outdent Team again (after its parent), confirm from the keyboard
    outdent = page.get_by_role("button", name="Outdent Team")
    outdent.focus()
    page.keyboard.press("Enter")
    confirm = page.get_by_role("button", name="Move and change routes")
    expect(confirm).to_be_focused()
    expect(page.locator("#move-plan")).to_contain_text("/about/team/people")
    page.keyboard.press("Enter")
    expect(page.locator(_node(pages["team"]) + " > .tree-row .route")).to_have_text("/team")
    assert _route(studio, pages["people"]["_id"]) == "/team/people"

    # cancel leaves everything where it was
    page.get_by_role("button", name="Indent Team").click()
    page.get_by_role("link", name="Cancel").click()
    expect(page.locator("#move-plan")).to_have_count(0)
    assert _route(studio, pages["team"]["_id"]) == "/team"

    # drag and drop: Blog onto the top of About's (empty) list of children
    handle = page.locator(_node(pages["blog"]) + " > .tree-row .tree-handle")
    target = page.locator(_node(pages["about"]) + " > .tree-row")
    box = handle.bounding_box()
    goal = target.bounding_box()
    assert box and goal
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    for step in range(1, 16):
        page.mouse.move(goal["x"] + 60, box["y"] + (goal["y"] + goal["height"] + 4 - box["y"]) * step / 15)
        next_frames(page)  # each move handled before the next, not queued and read late on a loaded machine
    expect(page.locator(_node(pages["about"]) + " " + _node(pages["blog"]))).to_have_count(1)  # before it is let go
    page.mouse.up()
    expect(page.locator("#move-plan")).to_contain_text("/about/blog")
    page.get_by_role("button", name="Move and change routes").click()
    expect(page.locator(_node(pages["blog"]) + " > .tree-row .route")).to_have_text("/about/blog")
    assert _route(studio, pages["blog"]["_id"]) == "/about/blog"
    assert_clean(page)


def test_edit_a_page_with_a_component_and_see_its_api_answer(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    pages = _site(studio)
    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Pages", exact=True).click()
    page.get_by_role("link", name="About", exact=True).click()
    expect(page.get_by_role("heading", name="About", exact=True)).to_be_visible()
    page.get_by_label("Slug (de)").fill("ueber uns")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator(".field-error", has_text="may not contain")).to_be_visible()
    scripts_ran(page)  # "Add component" below is an htmx button: set up by now
    page.get_by_label("Slug (de)").fill("wir")
    page.get_by_label("SEO title", exact=True).fill("About us")
    page.get_by_role("button", name="Add component").click()
    expect(page.get_by_label("Component 1", exact=True)).to_be_focused()
    page.get_by_label("Component 1", exact=True).fill("text")
    page.get_by_label("Data of component 1 (JSON object)").fill('{"text": "We make Quire."}')
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#flash")).to_contain_text("Saved “About”")
    page.get_by_text("API answer").click()
    expect(page.locator("#api-json")).to_contain_text('"component": "text"')
    page.get_by_role("link", name="de", exact=True).click()
    expect(page.locator("#api-json")).to_contain_text('"_r": "/wir"')
    screenshot(page, "studio-pages-editor.png")
    stored = studio.call("GET", f"/api/pages/page/{pages['about']['_id']}")
    assert stored["layout"] == [{"component": "text", "data": {"text": "We make Quire."}}]
    assert stored["seo"] == {"title": "About us"}

    page.get_by_role("link", name="Page settings").first.click()
    page.get_by_label("Site title", exact=True).fill("Quire Demo")
    page.get_by_label("Site title (de)").fill("Quire-Vorführung")
    page.get_by_role("button", name="Save settings").click()
    expect(page.locator("#flash")).to_contain_text("Page settings saved")
    screenshot(page, "studio-pages-settings.png")
    assert studio.call("GET", "/api/pages/settings?locale=de")["seo"]["title"] == "Quire-Vorführung"
    assert_clean(page)


def test_edit_a_menu_with_a_german_link_title(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    pages = _site(studio)
    for menu in studio.call("GET", "/api/pages/menus"):
        studio.call("DELETE", f"/api/pages/menu/{menu['name']}")
    page = open_page(new_context({"width": 1280, "height": 1400}))  # the whole menu in view, for the drag
    login(page, studio)
    page.get_by_role("link", name="Menus", exact=True).click()
    page.get_by_label("Name").fill("main")
    page.get_by_label("Label").fill("Main menu")
    page.get_by_role("button", name="Create menu").click()
    expect(page.get_by_role("heading", name="Main menu")).to_be_visible()

    page.get_by_role("button", name="Add link").click()
    expect(page.locator("#link-0-title")).to_be_focused()
    page.locator("#link-0-page").select_option(label="About — /about")
    page.locator("#link-0-title-de").fill("Wir über uns")
    page.get_by_role("button", name="Add link").click()
    page.locator("#link-1-page").select_option(label="Team — /team")
    page.get_by_role("button", name="Add link").click()
    page.locator("#link-2-url").fill("https://example.com/docs")
    page.locator("#link-2-title").fill("Docs")
    page.locator("#link-2-title-de").fill("Doku")
    page.get_by_role("button", name="Indent link 2").click()  # Team under About
    expect(page.locator("#link-0 #link-1")).to_have_count(1)
    screenshot(page, "studio-pages-menu.png")
    page.get_by_role("button", name="Save menu").click()
    expect(page.locator("#flash")).to_contain_text("Menu main saved")

    menu = studio.call("GET", "/api/pages/menu/main?locale=de")
    assert [(lk["title"], lk["route"]) for lk in menu["links"]] == [("Wir über uns", "/ueber-uns"),
                                                                     ("Doku", "https://example.com/docs")]
    assert menu["links"][0]["children"][0]["title"] == "Mannschaft"
    english = studio.call("GET", "/api/pages/menu/main")
    assert english["links"][0]["title"] == "About"

    # drag the Docs link to the top; the depth fields follow
    handle = page.locator("#link-2 > .link-row > .tree-handle")
    first = page.locator("#link-0 > .link-row")
    box = handle.bounding_box()
    goal = first.bounding_box()
    assert box and goal
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    for step in range(1, 21):
        page.mouse.move(box["x"] + 5, box["y"] + (goal["y"] + 2 - box["y"]) * step / 20)
        next_frames(page)  # each move handled before the next, not queued and read late on a loaded machine
    page.mouse.move(box["x"] + 5, goal["y"] + 1)
    next_frames(page)
    # Docs is the first top-level link before it is let go
    expect(page.locator("#menu-tree > ol.menu-links > li.menu-link").first).to_have_id("link-2")
    page.mouse.up()
    with page.expect_navigation():  # the page shows "Menu main saved" already: the saved one must have come
        page.get_by_role("button", name="Save menu").click()
    expect(page.locator("#flash")).to_contain_text("Menu main saved")
    menu = studio.call("GET", "/api/pages/menu/main")
    assert [lk["title"] for lk in menu["links"]] == ["Docs", "About"]
    assert menu["links"][1]["children"][0]["route"] == "/team"  # still under About, as dragged with it
    page.get_by_role("link", name="Menus", exact=True).click()
    screenshot(page, "studio-pages-menus.png")
    assert_clean(page)
    assert pages


def test_the_tree_and_the_editor_fit_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    from tests.studio.browsing import NARROW

    pages = _site(studio)
    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/pages")
    expect(page.get_by_role("button", name="Outdent People")).to_be_visible()
    for path in ("/studio/pages", f"/studio/pages/{pages['team']['_id']}", "/studio/pages/settings"):
        page.goto(studio.base + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= NARROW["width"], (path, width)
    page.goto(studio.base + "/studio/pages")
    screenshot(page, "studio-pages-tree-narrow.png")
    assert_clean(page)
