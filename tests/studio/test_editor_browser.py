"""The item editor in a real browser: an item with German values, an
uploaded picture and a linked author; two people saving the same item (the
second sees the conflict); rich text with a script; repeaters; an editor
without delete rights; a phone; leaving with unsaved changes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from PIL import Image

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
)

__all__ = ["browser", "new_context"]

EDITOR_PERMISSIONS = {f"content/{m}/{p}": True for m in ("posts", "authors")
                      for p in ("read", "create", "update", "publish")} | {"assets/read": True,
                                                                           "assets/upload": True}

# a field of every type
KITCHEN: list[dict[str, Any]] = [
    {"name": "title", "type": "text"}, {"name": "summary", "type": "longtext"},
    {"name": "body", "type": "wysiwyg"}, {"name": "notes", "type": "markdown"},
    {"name": "snippet", "type": "code", "opts": {"language": "json"}}, {"name": "rating", "type": "number"},
    {"name": "featured", "type": "boolean"}, {"name": "day", "type": "date"},
    {"name": "at", "type": "datetime"}, {"name": "clock", "type": "time"},
    {"name": "category", "type": "select", "opts": {"options": ["news", "guides"]}},
    {"name": "labels", "type": "tags"}, {"name": "tint", "type": "color"}, {"name": "extra", "type": "object"},
    {"name": "seo", "type": "set", "opts": {"fields": [{"name": "keywords", "type": "text"}]}},
    {"name": "prices", "type": "table"}, {"name": "picture", "type": "asset"},
    {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    {"name": "links", "type": "text", "multiple": True}, {"name": "hero", "type": "variants"},
]


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    """The admin ann, eddie, an editor who may not delete, and vera, who may only read."""
    data = tmp_path_factory.mktemp("editor") / "data"
    users = {"ann": "admin", "eddie": "editor", "vera": "viewer"}
    make_users(data, users, roles={"editor": EDITOR_PERMISSIONS, "viewer": {"content/kitchen/read": True}})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        server = Studio(base, key, users)
        server.call("PUT", "/api/system/locales", [{"i18n": "de", "name": "German"}])
        server.call("PUT", "/api/system/models/authors", {"name": "authors", "type": "collection",
                                                          "fields": [{"name": "name", "type": "text"}]})
        server.call("PUT", "/api/system/models/posts", {"name": "posts", "type": "collection", "fields": [
            {"name": "title", "type": "text", "i18n": True, "required": True},
            {"name": "body", "type": "wysiwyg", "i18n": True},
            {"name": "picture", "type": "asset"},
            {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
            {"name": "links", "type": "text", "multiple": True, "label": "Links"},
            {"name": "published", "type": "datetime", "group": "Details"},
            {"name": "tags", "type": "tags", "group": "Details"},
            {"name": "seo", "type": "set", "group": "Details", "opts": {"fields": [
                {"name": "description", "type": "longtext"}]}},
        ]})
        server.call("PUT", "/api/system/models/kitchen", {"name": "kitchen", "type": "collection",
                                                          "fields": KITCHEN})
        server.call("POST", "/api/content/item/authors", {"data": {"name": "Astrid Lindgren"}})
        server.call("POST", "/api/content/item/authors", {"data": {"name": "Tove Jansson"}})
        yield server


def _items(studio: Studio) -> list[dict[str, Any]]:
    return studio.call("GET", "/api/content/items/posts?filter=" + quote(json.dumps({})))  # type: ignore[no-any-return]


def _png(path: Path) -> Path:
    Image.new("RGB", (60, 40), "#2f5bd3").save(path, "PNG")
    return path


def test_create_an_item_with_german_values_a_picture_and_an_author(
        studio: Studio, new_context: Callable[..., Any], tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/content")
    page.locator('a[href="/studio/content/posts/item"]').click()  # "New item" in the posts row
    expect(page.get_by_role("heading", level=1)).to_contain_text("New item")
    page.get_by_label("title · Default").fill("Spring in the garden")
    page.get_by_label("title · German").fill("Frühling im Garten")
    page.locator("[data-locale=de] .qe-content").first.click()
    page.keyboard.type("Die Tulpen blühen.")
    # the picture: uploaded in place
    page.locator("input[data-upload]").set_input_files(str(_png(tmp_path / "tulips.png")))
    expect(page.locator("[data-ref=f-picture] [data-ref-label]")).to_have_text("tulips.png")
    expect(page.locator("[data-ref=f-picture] img[data-thumb]")).to_be_visible()
    # the author: found by name in the link picker
    author = page.locator("[data-ref=f-author]")
    expect(author.get_by_role("button", name="Remove")).to_be_hidden()  # nothing linked yet
    author.get_by_role("button", name="Choose…").click()
    page.get_by_label("Search authors", exact=True).fill("lind")
    page.get_by_role("button", name="Astrid Lindgren").click()
    expect(author.locator("[data-ref-label]")).to_have_text("Astrid Lindgren")
    expect(author.get_by_role("button", name="Remove")).to_be_visible()
    page.get_by_label("published").fill("2026-04-01T08:00:00Z")
    expect(page.locator("[data-local-time-for=f-published]")).to_contain_text("your time")
    screenshot(page, "studio-editor.png")
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_have_text("Created.")
    item = next(i for i in _items(studio) if i["title"] == "Spring in the garden")
    assert item["title_de"] == "Frühling im Garten" and "Die Tulpen blühen." in item["body_de"]
    assert item["picture"]["title"] == "tulips.png" and item["picture"]["width"] == 60
    assert item["author"]["_model"] == "authors"
    author = studio.call("GET", f"/api/content/item/authors/{item['author']['_id']}")
    assert author["name"] == "Astrid Lindgren"
    assert_clean(page)


def _new_post(studio: Studio, title: str, **data: Any) -> dict[str, Any]:
    return studio.call("POST", "/api/content/item/posts", {"data": {"title": title, **data}})  # type: ignore[no-any-return]


def test_the_second_save_of_two_people_gets_the_conflict_screen(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "Shared")
    url = f"{studio.base}/studio/content/posts/item/{item['_id']}"
    first, second = open_page(new_context()), open_page(new_context())
    login(first, studio)
    login(second, studio, "eddie")
    first.goto(url)
    second.goto(url)
    first.get_by_label("title · Default").fill("Ann's title")
    first.get_by_role("button", name="Save and publish").click()
    expect(first.locator("#flash")).to_have_text("Published.")
    second.get_by_label("title · Default").fill("Eddie's title")
    second.get_by_role("button", name="Save and publish").click()
    expect(second.get_by_role("heading", name="Someone else saved this item meanwhile")).to_be_visible()
    expect(second.locator("tr[data-changed=title]")).to_contain_text("Ann's title")
    expect(second.locator("tr[data-changed=title]")).to_contain_text("Eddie's title")
    assert studio.call("GET", f"/api/content/item/posts/{item['_id']}")["title"] == "Ann's title"
    screenshot(second, "studio-conflict.png")
    second.get_by_role("button", name="Overwrite on purpose").click()
    expect(second.locator("#flash")).to_have_text("Published.")
    stored = studio.call("GET", f"/api/content/item/posts/{item['_id']}")
    assert stored["title"] == "Eddie's title" and stored["_rev"] == 3
    assert_clean(first)
    assert_clean(second)


def test_rich_text_with_a_script_is_stored_without_it(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "Rich")
    page = open_page(new_context())
    login(page, studio)
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    area = page.locator("[data-locale=default] .qe-content").first
    area.click()
    page.keyboard.type("Typed <script>alert(1)</script> ")
    # pasted HTML with a script and an onerror attribute
    area.evaluate("""el => {
        const data = new DataTransfer();
        data.setData('text/html', '<p>Pasted<script>window.bad=1</script><img src="x.png" onerror="window.bad=2"></p>');
        el.dispatchEvent(new ClipboardEvent('paste', {clipboardData: data, bubbles: true, cancelable: true}));
    }""")
    page.get_by_role("button", name="Save and publish").click()
    expect(page.locator("#flash")).to_have_text("Published.")
    body = studio.call("GET", f"/api/content/item/posts/{item['_id']}")["body"]
    assert "Pasted" in body and "<script" not in body and "onerror" not in body
    # the HTML set past the editor, straight into the form: the server cleans it
    page.evaluate("""() => { document.getElementById('f-body').value =
        '<p>Direct<script>alert(1)</script><img src="x.png" onerror="alert(2)"></p>'; }""")
    with page.expect_navigation():  # the page shows "Published." already: the saved one must have come
        page.get_by_role("button", name="Save and publish").click()
    expect(page.locator("#flash")).to_have_text("Published.")
    body = studio.call("GET", f"/api/content/item/posts/{item['_id']}")["body"]
    assert "Direct" in body and "<script" not in body and "onerror" not in body and "alert" not in body
    assert page.evaluate("window.bad") is None
    # Chromium looks at the pasted handler while reading the clipboard's
    # HTML; the page's CSP refuses to run it (logged): that refusal is the
    # defence working, not a fault of the page. Dropped here, at the end: the
    # console message may reach the test well after the paste on a loaded machine.
    errors = page.quire_errors  # type: ignore[attr-defined]
    errors[:] = [e for e in errors if "inline event handler" not in e]
    assert_clean(page)


def test_repeater_entries_are_added_removed_and_reordered(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "Lists")
    page = open_page(new_context())
    login(page, studio)
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    repeater = page.locator("[data-field=links] [data-repeater]")
    for text in ("one", "two", "three", "four"):
        repeater.get_by_role("button", name="Add entry").click()
        page.keyboard.type(text)  # the new entry's input has the focus
    entries = repeater.locator("li.entry input[type=text]")
    expect(entries).to_have_count(4)
    # by keyboard: "one" moves down one place
    repeater.locator("li.entry").nth(0).get_by_role("button", name="Move Links entry down").press("Enter")
    # removed: "three"
    repeater.locator("li.entry").nth(2).get_by_role("button", name="Remove Links entry").click()
    # by dragging: "four" onto the first place
    repeater.locator("li.entry").nth(2).locator(".handle").drag_to(repeater.locator("li.entry").nth(0))
    page.get_by_role("button", name="Save and publish").click()
    expect(page.locator("#flash")).to_have_text("Published.")
    assert studio.call("GET", f"/api/content/item/posts/{item['_id']}")["links"] == ["four", "two", "one"]
    assert_clean(page)


def test_an_editor_without_delete_rights_sees_no_delete_button(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "Keep me")
    page = open_page(new_context())
    login(page, studio, "eddie")
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    expect(page.get_by_role("button", name="Save draft")).to_be_visible()
    expect(page.get_by_text("Delete this item")).to_have_count(0)
    # a crafted delete from this page (its own token) is refused
    status = page.evaluate("""async (id) => {
        const token = document.querySelector('meta[name=csrf-token]').content;
        const r = await fetch('/studio/content/posts/item/' + id + '/delete', {method: 'POST',
            headers: {'content-type': 'application/x-www-form-urlencoded'}, body: 'csrf=' + token});
        return r.status; }""", item["_id"])
    assert status == 403
    assert studio.call("GET", f"/api/content/item/posts/{item['_id']}")["title"] == "Keep me"
    admin = open_page(new_context())
    login(admin, studio)
    admin.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    admin.get_by_text("Delete this item").click()
    expect(admin.get_by_role("button", name="Delete for good")).to_be_visible()


def test_the_editor_works_on_a_phone(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "On the go", title_de="Unterwegs", links=["a", "b"])
    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the editor is {width} px wide on a 390 px screen"
    # locales as tabs: German shows after its tab is chosen
    german = page.get_by_label("title · German")
    expect(german).to_be_hidden()
    page.locator("[data-field=title]").get_by_role("tab", name="German").click()
    expect(german).to_be_visible()
    expect(german).to_have_value("Unterwegs")
    # every localized field follows: a translator works locale by locale
    expect(page.locator("[data-field=body] [data-locale=de]")).to_be_visible()
    expect(page.locator("[data-field=body] [data-locale=default]")).to_be_hidden()
    page.keyboard.press("ArrowLeft")  # back to the default locale by keyboard
    expect(page.get_by_label("title · Default")).to_be_visible()
    expect(german).to_be_hidden()
    page.locator("[data-field=title]").get_by_role("tab", name="German").click()
    screenshot(page, "studio-editor-phone.png")
    assert_clean(page)


def test_leaving_with_unsaved_changes_asks_first(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "Careful")
    page = open_page(new_context())
    login(page, studio)
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    asked: list[str] = []

    def dismiss(dialog: Any) -> None:
        asked.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", dismiss)
    page.get_by_label("title · Default").fill("Changed but not saved")
    with page.expect_event("dialog"):  # the question comes (and `dismiss` answers it)
        page.get_by_role("link", name="Content").first.click()
    assert asked == ["beforeunload"]
    assert page.url.endswith(item["_id"])  # still here
    page.remove_listener("dialog", dismiss)
    # after saving, leaving asks nothing
    page.get_by_role("button", name="Save draft").click()
    # the saved page (its URL is this page's: waiting for it would not wait)
    expect(page.locator("#flash")).to_be_visible()
    page.on("dialog", dismiss)
    page.goto(studio.base + "/studio/content")
    assert asked == ["beforeunload"]


def test_every_widget_works_in_the_browser(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/content/kitchen/item")
    page.get_by_label("title", exact=True).fill("Everything")
    page.get_by_label("summary", exact=True).fill("Short")
    page.locator("[data-field=notes] .cm-content").click()
    page.keyboard.type("# Notes")
    page.locator("[data-field=snippet] .cm-content").click()
    page.keyboard.type('{"a": 1')
    page.get_by_label("rating", exact=True).fill("7")
    page.get_by_label("featured", exact=True).check()
    page.get_by_label("day", exact=True).fill("2026-05-01")
    page.get_by_label("clock", exact=True).fill("09:15:00")
    page.get_by_label("category", exact=True).select_option("news")
    page.get_by_label("labels", exact=True).fill("one, two")
    page.get_by_label("tint: pick a colour", exact=True).fill("#336699")
    expect(page.get_by_label("tint", exact=True)).to_have_value("#336699")
    page.get_by_label("extra", exact=True).fill('{"k": "v"}')
    page.get_by_label("keywords", exact=True).fill("kw")
    page.get_by_label("prices", exact=True).fill('[{"s": 1}]')
    hero = page.locator("[data-field=hero]")
    hero.get_by_role("button", name="Add variant").click()
    hero.get_by_label("Label", exact=True).fill("Members")
    hero.get_by_label("Audience tags").fill("member")
    hero.get_by_label("Data JSON object").fill('{"heading": "Hi"}')
    page.get_by_role("button", name="Create").click()
    expect(page.locator("#flash")).to_have_text("Created.")
    item_id = page.url.rsplit("/", 1)[1]
    item = studio.call("GET", f"/api/content/item/kitchen/{item_id}")
    assert item["notes"] == "# Notes" and item["snippet"].startswith('{"a": 1')
    assert (item["rating"], item["featured"], item["day"], item["clock"]) == (7, True, "2026-05-01", "09:15:00")
    assert item["category"] == "news" and item["labels"] == ["one", "two"] and item["tint"] == "#336699"
    assert item["extra"] == {"k": "v"} and item["seo"] == {"keywords": "kw"} and item["prices"] == [{"s": 1}]
    variant = item["hero"]["persona:variants"][0]
    assert variant["label"] == "Members" and variant["audience"] == ["member"] and variant["active"] is True
    assert variant["data"] == {"heading": "Hi"}
    # a bad value comes back next to its field, the typed values kept
    page.get_by_label("rating", exact=True).fill("seven")
    page.get_by_role("button", name="Save and publish").click()
    expect(page.locator("#err-rating")).to_have_text("must be a number")
    expect(page.get_by_label("rating", exact=True)).to_have_value("seven")
    assert studio.call("GET", f"/api/content/item/kitchen/{item_id}")["rating"] == 7
    assert_clean(page)


def test_a_reader_sees_the_item_but_cannot_change_it(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = studio.call("POST", "/api/content/item/kitchen", {"data": {"title": "Look only", "body": "<p>Rich</p>"}})
    page = open_page(new_context())
    login(page, studio, "vera")
    page.goto(f"{studio.base}/studio/content/kitchen/item/{item['_id']}")
    expect(page.get_by_label("title", exact=True)).to_have_value("Look only")
    expect(page.get_by_label("title", exact=True)).to_be_disabled()
    expect(page.locator("[data-field=body] [contenteditable]")).to_have_attribute("contenteditable", "false")
    expect(page.locator("[data-field=body]")).to_contain_text("Rich")
    expect(page.get_by_role("button", name="Save")).to_have_count(0)
    expect(page.get_by_role("button", name="Choose…")).to_have_count(0)
    assert_clean(page)


def test_the_history_shows_a_change_side_by_side_and_restores_it(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    item = _new_post(studio, "The first title", tags=["one"])
    studio.call("POST", "/api/content/item/posts", {"data": {"_id": item["_id"], "title": "A better title"}})
    page = open_page(new_context())
    login(page, studio)
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    page.get_by_role("link", name="History").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("History")
    rows = page.locator("table.revisions tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("Changed")
    screenshot(page, "studio-history.png")
    page.get_by_role("link", name="Revision 2").click()
    before, after = page.locator("td.before"), page.locator("td.after")
    expect(before).to_contain_text("The first title")
    expect(after).to_contain_text("A better title")
    page.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}/history/1")
    expect(page.get_by_role("link", name="This version against now")).to_be_visible()
    screenshot(page, "studio-history-revision.png")
    restore = page.get_by_role("button", name="Restore this version")
    restore.focus()
    page.keyboard.press("Enter")  # by keyboard
    page.wait_for_url(f"{studio.base}/studio/content/posts/item/{item['_id']}")
    expect(page.get_by_text("Restored the version of revision 1.")).to_be_visible()
    expect(page.get_by_label("title · Default")).to_have_value("The first title")
    assert studio.call("GET", f"/api/content/item/posts/{item['_id']}")["title"] == "The first title"
    phone = open_page(new_context(NARROW))
    login(phone, studio)
    phone.goto(f"{studio.base}/studio/content/posts/item/{item['_id']}/history/2")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"a revision is {width} px wide on a 390 px screen"
    screenshot(phone, "studio-history-phone.png")
    assert_clean(page)
    assert_clean(phone)


def test_a_draft_is_saved_previewed_beside_the_editor_and_published_by_keyboard(
        studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    # a model whose preview address is this server's own API read by token
    studio.call("PUT", "/api/system/models/notes", {"name": "notes", "fields": [{"name": "title", "type": "text"}],
                "preview": [{"name": "API", "uri": studio.base + "/api/content/item/notes/{id}?preview={token}"}]})
    item = studio.call("POST", "/api/content/item/notes", {"data": {"title": "Live words"}})
    page = open_page(new_context())
    login(page, studio)
    editor = f"{studio.base}/studio/content/notes/item/{item['_id']}"
    page.goto(editor)
    page.get_by_label("title", exact=True).fill("Draft words")
    page.get_by_role("button", name="Save draft").click()
    expect(page.locator("#flash")).to_have_text("Draft saved: not published yet.")
    expect(page.locator("[data-draft-note]")).to_contain_text("You are editing a draft")
    assert studio.call("GET", f"/api/content/item/notes/{item['_id']}")["title"] == "Live words"
    page.get_by_role("link", name="Show the preview beside the editor").click()
    frame = page.frame_locator("iframe")
    expect(frame.locator("body")).to_contain_text("Draft words")  # the draft, read with the token
    screenshot(page, "studio-draft-preview.png")
    publish = page.get_by_role("button", name="Publish draft")
    publish.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#flash")).to_have_text("Published.")
    assert studio.call("GET", f"/api/content/item/notes/{item['_id']}")["title"] == "Draft words"
    expect(page.locator("[data-draft-note]")).to_have_count(0)
    phone = open_page(new_context(NARROW))
    login(phone, studio)
    phone.goto(editor + "?preview=1")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= 390, f"the editor with its preview is {width} px wide on a 390 px screen"
    screenshot(phone, "studio-draft-phone.png")
    assert_clean(page)
    assert_clean(phone)
