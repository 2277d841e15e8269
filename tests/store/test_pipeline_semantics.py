"""Property tests: aggregation pipelines run by Quire (SQL prefix plus the
Python stages) give what mongomock, an independent implementation of
MongoDB's aggregation, gives for the same documents; and pushing the prefix
into SQL changes nothing."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from quire.errors import BadRequest
from quire.store import Store
from quire.store.pipeline import aggregate, split
from quire.store.query import Cond
from quire.store.stages import Lookup, parse_pipeline
from quire.store.values import SortKey
from tests.store.conftest import BACKENDS, any_store

mongomock = pytest.importorskip("mongomock")

EXAMPLES = int(os.environ.get("QUIRE_PROPERTY_EXAMPLES", "800"))
KEYS = ["a", "b", "c"]
# No booleans: mongomock takes true for 1 (Python's bool is an int) in
# equality, $sum and ordering, which MongoDB never does; the filter tests
# pin booleans against montydb.
scalars = st.one_of(
    st.none(),
    st.integers(-3, 3),
    st.sampled_from([0.5, -1.5, 2.0]),
    st.sampled_from(["", "a", "b", "ab", "B"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=3)),
    max_leaves=5,
)
documents = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3)
paths = st.one_of(st.sampled_from(KEYS), st.builds(lambda a, b: f"{a}.{b}", st.sampled_from(KEYS), st.sampled_from(KEYS)))
refs = paths.map(lambda p: "$" + p)

# -- expressions -----------------------------------------------------------------

numbers = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, 2.0]))
leaf_exprs = st.one_of(refs, numbers, st.sampled_from(["x", "", "Ab"]), st.builds(lambda v: {"$literal": v}, scalars))


def expressions(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return leaf_exprs
    sub = expressions(depth - 1)
    return st.one_of(
        leaf_exprs,
        st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), sub, sub),
        st.builds(lambda a, b: {"$ifNull": [a, b]}, sub, sub),
        st.builds(lambda c, a, b: {"$cond": [c, a, b]}, sub, sub, sub),
        st.builds(lambda c, a, b: {"$cond": {"if": c, "then": a, "else": b}}, sub, sub, sub),
        st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(["$add", "$subtract", "$multiply"]), refs | numbers,
                  refs | numbers),
        st.builds(lambda a, b: {"$concat": [a, b]}, refs | st.just("x"), refs | st.just("-")),
        st.builds(lambda op, a: {op: a}, st.sampled_from(["$toLower", "$toUpper", "$size"]), refs),
        st.builds(lambda items: items, st.lists(sub, min_size=1, max_size=2)),
        st.builds(lambda a, b: {"x": a, "y": b}, sub, sub),
    )


# -- stages ------------------------------------------------------------------------

simple_filters = st.one_of(
    st.builds(lambda p, v: {p: v}, paths, scalars),
    st.builds(lambda p, op, v: {p: {op: v}}, paths, st.sampled_from(["$gt", "$gte", "$lt", "$lte", "$ne"]),
              st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b"]))),
    st.builds(lambda p, v: {p: {"$in": v}}, paths, st.lists(scalars, max_size=3)),
    st.builds(lambda p, v: {p: {"$exists": v}}, paths, st.booleans()),
)
accumulator_kinds = ["$sum", "$avg", "$min", "$max", "$first", "$last", "$push", "$addToSet"]
group_ids = st.one_of(st.none(), refs, st.builds(lambda a, b: {"k": a, "l": b}, refs, refs), st.just({"$literal": 1}))


def group_stage(ids: Any, accs: list[tuple[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"_id": ids}
    for i, (kind, arg) in enumerate(accs):
        name = f"{kind[1:]}{i}"
        spec[name] = {kind: arg} if kind != "$count" else {"$count": {}}
    return {"$group": spec}


stages = st.one_of(
    simple_filters.map(lambda f: {"$match": f}),
    st.builds(lambda p, d: {"$sort": {p: d}}, paths, st.sampled_from([1, -1])),
    st.integers(0, 3).map(lambda n: {"$skip": n}),
    st.integers(1, 3).map(lambda n: {"$limit": n}),
    st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True).map(lambda ks: {"$project": {k: 1 for k in ks}}),
    st.builds(lambda ks, i: {"$project": {**{k: 0 for k in ks}, **({"_id": 0} if i else {})}},
              st.lists(st.sampled_from(KEYS), min_size=1, max_size=2, unique=True), st.booleans()),
    st.builds(lambda p, v: {"$addFields": {p: {"$literal": v}}}, paths, scalars),
    st.builds(lambda k, v: {"$project": {"a": 1, k: {"$literal": v}}}, st.sampled_from(["p", "q"]), scalars),
    st.builds(group_stage, group_ids,
              st.lists(st.tuples(st.sampled_from([*accumulator_kinds, "$count"]), refs | st.just(1)), max_size=3)),
    st.builds(lambda p, keep, index: {"$unwind": {"path": f"${p}", "preserveNullAndEmptyArrays": keep,
                                                  **({"includeArrayIndex": "i"} if index else {})}}
              if keep or index else {"$unwind": f"${p}"}, paths, st.booleans(), st.booleans()),
    st.just({"$count": "n"}),
    st.builds(lambda lf, ff: {"$lookup": {"from": "other", "localField": lf, "foreignField": ff, "as": "j"}},
              paths, paths),
)


def settle(pipeline: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Make a generated pipeline's answer well defined (MongoDB leaves the
    order of ties and of $group's output open): sort ties by _id, put a
    $sort on _id before $skip, $limit and order-dependent accumulators
    where the order is open. Answers whether the final order is defined."""
    out: list[dict[str, Any]] = []
    ordered, unique_id = True, True
    for stage in pipeline:
        name, arg = next(iter(stage.items()))
        if name == "$sort":
            stage = {"$sort": {**arg, "_id": 1}}  # ties by _id
            ordered = unique_id
        elif not ordered and (name in ("$skip", "$limit") or (name == "$group" and _order_dependent(arg))):
            if not unique_id:
                continue
            out.append({"$sort": {"_id": 1}})
            ordered = True
        if name == "$group":
            ordered, unique_id = False, True
        elif name == "$unwind":
            unique_id = False
        elif name == "$project" and (arg.get("_id") == 0):
            unique_id = ordered = False
        elif name == "$count":
            ordered = True
        out.append(stage)
    return out, ordered


def _order_dependent(spec: dict[str, Any]) -> bool:
    return any(isinstance(v, dict) and set(v) & {"$first", "$last", "$push"} for v in spec.values())


def _holds_array(value: Any) -> bool:
    if isinstance(value, list):
        return True
    return isinstance(value, dict) and any(_holds_array(v) for v in value.values())


def canonical(docs: list[dict[str, Any]]) -> list[Any]:
    """Docs with $addToSet arrays (their order is open) sorted, as a sorted list."""
    def fix(doc: dict[str, Any]) -> dict[str, Any]:
        return {k: sorted(v, key=SortKey) if k.startswith("addToSet") and isinstance(v, list) else v
                for k, v in doc.items()}

    fixed = [fix(d) for d in docs]
    return sorted(fixed, key=lambda d: orjson.dumps(d, option=orjson.OPT_SORT_KEYS))


def mongomock_deviates(pipeline: list[dict[str, Any]], docs: list[Any]) -> bool:
    """Pipelines where mongomock is known to differ from MongoDB; there we
    only require Quire's SQL and Python paths to agree.

    - the `$count` accumulator (MongoDB 5.0): mongomock does not know it.
    - `$lookup` runs mongomock's own `find` with the local value as the
      query: an object value is read as a query, a dotted localField does
      not look into arrays, and null does not match a foreign field missing
      under a non-object parent (`a.a` of `{"a": null}`); we compare
      lookups on top-level fields with scalar local values only.
    - `$sort` on a field holding arrays: mongomock compares the arrays
      whole; MongoDB sorts by their smallest (largest, descending) element.
    - a field path through an array (`$a.c` of `{"a": [null]}`): MongoDB
      answers the array of the elements' values (`[]`), mongomock null.
    - `$addFields` on a dotted path through an array (`a.b` of
      `{"a": [1, {"c": 1}]}`): MongoDB sets the field in every element,
      mongomock replaces the array by an object.
    - `$unwind` keeping a document without elements
      (`preserveNullAndEmptyArrays`) gives it a null `includeArrayIndex`
      field in MongoDB; mongomock leaves the field out.
    - `$addToSet` of a dotted path: mongomock answers null for a falsy
      value (`0` of `{"a": {"b": 0}}`); of an array value it does not add
      the array as one element.
    - the `$first`/`$last` accumulators skip documents missing the field in
      mongomock; MongoDB takes the first/last document and answers null.
    - `$match` on a dotted path through an array of objects: mongomock's
      `$exists` and null handling there differ from MongoDB's (pinned
      against montydb by the filter tests).
    - `$match` equality with null on a dotted path: mongomock does not
      match a field missing under a non-object parent (`a.a` of
      `{"a": null}`), MongoDB does (the filter tests pin this against
      montydb).
    """
    text = repr(pipeline)
    if "'$count': {}" in text:
        return True
    if re.search(r"'\$addToSet': '\$\w+\.", text):
        return True
    for stage in pipeline:
        spec = stage.get("$unwind")
        if isinstance(spec, dict) and "includeArrayIndex" in spec and spec["preserveNullAndEmptyArrays"]:
            return True
    for kind in ("$first", "$last"):
        for head in KEYS:
            if f"'{kind}': '${head}" in text and any(isinstance(d, dict) and head not in d for d in docs):
                return True
    array_heads = {k for d in docs if isinstance(d, dict) for k, v in d.items() if _holds_array(v)}
    if array_heads and "$addToSet" in text:
        return True
    for head in array_heads:
        if f"'${head}." in text:  # a field path through an array
            return True
        if any(key.startswith(f"{head}.") for stage in pipeline for key in stage.get("$match", {})):
            return True
        if any(key.startswith(f"{head}.") for stage in pipeline for key in stage.get("$addFields", {})):
            return True
        if any(head == key.split(".")[0] for stage in pipeline for key in stage.get("$sort", {})):
            return True
    for stage in pipeline:
        found = stage.get("$match")
        if found is not None and any("." in k and "None" in repr(v) for k, v in found.items()):
            return True
        spec = stage.get("$lookup")
        if spec is None:
            continue
        if "." in spec["localField"] or "." in spec["foreignField"]:
            return True
        if any(isinstance(d, dict) and isinstance(d.get(spec["localField"]), dict | list) for d in docs):
            return True
    return False


def empty_group(store: Store, name: str, names: dict[str, str], pipeline: list[Any]) -> bool:
    """mongomock answers `$group` and `$count` over no documents with one
    document (`{"_id": null}`, `{"n": 0}`); MongoDB answers none."""
    for i, stage in enumerate(pipeline):
        if ("$group" in stage or "$count" in stage) and run_quire(store, name, names, pipeline[:i], True) == []:
            return True
    return False


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    opened = any_store(request, tmp_path_factory.mktemp("agg"))
    yield opened
    opened.close()


# Each example fills the collections of its test and empties them after:
# a table created and dropped per example cost most of an example's time
# on PostgreSQL.


def fetcher(store: Store, names: dict[str, str]) -> Any:
    def fetch(stage: Lookup, keys: list[Any]) -> list[dict[str, Any]]:
        return store.collection(names.get(stage.source, "nothing")).find(Cond(stage.foreign, "in", keys))

    return fetch


def run_quire(store: Store, name: str, names: dict[str, str], pipeline: list[Any], in_sql: bool) -> Any:
    try:
        stages = parse_pipeline(pipeline)
        return list(aggregate(store.collection(name), stages, fetcher(store, names), push=in_sql))
    except BadRequest as exc:
        return BadRequest, exc.message


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    docs=st.lists(documents, min_size=1, max_size=6),
    others=st.lists(documents, max_size=4),
    raw=st.lists(stages, min_size=1, max_size=4),
)
def test_pipelines_answer_what_mongomock_answers(
    store: Store, docs: list[dict[str, Any]], others: list[dict[str, Any]], raw: list[dict[str, Any]]
) -> None:
    pipeline, ordered = settle(raw)
    name, other = "p", "o"
    for coll_name, items in ((name, docs), (other, others)):
        coll = store.collection(coll_name)
        for i, d in enumerate(items):
            coll.insert({"_id": f"{i:024x}", **d})
    mongo = mongomock.MongoClient().db
    mongo["main"].insert_many([{"_id": f"{i:024x}", **d} for i, d in enumerate(docs)])
    if others:
        mongo["other"].insert_many([{"_id": f"{i:024x}", **d} for i, d in enumerate(others)])
    try:
        names = {"other": other}
        in_sql = run_quire(store, name, names, pipeline, True)
        in_python = run_quire(store, name, names, pipeline, False)
        assert in_sql == in_python, f"SQL prefix changes the answer of {pipeline} on {docs}"
        if mongomock_deviates(pipeline, docs + others) or empty_group(store, name, names, pipeline):
            event("mongomock deviates")
            return
        try:
            expected = list(mongo["main"].aggregate(pipeline))
        except mongomock.OperationFailure as exc:
            assert isinstance(in_sql, tuple), f"mongomock refuses {pipeline} ({exc!r}), Quire answers {in_sql}"
            return
        except Exception:  # noqa: BLE001 - mongomock crashes (TypeError, ...) or lacks the feature
            event("mongomock fails")
            return
        assert not isinstance(in_sql, tuple), f"Quire refuses {pipeline}: {in_sql[1]}; mongomock: {expected}"
        event("compared with mongomock")
        if ordered:
            assert in_sql == expected, f"{pipeline} on {docs} / {others}"
        else:
            assert canonical(in_sql) == canonical(expected), f"{pipeline} on {docs} / {others}"
    finally:
        store.collection(name).delete_many(None)
        store.collection(other).delete_many(None)


# -- expressions over documents that have every field they reference ---------------

present_scalars = st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0]),
                            st.sampled_from(["", "a", "Ab"]), st.lists(st.integers(0, 2), max_size=2))
full_documents = st.fixed_dictionaries({k: present_scalars for k in KEYS})
top_refs = st.sampled_from(["$a", "$b", "$c"])
top_leaves = st.one_of(top_refs, numbers, st.builds(lambda v: {"$literal": v}, st.sampled_from([None, 1, "x", 0.5])))


def top_expressions(depth: int = 2) -> st.SearchStrategy[Any]:
    if depth <= 0:
        return top_leaves
    sub = top_expressions(depth - 1)
    return st.one_of(
        top_leaves,
        st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), sub, sub),
        st.builds(lambda a, b: {"$ifNull": [a, b]}, sub, sub),
        st.builds(lambda c, a, b: {"$cond": [c, a, b]}, sub, sub, sub),
        st.builds(lambda op, a, b: {op: [a, b]}, st.sampled_from(["$add", "$subtract", "$multiply", "$divide"]), sub, sub),
        st.builds(lambda a, b: {"$concat": [a, b]}, sub, sub),
        st.builds(lambda op, a: {op: a}, st.sampled_from(["$toLower", "$toUpper", "$size"]), sub),
        st.builds(lambda a, b: [a, b], sub, sub),
    )


def _array_literal(expr: Any) -> bool:
    if isinstance(expr, list):
        return True
    if isinstance(expr, dict):
        return any(_array_literal(v) if k != "$cond" and not (isinstance(v, list) and k.startswith("$"))
                   else any(_array_literal(x) for x in v) if isinstance(v, list) else _array_literal(v)
                   for k, v in expr.items())
    return False


COMPARISONS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}


def _boolean_as_value(expr: Any, as_value: bool = False) -> bool:
    """Whether a comparison's boolean result is used as a value (compared,
    added, concatenated): mongomock takes `true` for 1 there."""
    if isinstance(expr, list):
        return any(_boolean_as_value(e, True) for e in expr)
    if not isinstance(expr, dict) or len(expr) != 1:
        return False
    op, arg = next(iter(expr.items()))
    if op in COMPARISONS and as_value:
        return True
    if op == "$cond":
        parts = [arg["if"], arg["then"], arg["else"]] if isinstance(arg, dict) else arg
        return _boolean_as_value(parts[0]) or any(_boolean_as_value(p, True) for p in parts[1:])
    return any(_boolean_as_value(a, True) for a in (arg if isinstance(arg, list) else [arg]))


def expression_deviates(error: str) -> bool:
    """Type errors MongoDB raises where mongomock converts or computes on:
    `$concat` and `$toLower`/`$toUpper` apply `str()` to any value, `$add`
    and friends use Python's `+` and `*` on strings and arrays, `$size` of a
    string is its length; it does not check argument counts (`$toLower` of
    two values)."""
    return any(w in error for w in ("only supports", "needs an array", "by zero", "argument"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(full_documents, min_size=1, max_size=4), expr=top_expressions(),
       stage=st.sampled_from(["$addFields", "$project"]))
def test_expressions_evaluate_as_in_mongomock(store: Store, docs: list[dict[str, Any]], expr: Any,
                                              stage: str) -> None:
    if isinstance(expr, int | float):
        stage = "$addFields"  # in $project a bare number is an inclusion flag
    pipeline = [{stage: {"n": expr}}]
    name = "e"
    coll = store.collection(name)
    for i, d in enumerate(docs):
        coll.insert({"_id": f"{i:024x}", **d})
    try:
        ours = run_quire(store, name, {}, pipeline, True)
        if _array_literal(expr) or _boolean_as_value(expr):
            return  # mongomock leaves array literals unevaluated; takes true for 1
        try:
            mongo = mongomock.MongoClient().db["main"]
            mongo.insert_many([{"_id": f"{i:024x}", **d} for i, d in enumerate(docs)])
            expected = list(mongo.aggregate(pipeline))
        except mongomock.OperationFailure as exc:
            assert isinstance(ours, tuple), f"mongomock refuses {pipeline} ({exc!r}), Quire answers {ours}"
            return
        except Exception:  # noqa: BLE001 - mongomock crashes (TypeError, ...) or lacks the feature
            event("mongomock fails")
            return
        if isinstance(ours, tuple):
            assert expression_deviates(ours[1]), f"Quire refuses {pipeline} on {docs}: {ours[1]}"
            event("type error where mongomock converts")
            return
        event("compared with mongomock")
        assert ours == expected, f"{pipeline} on {docs}"
    finally:
        store.collection(name).delete_many(None)


def test_split_composes_skip_and_limit_like_the_stages() -> None:
    stages = parse_pipeline([{"$match": {"a": 1}}, {"$match": {"b": 2}}, {"$sort": {"a": -1}}, {"$limit": 5},
                             {"$skip": 2}, {"$limit": 10}, {"$skip": 1}, {"$project": {"a": 1}}, {"$limit": 1}])
    prefix, rest = split(stages, lambda heads: True)
    assert len(prefix.nodes) == 2
    assert prefix.sort == [(("a",), -1)]
    assert (prefix.skip, prefix.limit) == (3, 2)  # rows 3 and 4 of the sorted ones
    assert [type(s).__name__ for s in rest] == ["Project", "Limit"]


def test_split_takes_matches_after_the_sort_but_not_a_second_sort() -> None:
    stages = parse_pipeline([{"$sort": {"a": 1}}, {"$match": {"b": 2}}, {"$sort": {"c": 1}}, {"$limit": 1}])
    prefix, rest = split(stages, lambda heads: True)
    assert (len(prefix.nodes), prefix.sort) == (1, [(("a",), 1)])
    assert [type(s).__name__ for s in rest] == ["Sort", "Limit"]


def test_split_stops_at_a_stage_sql_cannot_see() -> None:
    stages = parse_pipeline([{"$match": {"a": 1}}, {"$match": {"title": "x"}}, {"$limit": 1}])
    prefix, rest = split(stages, lambda heads: "title" not in heads)
    assert len(prefix.nodes) == 1
    assert [type(s).__name__ for s in rest] == ["Match", "Limit"]


# -- hostile input: a 400 or an answer, never another exception --------------------

NAMES = ["$match", "$sort", "$skip", "$limit", "$project", "$addFields", "$set", "$group", "$unwind", "$count",
         "$lookup", "$out", "$add", "$concat", "$size", "$cond", "$ifNull", "$sum", "$push", "$first", "$literal",
         "$eq", "$in", "$toLower", "$divide", "$$ROOT", "$$REMOVE", "$a", "$a.b", "a", "a.b", "_id", "", "path",
         "preserveNullAndEmptyArrays", "includeArrayIndex", "from", "localField", "foreignField", "as", "if", "then"]
junk = st.recursive(
    st.one_of(scalars, st.booleans(), st.sampled_from(NAMES), st.integers(-2**63, 2**63 - 1), st.floats()),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)),
    max_leaves=12,
)


STAGE_NAMES = ["$match", "$sort", "$skip", "$limit", "$project", "$addFields", "$group", "$unwind", "$count", "$lookup"]
hostile_stages = st.one_of(
    stages,
    st.builds(lambda n, v: {n: v}, st.sampled_from(STAGE_NAMES), junk),
    st.builds(lambda k, v: {"$addFields": {k: v}}, st.sampled_from(["a", "b.c"]), junk),
    st.builds(lambda i, v: {"$group": {"_id": i, "g": {"$push": v}}}, junk, junk),
    st.builds(lambda n, v: {n: v}, st.sampled_from(NAMES), junk),
)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(documents, max_size=4), pipeline=st.lists(hostile_stages, max_size=4))
def test_any_pipeline_answers_or_is_a_400(store: Store, docs: list[dict[str, Any]], pipeline: Any) -> None:
    name = "h"
    coll = store.collection(name)
    for i, d in enumerate(docs):
        coll.insert({"_id": f"{i:024x}", **d})
    try:
        answer = run_quire(store, name, {"a": name, "a.b": name, "": name}, pipeline, True)
        if not isinstance(answer, tuple):
            orjson.dumps(answer)
    finally:
        store.collection(name).delete_many(None)


# -- where mongomock cannot be the judge: MongoDB's documented behaviour, pinned ---------


def run_alone(pipeline: list[Any], docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from quire.store.pipeline import run

    return list(run(parse_pipeline(pipeline), iter(docs), lambda stage, keys: []))


def test_add_fields_with_an_object_merges_into_an_embedded_document() -> None:
    docs = [{"_id": 1, "specs": {"doors": 4}}, {"_id": 2, "specs": [{"doors": 2}, 7]}, {"_id": 3}]
    assert run_alone([{"$addFields": {"specs": {"fuel": "unleaded"}}}], docs) == [
        {"_id": 1, "specs": {"doors": 4, "fuel": "unleaded"}},
        {"_id": 2, "specs": [{"doors": 2, "fuel": "unleaded"}, {"fuel": "unleaded"}]},
        {"_id": 3, "specs": {"fuel": "unleaded"}},
    ]


def test_add_fields_remove_and_missing_values_drop_the_field() -> None:
    docs = [{"_id": 1, "a": 1, "b": 2}]
    assert run_alone([{"$addFields": {"a": "$$REMOVE", "b": "$nothing", "c": "$$ROOT.a"}}], docs) == [
        {"_id": 1, "c": 1}]


def test_project_computed_dotted_field_builds_the_embedded_document() -> None:
    assert run_alone([{"$project": {"b.q": {"$literal": 1}, "_id": 0}}], [{"_id": 1}]) == [{"b": {"q": 1}}]


def test_expression_comparisons_put_missing_below_null() -> None:
    docs = [{"_id": 1, "n": None}]
    assert run_alone([{"$project": {"_id": 0, "eq": {"$eq": ["$gone", None]}, "lt": {"$lt": ["$gone", None]},
                                    "null": {"$eq": ["$n", None]}}}], docs) == [
        {"eq": False, "lt": True, "null": True}]


def test_lookup_missing_or_empty_local_value_matches_null_and_missing_foreign_fields() -> None:
    from quire.store.pipeline import run

    foreign = [{"_id": "x", "k": None}, {"_id": "y"}, {"_id": "z", "k": 1}]
    stages = parse_pipeline([{"$lookup": {"from": "f", "localField": "k", "foreignField": "k", "as": "j"}},
                             {"$project": {"ids": "$j._id"}}])
    out = list(run(stages, iter([{"_id": 1}, {"_id": 2, "k": []}, {"_id": 3, "k": [1, None]}]),
                   lambda stage, keys: foreign))
    assert out == [{"_id": 1, "ids": ["x", "y"]}, {"_id": 2, "ids": ["x", "y"]}, {"_id": 3, "ids": ["x", "y", "z"]}]
