"""An aggregation is bounded by the bytes it holds, not only by documents
and time: the issue's shapes (an array literal, `$unwind` over it, `$concat`
building big strings, then `$sort`, `$group` or just the answer) are a 400
naming the stage, and the memory the request takes (tracemalloc, in process)
stays near the cap. The app here caps aggregations at 8 MB."""

from __future__ import annotations

import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire
from quire.config import load_settings
from quire.content.service import ContentService
from quire.errors import ConfigError
from quire.store.budget import MAX_BYTES, Limits
from tests.conftest import Api, create_item, put_model

CAP = 8 << 20
# Python's memory for what the budget counts, over its JSON size: the
# documents here are big strings (one byte a character in both), so it stays
# close to 1. The allowance covers the app and the request around them, and
# the buffer orjson reserves for the document it writes into the answer
# (about ten times the text, given back once copied: 8 MB for 0.75 MB).
FACTOR = 1.5
ALLOWANCE = 16 << 20
TITLE = "t" * 10_000
STRING = {"$concat": ["$title"] * 75}  # 750,000 characters


@pytest.fixture
def app_env(app_env: dict[str, str]) -> dict[str, str]:
    return {**app_env, "QUIRE_CONTENT_AGGREGATE_MAX_BYTES": str(CAP)}


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": TITLE})
    return admin


def copies(count: int, *tail: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's shape: each item `count` times, three stages each
    building a ~0.75 MB string, then `tail` (stage 5 on)."""
    return [
        {"$addFields": {"copies": list(range(count))}},
        {"$unwind": "$copies"},
        {"$addFields": {"s": STRING}},
        {"$addFields": {"s": {"$concat": [STRING, ""]}}},
        {"$addFields": {"s": STRING}},
        *tail,
    ]


@pytest.fixture
def peak() -> Iterator[list[int]]:
    """The traced peak of the test's request(s), read after it ran."""
    tracemalloc.start()
    found: list[int] = []
    try:
        yield found
    finally:
        found.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


def agg(api: Api, model: str, pipeline: Any, peak: list[int] | None = None) -> Any:
    if peak is not None:
        tracemalloc.reset_peak()
        start = tracemalloc.get_traced_memory()[0]
    response = api.get(f"/api/content/aggregate/{model}", params={"pipeline": json.dumps(pipeline, separators=(",", ":"))})
    if peak is not None:
        peak.append(tracemalloc.get_traced_memory()[1] - start)
    return response


def refused_at(response: Any, where: str, cap: int = CAP) -> None:
    assert response.status_code == 400, response.text[:200]
    message = response.json()["error"]
    assert message == (
        f"Aggregation needs more than {cap >> 20} MB of memory at {where}; narrow what reaches it with $match "
        "or $limit, or keep fewer fields with $project"
    )


def test_copies_held_by_sort_are_400_naming_the_sort_and_stay_near_the_cap(posts: Api, peak: list[int]) -> None:
    """Reached 736 MB with 1,000 copies before the byte cap (here 100: 75 MB)."""
    refused_at(agg(posts, "posts", copies(100, {"$sort": {"copies": -1}}), peak), "stage 5 ($sort)")
    assert peak[0] <= CAP * FACTOR + ALLOWANCE


def test_copies_pushed_by_group_are_400_naming_the_group(posts: Api, peak: list[int]) -> None:
    pipeline = copies(100, {"$group": {"_id": "$copies", "s": {"$push": "$s"}}})
    refused_at(agg(posts, "posts", pipeline, peak), "stage 5 ($group)")
    assert peak[0] <= CAP * FACTOR + ALLOWANCE


def test_copies_streamed_to_the_answer_are_400_naming_the_answer(posts: Api, peak: list[int]) -> None:
    """Nothing holds them but the answer: 30 MB answered 200 before."""
    refused_at(agg(posts, "posts", copies(40), peak), "the answer")
    assert peak[0] <= CAP * FACTOR + ALLOWANCE


def test_a_document_growing_past_the_cap_in_a_streaming_stage_is_400_naming_it(posts: Api, peak: list[int]) -> None:
    """Each value stays under 1 MB; twelve of them in one document do not."""
    wide = {"$addFields": {f"s{i}": {"$concat": ["$s", ""]} for i in range(12)}}
    pipeline = [{"$project": {"title": 1}}, {"$addFields": {"s": STRING}}, wide]
    refused_at(agg(posts, "posts", pipeline, peak), "stage 2 ($addFields)")
    assert peak[0] <= CAP * FACTOR + ALLOWANCE


def test_lookup_matches_past_the_cap_are_400_naming_the_lookup(posts: Api, peak: list[int]) -> None:
    put_model(posts, "pages", type="collection", fields=[{"name": "body", "type": "text"}])
    for _ in range(11):
        create_item(posts, "pages", {"body": "x" * 800_000})
    pipeline = [{"$lookup": {"from": "pages", "localField": "none", "foreignField": "none", "as": "all"}}]
    refused_at(agg(posts, "posts", pipeline, peak), "stage 0 ($lookup)")
    assert peak[0] <= CAP * FACTOR + ALLOWANCE


def test_items_read_ahead_past_the_cap_are_400_naming_the_input(posts: Api, peak: list[int]) -> None:
    for _ in range(11):
        create_item(posts, "posts", {"title": "x" * 800_000})
    refused_at(agg(posts, "posts", [{"$group": {"_id": None, "n": {"$sum": 1}}}], peak), "the pipeline's input")
    assert peak[0] <= CAP * FACTOR + ALLOWANCE


def test_small_aggregations_still_answer(posts: Api) -> None:
    response = agg(posts, "posts", copies(3, {"$sort": {"copies": -1}}, {"$project": {"_id": 0, "copies": 1}}))
    assert response.status_code == 200
    assert response.json() == [{"copies": 2}, {"copies": 1}, {"copies": 0}]


def test_the_issues_6000_copies_are_refused_at_the_default_cap_before_they_get_big(
    posts: Api, quire: Quire, peak: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """4.0 GB (and a 200 after 4 s) before the byte cap."""
    monkeypatch.setattr(quire.get(ContentService), "aggregate_limits", Limits())
    refused_at(agg(posts, "posts", copies(6000, {"$sort": {"copies": -1}}), peak), "stage 5 ($sort)", MAX_BYTES)
    assert peak[0] <= MAX_BYTES * FACTOR + ALLOWANCE



def test_the_settings_reach_the_aggregations(quire: Quire, tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={"QUIRE_CONTENT_AGGREGATE_MAX_SECONDS": "7",
                                            "QUIRE_CONTENT_AGGREGATIONS_AT_ONCE": "3"})
    assert (settings.content.aggregate_max_seconds, settings.content.aggregations_at_once) == (7, 3)
    assert quire.get(ContentService).aggregate_limits == Limits(max_bytes=CAP, seconds=5)


@pytest.mark.parametrize(("key", "value"), [("aggregate_max_bytes", "1000"), ("aggregate_max_seconds", "0"),
                                            ("aggregations_at_once", "0"), ("aggregations_at_once", "65")])
def test_aggregate_settings_out_of_range_stop_the_start(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=f"content.{key}"):
        load_settings(tmp_path, env={f"QUIRE_CONTENT_{key.upper()}": value})
