"""Property test: random pipelines ($addFields with $concat and array
literals, $unwind, $group with $push/$addToSet/$first, $sort, $project,
$lookup) over random small documents either answer or are refused with a
400, and the memory they take (tracemalloc) stays within the byte cap times
a stated factor, plus orjson's reserve for the one document it is writing,
plus a fixed allowance."""

from __future__ import annotations

import os
import tracemalloc
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quire.content.aggregate import answer_json
from quire.errors import BadRequest
from quire.store import budget as budget_module
from quire.store.budget import Budget, Limits
from quire.store.expressions import units
from quire.store.pipeline import run
from quire.store.stages import Lookup, parse_pipeline

EXAMPLES = int(os.environ.get("QUIRE_PROPERTY_EXAMPLES", "800")) // 4
# Python's memory for what the budget counts, over its JSON size: a string
# costs 49 bytes more than its text, a dict ~200 bytes, an int in a list 8
# more than in JSON; measured over these documents (strings of up to 4,000
# characters) it stayed under 0.7 times the cap. The allowance covers the
# rest of a run (the stages' generators, the budget's own books).
FACTOR = 2
ALLOWANCE = 256 << 10
# orjson's answer for one document keeps room it reserved, several times the
# text (up to ~16x for a list of numbers); the answer copies it out at once,
# so it is transient, one document at a time.
ORJSON_RESERVE = 24

STRING_FIELDS = ["a", "b", "s"]
# string fields as lengths, made into text in the test: a failing example's report stays short
lengths = st.integers(0, 4000)
documents = st.fixed_dictionaries({
    "a": lengths, "b": lengths, "s": lengths, "n": st.integers(0, 3),
    "arr": st.lists(st.integers(0, 9), max_size=4),
})
string_refs = st.sampled_from(["$a", "$b", "$s"])


def concat() -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda f, refs: {"$addFields": {f: {"$concat": refs}}},
                     st.sampled_from(STRING_FIELDS), st.lists(string_refs, min_size=1, max_size=12))


def array_literal() -> st.SearchStrategy[dict[str, Any]]:
    element = st.one_of(string_refs, st.integers(0, 9), st.just("$$ROOT"))
    return st.builds(lambda items: {"$addFields": {"arr": items}}, st.lists(element, min_size=1, max_size=24))


stage_specs = st.one_of(
    concat(),
    array_literal(),
    st.just({"$unwind": "$arr"}),
    st.just({"$unwind": {"path": "$arr", "includeArrayIndex": "i", "preserveNullAndEmptyArrays": True}}),
    st.builds(lambda key: {"$group": {"_id": key, "a": {"$push": "$a"}, "b": {"$addToSet": "$b"},
                                      "s": {"$first": "$s"}, "arr": {"$push": "$arr"}}},
              st.sampled_from([None, "$n", "$arr", "$a"])),
    st.builds(lambda key, way: {"$sort": {key: way}}, st.sampled_from(["n", "a", "arr", "i"]), st.sampled_from([1, -1])),
    st.sampled_from([{"$project": {"a": 1, "arr": 1, "n": 1}}, {"$project": {"b": 0}},
                     {"$project": {"s": {"$concat": ["$a", "$b"]}, "n": 1}}]),
    st.builds(lambda local, foreign: {"$lookup": {"from": "f", "localField": local, "foreignField": foreign,
                                                  "as": "arr"}},
              st.sampled_from(["n", "arr", "none"]), st.sampled_from(["n", "arr", "none"])),
)


def _texts(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: "x" * v if k in STRING_FIELDS else v for k, v in doc.items()} for doc in docs]


def _fetch(foreign: list[dict[str, Any]]) -> Any:
    def fetch(stage: Lookup, keys: list[Any]) -> list[dict[str, Any]]:
        return foreign

    return fetch


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(docs=st.lists(documents, min_size=1, max_size=12), foreign=st.lists(documents, max_size=6),
       pipeline=st.lists(stage_specs, min_size=1, max_size=7),
       cap=st.sampled_from([64 << 10, 256 << 10, 1 << 20]))
def test_random_pipelines_answer_or_are_refused_within_the_cap(
    docs: list[dict[str, Any]], foreign: list[dict[str, Any]], pipeline: list[dict[str, Any]], cap: int
) -> None:
    stages = parse_pipeline(pipeline)
    docs, foreign = _texts(docs), _texts(foreign)
    budget = Budget(limits=Limits(max_bytes=cap, seconds=3600))  # no clock in a property test
    largest = [0]

    def watched(out: Any) -> Any:
        for doc in out:
            largest[0] = max(largest[0], units(doc, cap))
            yield doc

    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        try:  # a 400: past the cap, or $concat given what a $group made an array
            body: bytes | None = answer_json(watched(run(stages, iter(docs), _fetch(foreign), budget)), budget)
        except BadRequest:
            body = None
        peak = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    if body is not None:
        assert len(body) <= cap
        orjson.loads(body)
    assert budget.peak <= cap
    assert peak <= cap * FACTOR + ORJSON_RESERVE * largest[0] + ALLOWANCE, (peak, budget.peak, largest[0])


def test_a_big_value_documents_share_is_measured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """500 copies of an item keep its 1,000-number array through `$project`:
    the array is measured once, not once per copy."""
    measured: list[int] = []

    def counted(value: Any, limit: int) -> int:
        measured.append(len(value))
        return units(value, limit)

    monkeypatch.setattr(budget_module, "units", counted)
    stages = parse_pipeline([{"$addFields": {"copies": list(range(500))}}, {"$unwind": "$copies"},
                             {"$project": {"big": 1, "copies": 1}}, {"$sort": {"copies": -1}}])
    budget = Budget()
    out = list(run(stages, iter([{"_id": 1, "big": list(range(1000))}]), _fetch([]), budget))
    assert [d["copies"] for d in out[:2]] == [499, 498]
    assert measured.count(1000) == 1
    assert budget.bytes == 0  # $sort gave back what it held as it handed the documents on
