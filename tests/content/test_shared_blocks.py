"""Shared blocks (content/library.py): layout components defined once,
offered by every layout field of every model, changed in one place."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, put_model

QUOTE = {"label": "Quote", "group": "Text", "fields": [
    {"name": "text", "type": "text", "required": True}, {"name": "by", "type": "text"}]}


def _models(admin: Api) -> None:
    put_model(admin, "landing", type="collection", fields=[
        {"name": "title", "type": "text"}, {"name": "body", "type": "layout"}])
    put_model(admin, "articles", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "seo", "type": "set", "opts": {"fields": [{"name": "extra", "type": "layout"}]}},
        {"name": "body", "type": "layout", "opts": {"components": [
            {"name": "hero", "label": "Hero", "fields": [{"name": "headline", "type": "text"}]}]}}])


def _offered(admin: Api, model: str, field: str = "body") -> dict[str, Any]:
    fields = {f["name"]: f for f in admin.get(f"/api/system/models/{model}").json()["fields"]}
    return {c["name"]: c for c in fields[field]["opts"].get("components", [])}


def test_a_shared_block_is_offered_by_every_layout_field_and_checked_there(admin: Api) -> None:
    _models(admin)
    saved = admin.put("/api/system/components/quote", json=QUOTE)
    assert saved.status_code == 200, saved.text
    assert saved.json()["name"] == "quote" and saved.json()["_created"] > 0
    assert [c["name"] for c in admin.get("/api/system/components").json()] == ["quote"]
    landing, articles = _offered(admin, "landing"), _offered(admin, "articles")
    assert landing["quote"]["shared"] is True and landing["quote"]["fields"][0]["name"] == "text"
    assert set(articles) == {"hero", "quote"} and "shared" not in articles["hero"]
    seo = next(f for f in admin.get("/api/system/models/articles").json()["fields"] if f["name"] == "seo")
    assert seo["opts"]["fields"][0]["opts"]["components"][0]["name"] == "quote"  # inside sets too
    ok = admin.post("/api/content/item/landing", json={"data": {"body": [
        {"component": "quote", "data": {"text": "Less is more", "by": "Mies"}}]}})
    assert ok.status_code == 200, ok.text
    bad = admin.post("/api/content/item/articles", json={"data": {"body": [{"component": "quote", "data": {}}]}})
    assert bad.status_code == 400 and "quote.text is required" in bad.json()["error"]


def test_a_change_reaches_every_model_and_a_new_model_gets_the_library(admin: Api) -> None:
    _models(admin)
    admin.put("/api/system/components/quote", json=QUOTE)
    changed = {**QUOTE, "fields": [*QUOTE["fields"], {"name": "year", "type": "number"}]}
    assert admin.put("/api/system/components/quote", json=changed).status_code == 200
    assert [f["name"] for f in _offered(admin, "landing")["quote"]["fields"]] == ["text", "by", "year"]
    assert [f["name"] for f in _offered(admin, "articles")["quote"]["fields"]] == ["text", "by", "year"]
    put_model(admin, "later", type="singleton", fields=[{"name": "body", "type": "layout"}])
    assert "quote" in _offered(admin, "later")
    # a definition sent back as it was read keeps working (its copies are replaced by the library's)
    definition = admin.get("/api/system/models/articles").json()
    definition["fields"][2]["opts"]["components"][1]["fields"] = []  # a stale copy is not what counts
    assert admin.put("/api/system/models/articles", json=definition).status_code in (200, 400)
    assert [f["name"] for f in _offered(admin, "articles")["quote"]["fields"]] == ["text", "by", "year"]


def test_a_name_taken_by_a_fields_own_component_is_refused_and_nothing_changes(admin: Api) -> None:
    _models(admin)
    clash = admin.put("/api/system/components/hero", json=QUOTE)
    assert clash.status_code == 400 and "body: its own component hero" in clash.json()["error"]
    assert admin.get("/api/system/components").json() == []
    assert "hero" not in _offered(admin, "landing")  # the first model's save was undone too
    admin.put("/api/system/components/quote", json=QUOTE)
    own = admin.put("/api/system/models/landing", json={"type": "collection", "fields": [
        {"name": "body", "type": "layout", "opts": {"components": [{**QUOTE, "name": "quote"}]}}]})
    assert own.status_code == 400 and "has the name of a shared component" in own.json()["error"]


def test_a_used_block_cannot_be_removed_and_an_unused_one_leaves_every_model(admin: Api) -> None:
    _models(admin)
    admin.put("/api/system/components/quote", json=QUOTE)
    admin.put("/api/system/components/note", json={"fields": [{"name": "text", "type": "longtext"}]})
    item = admin.post("/api/content/item/landing", json={"data": {"body": [
        {"component": "section", "children": [{"component": "quote", "data": {"text": "x"}}]}]}}).json()
    used = admin.delete("/api/system/components/quote")
    assert used.status_code == 409 and "landing (1)" in used.json()["error"]
    assert admin.delete("/api/system/components/note").json() == {"success": True}
    assert "note" not in _offered(admin, "landing") and "note" not in _offered(admin, "articles")
    admin.delete(f"/api/content/item/landing/{item['_id']}")
    assert admin.delete("/api/system/components/quote").status_code == 200
    assert admin.get("/api/system/components/quote").status_code == 404


def test_bad_components_and_callers_are_refused(admin: Api, anon: Api) -> None:
    cases: list[tuple[str, Any, str]] = [
        ("Quote", QUOTE, ""),  # the address names it: the pattern refuses upper case
        ("heading", QUOTE, "taken"),
        ("quote", {"fields": []}, "1 to 50 fields"),
        ("quote", {"fields": [{"name": "x", "type": "nope"}]}, "unknown type"),
        ("quote", {"fields": [{"name": "x", "type": "layout"}]}, "holds no layout field"),
        ("quote", {**QUOTE, "shared": True}, "Unknown keys"),
        ("quote", {**QUOTE, "name": "other"}, "name is the one in the address"),
        ("quote", ["not", "an", "object"], "must be an object"),
        ("quote", {**QUOTE, "label": 5}, "label must be a text"),
    ]
    for name, body, says in cases:
        answer = admin.put(f"/api/system/components/{name}", json=body)
        assert answer.status_code in (400, 404), (name, body, answer.text)
        assert says in answer.json()["error"], (name, body, answer.text)
    assert admin.get("/api/system/components").json() == []
    admin.put("/api/system/roles/editor", json={"permissions": {"content/landing/update": True}})
    author = admin.with_key(admin.post("/api/system/keys", json={"name": "e", "role": "editor"}).json()["key"])
    assert author.put("/api/system/components/quote", json=QUOTE).status_code in (401, 403)
    assert anon.get("/api/system/components").status_code in (401, 403)
    assert author.delete("/api/system/components/quote").status_code in (401, 403)


def test_the_library_travels_in_schema_snapshots(admin: Api) -> None:
    _models(admin)
    admin.put("/api/system/components/quote", json=QUOTE)
    snapshot = admin.get("/api/system/schema").json()
    assert [c["name"] for c in snapshot["components"]] == ["quote"]
    snapshot["components"] = []
    plan = admin.post("/api/system/schema/diff", json=snapshot).json()
    assert [(s["part"], s["name"], s["action"]) for s in plan["steps"]] == [("components", "quote", "remove")]
    applied = admin.post("/api/system/schema/apply", json=plan)
    assert applied.status_code == 200, applied.text
    assert admin.get("/api/system/components").json() == [] and "quote" not in _offered(admin, "landing")
