"""Property tests: walking a sorted list page by page from positions
(`find_page` with `after`) yields exactly the rows of the whole list read at
once, in the same order, for any documents, sort and page size; hinted
fields (compared as SQL values) and the others (MongoDB sort keys) alike."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quire.errors import BadRequest
from quire.store import Store, parse_filter
from quire.store.sqlite import Position
from tests.store.conftest import BACKENDS, any_store

KEYS = ["a", "b", "c"]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.5, -1.5, 2.0]),
    st.sampled_from(["", "a", "b", "B", "é"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(KEYS), inner, max_size=2)),
    max_leaves=4,
)
documents = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=3)
sorts = st.lists(
    st.tuples(st.sampled_from(KEYS + ["a.b", "c.0"]), st.sampled_from([1, -1])), max_size=2, unique_by=lambda t: t[0]
)
# hinted fields hold one type, or null, or nothing (as validated model fields do)
hinted_values = {
    "a": st.one_of(st.none(), st.integers(-2, 2), st.sampled_from([0.5, -1.5])),
    "b": st.one_of(st.none(), st.sampled_from(["", "a", "b", "B", "é", "ab"])),
    "c": st.one_of(st.none(), st.booleans()),
}
hinted_documents = st.fixed_dictionaries({}, optional=hinted_values)
HINTS = {"a": "number", "b": "text", "c": "bool"}


def _walk(coll: Any, node: Any, sort: list[Any], size: int) -> list[bytes]:
    rows, position = coll.find_page(node, sort, size)
    seen = list(rows)
    while position is not None:
        assert len(rows) == size  # only a full page has a next one
        rows, position = coll.find_page(node, sort, size, position)
        assert rows  # a position is never given for an empty page
        seen += rows
    return seen


@pytest.fixture(scope="module", params=BACKENDS)
def store(request: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    opened = any_store(request, tmp_path_factory.mktemp("keyset"))
    yield opened
    opened.close()


counter = iter(range(10**9))


def _check(store: Store, docs: list[dict[str, Any]], sort: list[Any], size: int,
           hints: dict[str, str] | None, spec: dict[str, Any]) -> None:
    name = f"c{next(counter)}"
    try:
        coll = store.collection(name, hints)
        for doc in docs:
            coll.insert(doc)
        parsed = [(tuple(path.split(".")), d) for path, d in sort]
        node = parse_filter(spec)
        assert _walk(coll, node, parsed, size) == coll.find_raw(node, parsed)
    finally:
        store.drop_collection(name)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(documents, max_size=9), sort=sorts, size=st.integers(1, 4))
def test_pages_walked_by_position_are_the_whole_sorted_list(store: Store, docs: Any, sort: Any, size: int) -> None:
    _check(store, docs, sort, size, None, {})


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(hinted_documents, max_size=9),
       sort=st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from([1, -1])), max_size=3,
                     unique_by=lambda t: t[0]),
       size=st.integers(1, 4), hinted=st.booleans())
def test_pages_on_hinted_fields_are_the_whole_sorted_list(store: Store, docs: Any, sort: Any, size: int, hinted: bool) -> None:
    _check(store, docs, sort, size, HINTS if hinted else None, {})


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(hinted_documents, max_size=9), size=st.integers(1, 3))
def test_pages_of_a_filtered_list_keep_the_filter(store: Store, docs: Any, size: int) -> None:
    _check(store, docs, [("a", -1)], size, HINTS, {"c": {"$ne": True}})


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(hinted_documents, min_size=1, max_size=9),
       sort=st.lists(st.tuples(st.sampled_from(KEYS), st.sampled_from([1, -1])), max_size=2,
                     unique_by=lambda t: t[0]),
       start=st.integers(0, 8), skip=st.integers(0, 5), size=st.integers(1, 3))
def test_skip_after_a_position_counts_off_from_there(store: Store, docs: Any, sort: Any, start: int,
                                                     skip: int, size: int) -> None:
    """What deep `skip` pages are read with: rows counted off after a
    position, across the ranges of a descending sort with nulls too."""
    name = f"c{next(counter)}"
    try:
        coll = store.collection(name, HINTS)
        for doc in docs:
            coll.insert(doc)
        parsed = [((path,), d) for path, d in sort]
        whole = coll.find_raw(None, parsed)
        if start >= len(whole) - 1:
            return
        _, position = coll.find_page(None, parsed, 1, None, start)  # the position of row `start`
        assert position is not None
        rows, _ = coll.find_page(None, parsed, size, position, skip)
        assert rows == whole[start + 1 + skip:start + 1 + skip + size]
    finally:
        store.drop_collection(name)


def test_a_position_of_another_sort_is_refused(store: Store) -> None:
    coll = store.collection("refused", HINTS)
    for n in range(3):
        coll.insert({"a": n})
    _, position = coll.find_page(None, [(("a",), 1)], 1)
    assert position is not None and position.keys == (0,)
    with pytest.raises(BadRequest, match="does not fit"):
        coll.find_page(None, [(("x",), 1)], 1, position)  # a sort key is bytes, not a number
    with pytest.raises(BadRequest, match="does not fit"):
        coll.find_page(None, [], 1, position)
    with pytest.raises(BadRequest, match="does not fit"):
        coll.find_page(None, [(("a",), 1)], 1, Position((True,), 1))


def test_the_last_page_has_no_position(store: Store) -> None:
    coll = store.collection("last")
    for n in range(4):
        coll.insert({"a": n})
    rows, position = coll.find_page(None, None, 2)
    assert len(rows) == 2 and position is not None
    rows, position = coll.find_page(None, None, 2, position)
    assert len(rows) == 2 and position is None


def test_a_made_up_position_sqlite_cannot_take_is_refused_not_an_error(store: Store) -> None:
    coll = store.collection("made_up", HINTS)
    coll.insert({"a": 1, "b": "x"})
    for keys, rowid in [((1,), 2**64), ((2**70,), 1), (("\ud800",), 1)]:
        sort = [(("b" if isinstance(keys[0], str) else "a",), 1)]
        with pytest.raises(BadRequest, match="does not fit"):
            coll.find_page(None, sort, 1, Position(keys, rowid))
