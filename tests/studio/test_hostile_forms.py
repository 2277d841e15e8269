"""Hostile or broken input to the studio's forms answers a 4xx (or falls
back to a default for link parameters) and stores nothing: digits that are
not ASCII, names nesting below an input, JSON too deep or not strictly
JSON, and a model form whose sets list themselves."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import pytest

from quire.content.screens.model_form import MAX_ROWS, parse_form
from quire.ui.screens import Form
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, page_csrf

FORM = {"content-type": "application/x-www-form-urlencoded"}


def _post(browser: Any, path: str, pairs: list[tuple[str, str]]) -> Any:
    token = page_csrf(browser.get("/studio/content").text)
    return browser.post(path, content=urlencode([("csrf", token), *pairs]), headers=FORM)


@pytest.mark.parametrize("digit", ["²", "①", "٥"])
def test_digits_that_are_not_ascii_are_no_numbers(app: Any, admin: Api, digit: str) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "nav", type="tree", fields=[{"name": "title", "type": "text"}])
    kept = create_item(admin, "posts", {"title": "Kept"})
    node = create_item(admin, "nav", {"title": "Node"})
    ann = logged_in(app)
    for query in (f"page={digit}", f"limit={digit}"):
        listed = ann.get(f"/studio/content/posts?{query}")
        assert listed.status_code == 200 and "Kept" in listed.text  # link parameters fall back to defaults
    saved = _post(ann, f"/studio/content/posts/item/{kept['_id']}", [("f.title", "Changed"), ("_rev", digit)])
    assert saved.status_code == 400 and "revision" in saved.text
    created = _post(ann, "/studio/content/posts/item", [("f.title", "New"), ("_rev", digit)])
    assert created.status_code == 400
    moved = _post(ann, "/studio/content/nav/move", [("id", node["_id"]), ("position", digit)])
    assert moved.status_code == 400 and "position" in moved.text
    assert [i["title"] for i in admin.get("/api/content/items/posts").json()] == ["Kept"]


@pytest.mark.parametrize("part", ["label", "audience", "data", "meta", "schedule"])
def test_a_name_nesting_below_a_variant_input_is_ignored(app: Any, admin: Api, part: str) -> None:
    put_model(admin, "pages", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "hero", "type": "variants"}])
    answer = _post(logged_in(app), "/studio/content/pages/item",
                   [("f.title", "Home"), (f"f.hero.k0.{part}.x", "1"), ("f.hero.k0.label", "Guest")])
    assert answer.status_code in (303, 400), answer.text[:200]


def test_json_fields_refuse_what_the_api_refuses(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "extra", "type": "object"},
                                                         {"name": "rows", "type": "table"}])
    item = create_item(admin, "posts", {"title": "Kept"})
    ann = logged_in(app)
    deep_object = '{"a":' * 600 + "1" + "}" * 600
    for name, value in (("f.extra", deep_object), ("f.rows", "[" * 1000 + "]" * 1000),
                        ("f.extra", '{"x": NaN}'), ("f.extra", '{"x": Infinity}')):
        answer = _post(ann, f"/studio/content/posts/item/{item['_id']}", [("f.title", "Changed"), (name, value)])
        assert answer.status_code == 400, (name, value[:20], answer.status_code)
        assert "must be valid JSON" in answer.text
    stored = admin.get(f"/api/content/item/posts/{item['_id']}").json()
    assert stored["title"] == "Kept" and stored["_rev"] == 1


def test_the_model_form_refuses_deep_or_non_strict_json(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    ann = logged_in(app)
    row = [("field", "fa"), ("fa-name", "title"), ("fa-was", "title"), ("fa-type", "text")]
    deep = "[" * 100_000 + "]" * 100_000
    for extra in ([("meta", deep)], [("indexes", deep)], [("meta", '{"x": Infinity}')]):
        answer = _post(ann, "/studio/models/posts", [*row, ("label", "Changed"), *extra])
        assert answer.status_code == 400, (extra[0][0], answer.status_code)
    for default in (deep, "NaN", '{"a":' * 300 + "1" + "}" * 300):
        answer = _post(ann, "/studio/models/new", [("name", "nums"), ("kind", "collection"), ("field", "fa"),
                                                    ("fa-name", "n"), ("fa-type", "object"), ("fa-default", default)])
        assert answer.status_code == 400, (default[:10], answer.status_code)
    opts = _post(ann, "/studio/models/posts", [*row, ("fa-opts", deep)])
    assert opts.status_code in (303, 400)
    assert admin.get("/api/system/models/posts").json().get("label") in (None, "", "posts", "Posts")  # made from the name
    assert "nums" not in [m["name"] for m in admin.get("/api/system/models").json()]


def test_a_set_listing_itself_is_read_once(app: Any, admin: Api) -> None:
    pairs = [("field", "fa"), ("fa-name", "title"), ("fa-type", "set"), *[("fa-fields", "fa")] * 6,
             *[("field", "fb")] * 3, ("fb-name", "body"), ("fb-fields", "fa")]
    form = parse_form(Form(pairs))
    assert [r.name for r in form.all_rows()] == ["title", "body"]  # each key once: no rows multiplied
    many = [pair for n in range(MAX_ROWS + 50) for pair in (("field", f"k{n}"), (f"k{n}-name", f"f{n}"))]
    assert len(parse_form(Form(many)).rows) == MAX_ROWS
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    answer = _post(logged_in(app), "/studio/models/posts", [("fa-was", "title"), *pairs])
    assert answer.status_code in (303, 400)
