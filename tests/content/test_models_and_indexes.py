"""Model definitions over time: kept keys, type changes against stored data,
and indexes that serve the API's reads."""

from __future__ import annotations

from typing import Any

import pytest

from quire.auth.service import Identity
from quire.content.service import ReadOptions
from tests.conftest import Api, create_item, put_model


def test_field_info_and_group_are_kept(admin: Api) -> None:
    put_model(admin, "notes", fields=[{"name": "a", "type": "text", "info": "Shown to editors", "group": "Main"}])
    field = admin.get("/api/system/models/notes").json()["fields"][0]
    assert field["info"] == "Shown to editors" and field["group"] == "Main"


def test_changing_a_field_type_that_stored_items_do_not_fit_is_refused(admin: Api) -> None:
    put_model(admin, "notes", fields=[{"name": "x", "type": "tags"}])
    create_item(admin, "notes", {"x": ["a", "b"]})
    response = admin.put("/api/system/models/notes", json={"fields": [{"name": "x", "type": "text"}]})
    assert response.status_code == 400
    assert response.json()["error"].startswith("Field x: 1 stored item holds values that do not fit the new definition (first: must be text)")
    assert admin.get("/api/system/models/notes").json()["fields"][0]["type"] == "tags"


def test_changing_a_field_type_that_stored_items_fit_is_allowed(admin: Api) -> None:
    put_model(admin, "notes", fields=[{"name": "x", "type": "longtext"}])
    create_item(admin, "notes", {"x": "words"})
    put_model(admin, "notes", fields=[{"name": "x", "type": "markdown"}, {"name": "n", "type": "number"}])
    assert admin.get("/api/content/items/notes?filter[x]=words").json()[0]["x"] == "words"


def test_singleton_update_needs_update_not_create(admin: Api) -> None:
    put_model(admin, "settings", type="singleton", fields=[{"name": "tagline", "type": "text"}])
    create_item(admin, "settings", {"tagline": "first"})
    admin.put("/api/system/roles/editor", json={"permissions": {
        "content/settings/read": True, "content/settings/update": True}})
    key = admin.post("/api/system/keys", json={"name": "e", "role": "editor"}).json()["key"]
    editor = admin.with_key(key)
    response = editor.post("/api/content/item/settings", json={"data": {"tagline": "second"}})
    assert response.status_code == 200 and response.json()["tagline"] == "second"


def test_singleton_first_save_needs_create(admin: Api) -> None:
    put_model(admin, "settings", type="singleton", fields=[{"name": "tagline", "type": "text"}])
    admin.put("/api/system/roles/editor", json={"permissions": {"content/settings/update": True}})
    key = admin.post("/api/system/keys", json={"name": "e", "role": "editor"}).json()["key"]
    response = admin.with_key(key).post("/api/content/item/settings", json={"data": {"tagline": "x"}})
    assert response.status_code == 403


def test_locale_suffix_works_inside_a_link_filter(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(admin, "authors", fields=[{"name": "bio", "type": "text", "i18n": True}])
    put_model(admin, "posts", fields=[
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}])
    ada = create_item(admin, "authors", {"bio": "Engines", "bio_de": "Maschinen"})
    post = create_item(admin, "posts", {"author": {"_model": "authors", "_id": ada["_id"]}})
    found = admin.get("/api/content/items/posts", params={"filter": '{"@author.bio:de": "Maschinen"}'})
    assert found.status_code == 200, found.text
    assert [p["_id"] for p in found.json()] == [post["_id"]]


def test_regex_errors_read_as_text(admin: Api) -> None:
    put_model(admin, "notes", fields=[{"name": "t", "type": "text"}])
    response = admin.get("/api/content/items/notes", params={"filter": '{"t": {"$regex": "(a)\\\\1"}}'})
    assert response.status_code == 400
    assert response.json()["error"] == "Invalid $regex: invalid escape sequence: \\1"


def _plan(quire: Any, model: str, opts: ReadOptions) -> str:
    service = quire.content
    m = quire.models.get(model)
    coll = service.collection(m)
    node = service.query(m, opts.filter, Identity("admin"))
    sql, params = coll._select(node, service._sort(opts.sort), opts.limit, opts.skip)
    coll.count()  # a real statement first, so the reader sees the new schema
    rows = quire.store.execute_read("EXPLAIN QUERY PLAN " + sql, params).fetchall()
    return " ".join(str(r) for r in rows)


@pytest.mark.sqlite_only
def test_declared_index_serves_sort_and_range_of_published_reads(admin: Api, quire: Any) -> None:
    put_model(admin, "posts", fields=[{"name": "published", "type": "date"}, {"name": "category", "type": "text"}],
              indexes=["published", ["category", "published"]])
    for day in range(1, 20):
        create_item(admin, "posts", {"published": f"2026-01-{day:02d}", "category": "news"})
    plan = _plan(quire, "posts", ReadOptions(sort={"published": -1}, limit=5))
    assert "ix:content/posts:_state+published" in plan and "TEMP B-TREE" not in plan
    plan = _plan(quire, "posts", ReadOptions(filter={"published": {"$gte": "2026-01-10"}}, limit=5))
    assert "ix:content/posts:_state+published" in plan
    plan = _plan(quire, "posts", ReadOptions(filter={"category": "news"}, sort={"published": -1}, limit=5))
    assert "ix:content/posts:_state+category+published" in plan and "TEMP B-TREE" not in plan


def test_populate_follows_links_inside_sets_and_localized_link_fields(admin: Api) -> None:
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(admin, "authors", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", fields=[
        {"name": "author", "type": "contentItemLink", "i18n": True, "opts": {"link": "authors"}},
        {"name": "meta", "type": "set", "opts": {"fields": [
            {"name": "editor", "type": "contentItemLink", "opts": {"link": "authors"}}]}},
    ])
    ann = create_item(admin, "authors", {"name": "Ann"})
    bob = create_item(admin, "authors", {"name": "Bob"})
    create_item(admin, "posts", {
        "author": {"_model": "authors", "_id": ann["_id"]},
        "author_de": {"_model": "authors", "_id": bob["_id"]},
        "meta": {"editor": {"_model": "authors", "_id": bob["_id"]}},
    })
    raw = admin.get("/api/content/items/posts?populate=1").json()[0]
    assert raw["author"]["name"] == "Ann" and raw["author_de"]["name"] == "Bob"
    assert raw["meta"]["editor"]["name"] == "Bob"
    german = admin.get("/api/content/items/posts?populate=1&locale=de").json()[0]
    assert german["author"]["name"] == "Bob" and "author_de" not in german


def _upload_picture(admin: Api) -> dict[str, Any]:
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 10, 10)).save(buf, "PNG")
    response = admin.post("/api/assets", files=[("files", ("p.png", buf.getvalue(), "image/png"))])
    assert response.status_code == 200, response.text
    return response.json()[0]  # type: ignore[no-any-return]


def test_asset_references_answer_the_same_with_and_without_free_form_fields(admin: Api) -> None:
    picture = _upload_picture(admin)
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    image = {"name": "image", "type": "asset", "i18n": True}
    put_model(admin, "plain", fields=[{"name": "t", "type": "text"}, image])  # answered by splicing bytes
    put_model(admin, "loose", fields=[{"name": "t", "type": "text"}, image, {"name": "extra", "type": "object"}])
    for model in ("plain", "loose"):
        create_item(admin, model, {"t": "x", "image": picture["_id"], "image_de": {"_id": "f" * 24}})
    plain = admin.get("/api/content/items/plain?limit=5&skip=0").json()["data"][0]
    loose = admin.get("/api/content/items/loose?limit=5&skip=0").json()["data"][0]
    for item in (plain, loose):
        assert item["image"]["_id"] == picture["_id"] and item["image"]["width"] == 40
        assert item["image_de"] is None  # a reference to no asset reads as null
    assert plain["image"] == loose["image"]


def test_asset_like_objects_in_free_form_fields_are_left_alone(admin: Api) -> None:
    picture = _upload_picture(admin)
    put_model(admin, "loose", fields=[{"name": "image", "type": "asset"}, {"name": "extra", "type": "object"}])
    item = create_item(admin, "loose", {"image": picture["_id"], "extra": {"image": {"_id": picture["_id"]}}})
    read = admin.get(f"/api/content/item/loose/{item['_id']}").json()
    assert read["image"]["mime"] == "image/png"
    assert read["extra"] == {"image": {"_id": picture["_id"]}}


def test_a_field_type_that_is_not_a_string_is_400(admin: Api) -> None:
    """A list or object as a field's type was looked up in a set: a 500."""
    for kind in ([], {}, {"$gt": 1}, 5, None):
        response = admin.put("/api/system/models/typed", json={
            "name": "typed", "type": "collection", "fields": [{"name": "f", "type": kind}]})
        assert response.status_code == 400, (kind, response.text)
        assert "unknown type" in response.json()["error"]
