"""Conditional fields (content/conditions.py): `showWhen` and
`requiredWhen` JSON Logic rules, checked when the model is saved and
applied to `required` by every save."""

from __future__ import annotations

from tests.conftest import Api, put_model

EVENT = {"==": [{"var": "kind"}, "event"]}


def _model(admin: Api) -> None:
    put_model(admin, "entries", type="collection", fields=[
        {"name": "title", "type": "text", "required": True},
        {"name": "kind", "type": "select", "opts": {"options": ["news", "event"]}},
        {"name": "date", "type": "date", "requiredWhen": EVENT},
        {"name": "venue", "type": "text", "required": True, "showWhen": EVENT},
        {"name": "online", "type": "boolean"},
        {"name": "link", "type": "text", "requiredWhen": {"and": [EVENT, {"var": "online"}]}}])


def test_required_only_when_the_condition_holds(admin: Api) -> None:
    _model(admin)
    news = admin.post("/api/content/item/entries", json={"data": {"title": "Hello", "kind": "news"}})
    assert news.status_code == 200, news.text  # venue is required, but only shown for events
    event = admin.post("/api/content/item/entries", json={"data": {"title": "Fair", "kind": "event"}})
    assert event.status_code == 400
    assert "date is required" in event.json()["error"] and "venue is required" in event.json()["error"]
    online = admin.post("/api/content/item/entries", json={"data": {
        "title": "Webinar", "kind": "event", "date": "2030-01-02", "venue": "Online", "online": True}})
    assert online.status_code == 400 and "link is required" in online.json()["error"]
    ok = admin.post("/api/content/item/entries", json={"data": {
        "title": "Webinar", "kind": "event", "date": "2030-01-02", "venue": "Online", "online": True,
        "link": "https://example.org"}})
    assert ok.status_code == 200
    stored = admin.get("/api/system/models/entries").json()
    by_name = {f["name"]: f for f in stored["fields"]}
    assert by_name["date"]["requiredWhen"] == EVENT and by_name["venue"]["showWhen"] == EVENT


def test_rules_are_checked_when_the_model_is_saved(admin: Api) -> None:
    for rule, says in (({"eval": "x"}, "eval"), ({"log": 1}, "log"), ("kind == event", "JSON Logic rule"),
                       ({"==": [1, "x" * 5000]}, "longer than 4000")):
        answer = admin.put("/api/system/models/bad", json={"name": "bad", "type": "collection", "fields": [
            {"name": "a", "type": "text", "showWhen": rule}]})
        assert answer.status_code == 400 and says in answer.json()["error"], answer.text
    # a rule that cannot be evaluated on an item's values does not hold: no 500, not required
    put_model(admin, "odd", type="collection", fields=[
        {"name": "n", "type": "tags"}, {"name": "x", "type": "text", "requiredWhen": {">": [{"var": "n"}, 1]}}])
    assert admin.post("/api/content/item/odd", json={"data": {"n": ["a", "b"]}}).status_code == 200
