"""`GET /api/content/aggregate/{model}` over HTTP: answer shape, published
items only, locale, $lookup rules, errors and limits (behaviour.md §2)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quire.app import Quire
from quire.content import aggregate as content_aggregate
from quire.content.service import ContentService
from quire.store import budget as store_budget
from quire.store import stages as store_stages
from quire.store.budget import Limits
from quire.store.sqlite import Collection
from tests.conftest import Api, create_item, put_model, role_key

LOCALES = [{"i18n": "de", "name": "Deutsch"}]


@pytest.fixture
def shop(admin: Api) -> Api:
    assert admin.put("/api/system/locales", json=LOCALES).status_code == 200
    put_model(admin, "authors", type="collection", fields=[
        {"name": "name", "type": "text"},
        {"name": "country", "type": "text", "i18n": True},
    ])
    put_model(admin, "books", type="collection", fields=[
        {"name": "title", "type": "text", "i18n": True},
        {"name": "genre", "type": "text"},
        {"name": "price", "type": "number"},
        {"name": "tags", "type": "tags"},
        {"name": "author", "type": "text"},
    ])
    put_model(admin, "settings", type="singleton", fields=[{"name": "x", "type": "text"}])
    create_item(admin, "authors", {"name": "ann", "country": "Germany", "country_de": "Deutschland"})
    create_item(admin, "authors", {"name": "bob", "country": "France"})
    create_item(admin, "authors", {"name": "cyd", "country": "Spain", "_state": 0})
    books = [
        {"title": "Alpha", "title_de": "Anfang", "genre": "sf", "price": 10, "tags": ["a", "b"], "author": "ann"},
        {"title": "Beta", "genre": "sf", "price": 20, "tags": ["b"], "author": "bob"},
        {"title": "Gamma", "title_de": "", "genre": "crime", "price": 5, "tags": [], "author": "ann"},
        {"title": "Draft", "genre": "sf", "price": 1000, "tags": ["a"], "author": "cyd", "_state": 0},
    ]
    for book in books:
        create_item(admin, "books", book)
    return admin


def agg(api: Api, model: str, pipeline: Any, **params: Any) -> Any:
    text = pipeline if isinstance(pipeline, str) else json.dumps(pipeline)
    return api.get(f"/api/content/aggregate/{model}", params={"pipeline": text, **params})


def ok(api: Api, model: str, pipeline: Any, **params: Any) -> Any:
    response = agg(api, model, pipeline, **params)
    assert response.status_code == 200, response.text
    return response.json()


# -- answers ------------------------------------------------------------------------


def test_aggregate_answers_bare_array_of_result_documents(shop: Api) -> None:
    body = ok(shop, "books", [
        {"$group": {"_id": "$genre", "n": {"$sum": 1}, "total": {"$sum": "$price"}, "avg": {"$avg": "$price"},
                    "titles": {"$push": "$title"}}},
        {"$sort": {"_id": 1}},
    ])
    assert body == [
        {"_id": "crime", "n": 1, "total": 5, "avg": 5.0, "titles": ["Gamma"]},
        {"_id": "sf", "n": 2, "total": 30, "avg": 15.0, "titles": ["Alpha", "Beta"]},
    ]


def test_aggregate_sees_published_items_only(shop: Api) -> None:
    assert ok(shop, "books", [{"$count": "n"}]) == [{"n": 3}]
    assert ok(shop, "books", [{"$match": {"_state": 0}}]) == []


def test_aggregate_without_pipeline_answers_published_items(shop: Api) -> None:
    body = shop.get("/api/content/aggregate/books").json()
    assert [d["title"] for d in body] == ["Alpha", "Beta", "Gamma"]


def test_aggregate_accepts_json5(shop: Api) -> None:
    body = ok(shop, "books", "[{$match: {genre: 'crime'}}, {$project: {title: 1, _id: 0}}]")
    assert body == [{"title": "Gamma"}]


def test_aggregate_unwind_project_and_expressions(shop: Api) -> None:
    body = ok(shop, "books", [
        {"$unwind": {"path": "$tags", "includeArrayIndex": "i"}},
        {"$project": {"_id": 0, "label": {"$concat": [{"$toUpper": "$tags"}, "-", "$title"]}, "i": 1,
                      "cheap": {"$cond": [{"$lt": ["$price", 15]}, True, False]}}},
    ])
    assert body == [
        {"label": "A-Alpha", "i": 0, "cheap": True},
        {"label": "B-Alpha", "i": 1, "cheap": True},
        {"label": "B-Beta", "i": 0, "cheap": False},
    ]


def test_aggregate_with_locale_resolves_localized_fields_before_the_pipeline(shop: Api) -> None:
    body = ok(shop, "books", [{"$match": {"title": {"$in": ["Anfang", "Gamma"]}}},
                              {"$project": {"_id": 0, "title": 1, "title_de": 1}}], locale="de")
    assert body == [{"title": "Anfang"}, {"title": "Gamma"}]  # empty title_de falls back
    body = ok(shop, "books", [{"$sort": {"title": -1}}, {"$limit": 1}, {"$project": {"_id": 0, "title": 1}}],
              locale="de")
    assert body == [{"title": "Gamma"}]
    assert ok(shop, "books", [{"$match": {"title": "Anfang"}}]) == []  # without locale: stored values


def test_aggregate_title_locale_key_in_match_without_locale(shop: Api) -> None:
    body = ok(shop, "books", [{"$match": {"title:de": "Anfang"}}, {"$project": {"_id": 0, "title": 1}}])
    assert body == [{"title": "Alpha"}]


# -- $lookup ------------------------------------------------------------------------


def test_lookup_joins_published_items_of_the_other_model(shop: Api) -> None:
    body = ok(shop, "books", [
        {"$lookup": {"from": "authors", "localField": "author", "foreignField": "name", "as": "by"}},
        {"$project": {"_id": 0, "title": 1, "by.name": 1}},
    ])
    assert body == [
        {"title": "Alpha", "by": [{"name": "ann"}]},
        {"title": "Beta", "by": [{"name": "bob"}]},
        {"title": "Gamma", "by": [{"name": "ann"}]},
    ]
    # the draft author is never joined, even for a draft-free match on its name
    body = ok(shop, "authors", [
        {"$lookup": {"from": "authors", "localField": "name", "foreignField": "name", "as": "me"}},
        {"$project": {"_id": 0, "n": {"$size": "$me"}}},
    ])
    assert body == [{"n": 1}, {"n": 1}]


def test_lookup_applies_the_locale(shop: Api) -> None:
    body = ok(shop, "books", [
        {"$match": {"genre": "crime"}},
        {"$lookup": {"from": "authors", "localField": "author", "foreignField": "name", "as": "by"}},
        {"$project": {"_id": 0, "country": {"$first": "$by.country"}}},
    ], locale="de")
    assert body == [{"country": "Deutschland"}]


def test_lookup_on_a_localized_foreign_field_matches_the_localized_value(shop: Api) -> None:
    body = ok(shop, "authors", [
        {"$addFields": {"wanted": "Deutschland"}},
        {"$lookup": {"from": "authors", "localField": "wanted", "foreignField": "country", "as": "hit"}},
        {"$project": {"_id": 0, "name": 1, "hits": {"$size": "$hit"}}},
    ], locale="de")
    assert body == [{"name": "ann", "hits": 1}, {"name": "bob", "hits": 1}]


def test_lookup_with_many_distinct_keys_joins_them_all(admin: Api) -> None:
    put_model(admin, "nums", type="collection", fields=[{"name": "n", "type": "number"}])
    for n in range(150):
        create_item(admin, "nums", {"n": n})
    body = ok(admin, "nums", [
        {"$lookup": {"from": "nums", "localField": "n", "foreignField": "n", "as": "same"}},
        {"$group": {"_id": None, "joined": {"$sum": {"$size": "$same"}}}},
    ])
    assert body == [{"_id": None, "joined": 150}]


def test_lookup_needs_read_permission_on_the_joined_model(shop: Api) -> None:
    reader = role_key(shop, "bookreader", {"content/books/read": True})
    assert agg(reader, "books", [{"$count": "n"}]).json() == [{"n": 3}]
    response = agg(reader, "books", [
        {"$lookup": {"from": "authors", "localField": "author", "foreignField": "name", "as": "by"}}])
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}


def test_lookup_of_an_unknown_model_is_404(shop: Api) -> None:
    response = agg(shop, "books", [{"$lookup": {"from": "nope", "localField": "a", "foreignField": "b", "as": "c"}}])
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nope> not found"}


def test_lookup_pipeline_form_is_400_naming_it(shop: Api) -> None:
    response = agg(shop, "books", [{"$lookup": {"from": "authors", "pipeline": [], "as": "c"}}])
    assert response.status_code == 400
    assert "pipeline" in response.json()["error"]


# -- errors -------------------------------------------------------------------------


def test_aggregate_on_a_singleton_is_412(shop: Api) -> None:
    response = agg(shop, "settings", [])
    assert response.status_code == 412
    assert response.json() == {"error": "Aggregate method not allowed for settings"}


def test_aggregate_bad_json_is_400(shop: Api) -> None:
    response = agg(shop, "books", "[{$match: ")
    assert response.status_code == 400
    assert response.json() == {"error": "Pipeline is not valid json"}


def test_aggregate_pipeline_not_a_list_is_400(shop: Api) -> None:
    response = agg(shop, "books", {"$match": {}})
    assert response.status_code == 400
    assert response.json() == {"error": "Pipeline is not valid list format"}


@pytest.mark.parametrize(("pipeline", "named"), [
    ([{"$out": "x"}], "$out"),
    ([{"$merge": {"into": "x"}}], "$merge"),
    ([{"$facet": {}}], "$facet"),
    ([{"$bogus": 1}], "$bogus"),
    ([{"$match": {"$where": "1"}}], "$where"),
    ([{"$match": {"$expr": {"$eq": ["$a", 1]}}}], "$expr"),
    ([{"$project": {"x": {"$function": {}}}}], "$function"),
    ([{"$group": {"_id": None, "x": {"$stdDevPop": "$a"}}}], "$stdDevPop"),
    ([{"$addFields": {"x": "$$NOW"}}], "$$NOW"),
])
def test_aggregate_unsupported_stage_or_operator_is_400_naming_it(shop: Api, pipeline: Any, named: str) -> None:
    response = agg(shop, "books", pipeline)
    assert response.status_code == 400
    assert named in response.json()["error"]


@pytest.mark.parametrize("pipeline", [
    [1],
    [{"$match": {}, "$limit": 1}],
    [{"$limit": 0}],
    [{"$skip": -1}],
    [{"$sort": {"a": 2}}],
    [{"$project": {"a": 1, "b": 0}}],
    [{"$project": {}}],
    [{"$group": {"n": {"$sum": 1}}}],
    [{"$unwind": "tags"}],
    [{"$count": "$n"}],
    [{"$subtract": 1}],
    [{"$addFields": {"x": {"$subtract": [1]}}}],
    [{"$lookup": {"from": "authors"}}],
])
def test_aggregate_malformed_stage_is_400(shop: Api, pipeline: Any) -> None:
    response = agg(shop, "books", pipeline)
    assert response.status_code == 400, response.text
    assert response.json()["error"]


def test_aggregate_type_error_is_400_naming_the_operator(shop: Api) -> None:
    response = agg(shop, "books", [{"$project": {"x": {"$add": ["$title", 1]}}}])
    assert response.status_code == 400
    assert "$add" in response.json()["error"]


def test_aggregate_unknown_model_is_404(shop: Api) -> None:
    response = agg(shop, "nope", [])
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nope> not found"}


def test_aggregate_needs_read_permission(shop: Api, anon: Api) -> None:
    response = agg(anon, "books", [])
    assert response.status_code in (401, 403)
    other = role_key(shop, "authorreader", {"content/authors/read": True})
    response = agg(other, "books", [])
    assert response.status_code == 403
    assert response.json() == {"error": "Permission denied"}


# -- where it runs, and limits ------------------------------------------------------------


@pytest.mark.sqlite_only
def test_leading_match_sort_skip_limit_run_in_sql(shop: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[Any, ...]] = []
    original = Collection.stream_raw

    def spy(self: Collection, node: Any = None, sort: Any = None, limit: Any = None, skip: Any = None,
            chunk: int = 500) -> Any:
        calls.append((sort, limit, skip))
        return original(self, node, sort, limit, skip, chunk)

    monkeypatch.setattr(Collection, "stream_raw", spy)
    body = ok(shop, "books", [{"$match": {"genre": "sf"}}, {"$sort": {"price": -1}}, {"$skip": 1}, {"$limit": 5},
                              {"$project": {"_id": 0, "title": 1}}])
    assert body == [{"title": "Alpha"}]
    assert calls == [([(("price",), -1)], 5, 1)]
    calls.clear()
    assert ok(shop, "books", [{"$match": {"genre": "sf"}}, {"$skip": 1}, {"$count": "n"}]) == [{"n": 1}]
    assert calls == []  # a SQL count, no row read
    # with a locale, a stage on a localized field runs after localizing, in Python
    ok(shop, "books", [{"$sort": {"title": 1}}, {"$limit": 1}], locale="de")
    assert calls == [([], None, None)]


def test_too_long_pipeline_is_400(shop: Api) -> None:
    response = agg(shop, "books", [{"$match": {}}] * (store_stages.MAX_STAGES + 1))
    assert response.status_code == 400
    assert str(store_stages.MAX_STAGES) in response.json()["error"]


def test_aggregate_holding_too_much_is_400(shop: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_budget, "MAX_HELD", 2)
    response = agg(shop, "books", [{"$sort": {"price": 1, "title": 1}}, {"$project": {"x": {"$literal": 1}}}])
    assert response.status_code == 200  # the leading $sort runs in SQL and holds nothing
    response = agg(shop, "books", [{"$unwind": "$tags"}, {"$sort": {"tags": 1}}])
    assert response.status_code == 400
    assert "more than 2" in response.json()["error"]


def test_values_that_double_each_stage_are_400_not_exhausted_memory(shop: Api) -> None:
    pipeline = [{"$addFields": {"s": {"$concat": ["$title", "$title"]}}}]
    pipeline += [{"$addFields": {"s": {"$concat": ["$s", "$s"]}}}] * 30
    response = agg(shop, "books", pipeline)
    assert response.status_code == 400
    assert "exceed" in response.json()["error"]
    pipeline = [{"$addFields": {"a": ["$title", "$title"]}}] + [{"$addFields": {"a": ["$a", "$a"]}}] * 30
    response = agg(shop, "books", pipeline)
    assert response.status_code == 400
    assert "exceed" in response.json()["error"]


def test_aggregate_answer_size_is_bounded(shop: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(content_aggregate, "MAX_ANSWER_BYTES", 200)
    response = agg(shop, "books", [])
    assert response.status_code == 400
    assert "exceeds" in response.json()["error"]


def test_huge_integers_become_doubles_not_a_500(shop: Api) -> None:
    body = ok(shop, "books", [{"$limit": 1}, {"$project": {"_id": 0, "x": {"$multiply": [
        9223372036854775807, 9223372036854775807]}}}])
    assert body == [{"x": pytest.approx(8.507059173023462e37)}]


@pytest.mark.parametrize("pipeline", [
    "[{$limit: 1}, {$project: {_id: 0, x: {$literal: 100000000000000000000000000000}}}]",
    '[{"$skip": 9223372036854775808}]',
    "[{$skip: 9223372036854775808}]",
    '[{"$limit": 1e300}]',
    '[{"$match": {"title\\u0000": 1}}]',
    '[{"$addFields": {"x": NaN}}]',
])
def test_values_no_query_can_use_are_400_as_in_every_json_parameter(shop: Api, pipeline: str) -> None:
    response = agg(shop, "books", pipeline)
    assert response.status_code == 400
    assert "error" in response.json()


def test_skips_adding_up_past_64_bits_stay_in_range(shop: Api) -> None:
    assert ok(shop, "books", [{"$skip": 9223372036854775807}, {"$skip": 9223372036854775807}]) == []


def test_a_result_that_cannot_be_json_is_a_400_that_says_so(shop: Api) -> None:
    response = agg(shop, "books", '[{"$limit": 1}, {"$project": {"_id": 0, "x": {"$concat": ["\\ud83d", "a"]}}}]')
    assert response.status_code == 400


def test_lookup_joining_too_much_is_400(shop: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_budget, "MAX_HELD", 1)
    response = agg(shop, "books", [
        {"$lookup": {"from": "books", "localField": "genre", "foreignField": "genre", "as": "same"}}])
    assert response.status_code == 400
    assert "more than 1" in response.json()["error"]


def test_project_keeps_the_documents_field_order(shop: Api) -> None:
    body = ok(shop, "books", [{"$limit": 1}, {"$project": {"price": 1, "title": 1, "n": {"$literal": 1}}}])
    assert list(body[0]) == ["_id", "title", "price", "n"]


def test_lookup_with_more_distinct_values_than_one_query_takes(admin: Api) -> None:
    put_model(admin, "words", type="collection", fields=[{"name": "w", "type": "text"}])
    put_model(admin, "bags", type="collection", fields=[{"name": "ws", "type": "tags"}])
    words = [f"w{i}" for i in range(120)]
    for w in words:
        create_item(admin, "words", {"w": w})
    create_item(admin, "bags", {"ws": words})
    # one document with 120 distinct local values: the joined model is read whole
    body = ok(admin, "bags", [{"$lookup": {"from": "words", "localField": "ws", "foreignField": "w", "as": "found"}},
                              {"$project": {"_id": 0, "n": {"$size": "$found"}}}])
    assert body == [{"n": 120}]
    # 120 documents, each one value, against an array field: queries of 100 values
    body = ok(admin, "words", [{"$lookup": {"from": "bags", "localField": "w", "foreignField": "ws", "as": "in"}},
                               {"$group": {"_id": None, "n": {"$sum": {"$size": "$in"}}}}])
    assert body == [{"_id": None, "n": 120}]


@pytest.mark.parametrize(("param", "stage"), [("filter", "$match"), ("sort", "$sort"), ("fields", "$project"),
                                              ("limit", "$limit"), ("skip", "$skip"), ("populate", "$lookup")])
def test_list_parameters_are_refused_naming_the_stage_to_use(shop: Api, param: str, stage: str) -> None:
    response = shop.get("/api/content/aggregate/books", params={"pipeline": "[]", param: "1"})
    assert response.status_code == 400
    assert response.json() == {"error": f"<{param}> is not a parameter of aggregate; use a {stage} stage"}


@pytest.mark.parametrize(("pipeline", "message"), [
    ('[{"$addFields": {"x": NaN}}]', "<pipeline> contains a number that is not finite (NaN or Infinity)"),
    ('[{"$project": {"x": {"$literal": -Infinity}}}]', "<pipeline> contains a number that is not finite (NaN or Infinity)"),
    ('[{"$addFields": {"x": "\\ud800"}}]', "<pipeline> contains a NUL character or a lone surrogate"),
    ('[{"$project": {"x\\u0000": 1}}]', "<pipeline> contains a NUL character or a lone surrogate"),
    ('[{"$match": ' + '{"a":' * 300 + "1" + "}" * 300 + "}]", "<pipeline> is nested deeper than 100 levels"),
])
def test_values_no_stage_can_hold_are_refused_like_other_parameters(shop: Api, pipeline: str, message: str) -> None:
    """NaN used to answer null, a lone surrogate 'nest too deeply', a NUL key
    was dropped silently, deep nesting gave a 500."""
    response = agg(shop, "books", pipeline)
    assert (response.status_code, response.json()) == (400, {"error": message})


@pytest.mark.parametrize("stage", ['{"$limit": 9223372036854775808}', '{"$skip": 9223372036854775808}',
                                   '{"$limit": 1e300}', '{"$skip": 1e19}'])
def test_skip_and_limit_past_64_bits_are_400(shop: Api, stage: str) -> None:
    """A double past 2^63 in $skip or $limit reached SQLite and gave a 500."""
    response = agg(shop, "books", f"[{stage}]")
    assert response.status_code == 400 and "integer" in response.json()["error"], response.text


def test_an_aggregation_running_too_long_is_400(shop: Api, quire: Quire, monkeypatch: pytest.MonkeyPatch) -> None:
    """A $lookup on an unindexed field of a large model scanned it once per
    batch on the event loop: two such requests held both workers of the
    server for over a minute (the health check timed out). A time budget,
    checked between documents and $lookup batches, stops them."""
    content = quire.get(ContentService)
    monkeypatch.setattr(content, "aggregate_limits", Limits(seconds=-1.0))  # any work is past the budget
    pipeline = [{"$lookup": {"from": "books", "localField": "title", "foreignField": "title", "as": "same"}}]
    response = agg(shop, "books", pipeline)
    assert response.status_code == 400
    assert response.json()["error"].startswith("Aggregation takes longer than -1 seconds")
    monkeypatch.setattr(content, "aggregate_limits", Limits(seconds=60.0))
    assert agg(shop, "books", pipeline).status_code == 200


def test_aggregations_run_off_the_event_loop(shop: Api, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    from quire.content import routes as content_routes

    seen: list[bool] = []

    def fake(*args: Any) -> bytes:
        try:
            asyncio.get_running_loop()
            seen.append(True)
        except RuntimeError:  # a worker thread has no running loop
            seen.append(False)
        return b"[]"

    monkeypatch.setattr(content_routes, "run_aggregate", fake)
    assert ok(shop, "books", []) == []
    assert seen == [False]


def test_aggregations_beyond_the_slots_of_a_worker_are_503_with_retry_after(
    shop: Api, quire: Quire, monkeypatch: pytest.MonkeyPatch
) -> None:
    from quire.content import routes as content_routes
    from quire.slots import LoopSlots

    monkeypatch.setattr(quire.get(ContentService), "aggregation_slots", LoopSlots(lambda: 0))  # every slot taken
    monkeypatch.setattr(content_routes, "AGGREGATION_WAIT_SECONDS", 0.05)
    response = agg(shop, "books", [])
    assert response.status_code == 503
    assert response.headers["retry-after"] == "1"
    assert response.json() == {"error": "Busy with other aggregations; try again shortly"}


def test_a_slot_waiter_gets_the_slot_when_it_frees_and_times_out_otherwise() -> None:
    import asyncio

    from quire.errors import Unavailable
    from quire.slots import LoopSlots

    async def scenario() -> list[str]:
        slots = LoopSlots(lambda: 1)
        events: list[str] = []

        async def hold(name: str, seconds: float, wait: float) -> None:
            try:
                async with slots.taken(wait, lambda after: Unavailable("busy", after)):
                    events.append(f"{name} in")
                    await asyncio.sleep(seconds)
            except Unavailable:
                events.append(f"{name} busy")

        await asyncio.gather(hold("a", 0.1, 1), hold("b", 0, 1), hold("c", 0, 0.01))
        return events

    assert asyncio.run(scenario()) == ["a in", "c busy", "b in"]
