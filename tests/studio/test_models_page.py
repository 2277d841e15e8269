"""The model builder over HTTP: creating, changing and deleting models
through the studio's forms, with the safe schema changes of the service
(renames move stored values, a change stored values do not fit is refused
naming the items, deleting a field with values needs a confirmation) and
the API's messages next to the field."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest

from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import Browser, logged_in, post_form

ALL_TYPES = ["text", "longtext", "wysiwyg", "markdown", "code", "number", "boolean", "date", "datetime", "time",
             "select", "tags", "color", "object", "set", "table", "asset", "contentItemLink", "variants"]


class FormControls(HTMLParser):
    """What a browser would post for the page's model form: every named
    control in document order (checked boxes, selected options, textareas)."""

    def __init__(self) -> None:
        super().__init__()
        self.pairs: list[tuple[str, str]] = []
        self._select: str | None = None
        self._first_option: str | None = None
        self._chosen = False
        self._textarea: str | None = None
        self._text = ""
        self._in_form = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and "model-form" in a.get("class", ""):
            self._in_form = True
        if not self._in_form:
            return
        if tag == "input" and a.get("name") and a.get("type") != "submit":
            if a.get("type") in ("checkbox", "radio") and "checked" not in a:
                return
            self.pairs.append((a["name"], a.get("value", "on")))
        elif tag == "select" and a.get("name"):
            self._select, self._first_option, self._chosen = a["name"], None, False
        elif tag == "option" and self._select:
            value = a.get("value")
            self._pending = value
            if "selected" in a:
                self.pairs.append((self._select, value if value is not None else "\0"))
                self._chosen = True
            elif self._first_option is None:
                self._first_option = value if value is not None else "\0"
        elif tag == "textarea":
            self._textarea, self._text = a.get("name"), ""

    def handle_data(self, data: str) -> None:
        if self._textarea is not None:
            self._text += data
        if self._select and self.pairs and self.pairs[-1] == (self._select, "\0"):
            self.pairs[-1] = (self._select, data.strip())

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._select:
            if not self._chosen and self._first_option is not None:
                self.pairs.append((self._select, self._first_option))
            self._select = None
        elif tag == "textarea" and self._textarea:
            self.pairs.append((self._textarea, self._text.removeprefix("\n")))
            self._textarea = None
        elif tag == "form":
            self._in_form = False


def page_form(browser: Browser, path: str) -> list[tuple[str, str]]:
    page = browser.get(path)
    assert page.status_code == 200, page.text
    return form_of(page.text)


def form_of(html: str) -> list[tuple[str, str]]:
    parser = FormControls()
    parser.feed(html)
    return [(k, v) for k, v in parser.pairs if k != "csrf"]


def key_of(pairs: list[tuple[str, str]], name: str) -> str:
    """The row key of the field named `name` in a posted form."""
    return next(k.removesuffix("-name") for k, v in pairs if k.endswith("-name") and v == name)


def setting(pairs: list[tuple[str, str]], **changes: str | None) -> list[tuple[str, str]]:
    """`pairs` with some controls changed (None: unticked/removed); new ones added."""
    out = [(k, changes.get(k, v)) for k, v in pairs]
    out += [(k, v) for k, v in changes.items() if k not in dict(pairs)]
    return [(k, v) for k, v in out if v is not None]


def row(key: str, name: str, kind: str = "text", was: str = "", **extra: str) -> list[tuple[str, str]]:
    """The inputs of one field row (top level unless `list` is given)."""
    pairs = [(extra.pop("list", "field"), key), (f"{key}-was", was), (f"{key}-name", name), (f"{key}-type", kind)]
    return pairs + [(f"{key}-{k}", v) for k, v in extra.items()]


def create(browser: Browser, name: str, *rows: list[tuple[str, str]], kind: str = "collection",
           label: str = "", info: str = "") -> Any:
    pairs = [("name", name), ("label", label), ("kind", kind), ("info", info), ("action", "save")]
    for r in rows:
        pairs += r
    return post_form(browser, "/studio/models/new", pairs)


def test_the_list_shows_models_by_kind_with_links(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", label="Posts", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    put_model(admin, "settings", type="singleton", fields=[{"name": "site", "type": "text"}])
    create_item(admin, "posts", {"title": "a"})
    ann = logged_in(app)
    page = ann.get("/studio/models")
    assert page.status_code == 200
    text = page.text
    assert text.index("Collections") < text.index("Trees") < text.index("Singletons")
    for name in ("posts", "nav", "settings"):
        assert f'href="/studio/models/{name}"' in text
    assert 'href="/studio/models/new"' in text


def test_create_a_model_through_the_form(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    assert "Create model" in ann.get("/studio/models/new").text
    response = create(ann, "posts",
                      row("f00000001", "title", "text", label="Title", required="1", i18n="1", indexed="1"),
                      row("f00000002", "body", "wysiwyg", html_tags="p a strong", info="The story", group="Main"),
                      label="Blog posts", info="What we write")
    assert response.status_code == 303, response.text
    assert response.headers["location"] == "/studio/models/posts"
    model = admin.get("/api/system/models/posts").json()
    assert model["label"] == "Blog posts" and model["type"] == "collection"
    assert model["meta"] == {"info": "What we write"}
    assert model["indexes"] == [["title"]]
    title, body = model["fields"]
    assert title == {"name": "title", "type": "text", "label": "Title", "i18n": True, "required": True,
                     "multiple": False, "opts": {}}
    assert body["opts"] == {"html": {"tags": ["p", "a", "strong"]}} and body["info"] == "The story"
    page = ann.get("/studio/models/posts")
    assert "Created model posts." in page.text and "fixed after creation" in page.text


def test_every_type_round_trips_through_the_form(app: Any, admin: Api) -> None:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    ann = logged_in(app)
    options = {"select": {"options": "news\nguides = Guides\nsame = same"}, "contentItemLink": {"link": "authors"},
               "asset": {"accept": "image/*, application/pdf"}, "code": {"language": "json"},
               "wysiwyg": {"html_tags": "p em"}}
    defaults = {"number": "42", "boolean": "true", "tags": "a, b", "text": "hello", "object": '{"a": 1}'}
    rows = [row(f"f{i:08x}", f"f_{kind}", kind, **options.get(kind, {}), default=defaults.get(kind, ""))
            for i, kind in enumerate(ALL_TYPES)]
    set_key = f"f{ALL_TYPES.index('set'):08x}"
    rows += [row("f000000a1", "caption", "text", list=f"{set_key}-fields", i18n="1"),
             row("f000000a2", "picture", "asset", list=f"{set_key}-fields", accept="image/*"),
             row("f000000a3", "inner", "set", list=f"{set_key}-fields"),
             row("f000000a4", "deep", "number", list="f000000a3-fields")]
    response = create(ann, "everything", *rows)
    assert response.status_code == 303, response.text
    model = admin.get("/api/system/models/everything").json()
    by_name = {f["name"]: f for f in model["fields"]}
    assert [f["type"] for f in model["fields"]] == ALL_TYPES
    assert by_name["f_select"]["opts"] == {"options": ["news", {"value": "guides", "label": "Guides"},
                                                       {"value": "same", "label": "same"}]}
    assert by_name["f_contentItemLink"]["opts"] == {"link": "authors"}
    assert by_name["f_asset"]["opts"] == {"accept": "image/*,application/pdf"}
    assert by_name["f_code"]["opts"] == {"language": "json"}
    assert by_name["f_number"]["default"] == 42 and by_name["f_boolean"]["default"] is True
    assert by_name["f_tags"]["default"] == ["a", "b"] and by_name["f_object"]["default"] == {"a": 1}
    assert by_name["f_text"]["default"] == "hello"
    subs = by_name["f_set"]["opts"]["fields"]
    assert [s["name"] for s in subs] == ["caption", "picture", "inner"] and subs[0]["i18n"] is True
    assert subs[1]["opts"] == {"accept": "image/*"}
    assert subs[2]["opts"]["fields"][0]["name"] == "deep"
    # the edit page posts back exactly what it shows: nothing changes
    pairs = page_form(ann, "/studio/models/everything")
    assert post_form(ann, "/studio/models/everything", pairs).status_code == 303
    again = admin.get("/api/system/models/everything").json()
    assert again["fields"] == model["fields"] and again["indexes"] == model["indexes"]


def test_what_the_form_does_not_edit_is_kept(app: Any, admin: Api) -> None:
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}]).is_success
    definition = put_model(admin, "pages", type="tree", label="Pages", meta={"info": "Site pages", "icon": "page"}, fields=[
        {"name": "title", "type": "text", "i18n": True, "info": "Shown in menus", "group": "Main", "default": ""},
        {"name": "body", "type": "wysiwyg", "opts": {"html": {"tags": ["p", "a"], "attributes": {"a": ["href"]}},
                                                     "toolbar": "small"}},
        {"name": "extra", "type": "set"},
        {"name": "n", "type": "number", "multiple": True, "default": [1, 2]}],
        indexes=["_created", ["title", "n"], "title:de", "title"])
    ann = logged_in(app)
    page = ann.get("/studio/models/pages").text
    assert 'value="Site pages"' not in page and "Site pages</textarea>" in page
    assert post_form(ann, "/studio/models/pages", form_of(page)).status_code == 303
    again = admin.get("/api/system/models/pages").json()
    assert again["meta"] == definition["meta"] and again["type"] == "tree"
    fields = {f["name"]: f for f in again["fields"]}
    assert fields["body"]["opts"] == {"html": {"tags": ["p", "a"], "attributes": {"a": ["href"]}}, "toolbar": "small"}
    assert fields["n"]["default"] == [1, 2] and fields["title"]["info"] == "Shown in menus"
    assert sorted(map(str, again["indexes"])) == sorted(map(str, definition["indexes"]))


def test_renaming_a_field_moves_its_stored_values(app: Any, admin: Api) -> None:
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}]).is_success
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True},
                                                         {"name": "n", "type": "number"}], indexes=["title"])
    item = create_item(admin, "posts", {"title": "Hello", "title_de": "Hallo", "n": 1})
    ann = logged_in(app)
    pairs = page_form(ann, "/studio/models/posts")
    key = key_of(pairs, "title")
    assert (f"{key}-was", "title") in pairs
    response = post_form(ann, "/studio/models/posts", setting(pairs, **{f"{key}-name": "headline"}))
    assert response.status_code == 303, response.text
    model = admin.get("/api/system/models/posts").json()
    assert [f["name"] for f in model["fields"]] == ["headline", "n"] and model["indexes"] == [["headline"]]
    stored = admin.get(f"/api/content/item/posts/{item['_id']}").json()
    assert stored["headline"] == "Hello" and stored["headline_de"] == "Hallo" and "title" not in stored


def test_a_type_change_stored_values_do_not_fit_is_refused_naming_the_items(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "code", "type": "text"}])
    bad = [create_item(admin, "posts", {"title": f"t{i}", "code": f"x{i}"})["_id"] for i in range(2)]
    create_item(admin, "posts", {"title": "fine"})
    before = (admin.get("/api/system/models/posts").json(), admin.get("/api/content/items/posts").json())
    ann = logged_in(app)
    pairs = page_form(ann, "/studio/models/posts")
    key = key_of(pairs, "code")
    response = post_form(ann, "/studio/models/posts", setting(pairs, **{f"{key}-type": "number",
                                                                        f"{key}-label": "Typed label"}))
    assert response.status_code == 400
    assert "Field code: 2 stored items hold values that do not fit the new definition" in response.text
    assert all(item_id in response.text for item_id in bad)
    error = re.search(rf'id="row-{key}".*?<p class="field-error" id="{key}-error"', response.text, re.S)
    assert error, "the message sits in the field's row"
    assert re.search(rf'name="{key}-type"[^>]*>.*?<option value="number" selected>', response.text, re.S)
    assert 'value="Typed label"' in response.text  # the form as typed
    after = (admin.get("/api/system/models/posts").json(), admin.get("/api/content/items/posts").json())
    assert after == before


def test_renaming_a_sub_field_items_hold_values_under_is_refused(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[
        {"name": "extra", "type": "set", "opts": {"fields": [{"name": "caption", "type": "text"}]}}])
    item = create_item(admin, "posts", {"extra": {"caption": "Hi"}})
    ann = logged_in(app)
    pairs = page_form(ann, "/studio/models/posts")
    response = post_form(ann, "/studio/models/posts", setting(pairs, **{f"{key_of(pairs, 'caption')}-name": "title"}))
    assert response.status_code == 400
    assert "Field extra: 1 stored item holds values that do not fit" in response.text
    assert "has unknown field caption" in response.text and item["_id"] in response.text
    assert admin.get("/api/system/models/posts").json()["fields"][0]["opts"]["fields"][0]["name"] == "caption"


def test_removing_a_field_with_values_says_how_many_and_needs_a_confirmation(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "summary", "type": "text"}])
    ids = [create_item(admin, "posts", {"title": f"t{i}", "summary": f"s{i}"})["_id"] for i in range(3)]
    create_item(admin, "posts", {"title": "no summary"})
    ann = logged_in(app)
    page = ann.get("/studio/models/posts").text
    loader = re.search(r'hx-get="(/studio/fragments/model-usage/posts\?fields=[^"]+)"', page)
    assert loader, "the page counts the values once it has loaded"
    pairs = form_of(page)
    key = key_of(pairs, "summary")
    counts = ann.get(loader.group(1).replace("&amp;", "&"), headers={"hx-request": "true"}).text
    assert re.search(r'<div class="drop-confirm" id="drop-summary" hx-swap-oob="true">\s*<p><strong>3 items hold '
                     r'a value of summary.</strong>', counts)
    assert f'name="{key}-drop"' in counts and "Also delete the stored values of summary (3 items)" in counts
    assert '<div id="drop-title" class="drop-none" hx-swap-oob="true">' not in counts  # every item has a title
    assert "4 items stored in this model." in counts
    refused = post_form(ann, "/studio/models/posts", setting(pairs, **{f"{key}-remove": "1"}))
    assert refused.status_code == 400
    assert "3 items hold a value of summary" in refused.text
    assert "Also delete the stored values of summary (3 items)" in refused.text and "4 items stored" in refused.text
    assert [f["name"] for f in admin.get("/api/system/models/posts").json()["fields"]] == ["title", "summary"]
    done = post_form(ann, "/studio/models/posts", setting(pairs, **{f"{key}-remove": "1", f"{key}-drop": "1"}))
    assert done.status_code == 303, done.text
    assert [f["name"] for f in admin.get("/api/system/models/posts").json()["fields"]] == ["title"]
    for item_id in ids:
        assert "summary" not in admin.get(f"/api/content/item/posts/{item_id}").json()


def test_removing_a_field_no_item_holds_needs_no_confirmation(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "unused", "type": "text"}])
    create_item(admin, "posts", {"title": "a"})
    ann = logged_in(app)
    pairs = page_form(ann, "/studio/models/posts")
    key = key_of(pairs, "unused")
    assert post_form(ann, "/studio/models/posts", setting(pairs, **{f"{key}-remove": "1"})).status_code == 303
    assert [f["name"] for f in admin.get("/api/system/models/posts").json()["fields"]] == ["title"]


def test_deleting_a_model_asks_first_and_says_how_many_items_go(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "a"})
    create_item(admin, "posts", {"title": "b", "_state": 0})
    ann = logged_in(app)
    assert 'href="/studio/models/posts/delete"' in ann.get("/studio/models/posts").text
    page = ann.get("/studio/models/posts/delete")
    assert page.status_code == 200 and "2 items" in page.text
    unconfirmed = post_form(ann, "/studio/models/posts/delete", {})
    assert unconfirmed.status_code == 400
    assert admin.get("/api/system/models/posts").status_code == 200
    done = post_form(ann, "/studio/models/posts/delete", {"confirm": "posts"})
    assert done.status_code == 303 and done.headers["location"] == "/studio/models"
    assert admin.get("/api/system/models/posts").status_code == 404
    assert "Deleted model posts and its 2 items." in ann.get("/studio/models").text


@pytest.mark.parametrize(("name", "rows", "message"), [
    ("9lives", [row("f00000001", "title")], "Model name must match ^[A-Za-z][A-Za-z0-9_]*$"),
    ("", [row("f00000001", "title")], "Model name must match"),
    ("posts", [row("f00000001", "a"), row("f00000002", "a")], "Duplicate field names: a"),
    ("posts", [row("f00000001", "a", "nope")], "fields[0] (a): unknown type &#39;nope&#39;"),
    ("posts", [row("f00000001", "a"), row("f00000002", "2b")], "fields[1].name must match"),
    ("posts", [row("f00000001", "who", "contentItemLink")], "contentItemLink needs opts.link"),
    ("posts", [row("f00000001", "n", "number", default="many")], "default must be JSON for a number field"),
    ("posts", [row("f00000001", "n", "number", default='"x"')], "fields[0] (n): default must be a number"),
    ("posts", [row("f00000001", "s", "set"), row("f00000002", "1x", list="f00000001-fields")],
     "fields[0].name must match"),
    ("new", [row("f00000001", "title")], "pick another name"),
    ("taken", [row("f00000001", "title")], "Model taken exists already"),
])
def test_bad_input_is_shown_with_the_api_message_and_nothing_is_saved(
        app: Any, admin: Api, name: str, rows: list[list[tuple[str, str]]], message: str) -> None:
    put_model(admin, "taken", type="collection", fields=[{"name": "x", "type": "text"}])
    before = admin.get("/api/system/models").json()
    ann = logged_in(app)
    response = create(ann, name, *rows)
    assert response.status_code == 400
    assert message in response.text
    assert admin.get("/api/system/models").json() == before


def test_a_bad_name_and_a_bad_field_are_both_shown(app: Any, admin: Api) -> None:
    response = create(logged_in(app), "9lives", row("f00000001", ""))
    assert response.status_code == 400
    assert re.search(r'id="name-error" role="alert">Model name must match', response.text)
    assert re.search(r'id="f00000001-error" role="alert">fields\[0\].name must match', response.text)


def test_the_form_without_javascript_adds_and_moves_fields_without_saving(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "a", "type": "text"}, {"name": "b", "type": "text"}])
    ann = logged_in(app)
    pairs = page_form(ann, "/studio/models/posts")
    moved = post_form(ann, "/studio/models/posts", setting(pairs, action=f"down:{key_of(pairs, 'a')}"))
    assert moved.status_code == 200
    assert moved.text.index('value="b"') < moved.text.index('value="a"')
    added = post_form(ann, "/studio/models/posts", setting(pairs, action="add", **{"add-type": "asset"}))
    assert added.status_code == 200 and added.text.count('class="field-row') == 3
    set_form = setting(pairs, **{f"{key_of(pairs, 'b')}-type": "set"})
    sub = post_form(ann, "/studio/models/posts", setting(set_form, action=f"add:{key_of(pairs, 'b')}",
                                                         **{f"{key_of(pairs, 'b')}-add-type": "date"}))
    assert re.search(rf'name="{key_of(pairs, "b")}-fields" value="f[0-9a-f]{{8}}"', sub.text)
    assert [f["name"] for f in admin.get("/api/system/models/posts").json()["fields"]] == ["a", "b"]
    # the saved order is the order of the rows in the form
    key_a, key_b = key_of(pairs, "a"), key_of(pairs, "b")
    swapped = [p for p in pairs if p != ("field", key_a)]
    swapped.insert(swapped.index(("field", key_b)) + 1, ("field", key_a))
    assert post_form(ann, "/studio/models/posts", swapped).status_code == 303
    assert [f["name"] for f in admin.get("/api/system/models/posts").json()["fields"]] == ["b", "a"]


def test_a_new_field_row_comes_as_a_fragment(app: Any) -> None:
    ann = logged_in(app)
    row_html = ann.get("/studio/fragments/model-field?add-type=set&list=field&depth=0",
                       headers={"hx-request": "true"}).text
    key = re.search(r'name="field" value="(f[0-9a-f]{8})"', row_html)
    assert key and f'data-list="{key.group(1)}-fields"' in row_html
    assert '<option value="set" selected>' in row_html
    sub = ann.get(f"/studio/fragments/model-field?{key.group(1)}-add-type=asset&list={key.group(1)}-fields&depth=1")
    assert f'name="{key.group(1)}-fields"' in sub.text and '<option value="asset" selected>' in sub.text
    assert ann.get("/studio/fragments/model-field?list=evil").status_code == 400


def test_a_role_without_system_manage_gets_403_and_changes_nothing(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.put("/api/system/roles/editor", json={"permissions": {"content/posts/read": True,
                                                                "content/posts/update": True}})
    before = admin.get("/api/system/models").json()
    bob = logged_in(app, "bob", "editor")
    assert "/studio/models" not in bob.get("/studio/content").text
    for path in ("/studio/models", "/studio/models/new", "/studio/models/posts", "/studio/models/posts/delete",
                 "/studio/fragments/model-field", "/studio/fragments/model-usage/posts?fields=f00000001:title"):
        assert bob.get(path).status_code == 403, path
    posts = [("/studio/models/new", [("name", "other"), ("kind", "collection"), *row("f00000001", "title")]),
             ("/studio/models/posts", row("f00000001", "title", "number", was="title")),
             ("/studio/models/posts/delete", [("confirm", "posts")])]
    for path, pairs in posts:
        assert post_form(bob, path, pairs).status_code == 403, path
    assert admin.get("/api/system/models").json() == before
