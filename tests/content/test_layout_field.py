"""The `layout` field type (blocks): Cockpit's layout value, checked
component by component against the core components and the field's own."""

from __future__ import annotations

from quire.app import Quire
from quire.content.asset_refs import AssetRefs
from tests.assets.helpers import png_of_zeros, upload_one
from tests.conftest import Api, put_model

HERO = {"name": "hero", "label": "Hero", "group": "Sections", "fields": [
    {"name": "headline", "type": "text", "required": True}, {"name": "rating", "type": "number"}]}


def _model(admin: Api, **opts: object) -> None:
    put_model(admin, "pages2", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "content", "type": "layout", "opts": {"components": [HERO], **opts}}])


def test_a_layout_is_stored_and_answered_as_cockpits(admin: Api) -> None:
    _model(admin)
    value = [
        {"component": "heading", "label": "Intro", "data": {"text": "Welcome", "level": "1"}},
        {"component": "section", "data": {"class": "hero"}, "children": [
            {"component": "hero", "data": {"headline": "Big news", "rating": 5}},
            {"component": "richtext", "data": {"html": "<p>Hi <script>x()</script><b>there</b></p>"}}]},
        {"component": "grid", "data": {"colWidth": "1-2"}, "columns": [
            {"components": [{"component": "button", "data": {"url": "/a", "caption": "A", "target": "_self"}}]},
            {"components": []}]},
    ]
    saved = admin.post("/api/content/item/pages2", json={"data": {"title": "Home", "content": value}}).json()
    read = admin.get(f"/api/content/item/pages2/{saved['_id']}").json()["content"]
    assert [c["component"] for c in read] == ["heading", "section", "grid"]
    assert read[0]["label"] == "Intro" and read[0]["data"] == {"text": "Welcome", "level": "1"}
    assert all(isinstance(c["id"], str) and c["id"] for c in read)  # every instance gets an id
    inner = read[1]["children"]
    assert inner[0]["data"] == {"headline": "Big news", "rating": 5}
    assert "<script>" not in inner[1]["data"]["html"] and "<b>there</b>" in inner[1]["data"]["html"]
    assert read[2]["columns"][0]["components"][0]["data"]["url"] == "/a"
    again = admin.post("/api/content/item/pages2", json={"data": {"_id": saved["_id"], "content": read}}).json()
    assert [c["id"] for c in again["content"]] == [c["id"] for c in read]  # ids kept


def test_bad_layouts_are_refused_naming_the_component(admin: Api) -> None:
    _model(admin, allowedComponents=["heading", "hero", "section"])
    cases = [
        ({"component": "nope"}, "component 'nope' is not one this field may use"),
        ({"component": "image", "data": {}}, "'image' is not one this field may use"),  # not allowed here
        ({"component": "hero", "data": {}}, "hero.headline is required"),
        ({"component": "hero", "data": {"headline": "x", "rating": "many"}}, "hero.rating"),
        ({"component": "hero", "data": {"headline": "x", "extra": 1}}, "hero has no field extra"),
        ({"component": "heading", "data": {"level": "9"}}, "heading.level"),
        ({"component": "heading", "children": [{"component": "heading"}]}, "holds no children"),
        ({"component": "heading", "onclick": "x"}, "keys a component does not"),
        ("heading", "must be a component"),
    ]
    for bad, says in cases:
        answer = admin.post("/api/content/item/pages2", json={"data": {"content": [bad]}})
        assert answer.status_code == 400 and says in answer.json()["error"], (bad, answer.text)
    deep: list[object] = [{"component": "heading"}]
    for _ in range(10):
        deep = [{"component": "section", "children": deep}]
    answer = admin.post("/api/content/item/pages2", json={"data": {"content": deep}})
    assert answer.status_code == 400 and "deeper than 6 levels" in answer.json()["error"]


def test_a_fields_own_components_are_checked_with_the_model(admin: Api) -> None:
    for components, says in (([{"name": "heading", "fields": [{"name": "a"}]}], "is taken"),
                             ([{"name": "Bad Name", "fields": [{"name": "a"}]}], "lowercase"),
                             ([{"name": "x", "fields": []}], "1 to 50 fields"),
                             ([{"name": "x", "fields": [{"name": "a", "type": "nope"}]}], "unknown type"),
                             ([{"name": "x", "fields": [{"name": "a", "type": "layout"}]}], "holds no layout")):
        answer = admin.put("/api/system/models/bad", json={"name": "bad", "type": "collection", "fields": [
            {"name": "c", "type": "layout", "opts": {"components": components}}]})
        assert answer.status_code == 400 and says in answer.json()["error"], answer.text


def test_graphql_types_the_blocks(admin: Api) -> None:
    _model(admin)
    admin.post("/api/content/item/pages2", json={"data": {"title": "Home", "content": [
        {"component": "section", "children": [{"component": "heading", "data": {"text": "Hi", "level": "2"}}]},
        {"component": "grid", "columns": [{"components": [{"component": "spacer", "data": {"size": "2"}}]}]}]}})
    answer = admin.post("/api/gql", json={"query": """{ pages2 { items { content {
        component id data children { component data } columns { components { component data } } } } } }"""})
    assert answer.status_code == 200 and "errors" not in answer.json(), answer.text
    content = answer.json()["data"]["pages2"]["items"][0]["content"]
    assert content[0]["children"] == [{"component": "heading", "data": {"text": "Hi", "level": "2"}}]
    assert content[1]["columns"][0]["components"][0] == {"component": "spacer", "data": {"size": "2"}}


def test_pictures_and_links_inside_blocks_are_answered_as_top_level_ones(admin: Api, quire: Quire) -> None:
    """An image block's asset is answered as the asset is now (as an asset
    field's is), is counted where the asset is used, and a link inside a
    block is populated as a link field's is."""
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    ada = admin.post("/api/content/item/authors", json={"data": {"name": "Ada"}}).json()
    put_model(admin, "pages2", type="collection", fields=[
        {"name": "picture", "type": "asset"},
        {"name": "content", "type": "layout", "opts": {"components": [
            {"name": "byline", "label": "Byline", "fields": [{"name": "who", "type": "contentItemLink",
                                                                "opts": {"link": "authors"}}]}]}}])
    asset = upload_one(admin, "cover.png", png_of_zeros(4, 4), "image/png")
    assert admin.post(f"/api/assets/{asset['_id']}", json={"data": {"title": "Cover"}}).status_code == 200
    saved = admin.post("/api/content/item/pages2", json={"data": {"content": [
        {"component": "section", "children": [{"component": "image", "data": {"image": {"_id": asset["_id"]},
                                                                             "caption": "A cover"}}]},
        {"component": "byline", "data": {"who": {"_model": "authors", "_id": ada["_id"]}}}]}}).json()
    read = admin.get(f"/api/content/item/pages2/{saved['_id']}", params={"populate": 1}).json()["content"]
    image = read[0]["children"][0]["data"]["image"]
    assert image["_id"] == asset["_id"] and image["title"] == "Cover" and image["mime"] == "image/png"
    assert read[1]["data"]["who"]["name"] == "Ada"
    listed = admin.get("/api/content/items/pages2").json()[0]["content"][0]["children"][0]["data"]["image"]
    assert listed["title"] == "Cover"
    pairs, total = quire.get(AssetRefs).used_by(asset["_id"], 10)
    assert total == 1 and "pages2" in str(pairs)  # "used by" on the asset's page
