"""Safe schema changes: renaming a field moves every stored value with it
in one transaction, a change stored values do not fit is refused naming
the items in the way, and how many items hold a value per field."""

from __future__ import annotations

import asyncio
import contextvars
import random
from typing import Any

import orjson
import pytest

from quire.app import Quire
from quire.content.models import parse_model
from quire.errors import BadRequest, ValidationError
from quire.events import Events, Reject
from tests.conftest import Api, create_item, put_model

LOCALES = [{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Français"}]
FIELDS = [
    {"name": "title", "type": "text", "i18n": True},
    {"name": "n", "type": "number"},
    {"name": "kind", "type": "select", "opts": {"options": ["a", "b", "c"]}},
    {"name": "tags", "type": "tags"},
]


def fields(*changes: dict[str, Any], drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """FIELDS with some definitions replaced (by their `was` name, or name)."""
    out = []
    for f in FIELDS:
        if f["name"] in drop:
            continue
        change = next((c for c in changes if c.get("was", c["name"]) == f["name"]), None)
        out.append({k: v for k, v in (change or f).items() if k != "was"})
    return out


@pytest.fixture
def posts(admin: Api) -> Api:
    assert admin.put("/api/system/locales", json=LOCALES).is_success
    put_model(admin, "posts", fields=FIELDS, indexes=["title", ["n", "title:de"]])
    return admin


def raw(quire: Quire, item_id: str) -> dict[str, Any]:
    found = quire.store.collection("content/posts").get(item_id)
    assert found is not None
    return found


def definition(admin: Api) -> dict[str, Any]:
    return admin.get("/api/system/models/posts").json()  # type: ignore[no-any-return]


# -- renames --------------------------------------------------------------


@pytest.mark.sqlite_only
def test_a_rename_moves_plain_and_localized_values_and_indexes(posts: Api, quire: Quire) -> None:
    a = create_item(posts, "posts", {"title": "Hi", "title_de": "Hallo", "n": 1})
    b = create_item(posts, "posts", {"n": 2, "title_fr": None})
    c = create_item(posts, "posts", {"n": 3})
    before_c = raw(quire, c["_id"])
    response = posts.put("/api/system/models/posts", json={
        "fields": fields({"name": "headline", "was": "title", "type": "text", "i18n": True}),
        "indexes": ["headline", ["n", "headline:de"]], "renames": {"title": "headline"}})
    assert response.status_code == 200, response.text
    saved = response.json()
    assert [f["name"] for f in saved["fields"]] == ["headline", "n", "kind", "tags"]
    assert saved["indexes"] == [["headline"], ["n", "headline:de"]] and "renames" not in saved
    item = raw(quire, a["_id"])
    assert (item["headline"], item["headline_de"]) == ("Hi", "Hallo")
    assert not {"title", "title_de"} & set(item)
    assert item["_modified"] == a["_modified"]  # a schema change, not an edit
    assert raw(quire, b["_id"])["headline_fr"] is None and "title_fr" not in raw(quire, b["_id"])
    assert raw(quire, c["_id"]) == before_c  # nothing to move: untouched, no new keys
    got = posts.get("/api/content/items/posts", params={"filter": '{"headline_de": "Hallo"}', "locale": "de"})
    assert [i["headline"] for i in got.json()] == ["Hallo"]
    names = {row[0] for row in quire.store.execute_read(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'content/posts'")}
    assert any("headline_de" in n for n in names) and not any("title" in n for n in names)


def test_the_definition_may_carry_the_field_under_its_old_name(posts: Api, quire: Quire) -> None:
    a = create_item(posts, "posts", {"n": 5})
    saved = quire.models.save(parse_model("posts", {"fields": FIELDS, "indexes": [["n"]]}), {"n": "count"})
    assert [f["name"] for f in saved.fields] == ["title", "count", "kind", "tags"]
    assert saved.indexes == [["count"]]
    assert raw(quire, a["_id"])["count"] == 5
    assert quire.models.get("posts").by_name["count"]["type"] == "number"


def test_a_rename_bumps_the_revision_of_items_it_changes(posts: Api, quire: Quire) -> None:
    coll = quire.store.collection("content/posts")
    with quire.store.transaction():
        coll.insert({"_id": "r1", "_state": 1, "n": 1, "_rev": 4})
        coll.insert({"_id": "r2", "_state": 1, "kind": "a", "_rev": 7})
        coll.insert({"_id": "r3", "_state": 1, "n": 2})
    put_model(posts, "posts", fields=fields({"name": "num", "was": "n", "type": "number"}),
              renames={"n": "num"})
    assert coll.get("r1") == {"_id": "r1", "_state": 1, "num": 1, "_rev": 5}
    assert coll.get("r2") == {"_id": "r2", "_state": 1, "kind": "a", "_rev": 7}  # not changed: not bumped
    assert coll.get("r3") == {"_id": "r3", "_state": 1, "num": 2}  # no revision: none added


@pytest.mark.parametrize(("renames", "words"), [
    ({"title": "n"}, "n is taken"),
    ({"title": "2x"}, "a field name must match"),
    ({"title": "_id"}, "a field name must match"),
    ({"title": "_rev"}, "a field name must match"),
    ({"nope": "other"}, "posts has no such field"),
    ({"n": "x", "kind": "x"}, "Two fields cannot both be renamed to x"),
])
def test_refused_renames_name_the_field_and_change_nothing(posts: Api, quire: Quire, renames: dict[str, str],
                                                          words: str) -> None:
    item = create_item(posts, "posts", {"title": "Hi", "n": 1})
    before = definition(posts)
    body = {"fields": FIELDS, "indexes": before["indexes"], "renames": renames}
    response = posts.put("/api/system/models/posts", json=body)
    assert response.status_code == 400, response.text
    assert words in response.json()["error"]
    assert response.json()["fields"] == [next(iter(renames))]
    assert definition(posts) == before
    assert raw(quire, item["_id"])["title"] == "Hi"


def test_a_rename_onto_a_localized_key_or_leftover_values_is_refused(posts: Api, quire: Quire) -> None:
    put_model(posts, "posts", fields=[*FIELDS, {"name": "sub", "type": "text", "i18n": True}])
    response = posts.put("/api/system/models/posts", json={
        "fields": [*FIELDS, {"name": "sub", "type": "text", "i18n": True}], "renames": {"n": "sub_de"}})
    assert response.status_code == 400 and "sub_de is taken" in response.json()["error"]
    made_localized = posts.put("/api/system/models/posts", json={  # localized in this very change
        "fields": fields({"name": "kind", "type": "select", "i18n": True}), "renames": {"n": "kind_fr"}})
    assert made_localized.status_code == 400 and "kind_fr is taken" in made_localized.json()["error"]
    # values of a deleted field stay in the items; a rename never overwrites them
    item = create_item(posts, "posts", {"n": 1, "kind": "a"})
    put_model(posts, "posts", fields=fields(drop=("kind",)))
    response = posts.put("/api/system/models/posts", json={"fields": fields(drop=("kind",)), "renames": {"n": "kind"}})
    assert response.status_code == 400
    body = response.json()
    assert body["error"].startswith("Field kind: 1 stored item holds values under kind already")
    assert body["items"] == [item["_id"]] and body["count"] == 1
    assert raw(quire, item["_id"])["n"] == 1


def test_the_definition_cannot_hold_both_names_or_neither(posts: Api) -> None:
    both = posts.put("/api/system/models/posts", json={
        "fields": [*FIELDS, {"name": "num", "type": "number"}], "renames": {"n": "num"}})
    assert both.status_code == 400 and "cannot hold both" in both.json()["error"]
    neither = posts.put("/api/system/models/posts", json={"fields": fields(drop=("n",)), "renames": {"n": "num"}})
    assert neither.status_code == 400 and "holds neither" in neither.json()["error"]
    new = posts.put("/api/system/models/fresh", json={"fields": FIELDS, "renames": {"n": "num"}})
    assert new.status_code == 400 and new.json()["fields"] == ["renames"]
    shape = posts.put("/api/system/models/posts", json={"fields": FIELDS, "renames": ["n"]})
    assert shape.status_code == 400 and shape.json()["fields"] == ["renames"]


def test_a_failing_step_leaves_model_and_items_untouched(posts: Api, quire: Quire, events: Events) -> None:
    item = create_item(posts, "posts", {"title": "Hi", "n": 1})

    def broken(**_: Any) -> None:
        raise RuntimeError("search index could not follow")

    events.on("content.model.rename", broken)
    before = definition(posts)
    with pytest.raises(RuntimeError):
        quire.models.save(parse_model("posts", {"fields": FIELDS}), {"title": "headline"})
    assert definition(posts) == before
    stored = raw(quire, item["_id"])
    assert stored["title"] == "Hi" and "headline" not in stored
    assert quire.models.get("posts").by_name.get("title") is not None


def test_a_hook_refusing_the_rename_answers_412_and_changes_nothing(posts: Api, quire: Quire,
                                                                    events: Events) -> None:
    def refuse(model: str, renames: dict[str, str], **_: Any) -> None:
        raise Reject(f"{model}: {renames} is not allowed")

    item = create_item(posts, "posts", {"n": 1})
    events.on("content.model.rename", refuse)
    before = definition(posts)
    response = posts.put("/api/system/models/posts", json={"fields": FIELDS, "renames": {"n": "count"}})
    assert response.status_code == 412 and response.json()["error"] == "posts: {'n': 'count'} is not allowed"
    assert definition(posts) == before and raw(quire, item["_id"])["n"] == 1


def test_search_indexes_follow_a_rename_in_the_same_transaction(posts: Api, quire: Quire) -> None:
    create_item(posts, "posts", {"title": "hello world", "title_de": "hallo welt", "n": 1, "kind": "a"})
    index = {"model": "posts", "fields": ["title", "kind"], "filter": {"$or": [{"n": {"$gt": 0}}, {"title_de": "x"}]},
             "weights": {"title": 2}, "locales": ["de"]}
    assert posts.put("/api/searchmod/indexes/idx", json=index).is_success
    assert posts.put("/api/searchmod/indexes/other", json={"model": "posts", "fields": ["kind"]}).is_success
    put_model(posts, "posts", fields=fields({"name": "heading", "was": "title", "type": "text", "i18n": True},
                                            {"name": "count", "was": "n", "type": "number"}),
              renames={"title": "heading", "n": "count"})
    got = posts.get("/api/searchmod/indexes/idx").json()
    assert got["fields"] == ["heading", "kind"] and got["weights"] == {"heading": 2}
    assert got["filter"] == {"$or": [{"count": {"$gt": 0}}, {"heading_de": "x"}]}
    hits = posts.get("/api/searchmod/search/idx", params={"q": "hello"}).json()["hits"]
    assert [h["heading"] for h in hits] == ["hello world"] and "title" not in hits[0]
    hits = posts.get("/api/searchmod/search/idx", params={"q": "hallo", "locale": "de"}).json()["hits"]
    assert [h["heading"] for h in hits] == ["hallo welt"]
    assert posts.get("/api/searchmod/indexes/other").json()["fields"] == ["kind"]


NUMBERS: list[Any] = [None, 0, 1, 2.5, -3, 10, 100]
TEXTS: list[Any] = [None, "", "alpha", "Beta", "beta gamma", "ä", "10"]


@pytest.mark.parametrize(("old", "new", "pool", "keys"), [
    ("n", "m", NUMBERS, ["n"]),
    ("title", "headline", TEXTS, ["title", "title_de", "title_fr"]),
])
def test_every_filter_on_the_new_name_answers_what_the_old_name_did(posts: Api, quire: Quire, old: str, new: str,
                                                                    pool: list[Any], keys: list[str]) -> None:
    rng = random.Random(15)
    coll = quire.store.collection("content/posts")
    with quire.store.transaction():
        for i in range(150):
            doc: dict[str, Any] = {"_id": f"{i:024x}", "_state": 1}
            doc.update((k, rng.choice(pool)) for k in keys if rng.random() < 0.7)
            coll.insert(doc)
    filters: list[dict[str, Any]] = []
    for key in keys:
        values = [v for v in pool if v is not None]
        filters += [{key: v} for v in pool] + [
            {key: {"$exists": True}}, {key: {"$exists": False}}, {key: {"$ne": None}},
            {key: {"$in": rng.sample(values, 2)}}, {key: {"$nin": [None, rng.choice(values)]}},
            {key: {"$type": "number" if old == "n" else "string"}}, {"$or": [{key: v} for v in rng.sample(values, 2)]},
            {"$and": [{key: {"$exists": True}}, {"$nor": [{key: None}]}]},
        ] + [{key: {op: v}} for op in ("$gt", "$gte", "$lt", "$lte") for v in rng.sample(values, 2)]
        if old == "title":
            filters += [{key: {"$regex": "^b", "$options": "i"}}, {key: {"$not": {"$regex": "a"}}}]

    def answer(spec: dict[str, Any], sort: dict[str, int], names: list[str]) -> list[list[Any]]:
        params = {"filter": _json(spec), "sort": _json(sort)}
        response = posts.get("/api/content/items/posts", params=params)
        assert response.status_code == 200, response.text
        return [[item["_id"], *(item.get(k) for k in names)] for item in response.json()]

    renamed = [k.replace(old, new, 1) for k in keys]
    before = [answer(f, {keys[-1]: 1, "_id": 1}, keys) for f in filters]
    changed = {"name": new, "was": old, "type": "number" if old == "n" else "text", "i18n": old == "title"}
    put_model(posts, "posts", fields=fields(changed), renames={old: new})
    after = [answer(_renamed(f, old, new), {renamed[-1]: 1, "_id": 1}, renamed) for f in filters]
    assert after == before
    assert sum(len(a) for a in after) > 0 and not coll.find({old: {"$exists": True}})


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _renamed(spec: Any, old: str, new: str) -> Any:
    """A filter naming `old` (and its per-locale keys) by `new`."""
    if isinstance(spec, list):
        return [_renamed(s, old, new) for s in spec]
    if isinstance(spec, dict):
        return {(k.replace(old, new, 1) if k.startswith(old) else k): (_renamed(v, old, new) if k.startswith("$") else v)
                for k, v in spec.items()}
    return spec


# -- changes stored values do not fit ----------------------------------------


def test_a_type_change_stored_values_do_not_fit_is_refused_with_count_and_ids(posts: Api, quire: Quire) -> None:
    misfits = [create_item(posts, "posts", {"title": f"word {i}"})["_id"] for i in range(12)]
    fits = create_item(posts, "posts", {"title": "42"})  # still text: a number needs a JSON number
    create_item(posts, "posts", {"n": 1})  # no title: fits any type
    before = definition(posts)
    response = posts.put("/api/system/models/posts", json={
        "fields": fields({"name": "title", "type": "number", "i18n": True}), "indexes": before["indexes"]})
    assert response.status_code == 400
    body = response.json()
    assert body["count"] == 13 and body["fields"] == ["title"]
    assert body["items"] == sorted([*misfits, fits["_id"]])
    assert body["error"].startswith("Field title: 13 stored items hold values that do not fit the new definition "
                                    "(first: must be a number): ")
    assert body["error"].endswith(" and 3 more") and ", ".join(body["items"][:10]) in body["error"]
    assert definition(posts) == before
    assert raw(quire, misfits[0])["title"] == "word 0"


def test_localized_values_are_checked_too(posts: Api) -> None:
    item = create_item(posts, "posts", {"title_de": "Wort"})
    response = posts.put("/api/system/models/posts", json={
        "fields": fields({"name": "title", "type": "number", "i18n": True})})
    assert response.status_code == 400 and response.json()["items"] == [item["_id"]]


@pytest.mark.parametrize(("change", "stored", "fits"), [
    ({"name": "tags", "type": "text", "multiple": True}, {"tags": ["x"]}, True),
    ({"name": "tags", "type": "object"}, {"tags": ["x"]}, False),
    ({"name": "kind", "type": "select", "opts": {"options": ["a", "b"]}}, {"kind": "c"}, False),
    ({"name": "kind", "type": "select", "opts": {"options": ["a", "b"]}}, {"kind": "b"}, True),
    ({"name": "n", "type": "boolean"}, {"n": 1}, False),
    ({"name": "n", "type": "text"}, {"n": 1}, False),
    ({"name": "kind", "type": "color"}, {"kind": "a"}, False),
    ({"name": "kind", "type": "date"}, {"kind": "b"}, False),
])
def test_changed_options_are_checked_like_a_save(posts: Api, change: dict[str, Any], stored: dict[str, Any],
                                                 fits: bool) -> None:
    item = create_item(posts, "posts", stored)
    response = posts.put("/api/system/models/posts", json={"fields": fields(change)})
    if fits:
        assert response.status_code == 200, response.text
    else:
        assert response.status_code == 400, response.text
        assert response.json()["items"] == [item["_id"]] and response.json()["count"] == 1


def test_a_multiple_field_turned_single_is_refused_while_items_hold_lists(posts: Api) -> None:
    put_model(posts, "posts", fields=[*FIELDS, {"name": "links", "type": "text", "multiple": True}])
    item = create_item(posts, "posts", {"links": ["a", "b"]})
    response = posts.put("/api/system/models/posts", json={"fields": [*FIELDS, {"name": "links", "type": "text"}]})
    assert response.status_code == 400 and response.json()["items"] == [item["_id"]]


def test_a_change_stored_values_fit_passes(posts: Api) -> None:
    create_item(posts, "posts", {"title": "words", "kind": "a", "n": 3})
    create_item(posts, "posts", {"title": None})
    put_model(posts, "posts", fields=fields({"name": "title", "type": "markdown", "i18n": True},
                                            {"name": "kind", "type": "select", "opts": {"options": ["a"]}}))
    assert definition(posts)["fields"][0]["type"] == "markdown"


def test_a_new_field_is_checked_against_values_a_deleted_one_left(posts: Api) -> None:
    item = create_item(posts, "posts", {"kind": "a"})
    put_model(posts, "posts", fields=fields(drop=("kind",)))
    response = posts.put("/api/system/models/posts", json={"fields": [*fields(drop=("kind",)),
                                                                      {"name": "kind", "type": "number"}]})
    assert response.status_code == 400 and response.json()["items"] == [item["_id"]]
    put_model(posts, "posts", fields=FIELDS)  # back as text: the value shows again
    assert posts.get(f"/api/content/item/posts/{item['_id']}").json()["kind"] == "a"


def test_the_service_refuses_with_the_same_error(posts: Api, quire: Quire) -> None:
    create_item(posts, "posts", {"n": 1})
    with pytest.raises(BadRequest) as refused:
        quire.models.save(parse_model("posts", {"fields": fields({"name": "n", "type": "text"})}))
    assert refused.value.extra["count"] == 1


# -- usage and dropped values -------------------------------------------------


def test_field_usage_counts_items_holding_a_value(posts: Api, quire: Quire) -> None:
    create_item(posts, "posts", {"title": "a", "n": 0, "tags": []})
    create_item(posts, "posts", {"title_fr": "b", "kind": "a"})
    create_item(posts, "posts", {"title": "", "tags": ["x"]})
    create_item(posts, "posts", {})
    usage = quire.models.field_usage("posts")
    assert usage.to_json() == {"fields": {"title": 2, "n": 1, "kind": 1, "tags": 1}, "total": 4}
    response = posts.get("/api/system/models/posts/usage")
    assert response.status_code == 200 and response.json() == usage.to_json()
    assert posts.get("/api/system/models/nope/usage").status_code == 404


def test_field_usage_needs_system_manage(posts: Api, anon: Api) -> None:
    assert anon.get("/api/system/models/posts/usage").status_code in (401, 403)


def test_dropped_fields_keep_their_values_unless_asked(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "Hi", "title_de": "Hallo", "kind": "a", "n": 1})
    put_model(posts, "posts", fields=fields(drop=("kind",)))
    assert raw(quire, item["_id"])["kind"] == "a"  # kept, as Cockpit does
    put_model(posts, "posts", fields=fields(drop=("kind", "title")), dropValues=True)
    stored = raw(quire, item["_id"])
    assert not {"title", "title_de"} & set(stored) and stored["n"] == 1
    assert stored["kind"] == "a"  # dropped by an earlier change: only this change's fields go
    put_model(posts, "posts", fields=fields(drop=("title",)))  # back, then dropped with its values
    put_model(posts, "posts", fields=fields(drop=("title", "kind")), dropValues=True)
    assert "kind" not in raw(quire, item["_id"])
    assert stored["_modified"] == item["_modified"]
    bad = posts.put("/api/system/models/posts", json={"fields": FIELDS, "dropValues": "yes"})
    assert bad.status_code == 400 and bad.json()["fields"] == ["dropValues"]


def test_drop_values_with_a_rename_moves_one_and_drops_the_other(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "Hi", "kind": "a", "n": 2})
    quire.models.save(parse_model("posts", {"fields": fields(drop=("kind",))}), {"n": "count"}, drop_values=True)
    stored = raw(quire, item["_id"])
    assert stored["count"] == 2 and "kind" not in stored and "n" not in stored and stored["title"] == "Hi"


def test_a_refused_change_leaves_the_callers_definition_as_it_was(posts: Api, quire: Quire) -> None:
    create_item(posts, "posts", {"n": 1, "kind": "a"})
    model = parse_model("posts", {"fields": fields({"name": "kind", "type": "number"}), "indexes": ["n"]},
                        {"n": "count"})
    with pytest.raises(BadRequest):
        quire.models.save(model, {"n": "count"})
    assert [f["name"] for f in model.fields] == ["title", "n", "kind", "tags"] and model.indexes == [["n"]]
    assert "count" not in quire.models.get("posts").by_name


# -- a write that waited for the lock while the model changed ------------------


def _while_the_model_changes(quire: Quire, write: Any) -> Any:
    """Run `write()` (a coroutine function) while another task holds the
    write lock, and change `n` from number to text inside that task before
    it lets go: the write has checked its fields and waits for the lock."""

    async def scenario() -> Any:
        async with quire.store.atomic():
            # a context of its own, as a request's: not inside this task's transaction
            task = asyncio.create_task(write(), context=contextvars.Context())
            for _ in range(50):  # the task runs its checks, then waits for the lock
                await asyncio.sleep(0)
            assert not task.done()
            quire.models.save(parse_model("posts", {"fields": fields({"name": "n", "type": "text"})}))
        return await asyncio.gather(task, return_exceptions=True)

    return asyncio.run(scenario())[0]


def _numbers_left(quire: Quire, collection: str = "content/posts") -> list[Any]:
    return [doc["n"] for doc in quire.store.collection(collection).find({})
            if isinstance(doc.get("n"), int | float)]


def test_a_save_that_waited_for_the_lock_is_checked_against_the_model_changed_meanwhile(
        posts: Api, quire: Quire) -> None:
    identity = quire.auth.identify(posts.key)
    refused = _while_the_model_changes(quire, lambda: quire.content.save("posts", {"n": 5}, identity))
    assert isinstance(refused, ValidationError) and "n" in refused.errors
    assert _numbers_left(quire) == []
    assert posts.post("/api/content/item/posts", json={"data": {"n": "5"}}).status_code == 200


def test_a_draft_and_a_restore_that_waited_for_the_lock_are_checked_again(posts: Api, quire: Quire) -> None:
    identity = quire.auth.identify(posts.key)
    item = create_item(posts, "posts", {"title": "a", "_state": 1})
    refused = _while_the_model_changes(
        quire, lambda: quire.content.save_draft("posts", {"_id": item["_id"], "n": 7}, identity))
    assert isinstance(refused, ValidationError) and "n" in refused.errors
    assert _numbers_left(quire, "drafts/posts") == []
    put_model(posts, "posts", fields=FIELDS)  # back to a number
    state = {**raw(quire, item["_id"]), "n": 9}
    refused = _while_the_model_changes(quire, lambda: quire.content.restore("posts", state, identity))
    assert isinstance(refused, ValidationError) and "n" in refused.errors
    assert _numbers_left(quire) == []
