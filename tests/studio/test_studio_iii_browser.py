"""Studio III in a real browser, at 1280 px and on a 390 px phone: the
content first on a phone (the sections behind a menu button), the visual
filter, and the focus kept on the control used."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.studio.browsing import (
    NARROW,
    WIDE,
    Studio,
    assert_clean,
    browser,
    login,
    new_context,
    open_page,
    screenshot,
    scripts_ran,
    section,
    studio,
    wait_until,
)

__all__ = ["browser", "new_context", "studio"]

FIELDS = [{"name": "title", "type": "text", "label": "Title"}, {"name": "views", "type": "number", "label": "Views"},
          {"name": "kind", "type": "select", "label": "Kind", "opts": {"options": ["news", "blog"]}},
          {"name": "body", "type": "wysiwyg", "label": "Body"}]


@pytest.fixture(scope="module")
def posts(studio: Studio) -> Studio:
    studio.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection", "fields": FIELDS})
    for n in range(25):
        studio.call("POST", "/api/content/item/posts", {"data": {"title": f"Post {n:02d}", "views": n * 10,
                                                                 "kind": "news" if n % 2 else "blog"}})
    return studio


def _top(page: Any, selector: str) -> float:
    return float(page.evaluate(f"document.querySelector({selector!r}).getBoundingClientRect().bottom"))


def test_on_a_phone_the_content_comes_first_and_the_sections_open_from_a_menu(
        posts: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context(NARROW))
    login(page, posts)
    page.goto(posts.base + "/studio/content/posts")
    # the first row of the list, whole, on the first screen of 844 px
    assert _top(page, "table.items tbody tr") <= NARROW["height"]
    sections = page.get_by_role("navigation", name="Sections")
    expect(sections).to_be_hidden()
    menu = page.get_by_role("button", name="Menu")
    expect(menu).to_have_attribute("aria-expanded", "false")
    menu.click()
    expect(sections).to_be_visible()
    expect(menu).to_have_attribute("aria-expanded", "true")
    assert page.evaluate("document.activeElement.closest('#sections') !== null")  # the first section has the focus
    screenshot(page, "studio-phone-menu.png")
    page.keyboard.press("Escape")
    expect(sections).to_be_hidden()
    expect(menu).to_be_focused()
    menu.press("Enter")
    sections.get_by_role("link", name="Assets").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Assets")
    page.goto(posts.base + "/studio/content/posts")

    # a new item: its first field on the first screen, with the focus
    page.get_by_role("link", name="New item").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("New item")
    scripts_ran(page)
    title = page.get_by_label("Title")
    expect(title).to_be_focused()
    assert _top(page, "#f-title, [name='title']") <= NARROW["height"]
    assert_clean(page)


def test_wide_the_sections_stay_beside_the_page(posts: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, posts)
    page.goto(posts.base + "/studio/content/posts")
    expect(page.get_by_role("navigation", name="Sections")).to_be_visible()
    expect(page.get_by_role("button", name="Menu")).to_be_hidden()
    page.get_by_role("link", name="New item").click()
    scripts_ran(page)
    expect(page.get_by_label("Title")).to_be_focused()
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_the_visual_filter_builds_conditions_and_explains_a_bad_one_in_place(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(posts.base + "/studio/content/posts")
    page.get_by_text("Filter", exact=True).click()
    page.get_by_label("Field of condition 1").select_option(label="Views")
    operator = page.get_by_label("Operator of condition 1")
    # a number's operators, not a text's
    assert "is at least" in operator.inner_text() and "contains" not in operator.inner_text()
    operator.select_option(label="is at least")
    page.get_by_label("Value of condition 1").fill("200")
    page.get_by_role("button", name="Add a condition").click()
    expect(page.get_by_label("Field of condition 2")).to_be_focused()
    page.get_by_label("Field of condition 2").select_option(label="Kind")
    page.get_by_label("Operator of condition 2").select_option(label="is")
    page.get_by_label("Value of condition 2").fill("news")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".list-total")).to_have_text("1–2 of 2")  # 210 and 230
    assert "w=views" in page.url and "o=gte" in page.url  # a link to keep
    if viewport is WIDE:
        screenshot(page, "studio-list-filter.png")

    # a typo: explained beside the condition, the list keeps what the other finds
    page.get_by_label("Value of condition 1").fill("two hundred")
    page.get_by_label("Value of condition 1").press("Enter")
    expect(page.locator("#c-error-1")).to_contain_text("“two hundred” is not a number")
    expect(page.get_by_label("Value of condition 1")).to_have_attribute("aria-invalid", "true")
    expect(page.locator(".list-total")).to_have_text("1–12 of 12")  # the news posts
    # the same for the JSON filter of experts
    page.get_by_label("Filter as JSON").fill('{"views": {"$gt": 100}')
    page.get_by_label("Filter as JSON").press("Enter")
    expect(page.locator("#filter-error")).to_contain_text("the list is shown without it")
    expect(page.locator(".list-total")).to_have_text("1–12 of 12")
    # removing a condition applies at once
    page.get_by_role("button", name="Remove condition 1").click()
    wait_until(page, "!location.search.includes('o=gte')")
    expect(page.locator(".list-total")).to_have_text("1–12 of 12")
    assert "w=&" not in page.url  # the empty row stays out of the address
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_the_focus_stays_on_the_control_used(posts: Studio, new_context: Callable[..., Any],
                                             viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(posts.base + "/studio/content/posts")
    sort = page.get_by_role("link", name="Views", exact=True)
    sort.focus()
    page.keyboard.press("Enter")
    expect(page.locator("th[aria-sort=ascending]")).to_contain_text("Views")
    expect(page.get_by_role("link", name="Views", exact=True)).to_be_focused()
    page.keyboard.press("Enter")  # again, from the keyboard: the other way round
    expect(page.locator("th[aria-sort=descending]")).to_contain_text("Views")
    expect(page.get_by_role("link", name="Views", exact=True)).to_be_focused()

    page.get_by_role("link", name="Next →").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".list-total")).to_have_text(re.compile(r"^21–\d+ of \d+$"))
    # no "Next" on the last page: the focus goes to the other page link
    expect(page.get_by_role("link", name="← Previous")).to_be_focused()

    search = page.get_by_label("Search")
    search.focus()
    page.keyboard.type("Post 1")
    expect(page.locator(".list-total")).to_contain_text("of ")
    wait_until(page, "location.search.includes('q=Post')")
    expect(search).to_be_focused()
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_times_are_shown_and_typed_in_the_users_own_zone(posts: Studio, new_context: Callable[..., Any],
                                                          viewport: dict[str, int]) -> None:
    """The browser is in Berlin. Unchosen, the studio uses the browser's
    zone; chosen (New York), every time is shown and typed in it and says
    so, and the schedule is stored as the UTC moment of the typed time."""
    import datetime as dt
    import zoneinfo

    from playwright.sync_api import expect

    item = posts.call("POST", "/api/content/item/posts", {"data": {"title": f"Timed {viewport['width']}", "_state": 0}})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/posts/item/{item['_id']}")
    page.get_by_text("Schedule", exact=True).click()
    expect(page.get_by_label("Publish at", exact=False).first).to_be_visible()
    assert "Europe/Berlin" in page.locator("label[for=publish-at]").inner_text()

    page.get_by_role("link", name="ann").click()  # the user's own settings, from the bar
    expect(page.get_by_role("heading", level=1)).to_have_text("Your settings")
    expect(page.get_by_label("Show and type times in")).to_contain_text("Your browser's time zone (Europe/Berlin)")
    page.get_by_label("Show and type times in").select_option("America/New_York")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#flash")).to_contain_text("America/New_York")

    page.goto(f"{posts.base}/studio/content/posts/item/{item['_id']}")
    page.get_by_text("Schedule", exact=True).click()
    assert "America/New_York" in page.locator("label[for=publish-at]").inner_text()
    page.locator("#publish-at").fill("2030-07-01T10:00")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#flash")).to_be_visible()
    # (an unpublished item is read by the export with every state)
    stored = posts.call("GET", "/api/content/export/posts?format=json&states=all&filter=%7B%22_id%22%3A%22"
                        f"{item['_id']}%22%7D")[0]
    wanted = dt.datetime(2030, 7, 1, 10, 0, tzinfo=zoneinfo.ZoneInfo("America/New_York"))
    assert stored["_publish_at"] == int(wanted.timestamp())  # 14:00 UTC (summer time)
    page.get_by_text("Schedule", exact=True).click()
    expect(page.locator("#publish-at")).to_have_value("2030-07-01T10:00")
    # the times of the page name the zone they are in
    modified = page.locator("time[data-unix]").first
    expect(modified).to_contain_text("EST")
    assert modified.get_attribute("title") == "America/New_York"
    page.goto(posts.base + "/studio/me")
    page.get_by_label("Show and type times in").select_option("")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#flash")).to_contain_text("Europe/Berlin")
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_labels_follow_names_and_preview_addresses_are_set_in_the_model_builder(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"stories{viewport['width']}"
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(posts.base + "/studio/models/new")
    scripts_ran(page)
    page.get_by_label("Model name").fill(name)
    first = page.locator("#fields > li.field-row").first
    first.locator(".name-input").fill("headline")  # the default "title", renamed before a label was typed
    expect(first.locator(".row-name")).to_have_text("Headline")
    expect(first.locator(".label-input")).to_have_attribute("placeholder", "Headline")
    page.get_by_label("Field of type", exact=True).select_option("datetime")
    page.get_by_role("button", name="Add field").click()
    added = page.locator("#fields > li.field-row").nth(1)
    added.locator(".name-input").fill("publishedAt")
    expect(added.locator(".row-name")).to_have_text("Published at")
    page.get_by_label("Preview addresses").fill("Website = ftp://site.example/{headline}")
    page.get_by_role("button", name="Create model").click()
    expect(page.locator("#preview-error")).to_contain_text("http(s) address")  # explained in place
    page.get_by_label("Preview addresses").fill("Website = http://127.0.0.1:9/stories/{headline}?preview={token}")
    page.get_by_role("button", name="Create model").click()
    expect(page.locator("#flash")).to_have_text(f"Created model {name}.")
    model = posts.call("GET", f"/api/system/models/{name}")
    assert [f["label"] for f in model["fields"]] == ["Headline", "Published at"]
    assert model["preview"] == [{"name": "Website", "uri": "http://127.0.0.1:9/stories/{headline}?preview={token}"}]
    # saved again unchanged: the addresses stay (the builder used to drop them)
    page.get_by_role("button", name="Save model").click()
    expect(page.locator("#flash")).to_have_text(f"Saved model {name}.")
    assert posts.call("GET", f"/api/system/models/{name}")["preview"] == model["preview"]

    item = posts.call("POST", f"/api/content/item/{name}", {"data": {"headline": "Tides"}})
    page.goto(f"{posts.base}/studio/content/{name}/item/{item['_id']}")
    expect(page.get_by_label("Headline")).to_have_value("Tides")
    link = page.get_by_role("link", name="Open preview")
    expect(link).to_have_attribute("href", re.compile(r"^http://127\.0\.0\.1:9/stories/Tides\?preview=[\w.-]+$"))
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_history_shows_linked_items_by_title_pictures_and_readable_text(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    from tests.assets.helpers import solid
    from tests.studio.test_assets_browser import studio_upload

    name = f"notes{viewport['width']}"
    posts.call("PUT", f"/api/system/models/{name}", {"name": name, "type": "collection", "fields": [
        {"name": "title", "type": "text"}, {"name": "related", "type": "contentItemLink", "opts": {"link": "posts"}},
        {"name": "picture", "type": "asset"}, {"name": "body", "type": "wysiwyg"}]})
    first, second = posts.call("GET", "/api/content/items/posts?limit=2&sort=%7B%22title%22%3A1%7D")
    one, two = studio_upload(posts, "one.png", solid(9, 9)), studio_upload(posts, "two.png", solid(12, 8))
    item = posts.call("POST", f"/api/content/item/{name}", {"data": {
        "title": "Note", "related": {"_id": first["_id"]}, "picture": {"_id": one["_id"]},
        "body": "<p>The tide comes <strong>in</strong> at noon.</p>"}})
    posts.call("POST", f"/api/content/item/{name}", {"data": {
        "_id": item["_id"], "related": {"_id": second["_id"]}, "picture": {"_id": two["_id"]},
        "body": "<p>The tide comes <strong>in</strong> at dusk.</p>"}})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/{name}/item/{item['_id']}/history/2")
    rows = page.locator("table.side-by-side tbody tr")
    related = rows.filter(has=page.get_by_role("rowheader", name="related"))
    expect(related.locator("td.before").get_by_role("link", name=first["title"])).to_have_attribute(
        "href", f"/studio/content/posts/item/{first['_id']}")
    expect(related.locator("td.after").get_by_role("link", name=second["title"])).to_be_visible()
    picture = rows.filter(has=page.get_by_role("rowheader", name="picture"))
    for cell in ("td.before", "td.after"):
        image = picture.locator(f"{cell} img")
        expect(image).to_be_visible()
        wait_until(page, f"document.querySelectorAll('{cell} img')[0].naturalWidth > 0")
    body = rows.filter(has=page.get_by_role("rowheader", name="body"))
    expect(body.locator("td.before")).to_have_text("The tide comes in at noon.")
    expect(body.locator("td.before del")).to_have_text("noon.")
    expect(body.locator("td.after ins")).to_have_text("dusk.")
    assert "<p>" not in body.inner_text() and "_id" not in page.locator("table.side-by-side").inner_text()
    if viewport is WIDE:
        screenshot(page, "studio-history-diff.png")
    assert_clean(page)


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, NARROW], ids=["wide", "phone"])
def test_pickers_open_in_a_dialog_that_fits_the_screen(posts: Studio, new_context: Callable[..., Any],
                                                       viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"cards{viewport['width']}"
    fields = [{"name": "title", "type": "text"}] + [{"name": f"line{n}", "type": "longtext"} for n in range(8)]
    fields.append({"name": "related", "type": "contentItemLink", "label": "Related", "opts": {"link": "posts"}})
    posts.call("PUT", f"/api/system/models/{name}", {"name": name, "type": "collection", "fields": fields})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/{name}/item")
    scripts_ran(page)
    related = page.locator("[data-ref=f-related]")
    related.get_by_role("button", name="Choose…").click()
    dialog = page.get_by_role("dialog", name=re.compile("Link an item"))
    expect(dialog).to_be_visible()
    expect(page.get_by_label("Search posts", exact=True)).to_be_focused()
    box = dialog.bounding_box()
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()
    expect(related.get_by_role("button", name="Choose…")).to_be_focused()
    related.get_by_role("button", name="Choose…").press("Enter")
    page.get_by_label("Search posts", exact=True).fill("Post 07")
    dialog.get_by_role("button", name="Post 07").click()
    expect(dialog).to_be_hidden()
    expect(related.locator("[data-ref-label]")).to_have_text("Post 07")
    expect(related.get_by_role("button", name="Choose…")).to_be_focused()
    if viewport is NARROW:
        related.get_by_role("button", name="Choose…").click()
        screenshot(page, "studio-picker-phone.png", full_page=False)
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_a_file_the_library_has_is_offered_instead_of_a_second_copy(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int], tmp_path: Any) -> None:
    from playwright.sync_api import expect

    from tests.assets.helpers import solid

    picture = tmp_path / f"harbour{viewport['width']}.png"
    picture.write_bytes(solid(30 + viewport["width"] % 7, 20))

    def copies() -> int:
        return sum(a["title"] == picture.name for a in posts.call("GET", "/api/assets?limit=1000"))

    name = f"photos{viewport['width']}"
    posts.call("PUT", f"/api/system/models/{name}", {"name": name, "type": "collection", "fields": [
        {"name": "title", "type": "text"}, {"name": "image", "type": "asset", "label": "Image"}]})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/{name}/item")
    scripts_ran(page)
    image = page.locator("[data-ref=f-image]")
    image.locator("input[data-upload]").set_input_files(str(picture))
    expect(image.locator("[data-ref-label]")).to_have_text(picture.name)
    assert copies() == 1
    page.goto(f"{posts.base}/studio/content/{name}/item")
    scripts_ran(page)
    image.locator("input[data-upload]").set_input_files(str(picture))
    expect(image).to_contain_text("The library has this file already")
    expect(image.get_by_role("button", name="Use the one in the library")).to_be_focused()
    image.get_by_role("button", name="Use the one in the library").click()
    expect(image.locator("[data-ref-label]")).to_have_text(picture.name)
    assert copies() == 1

    # in the library: told, and stored again only when asked
    page.goto(posts.base + "/studio/assets")
    page.locator("#upload-files").set_input_files(str(picture))
    row = page.locator("#upload-list li").last
    expect(row).to_contain_text("Already in the library as")
    assert copies() == 1
    row.get_by_role("button", name=f"Upload {picture.name} again").click()
    expect(row.get_by_role("link", name="Stored")).to_be_visible()
    assert copies() == 2
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_translation_cells_grow_with_their_text(posts: Studio, new_context: Callable[..., Any],
                                                viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    long_text = "The harbour opens at dawn and closes at dusk; boats moor on the east quay. " * 5
    project = f"app{viewport['width']}"
    posts.call("PUT", f"/api/l10n/project/{project}", {"label": project, "locales": ["en", "de"], "keys": {
        "intro": {"en": long_text, "de": ""}, "short": {"en": "Hi", "de": "Hallo"}}})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/l10n/{project}")
    scripts_ran(page)
    intro = page.get_by_label("en: intro")
    expect(intro).to_have_value(long_text)

    def fits(label: str) -> bool:
        return bool(page.evaluate(
            "(l) => { const a = [...document.querySelectorAll('.l10n-cell textarea')].find("
            "t => t.getAttribute('aria-label') === l); return a.scrollHeight <= a.clientHeight + 1; }", label))

    assert fits("en: intro")  # the whole text shown, not its first line
    single = page.get_by_label("de: short").bounding_box()
    assert single is not None and intro.bounding_box()["height"] > 2 * single["height"]  # type: ignore[index]
    german = page.get_by_label("de: intro")
    german.fill("Der Hafen öffnet im Morgengrauen. " * 8)
    assert fits("de: intro")
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_a_list_is_saved_as_a_view_and_opened_again(posts: Studio, new_context: Callable[..., Any],
                                                   viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"News {viewport['width']}"
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(posts.base + "/studio/content/posts")
    scripts_ran(page)
    page.get_by_text("Filter", exact=True).click()
    page.get_by_label("Field of condition 1").select_option(label="Kind")
    page.get_by_label("Value of condition 1").fill("news")
    page.get_by_role("button", name="Apply").click()
    expect(page.locator(".list-total")).to_have_text("1–12 of 12")
    page.get_by_role("link", name="Views", exact=True).click()  # sorted: also kept
    expect(page.locator("th[aria-sort=ascending]")).to_contain_text("Views")
    if viewport is NARROW:  # another list than the wide test's view (two views of one list: the first is marked)
        page.get_by_role("link", name="Views", exact=True).click()
        expect(page.locator("th[aria-sort=descending]")).to_contain_text("Views")
    page.get_by_text("Save this view").click()
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Who sees it").select_option(label="Only me")
    page.get_by_role("button", name="Save view").click()
    expect(page.locator("#flash")).to_have_text(f"Saved the view “{name}”.")
    views = page.get_by_role("navigation", name="Saved views")
    expect(views.get_by_role("link", name=name)).to_have_attribute("aria-current", "page")

    views.get_by_role("link", name="All items").click()
    expect(page.locator(".list-total")).to_have_text(re.compile(r"^1–20 of \d+$"))  # (other tests add posts)
    views.get_by_role("link", name=name).click()
    expect(page.locator(".list-total")).to_have_text("1–12 of 12")
    expect(page.locator("th[aria-sort]")).to_contain_text("Views")
    page.get_by_text("Save this view").click()
    page.get_by_role("button", name=f"Delete the view “{name}”").click()
    expect(page.locator("#flash")).to_have_text(f"Deleted the view “{name}”.")
    expect(views.get_by_role("link", name=name)).to_have_count(0)
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_bulk_edit_of_selected_items_and_of_the_whole_list_with_undo(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"tasks{viewport['width']}"
    posts.call("PUT", f"/api/system/models/{name}", {"name": name, "type": "collection", "fields": [
        {"name": "title", "type": "text", "label": "Title"}, {"name": "done", "type": "boolean", "label": "Done"},
        {"name": "tags", "type": "tags", "label": "Tags"}]})
    for n in range(30):
        posts.call("POST", f"/api/content/item/{name}", {"data": {"title": f"Task {n:02d}", "done": False}})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/{name}")
    scripts_ran(page)
    page.get_by_label("Select Task 00").check()
    page.get_by_label("Select Task 01").check()
    page.get_by_role("button", name="Edit a field…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Edit a field of the 2 selected items")
    page.get_by_label("Field", exact=True).select_option(label="Done")
    page.get_by_label("Value", exact=True).fill("yes")
    page.get_by_role("button", name="Review the change").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Set Done: yes on 2 items?")
    page.get_by_role("button", name="Edit 2 items").click()
    expect(page.locator("#flash")).to_have_text("Changed 2 items.")
    done = [i["title"] for i in posts.call("GET", f"/api/content/items/{name}?filter=%7B%22done%22%3Atrue%7D")]
    assert sorted(done) == ["Task 00", "Task 01"]

    # every item of the list (30: more than its first page), a tag added to each
    page.get_by_role("link", name="Back to the list").click()
    page.get_by_role("button", name="Edit a field of all 30 items…").click()
    page.get_by_label("Field", exact=True).select_option(label="Tags (a list)")
    page.get_by_label("Add the value to it (lists and tags)").check()
    page.get_by_label("Value", exact=True).fill("q3")
    page.get_by_role("button", name="Review the change").click()
    page.get_by_role("button", name="Edit 30 items").click()
    expect(page.locator("#flash")).to_have_text("Changed 30 items.")
    tagged = posts.call("GET", f"/api/content/items/{name}?limit=100")
    assert all(i["tags"] == ["q3"] for i in tagged) and len(tagged) == 30
    page.get_by_role("button", name="Undo this edit").click()
    expect(page.locator("#flash")).to_have_text("30 items got their value back.")
    assert all(not i.get("tags") for i in posts.call("GET", f"/api/content/items/{name}?limit=100"))
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_two_editors_see_each_other_and_one_takes_the_lock_over(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    item = posts.call("POST", "/api/content/item/posts", {"data": {"title": f"Shared {viewport['width']}"}})
    address = f"{posts.base}/studio/content/posts/item/{item['_id']}"
    first, second = open_page(new_context(viewport)), open_page(new_context(viewport))
    for page in (first, second):
        login(page, posts)
    first.goto(address)
    scripts_ran(first)
    deadline = time.monotonic() + 10  # the editor says it is open once its script ran
    while not posts.call("GET", f"/api/content/lock/posts/{item['_id']}")["locked"]:
        assert time.monotonic() < deadline, "the first editor never took the lock"
        time.sleep(0.1)
    expect(first.locator("#presence")).to_be_hidden()  # alone: nothing to say

    second.goto(address)
    scripts_ran(second)
    expect(second.locator("#presence")).to_contain_text("ann is editing this item")
    take = second.get_by_role("button", name="Take over editing")
    expect(take).to_be_visible()
    # the first editor learns of the second through its event stream
    expect(first.locator("#presence")).to_contain_text("also here: ann", timeout=5000)
    take.click()
    expect(first.locator("#presence-notice")).to_contain_text("ann took over editing this item", timeout=5000)
    expect(first.locator("#presence")).to_contain_text("ann is editing this item")
    expect(second.get_by_role("button", name="Take over editing")).to_be_hidden()
    lock = posts.call("GET", f"/api/content/lock/posts/{item['_id']}")
    assert lock["locked"] is True and lock["by"] == "ann" and isinstance(lock["since"], int)
    if viewport is WIDE:
        screenshot(first, "studio-editor-lock.png", full_page=False)
    # the lock is advice: the first editor may still save, guarded by the revision
    first.get_by_label("title").fill("Saved anyway")
    first.get_by_role("button", name="Save draft").click()
    expect(first.locator("#flash")).to_be_visible()
    second.close()  # leaves (its page's beacon): the lock passes back
    # the beacon, the server and the first editor's event stream in turn: on
    # a busy machine that has taken more than 5 s (failing, a fresh clone's run)
    expect(first.locator("#presence")).to_be_hidden(timeout=15000)
    assert_clean(first)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_the_preview_beside_the_editor_follows_unsaved_edits(posts: Studio, new_context: Callable[..., Any],
                                                            viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"pages{viewport['width']}"
    posts.call("PUT", f"/api/system/models/{name}", {
        "name": name, "type": "collection",
        "fields": [{"name": "title", "type": "text", "label": "Title"}, {"name": "body", "type": "longtext"}],
        "preview": [{"name": "Example site",
                     "uri": posts.base + "/demo/preview?model={model}&id={id}&token={token}"}]})
    item = posts.call("POST", f"/api/content/item/{name}", {"data": {"title": "Saved title", "body": "Saved body"}})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/{name}/item/{item['_id']}?preview=1")
    scripts_ran(page)
    frame = page.frame_locator(".preview-pane iframe")
    expect(frame.locator("#title")).to_have_text("Saved title")
    expect(page.locator(".preview-pane .preview-mode")).to_contain_text("Live")  # the page said it listens
    page.get_by_label("Title").fill("Typed, not saved")
    expect(frame.locator("#title")).to_have_text("Typed, not saved", timeout=5000)
    expect(frame.locator("#mode")).to_contain_text("Live")
    page.get_by_label("body").fill("A body being written")
    expect(frame.locator("#body")).to_have_text("A body being written", timeout=5000)
    assert posts.call("GET", f"/api/content/item/{name}/{item['_id']}")["title"] == "Saved title"  # nothing stored
    if viewport is WIDE:
        screenshot(page, "studio-live-preview.png", full_page=False)
    page.on("dialog", lambda dialog: dialog.accept())  # leaving with changes not saved asks first
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_conditional_fields_show_and_are_required_as_their_rules_say(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"events{viewport['width']}"
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(posts.base + "/studio/models/new")
    scripts_ran(page)
    page.get_by_label("Model name").fill(name)
    page.get_by_label("Field of type", exact=True).select_option("select")
    page.get_by_role("button", name="Add field").click()
    kind = page.locator("#fields > li.field-row").nth(1)
    kind.locator(".name-input").fill("kind")
    kind.get_by_label("Choices").fill("news\nevent")
    page.get_by_label("Field of type", exact=True).select_option("text")
    page.get_by_role("button", name="Add field").click()
    venue = page.locator("#fields > li.field-row").nth(2)
    venue.locator(".name-input").fill("venue")
    venue.get_by_text("Help text, default and conditions").click()
    venue.get_by_label("Show only when").fill('{"==": [{"var": "kind"}, "event"]}')
    venue.get_by_label("Required only when").fill('{"==": [{"var": "kind"}, "event"]}')
    page.get_by_role("button", name="Create model").click()
    expect(page.locator("#flash")).to_have_text(f"Created model {name}.")
    field = {f["name"]: f for f in posts.call("GET", f"/api/system/models/{name}")["fields"]}["venue"]
    assert field["showWhen"] == {"==": [{"var": "kind"}, "event"]} and "required" in field

    page.goto(f"{posts.base}/studio/content/{name}/item")
    scripts_ran(page)
    expect(page.get_by_label("Venue")).to_be_hidden()  # not an event yet
    page.get_by_label("Kind").select_option("event")
    expect(page.get_by_label("Venue")).to_be_visible()
    expect(page.locator("[data-field=venue] .req").first).to_be_visible()
    page.get_by_label("Title").fill("Harbour fair")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("[data-field=venue]")).to_contain_text("is required")  # the server's rule, the same
    page.get_by_label("Kind").select_option("news")
    expect(page.get_by_label("Venue")).to_be_hidden()
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_have_text("Created.")
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_blocks_are_added_edited_moved_previewed_and_removed(posts: Studio, new_context: Callable[..., Any],
                                                            viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name = f"landing{viewport['width']}"
    posts.call("PUT", f"/api/system/models/{name}", {"name": name, "type": "collection", "fields": [
        {"name": "title", "type": "text", "label": "Title"},
        {"name": "content", "type": "layout", "label": "Content", "opts": {"components": [
            {"name": "hero", "label": "Hero", "fields": [{"name": "headline", "type": "text", "label": "Headline"}]}],
            "allowedComponents": ["heading", "richtext", "section", "hero"]}}]})
    page = open_page(new_context(viewport))
    login(page, posts)
    page.goto(f"{posts.base}/studio/content/{name}/item")
    scripts_ran(page)
    page.get_by_label("Title").fill("Landing")
    blocks = page.locator(".layout-field")
    adder = blocks.get_by_label("Block to add to Blocks")
    assert adder.locator("option").all_inner_texts() == ["Heading", "Rich text", "Section", "Hero"]  # allowed only
    adder.select_option(label="Heading")
    blocks.get_by_role("button", name="Add a block").last.click()
    expect(page.get_by_label("Text of Heading")).to_be_focused()  # the new block's first field
    page.get_by_label("Text of Heading").fill("Welcome")
    page.get_by_label("Level of Heading").select_option("1")
    adder.select_option(label="Section")
    blocks.get_by_role("button", name="Add a block").last.click()
    inner = blocks.get_by_label("Block to add to Section")
    inner.select_option(label="Rich text")
    inner.locator("xpath=..").get_by_role("button", name="Add a block").click()
    rich = page.get_by_role("textbox", name="Text of Rich text")
    expect(rich).to_be_focused()  # the rich text editor, as an item's rich text field has
    rich.fill("Inside the section")
    rich.press("Control+a")
    page.get_by_role("button", name="Bold").last.click()
    adder.select_option(label="Hero")
    blocks.get_by_role("button", name="Add a block").last.click()
    page.get_by_label("Headline of Hero").fill("Big news")
    page.get_by_role("button", name="Move up: Hero").click()
    expect(page.get_by_role("button", name="Move up: Hero")).to_be_focused()  # still on the moved block
    page.get_by_role("button", name="Move up: Hero").click()  # now first
    heading = page.locator(".layout-block").filter(has_text="Heading").first
    heading.get_by_role("button", name="Preview").click()
    expect(heading.locator(".layout-preview")).to_contain_text("Welcome")
    if viewport is WIDE:
        screenshot(page, "studio-blocks.png")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_have_text("Created.")
    stored = posts.call("GET", f"/api/content/items/{name}")[0]["content"]
    assert [b["component"] for b in stored] == ["hero", "heading", "section"]
    assert stored[0]["data"] == {"headline": "Big news"} and stored[1]["data"] == {"text": "Welcome", "level": "1"}
    assert stored[2]["children"][0]["component"] == "richtext"
    assert stored[2]["children"][0]["data"]["html"] == "<p><strong>Inside the section</strong></p>"
    # opened again: the same blocks; one removed
    expect(page.get_by_label("Headline of Hero")).to_have_value("Big news")
    page.get_by_role("button", name="Remove: Hero").click()
    page.get_by_role("button", name="Save draft").click()
    expect(page.locator("#flash")).to_be_visible()
    assert_clean(page)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_a_shared_block_is_defined_once_and_offered_by_every_layout_field(
        posts: Studio, new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    name, block = f"shared{viewport['width']}", f"quote{viewport['width']}"
    for model in (name, name + "b"):
        posts.call("PUT", f"/api/system/models/{model}", {"name": model, "type": "collection", "fields": [
            {"name": "title", "type": "text", "label": "Title"},
            {"name": "content", "type": "layout", "label": "Content"}]})
    page = open_page(new_context(viewport))
    login(page, posts)
    section(page, "Shared blocks").click()
    expect(page.get_by_role("heading", name="Shared blocks")).to_be_visible()
    page.get_by_role("link", name="New shared block").first.click()
    page.get_by_label("Name", exact=True).fill(block)
    page.get_by_label("Label").fill("Quote")
    page.get_by_label("Fields").fill('[{"name": "text", "type": "text", "label": "Words"}, {"name": "by"}')
    page.get_by_role("button", name="Add the block").click()
    expect(page.get_by_role("alert")).to_contain_text("not JSON")  # explained, the form kept as typed
    expect(page.get_by_label("Name", exact=True)).to_have_value(block)
    if viewport is WIDE:
        screenshot(page, "studio-shared-block-form.png")
    page.get_by_label("Fields").fill('[{"name": "text", "type": "text", "label": "Words"}, {"name": "by"}]')
    page.get_by_role("button", name="Add the block").click()
    expect(page.locator("#flash")).to_contain_text(f"Added the shared block {block}")
    expect(page.locator(f"a[href='/studio/blocks/{block}']")).to_have_text("Quote")
    if viewport is WIDE:
        screenshot(page, "studio-shared-blocks.png")
    for model in (name, name + "b"):  # offered by both models' layout fields
        page.goto(f"{posts.base}/studio/content/{model}/item")
        scripts_ran(page)
        adder = page.locator(".layout-field").get_by_label("Block to add to Blocks")
        expect(adder.locator(f"option[value='{block}']")).to_have_text("Quote")
    adder.select_option(value=block)
    page.locator(".layout-field").get_by_role("button", name="Add a block").last.click()
    expect(page.get_by_label("Words of Quote")).to_be_focused()
    page.get_by_label("Words of Quote").fill("Less is more")
    page.get_by_label("Title").fill("With a quote")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_have_text("Created.")
    stored = posts.call("GET", f"/api/content/items/{name}b")[0]["content"]
    assert stored[0]["component"] == block and stored[0]["data"] == {"text": "Less is more"}
    # the model builder names the shared blocks beside the field's own
    page.goto(f"{posts.base}/studio/models/{name}")
    expect(page.get_by_text(re.compile(rf"shared blocks too, defined once for every model: .*{block}"))).to_be_visible()
    # removing a block items use is refused on its page, saying where
    page.goto(f"{posts.base}/studio/blocks/{block}")
    page.get_by_role("button", name=f"Remove the shared block {block}").click()
    expect(page.locator("#flash")).to_contain_text(f"{name}b (1)")
    assert_clean(page)
