"""The model builder in a real browser: a model with many field types made
by clicking, a renamed field whose stored values follow, a refused type
change that names the items in the way, deleting a field that items hold
values of, fields reordered by keyboard alone, and the builder at 390 px."""

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
    screenshot,
    scripts_ran,
    section,
    studio,
)

__all__ = ["browser", "new_context", "studio"]


def _fields(studio: Studio, model: str) -> list[dict[str, Any]]:
    return studio.call("GET", f"/api/system/models/{model}")["fields"]  # type: ignore[no-any-return]


def _add(page: Any, kind: str, name: str, within: Any = None) -> Any:
    """Add a field of `kind` (to the model, or to the set row `within`) and name it."""
    from playwright.sync_api import expect

    own = None if within is None else within.locator(":scope > .row-body > .set-fields")
    rows = page.locator("#fields > li.field-row") if own is None else own.locator(":scope > ol > li.field-row")
    count = rows.count()
    if within is None:
        page.get_by_label("Field of type", exact=True).select_option(kind)
        page.get_by_role("button", name="Add field", exact=True).click()
    else:
        controls = own.locator(":scope > .add-field")
        controls.get_by_label("Sub-field of type", exact=True).select_option(kind)
        controls.get_by_role("button", name="Add sub-field", exact=True).click()
    expect(rows).to_have_count(count + 1)
    added = rows.last
    name_input = added.locator(".name-input").first
    expect(name_input).to_be_focused()
    name_input.fill(name)
    return added


def test_create_a_model_with_many_field_types(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/locales", [{"i18n": "de", "name": "Deutsch"}])
    studio.call("PUT", "/api/system/models/authors", {"name": "authors", "type": "collection",
                                                      "fields": [{"name": "name", "type": "text"}]})
    for n in range(3):
        studio.call("POST", "/api/content/item/authors", {"data": {"name": f"Author {n}"}})
    studio.call("PUT", "/api/system/models/navigation", {"name": "navigation", "type": "tree", "label": "Navigation",
                                                         "fields": [{"name": "label", "type": "text"}],
                                                         "meta": {"info": "The site's menu"}})
    studio.call("PUT", "/api/system/models/settings", {"name": "settings", "type": "singleton", "label": "Settings",
                                                       "fields": [{"name": "siteName", "type": "text"}]})
    page = open_page(new_context())
    login(page, studio)
    section(page, "Models").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Models")
    page.get_by_role("link", name="New model").click()
    expect(page.get_by_label("Model name")).to_be_visible()
    scripts_ran(page)  # "Add field" is an htmx button and the rows' options follow models.js
    page.get_by_label("Model name").fill("articles")
    page.get_by_label("Model label").fill("Articles")
    first = page.locator("#fields > li.field-row").first
    first.get_by_label("Localized").check()
    _add(page, "longtext", "summary")
    _add(page, "wysiwyg", "body").get_by_label("Allowed HTML tags").fill("p a strong em")
    _add(page, "number", "rating")
    _add(page, "boolean", "featured")
    _add(page, "date", "published")
    _add(page, "select", "category").get_by_label("Choices").fill("news\nguides = Guides")
    _add(page, "contentItemLink", "author").get_by_label("Links to items of").select_option("authors")
    _add(page, "asset", "cover").get_by_label("Allowed file types").fill("image/*")
    gallery = _add(page, "set", "gallery")
    _add(page, "text", "caption", within=gallery)
    _add(page, "asset", "picture", within=gallery)
    _add(page, "tags", "tags")
    page.get_by_role("button", name="Create model").click()
    page.wait_for_url(studio.base + "/studio/models/articles")
    expect(page.locator("#flash")).to_have_text("Created model articles.")
    fields = _fields(studio, "articles")
    assert [(f["name"], f["type"]) for f in fields] == [
        ("title", "text"), ("summary", "longtext"), ("body", "wysiwyg"), ("rating", "number"),
        ("featured", "boolean"), ("published", "date"), ("category", "select"), ("author", "contentItemLink"),
        ("cover", "asset"), ("gallery", "set"), ("tags", "tags")]
    by_name = {f["name"]: f for f in fields}
    assert by_name["title"]["i18n"] is True and by_name["author"]["opts"] == {"link": "authors"}
    assert by_name["category"]["opts"]["options"] == ["news", {"value": "guides", "label": "Guides"}]
    assert [(s["name"], s["type"]) for s in by_name["gallery"]["opts"]["fields"]] == [
        ("caption", "text"), ("picture", "asset")]
    expect(page.locator("#model-total")).to_have_text("0 items stored in this model.")  # counted once loaded
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")  # the save bar at the end of the shot
    screenshot(page, "studio-model-edit.png")
    page.get_by_role("link", name="All models").click()
    expect(page.get_by_role("link", name="Articles", exact=True)).to_be_visible()
    screenshot(page, "studio-models.png")
    assert_clean(page)


def test_safe_schema_changes(studio: Studio, new_context: Callable[..., Any]) -> None:
    """Rename (values follow), a refused type change (names the items,
    changes nothing), deleting a field (says how many items hold a value)."""
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/models/books", {"name": "books", "type": "collection", "fields": [
        {"name": "title", "type": "text"}, {"name": "pages", "type": "text"}, {"name": "blurb", "type": "text"}]})
    ids = [studio.call("POST", "/api/content/item/books", {"data": data})["_id"] for data in (
        {"title": "Emma", "pages": "many", "blurb": "Matchmaking"}, {"title": "Ulysses", "pages": "lots"},
        {"title": "Dubliners", "blurb": "Stories"})]
    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/models/books")
    rows = page.locator("#fields > li.field-row")
    rows.nth(0).locator(".name-input").fill("name")
    expect(rows.nth(0).locator(".row-name")).to_have_text("Name")  # a label made from the name
    page.get_by_role("button", name="Save model").click()
    expect(page.locator("#flash")).to_have_text("Saved model books.")
    stored = [studio.call("GET", f"/api/content/item/books/{i}") for i in ids]
    assert [s["name"] for s in stored] == ["Emma", "Ulysses", "Dubliners"] and all("title" not in s for s in stored)

    before = (_fields(studio, "books"), studio.call("GET", "/api/content/items/books"))
    pages_row = page.locator("#fields > li.field-row").nth(1)
    pages_row.locator(".type-select").first.select_option("number")
    page.get_by_role("button", name="Save model").click()
    error = page.locator("#fields > li.field-row").nth(1).locator(".field-error")
    expect(error).to_contain_text("Field pages: 2 stored items hold values that do not fit the new definition")
    for item_id in ids[:2]:
        expect(error).to_contain_text(item_id)
    expect(page.locator("#fields > li.field-row").nth(1).locator(".type-select").first).to_have_value("number")
    assert (_fields(studio, "books"), studio.call("GET", "/api/content/items/books")) == before

    page.goto(studio.base + "/studio/models/books")
    blurb = page.locator("#fields > li.field-row").nth(2)
    confirm = blurb.locator(".drop-confirm")
    expect(confirm).to_be_hidden()
    blurb.get_by_label("Remove").check()
    expect(confirm).to_be_visible()
    expect(confirm).to_contain_text("2 items hold a value of blurb.")
    page.get_by_role("button", name="Save model").click()
    expect(page.locator("#fields > li.field-row").nth(2).locator(".field-error")).to_contain_text(
        "2 items hold a value of blurb")
    assert [f["name"] for f in _fields(studio, "books")] == ["name", "pages", "blurb"]
    page.get_by_label("Also delete the stored values of blurb (2 items)").check()
    page.get_by_role("button", name="Save model").click()
    expect(page.locator("#flash")).to_have_text("Saved model books.")
    assert [f["name"] for f in _fields(studio, "books")] == ["name", "pages"]
    assert all("blurb" not in studio.call("GET", f"/api/content/item/books/{i}") for i in ids)
    assert_clean(page)


def test_reorder_fields_by_keyboard_and_by_drag(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/models/trio", {"name": "trio", "type": "collection", "fields": [
        {"name": "a", "type": "text"}, {"name": "b", "type": "text"}, {"name": "c", "type": "text"}]})
    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/models/trio")
    down = page.get_by_role("button", name="Move a down")
    down.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#announce")).to_have_text("a moved to position 2 of 3")
    expect(down).to_be_focused()
    c_name = page.locator(".name-input[value='c']")
    c_name.focus()
    page.keyboard.press("Alt+ArrowUp")
    page.keyboard.press("Alt+ArrowUp")
    expect(page.locator("#announce")).to_have_text("c moved to position 1 of 3")
    expect(c_name).to_be_focused()
    page.keyboard.press("Enter")  # Enter in a text box saves (not "move up", the first button of a row)
    expect(page.locator("#flash")).to_have_text("Saved model trio.")
    scripts_ran(page)  # the saved page's rows are sortable (models.js) before the drag below
    assert [f["name"] for f in _fields(studio, "trio")] == ["c", "b", "a"]
    # and by mouse: drag a by its handle above c
    rows = page.locator("#fields > li.field-row")
    rows.nth(2).locator(".handle").first.drag_to(rows.nth(0), target_position={"x": 40, "y": 5})
    expect(page.locator("#announce")).to_have_text("a moved to position 1 of 3")
    with page.expect_navigation():  # the page shows "Saved model trio." already: the saved one must have come
        page.get_by_role("button", name="Save model").click()
    expect(page.locator("#flash")).to_have_text("Saved model trio.")
    assert [f["name"] for f in _fields(studio, "trio")] == ["a", "c", "b"]
    assert_clean(page)


def test_the_builder_fits_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    studio.call("PUT", "/api/system/models/phone", {"name": "phone", "type": "collection", "fields": [
        {"name": "title", "type": "text", "required": True},
        {"name": "parts", "type": "set", "opts": {"fields": [{"name": "caption", "type": "text"}]}},
        {"name": "kind", "type": "select", "opts": {"options": ["a", "b"]}}]})
    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/models/phone")
    _add(page, "contentItemLink", "related").get_by_label("Links to items of").select_option("phone")
    title = page.locator("#fields > li.field-row").first
    language = title.get_by_label("Language")
    expect(language).to_be_hidden()
    title.locator(".type-select").first.select_option("code")  # the options of the chosen type show
    expect(language).to_be_visible()
    title.locator(".type-select").first.select_option("number")
    expect(title.locator(".default-hint")).to_have_text("JSON, e.g. 42; empty for none")
    title.locator(".type-select").first.select_option("code")
    expect(title.locator(".row-type")).to_have_text("code")
    title.locator(".type-select").first.select_option("text")
    expect(language).to_be_hidden()
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the builder is {width} px wide on a 390 px screen"
    save = page.get_by_role("button", name="Save model")
    expect(page.locator("#model-total")).to_have_text("0 items stored in this model.")
    expect(save).to_be_in_viewport()  # the save bar stays in reach
    screenshot(page, "studio-model-edit-390.png")
    save.click()
    expect(page.locator("#flash")).to_have_text("Saved model phone.")
    assert [f["name"] for f in _fields(studio, "phone")][-1] == "related"
    assert_clean(page)
