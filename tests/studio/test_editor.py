"""The item editor over HTTP: every field type from the form to the stored
item (read back through the API), locales, validation, conflicts,
permissions, singletons, rich text cleaning, uploads and the link picker.

Forms are posted as a browser would send them: the page's own inputs
(`EditorForm` reads them, leaving out the blank entries of repeaters that
sit in <template>s), with some values changed."""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import urlencode

from PIL import Image

from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, page_csrf
from tests.studio.editorform import EditorForm, post

FIELDS = [
    {"name": "title", "type": "text", "required": True, "i18n": True},
    {"name": "summary", "type": "longtext", "i18n": True},
    {"name": "body", "type": "wysiwyg"},
    {"name": "notes", "type": "markdown"},
    {"name": "snippet", "type": "code", "opts": {"language": "javascript"}},
    {"name": "rating", "type": "number"},
    {"name": "featured", "type": "boolean"},
    {"name": "day", "type": "date"},
    {"name": "at", "type": "datetime"},
    {"name": "clock", "type": "time"},
    {"name": "category", "type": "select", "opts": {"options": ["news", "guides"]}},
    {"name": "labels", "type": "tags"},
    {"name": "tint", "type": "color"},
    {"name": "extra", "type": "object"},
    {"name": "seo", "type": "set", "group": "SEO", "opts": {"fields": [
        {"name": "keywords", "type": "text"}, {"name": "weight", "type": "number"}]}},
    {"name": "prices", "type": "table"},
    {"name": "picture", "type": "asset"},
    {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}},
    {"name": "links", "type": "text", "multiple": True},
    {"name": "hero", "type": "variants"},
]


def _models(admin: Api) -> dict[str, Any]:
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "German"}]).status_code == 200
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=FIELDS)
    return create_item(admin, "authors", {"name": "Astrid Lindgren"})


def _png(color: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), color).save(out, "PNG")
    return out.getvalue()


def _stored(admin: Api, model: str, item_id: str) -> dict[str, Any]:
    found = admin.get(f"/api/content/items/{model}", params={"filter": f'{{"_id": "{item_id}"}}', "limit": "1",
                                                             "skip": "0"}).json()["data"]
    if not found:  # a draft: the list answers published items only
        found = [admin.get(f"/api/content/item/{model}/{item_id}").json()]
    return found[0]  # type: ignore[no-any-return]


def test_every_field_type_round_trips_from_the_form(app: Any, admin: Api) -> None:
    author = _models(admin)
    ann = logged_in(app)
    page = ann.get("/studio/content/posts/item")
    assert page.status_code == 200
    form = EditorForm(page.text)
    assert form.action == "/studio/content/posts/item"
    values = {
        "f.title": "Hello", "f.title_de": "Hallo", "f.summary": "Short", "f.body": "<p><b>Bold</b> text</p>",
        "f.notes": "# Heading\n\nText", "f.snippet": "let x = 1;", "f.rating": "4,5", "f.featured": "1",
        "f.day": "2026-03-01", "f.at": "2026-03-01T10:30:00Z", "f.clock": "12:30", "f.category": "guides",
        "f.labels": "news, tips ,", "f.tint": "#aabbcc", "f.extra": '{"a": [1, 2]}',
        "f.seo.keywords": "cms", "f.seo.weight": "3", "f.prices": '[{"size": "S", "eur": 5}]',
        "f.author": author["_id"],
    }
    for name, value in values.items():
        form.set(name, value)
    # two list entries and one variant, as the page's script adds them
    form.set("f.links.n1", "https://a.example").set("f.links.n2", "https://b.example")
    for key, value in {"id": "", "meta": "", "label": "Member", "active": "1", "audience": "member, vip",
                       "schedule": '{"days": ["sat"]}', "data": '{"heading": "Hi"}'}.items():
        form.set(f"f.hero.n3.{key}", value)
    saved = post(ann, form)
    assert saved.status_code == 303, saved.text
    item_id = saved.headers["location"].rsplit("/", 1)[1]
    stored = _stored(admin, "posts", item_id)
    assert stored["title"] == "Hello" and stored["title_de"] == "Hallo" and stored["summary"] == "Short"
    assert stored["body"] == "<p><b>Bold</b> text</p>"
    assert stored["notes"] == "# Heading\n\nText" and stored["snippet"] == "let x = 1;"
    assert stored["rating"] == 4.5 and stored["featured"] is True
    assert (stored["day"], stored["at"], stored["clock"]) == ("2026-03-01", "2026-03-01T10:30:00Z", "12:30")
    assert stored["category"] == "guides" and stored["labels"] == ["news", "tips"] and stored["tint"] == "#aabbcc"
    assert stored["extra"] == {"a": [1, 2]} and stored["seo"] == {"keywords": "cms", "weight": 3}
    assert stored["prices"] == [{"size": "S", "eur": 5}]
    assert stored["author"] == {"_model": "authors", "_id": author["_id"]}
    assert stored["links"] == ["https://a.example", "https://b.example"]
    variants = stored["hero"]["persona:variants"]
    assert len(variants) == 1 and variants[0]["label"] == "Member" and variants[0]["audience"] == ["member", "vip"]
    assert variants[0]["data"] == {"heading": "Hi"} and variants[0]["meta"] == {"schedule": {"days": ["sat"]}}
    assert stored["_rev"] == 1 and stored["_state"] == 1

    # the edit page shows every value; posting it back unchanged changes no value
    page = ann.get(f"/studio/content/posts/item/{item_id}")
    assert page.status_code == 200
    assert "Astrid Lindgren" in page.text  # the linked author by name
    again = EditorForm(page.text)
    assert again.get("f.rating") == "4.5" and again.get("f.labels") == "news, tips"
    assert again.get("_rev") == "1"
    assert post(ann, again, intent="publish").status_code == 303
    after = _stored(admin, "posts", item_id)
    assert after["_rev"] == 2
    assert {k: v for k, v in after.items() if not k.startswith("_")} == \
        {k: v for k, v in stored.items() if not k.startswith("_")}

    # reorder and remove repeater entries, clear values, unset the checkbox
    again = EditorForm(ann.get(f"/studio/content/posts/item/{item_id}").text)
    pairs = again.pairs
    first = next(i for i, (k, _) in enumerate(pairs) if k == "f.links.k0")
    second = next(i for i, (k, _) in enumerate(pairs) if k == "f.links.k1")
    pairs[first], pairs[second] = pairs[second], pairs[first]
    again.drop("f.hero.k0").set("f.rating", "").set("f.featured", "0").set("f.author", "")
    assert post(ann, again).status_code == 303  # Enter: "Save draft", the published item stays
    assert _stored(admin, "posts", item_id)["links"] == ["https://a.example", "https://b.example"]
    drafted = admin.get(f"/api/content/item/posts/{item_id}", params={"draft": 1}).json()
    assert drafted["_draft"] is True and drafted["links"] == ["https://b.example", "https://a.example"]
    shown = EditorForm(ann.get(f"/studio/content/posts/item/{item_id}").text)  # the editor shows the draft
    assert post(ann, shown, intent="publish").status_code == 303
    after = _stored(admin, "posts", item_id)
    assert after["links"] == ["https://b.example", "https://a.example"]
    assert after["hero"] is None and after["rating"] is None and after["featured"] is False
    assert after["author"] is None and after["_rev"] == 3


def test_localized_fields_show_locales_side_by_side_with_the_fallback(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "Hello", "summary": "Only English"})
    page = logged_in(app).get(f"/studio/content/posts/item/{item['_id']}").text
    assert 'name="f.title_de"' in page and 'data-locale="de"' in page and ">German</button>" in page
    # the missing German summary shows the default one greyed, as a placeholder
    assert 'name="f.summary_de" rows="4" placeholder="Only English"' in page


def test_a_bad_value_is_shown_next_to_the_field_and_nothing_is_stored(app: Any, admin: Api) -> None:
    _models(admin)
    ann = logged_in(app)
    form = EditorForm(ann.get("/studio/content/posts/item").text)
    form.set("f.title", "Typed title").set("f.rating", "lots").set("f.extra", "{broken")
    answer = post(ann, form)
    assert answer.status_code == 400
    assert "must be a number" in answer.text and "must be valid JSON" in answer.text
    assert 'value="Typed title"' in answer.text and 'value="lots"' in answer.text  # kept as typed
    assert admin.get("/api/content/items/posts").json() == []
    # a value the service refuses: the API's message, next to the field
    form = EditorForm(ann.get("/studio/content/posts/item").text)
    form.set("f.title", "T").set("f.tint", "red").set("f.category", "other")
    answer = post(ann, form)
    assert answer.status_code == 400
    assert "must be a colour like #aabbcc" in answer.text and "must be one of news, guides" in answer.text
    assert 'id="err-tint"' in answer.text and 'value="red"' in answer.text
    # a required field left empty
    form = EditorForm(ann.get("/studio/content/posts/item").text)
    answer = post(ann, form)
    assert answer.status_code == 400 and "title is required" in answer.text and 'id="err-title"' in answer.text
    # only the default locale is required: only its box is marked
    assert 'class="locale-col active has-error" data-locale="default"' in answer.text
    assert 'class="locale-col" data-locale="de"' in answer.text
    assert admin.get("/api/content/items/posts").json() == []


def test_a_save_after_someone_elses_shows_the_conflict_and_can_overwrite(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "First", "summary": "Kept"})
    ann = logged_in(app)
    form = EditorForm(ann.get(f"/studio/content/posts/item/{item['_id']}").text)
    assert form.get("_rev") == "1"
    # someone else saves meanwhile
    assert admin.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "Theirs"}}).status_code == 200
    form.set("f.title", "Mine")
    answer = post(ann, form, intent="publish")
    assert answer.status_code == 409
    assert "Someone else saved this item meanwhile" in answer.text
    assert 'data-changed="title"' in answer.text and "Theirs" in answer.text and "Mine" in answer.text
    assert 'data-changed="summary"' not in answer.text
    assert "Reload (discard my changes)" in answer.text and "Overwrite on purpose" in answer.text
    assert _stored(admin, "posts", item["_id"])["title"] == "Theirs"  # not overwritten silently
    again = EditorForm(answer.text)
    assert again.get("_rev") == "2" and again.get("f.title") == "Mine"
    assert post(ann, again, intent="publish").status_code == 303  # overwrite on purpose
    stored = _stored(admin, "posts", item["_id"])
    assert stored["title"] == "Mine" and stored["summary"] == "Kept" and stored["_rev"] == 3


def test_delete_needs_the_permission(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "Stays"})
    admin.put("/api/system/roles/writer", json={"permissions": {
        "content/posts/read": True, "content/posts/update": True, "content/posts/create": True,
        "content/authors/read": True}})
    bob = logged_in(app, "bob", "writer")
    page = bob.get(f"/studio/content/posts/item/{item['_id']}")
    assert page.status_code == 200 and "/delete" not in page.text and "data-save" in page.text
    assert 'name="_state"' not in page.text  # no publish permission: no state control
    csrf = page_csrf(page.text)
    crafted = bob.post(f"/studio/content/posts/item/{item['_id']}/delete", content=urlencode({"csrf": csrf}),
                       headers={"content-type": "application/x-www-form-urlencoded"})
    assert crafted.status_code == 403
    assert _stored(admin, "posts", item["_id"])["title"] == "Stays"
    ann = logged_in(app)
    page = ann.get(f"/studio/content/posts/item/{item['_id']}")
    assert f'action="/studio/content/posts/item/{item["_id"]}/delete"' in page.text
    done = ann.post(f"/studio/content/posts/item/{item['_id']}/delete",
                    content=urlencode({"csrf": page_csrf(page.text)}),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert done.status_code == 303 and done.headers["location"] == "/studio/content/posts"
    assert admin.get("/api/content/items/posts").json() == []


def test_a_reader_sees_values_without_a_save_button_and_cannot_save(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "Read me"})
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    carl = logged_in(app, "carl", "reader")
    page = carl.get(f"/studio/content/posts/item/{item['_id']}")
    assert page.status_code == 200
    assert 'value="Read me"' in page.text and "data-save" not in page.text
    assert '<fieldset class="plain" disabled>' in page.text  # the fields, not only the buttons that wait for editor.js
    form = EditorForm(page.text).set("f.title", "Changed")
    assert post(carl, form).status_code == 403
    assert _stored(admin, "posts", item["_id"])["title"] == "Read me"
    assert carl.get("/studio/content/posts/item").status_code == 403  # no create permission
    draft = create_item(admin, "posts", {"title": "Not yet", "_state": 0})
    assert carl.get(f"/studio/content/posts/item/{draft['_id']}").status_code == 404  # drafts: who may update


def test_drafts_open_for_editors_and_publishing_needs_the_permission(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "Draft", "_state": 0})
    ann = logged_in(app)
    form = EditorForm(ann.get(f"/studio/content/posts/item/{item['_id']}").text)
    assert form.get("_state") == "0"
    assert post(ann, form.set("_state", "1")).status_code == 303
    assert _stored(admin, "posts", item["_id"])["_state"] == 1
    admin.put("/api/system/roles/writer", json={"permissions": {
        "content/posts/read": True, "content/posts/update": True}})
    bob = logged_in(app, "bob", "writer")
    form = EditorForm(bob.get(f"/studio/content/posts/item/{item['_id']}").text)
    assert post(bob, form.set("_state", "0")).status_code == 303  # the state is not sent: ignored
    assert _stored(admin, "posts", item["_id"])["_state"] == 1


def test_a_singleton_is_edited_in_place(app: Any, admin: Api) -> None:
    put_model(admin, "settings", type="singleton", fields=[{"name": "site", "type": "text"},
                                                           {"name": "open", "type": "boolean"}])
    ann = logged_in(app)
    page = ann.get("/studio/content/settings/item")
    assert page.status_code == 200 and "/delete" not in page.text
    form = EditorForm(page.text)
    assert form.get("_rev") == "0"
    assert post(ann, form.set("f.site", "My site").set("f.open", "1")).status_code == 303
    assert admin.get("/api/content/item/settings").json()["site"] == "My site"
    form = EditorForm(ann.get("/studio/content/settings/item").text)
    assert form.get("f.site") == "My site" and form.get("_rev") == "1"
    admin.post("/api/content/item/settings", json={"data": {"site": "Other"}})
    assert post(ann, form.set("f.site", "Mine")).status_code == 409


def test_rich_text_is_stored_without_scripts_or_handlers(app: Any, admin: Api) -> None:
    _models(admin)
    ann = logged_in(app)
    form = EditorForm(ann.get("/studio/content/posts/item").text)
    form.set("f.title", "X").set("f.body", '<p>Hi<script>alert(1)</script><img src="x.png" onerror="alert(2)"></p>')
    saved = post(ann, form)
    assert saved.status_code == 303
    body = _stored(admin, "posts", saved.headers["location"].rsplit("/", 1)[1])["body"]
    assert "Hi" in body and "<script" not in body and "onerror" not in body and "alert(1)" not in body


def _upload(browser: Any, token: str, name: str, data: bytes, mime: str) -> Any:
    return browser.post("/studio/assets/upload", files={"file": (name, data, mime)},
                        headers={"x-csrf-token": token})


def test_upload_in_place_and_a_refused_file(app: Any, admin: Api) -> None:
    _models(admin)
    ann = logged_in(app)
    page = ann.get("/studio/content/posts/item")
    token = page_csrf(page.text)
    answer = _upload(ann, token, "red.png", _png(), "image/png")
    assert answer.status_code == 200, answer.text
    asset = answer.json()
    assert asset["image"] is True and asset["title"] == "red.png"
    assert admin.get(f"/api/assets/{asset['_id']}").json()["width"] == 24
    thumb = ann.get(f"/studio/assets/thumb/{asset['_id']}")
    assert thumb.status_code == 303 and ann.get(thumb.headers["location"]).status_code == 200
    refused = _upload(ann, token, "evil.html", b"<html><script>alert(1)</script></html>", "text/html")
    assert refused.status_code in (400, 415) and refused.json()["error"]
    assert _upload(ann, "wrong", "red.png", _png(), "image/png").status_code == 403
    # the picture chosen for an item is stored as a reference and shown with its thumbnail
    form = EditorForm(page.text).set("f.title", "With picture").set("f.picture", asset["_id"])
    saved = post(ann, form)
    item_id = saved.headers["location"].rsplit("/", 1)[1]
    assert _stored(admin, "posts", item_id)["picture"]["_id"] == asset["_id"]
    page = ann.get(f"/studio/content/posts/item/{item_id}").text
    assert f'src="/studio/assets/thumb/{asset["_id"]}"' in page and "red.png" in page
    found = ann.get("/studio/assets/pick", params={"q": "red", "for": "f-picture"})
    assert found.status_code == 200 and f'data-pick-id="{asset["_id"]}"' in found.text


def test_the_link_picker_searches_the_target_model(app: Any, admin: Api) -> None:
    author = _models(admin)
    create_item(admin, "authors", {"name": "Tove Jansson"})
    ann = logged_in(app)
    found = ann.get("/studio/pick/authors", params={"q": "lindg", "for": "f-author"})
    assert found.status_code == 200
    assert f'data-pick-id="{author["_id"]}"' in found.text and "Astrid Lindgren" in found.text
    assert "Tove" not in found.text and 'data-pick="f-author"' in found.text
    everyone = ann.get("/studio/pick/authors").text
    assert "Tove Jansson" in everyone and "Astrid Lindgren" in everyone
    admin.put("/api/system/roles/reader", json={"permissions": {"content/posts/read": True}})
    assert logged_in(app, "carl", "reader").get("/studio/pick/authors").status_code == 403


def test_an_item_deleted_meanwhile_keeps_what_was_typed(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "Short-lived"})
    ann = logged_in(app)
    form = EditorForm(ann.get(f"/studio/content/posts/item/{item['_id']}").text).set("f.title", "Typed")
    assert admin.delete(f"/api/content/item/posts/{item['_id']}").status_code == 200
    answer = post(ann, form)
    assert answer.status_code == 409 and "someone deleted this item meanwhile" in answer.text
    again = EditorForm(answer.text)
    assert again.action == "/studio/content/posts/item" and again.get("f.title") == "Typed"
    assert "_rev" not in dict(again.pairs)
    assert post(ann, again).status_code == 303
    assert [i["title"] for i in admin.get("/api/content/items/posts").json()] == ["Typed"]


def test_a_new_tree_item_goes_below_its_parent(app: Any, admin: Api) -> None:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    top = create_item(admin, "nav", {"label": "Top"})
    ann = logged_in(app)
    form = EditorForm(ann.get("/studio/content/nav/item", params={"parent": top["_id"]}).text)
    assert form.get("_pid") == top["_id"]
    saved = post(ann, form.set("f.label", "Child"))
    assert saved.status_code == 303
    child = admin.get(f"/api/content/item/nav/{saved.headers['location'].rsplit('/', 1)[1]}").json()
    assert child["_pid"] == top["_id"] and child["label"] == "Child"


def test_a_form_that_came_back_counts_as_unsaved(app: Any, admin: Api) -> None:
    _models(admin)
    ann = logged_in(app)
    page = ann.get("/studio/content/posts/item").text
    assert "data-dirty-start" not in page
    answer = post(ann, EditorForm(page).set("f.rating", "many"))
    assert answer.status_code == 400 and "data-dirty-start" in answer.text


def test_uploads_need_the_permission_and_a_multipart_body(app: Any, admin: Api) -> None:
    _models(admin)
    admin.put("/api/system/roles/writer", json={"permissions": {"content/posts/read": True,
                                                                "content/posts/update": True}})
    bob = logged_in(app, "bob", "writer")
    token = page_csrf(bob.get("/studio/content").text)
    refused = _upload(bob, token, "red.png", _png(), "image/png")
    assert refused.status_code == 403 and refused.json()["error"]
    ann = logged_in(app)
    token = page_csrf(ann.get("/studio/content").text)
    form = ann.post("/studio/assets/upload", content=urlencode({"csrf": token}),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert form.status_code == 400
    assert admin.get("/api/assets").json() == []


def test_repeaters_of_links_and_of_sets(app: Any, admin: Api) -> None:
    author = _models(admin)
    other = create_item(admin, "authors", {"name": "Tove Jansson"})
    put_model(admin, "books", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "writers", "type": "contentItemLink", "multiple": True, "opts": {"link": "authors"}},
        {"name": "chapters", "type": "set", "multiple": True, "opts": {"fields": [
            {"name": "heading", "type": "text"}, {"name": "pages", "type": "number"},
            {"name": "notes", "type": "text", "multiple": True}]}},
    ])
    ann = logged_in(app)
    page = ann.get("/studio/content/books/item").text
    assert 'data-placeholder="__K1__"' in page and 'data-placeholder="__K3__"' in page  # a repeater in a repeater's entry
    form = EditorForm(page).set("f.title", "Moomins")
    form.set("f.writers.n1", other["_id"]).set("f.writers.n2", author["_id"])
    form.set("f.chapters.n3.~", "").set("f.chapters.n3.heading", "One").set("f.chapters.n3.pages", "12")
    form.set("f.chapters.n3.notes.~", "").set("f.chapters.n3.notes.n5", "first")
    form.set("f.chapters.n4.~", "").set("f.chapters.n4.heading", "Two").set("f.chapters.n4.pages", "x")
    form.set("f.chapters.n4.notes.~", "")
    answer = post(ann, form)
    assert answer.status_code == 400 and "field pages must be a number" in answer.text
    assert 'value="Two"' in answer.text  # what was typed, shown again
    form.set("f.chapters.n4.pages", "")
    saved = post(ann, form)
    assert saved.status_code == 303, saved.text
    item = _stored(admin, "books", saved.headers["location"].rsplit("/", 1)[1])
    assert [w["_id"] for w in item["writers"]] == [other["_id"], author["_id"]]
    assert item["chapters"] == [{"heading": "One", "pages": 12, "notes": ["first"]},
                                {"heading": "Two", "pages": None, "notes": []}]
    page = ann.get(saved.headers["location"]).text
    assert "Tove Jansson" in page and "Astrid Lindgren" in page and 'value="first"' in page


def test_the_upload_button_offers_the_fields_allowed_file_types(app: Any, admin: Api) -> None:
    put_model(admin, "docs", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "scan", "type": "asset", "opts": {"accept": "image/*, application/pdf"}},
        {"name": "any", "type": "asset"}])
    page = logged_in(app).get("/studio/content/docs/item").text
    assert page.count('data-upload="') == 2
    assert 'data-upload="f-scan" accept="image/*, application/pdf"' in page
    assert 'data-upload="f-any">' in page


def test_line_breaks_sent_as_browsers_send_them_change_nothing(app: Any, admin: Api) -> None:
    _models(admin)
    item = create_item(admin, "posts", {"title": "Lines", "summary": "one\ntwo\n\nthree"})
    ann = logged_in(app)
    form = EditorForm(ann.get(f"/studio/content/posts/item/{item['_id']}").text)
    # a browser sends every line break of a text area as CRLF
    form.pairs = [(k, v.replace("\n", "\r\n")) for k, v in form.pairs]
    assert post(ann, form, intent="publish").status_code == 303
    assert _stored(admin, "posts", item["_id"])["summary"] == "one\ntwo\n\nthree"
    # and a later conflict names only what really differs
    stale = EditorForm(ann.get(f"/studio/content/posts/item/{item['_id']}").text)
    assert admin.post("/api/content/item/posts", json={"data": {"_id": item["_id"], "title": "Theirs"}}).status_code == 200
    stale.pairs = [(k, v.replace("\n", "\r\n")) for k, v in stale.pairs]
    answer = post(ann, stale.set("f.title", "Mine"), intent="publish")
    assert answer.status_code == 409
    assert 'data-changed="title"' in answer.text and 'data-changed="summary"' not in answer.text
