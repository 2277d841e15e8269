"""Store behaviour beyond filter semantics: indexes, hints, sort, regex
safety, transactions and concurrent writers."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quire.errors import BadRequest
from quire.store import SqliteStore, parse_filter, parse_sort
from quire.store import match as reference
from quire.store.sqlcompile import compile_filter


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    return SqliteStore(tmp_path / "s.db")


def test_declared_index_is_used_for_filter_and_sort(store: SqliteStore) -> None:
    hints = {"category": "text", "published": "text"}
    coll = store.collection("content/posts", hints)
    store.ensure_indexes("content/posts", [[("category",), ("published",)]])
    for i in range(50):
        coll.insert({"category": "guides" if i % 2 else "news", "published": f"2026-01-{i % 28 + 1:02d}"})
    where, params = compile_filter(parse_filter({"category": "guides"}), coll.hints)
    # a real statement first: EXPLAIN alone does not notice the new schema
    assert coll.count(parse_filter({"category": "guides"})) == 25
    plan = store.execute_read(
        f'EXPLAIN QUERY PLAN SELECT data FROM "content/posts" WHERE {where} '
        f"ORDER BY json_extract(data, '$.\"published\"') DESC LIMIT 20",
        params,
    ).fetchall()
    text = " ".join(str(row) for row in plan)
    assert "ix:content/posts:category+published" in text
    assert "TEMP B-TREE" not in text  # the index also gives the order


def test_stale_indexes_are_dropped(store: SqliteStore) -> None:
    store.ensure_indexes("t", [[("a",)], [("b",)]])
    store.ensure_indexes("t", [[("b",)]])
    names = {r[0] for r in store.execute_read("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "ix:t:b" in names and "ix:t:a" not in names


scalar_docs = st.fixed_dictionaries(
    {},
    optional={
        "t": st.one_of(st.none(), st.sampled_from(["", "a", "b", "ab", "é"])),
        "n": st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([0.5, 2.0])),
        "f": st.one_of(st.none(), st.booleans()),
    },
)
any_value = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", 0.5, "", [1], {"x": 1}]))
hinted_filters = st.dictionaries(
    st.sampled_from(["t", "n", "f", "_id"]),
    st.one_of(
        any_value,
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), any_value),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$in", "$nin"]), st.lists(any_value, max_size=3)),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
    ),
    min_size=1,
    max_size=2,
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(scalar_docs, min_size=1, max_size=6), spec=hinted_filters)
def test_hinted_fast_path_equals_reference(tmp_path_factory: Any, docs: list[dict[str, Any]], spec: dict[str, Any]) -> None:
    store = SqliteStore(tmp_path_factory.mktemp("h") / "h.db")
    hints = {"t": "text", "n": "number", "f": "bool"}
    coll = store.collection("c", hints)
    stored = [coll.insert({"_id": f"{i:024x}", **d}) for i, d in enumerate(docs)]
    node = parse_filter(spec)
    expected = [d["_id"] for d in stored if reference.matches(node, d)]
    assert [d["_id"] for d in coll.find(node)] == expected
    assert coll.count(node) == len(expected)
    store.close()


def test_sort_follows_mongodb_type_order(store: SqliteStore) -> None:
    coll = store.collection("c")
    values = [True, "b", 2, None, {"x": 1}, [0, 5], "a", 1.5, False]
    for v in values:
        coll.insert({"v": v})
    coll.insert({})
    ascending = [d.get("v", "missing") for d in coll.find(None, parse_sort({"v": 1}))]
    # null and missing first, then numbers (an array sorts by its smallest
    # element ascending), strings, objects, booleans
    assert ascending[:2] == [None, "missing"] or ascending[:2] == ["missing", None]
    assert ascending[2:] == [[0, 5], 1.5, 2, "a", "b", {"x": 1}, False, True]
    descending = [d.get("v", "missing") for d in coll.find(None, parse_sort({"v": -1}))]
    assert descending[:2] == [True, False]
    assert descending.index([0, 5]) < descending.index(2)  # largest element (5) first among numbers


def test_sort_by_hinted_field_uses_the_same_order_as_generic(store: SqliteStore) -> None:
    hinted = store.collection("h", {"n": "number"})
    generic = store.collection("g")
    for v in [3, None, 1, 2.5, -1]:
        hinted.insert({"n": v})
        generic.insert({"n": v})
    for direction in (1, -1):
        sort = parse_sort({"n": direction})
        assert [d["n"] for d in hinted.find(None, sort)] == [d["n"] for d in generic.find(None, sort)]


def test_regex_cannot_backtrack_catastrophically(store: SqliteStore) -> None:
    coll = store.collection("c")
    coll.insert({"s": "a" * 5000 + "!"})
    # (a+)+$ takes exponential time in a backtracking engine; RE2 is linear.
    assert coll.find(parse_filter({"s": {"$regex": "^(a+)+$"}})) == []
    assert len(coll.find(parse_filter({"s": {"$regex": "(a+)+!$"}}))) == 1


def test_regex_features_re2_lacks_are_a_clear_400() -> None:
    with pytest.raises(BadRequest, match="Invalid \\$regex"):
        parse_filter({"s": {"$regex": "(a)\\1"}})
    with pytest.raises(BadRequest, match="Unsupported \\$options"):
        parse_filter({"s": {"$regex": "a", "$options": "x"}})


def test_failed_transaction_leaves_nothing(store: SqliteStore) -> None:
    coll = store.collection("c")
    with pytest.raises(RuntimeError), store.transaction():
        coll.insert({"a": 1})
        raise RuntimeError("abort")
    assert coll.find() == []


def test_count_cache_sees_writes_of_another_connection(tmp_path: Path) -> None:
    one, two = SqliteStore(tmp_path / "x.db"), SqliteStore(tmp_path / "x.db")
    one.collection("c").insert({"a": 1})
    assert two.collection("c").count() == 1
    one.collection("c").insert({"a": 2})
    two.refresh()
    assert two.collection("c").count() == 2


def _update_field(path: str, item_id: str, field: str, rounds: int) -> None:
    store = SqliteStore(path)
    coll = store.collection("c")
    for i in range(rounds):
        coll.update(item_id, {field: i})
    store.close()


def test_concurrent_partial_updates_of_one_item_from_two_processes_both_survive(tmp_path: Path) -> None:
    path = str(tmp_path / "c.db")
    store = SqliteStore(path)
    item = store.collection("c").insert({"a": -1, "b": -1})
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_update_field, args=(path, item["_id"], f, 200)) for f in ("a", "b")]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    final = store.collection("c").get(item["_id"])
    assert final == {"_id": item["_id"], "a": 199, "b": 199}


def test_empty_arrays_sort_before_null_and_missing(store: SqliteStore) -> None:
    coll = store.collection("c")
    for doc in ({}, {"x": []}, {"x": None}, {"x": ["b"]}, {"x": "a"}):
        coll.insert(doc)
    ascending = [d.get("x", "missing") for d in coll.find(None, parse_sort({"x": 1}))]
    assert ascending[0] == [] and ascending[-2:] == ["a", ["b"]]
    descending = [d.get("x", "missing") for d in coll.find(None, parse_sort({"x": -1}))]
    assert descending[-1] == [] and descending[:2] == [["b"], "a"]


def test_atomic_blocks_from_two_event_loops_in_two_threads_do_not_interleave(store: SqliteStore) -> None:
    import asyncio
    import threading

    coll = store.collection("c")
    item = coll.insert({"n": 0})

    async def bump(times: int) -> None:
        for _ in range(times):
            async with store.atomic():
                current = coll.get(item["_id"])
                assert current is not None
                await asyncio.sleep(0)  # let other coroutines run mid-transaction
                coll.update(item["_id"], {"n": current["n"] + 1})

    threads = [threading.Thread(target=lambda: asyncio.run(bump(50))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert coll.get(item["_id"])["n"] == 100  # type: ignore[index]


@pytest.mark.anyio
async def test_a_sync_write_never_joins_another_tasks_open_transaction(store: SqliteStore) -> None:
    """Task A awaits inside `atomic()`; task B's plain write must not slip into
    A's transaction (it would be rolled back with A): it is refused, and a
    write of B through `atomic()` waits for A and commits on its own."""
    import anyio

    coll = store.collection("things")
    entered, release = anyio.Event(), anyio.Event()
    outcome: dict[str, Any] = {}

    async def task_a() -> None:
        try:
            async with store.atomic():
                coll.insert({"_id": "a"})
                entered.set()
                await release.wait()
                raise RuntimeError("A fails")
        except RuntimeError:
            pass

    async def task_b() -> None:
        await entered.wait()
        try:
            coll.insert({"_id": "b-sync"})
        except RuntimeError as exc:
            outcome["sync"] = str(exc)
        release.set()
        async with store.atomic():
            coll.insert({"_id": "b-atomic"})

    async with anyio.create_task_group() as tg:
        tg.start_soon(task_a)
        tg.start_soon(task_b)
    assert "async with store.atomic()" in outcome["sync"]
    assert sorted(coll.ids()) == ["b-atomic"]  # A rolled back alone; B's atomic write stands


@pytest.mark.parametrize("spec", [
    {"tags.²": "a"}, {"tags.².x": "a"}, {"tags.٠": {"$exists": False}}, {"tags.²": {"$elemMatch": {"x": 1}}},
])
def test_only_ascii_digits_index_an_array(store: SqliteStore, spec: dict[str, Any]) -> None:
    """"²" and "٠" are digits to str.isdigit but no array position (as in
    MongoDB): a field name, and never a 500 from int()."""
    coll = store.collection("things")
    coll.insert({"_id": "t", "tags": ["a", "b"], "x": [{"²": "a"}]})
    node = parse_filter(spec)
    expected = [doc["_id"] for doc in [coll.get("t")] if reference.matches(node, doc)]
    assert coll.ids(node) == expected
    assert expected == (["t"] if "$exists" in str(spec) else [])


def test_values_at_reads_non_null_values_of_the_keys(store: SqliteStore) -> None:
    coll = store.collection("content/things")
    assert list(coll.values_at(["n"])) == []  # no table yet
    for i, value in enumerate((1, "3", None, [4], {"n": 5})):
        coll.insert({"_id": f"d{i}", "n": value})
    coll.insert({"_id": "d9", "other": 1, "m": True})
    assert list(coll.values_at(["n"])) == [("d0", [1]), ("d1", ["3"]), ("d3", [[4]]), ("d4", [{"n": 5}])]
    assert list(coll.values_at(["m", "other"])) == [("d9", [True, 1])]


def test_count_non_empty_counts_documents_per_group(store: SqliteStore) -> None:
    coll = store.collection("content/things")
    assert coll.count_non_empty({"a": ["a"]}) == ({"a": 0}, 0)
    for doc in ({"a": 1}, {"a": ""}, {"a": []}, {"a": {}}, {"a": None}, {"a": 0, "a_de": "x"},
                {"a_de": "y"}, {"a": False}, {"b": [1]}):
        coll.insert(doc)
    assert coll.count_non_empty({"a": ["a"], "loc": ["a", "a_de"], "b": ["b"]}) == ({"a": 3, "loc": 4, "b": 1}, 9)


def test_move_keys_moves_values_as_written_and_bumps_revisions(store: SqliteStore) -> None:
    coll = store.collection("content/things")
    assert coll.move_keys({"a": "b"}) == 0  # no table yet
    coll.insert({"_id": "x", "a": 0.30000000000000004, "a_de": {"k": [1, True, None]}, "_rev": 3, "z": 1})
    coll.insert({"_id": "y", "a": None, "_rev": "not a number"})
    coll.insert({"_id": "w", "z": 2, "_rev": 1})
    with store.transaction():
        assert coll.move_keys({"a": "b", "a_de": "b_de"}, ["z"], bump="_rev") == 3
    assert coll.get_raw("x") == b'{"_id":"x","_rev":4,"b":0.30000000000000004,"b_de":{"k":[1,true,null]}}'
    assert coll.get("y") == {"_id": "y", "_rev": "not a number", "b": None}  # null moves too
    assert coll.get("w") == {"_id": "w", "_rev": 2}
    with store.transaction():
        assert coll.move_keys({"nothing": "here"}, bump="_rev") == 0
    assert coll.get("w") == {"_id": "w", "_rev": 2}


LITERAL_TEXTS = ["Hello Harbour", "HARBOUR", "harbo", "100% sure", "100 sure", "a_b", "axb", "back\\slash",
                 "\u212aelvin", "kelvin", "Stra\u00dfe", "STRASSE", "\u017fun", "sun", "caf\u00e9 HARBOUR", "", None, 7,
                 ["Harbour"], {"s": "harbour"}]
LITERAL_PATTERNS = [("harbour", "i"), ("harbour", ""), ("HARBOUR", ""), ("100%", "i"), ("a_b", "i"), (r"a\_b", "i"),
                    (r"back\\slash", "i"), ("kelvin", "i"), ("sun", "i"), ("stra\u00dfe", "i"), ("", "i"), ("", ""),
                    (r"c\+\+ \(and", "i"), (r"a\.b", "")]


@pytest.mark.parametrize(("pattern", "options"), LITERAL_PATTERNS)
def test_a_literal_regex_is_a_substring_test_in_sql_with_re2_semantics(store: SqliteStore, pattern: str,
                                                                        options: str) -> None:
    """Plain words (`re.escape`d) compile to instr or LIKE, not to a Python
    call per row; the answer is RE2's, case folding beyond ASCII included
    (the Kelvin sign matches `kelvin` with i, the long s matches `sun`)."""
    coll = store.collection("literal")
    for n, text in enumerate(LITERAL_TEXTS):
        coll.insert({"_id": f"{n:024x}", "s": text})
    spec = {"s": {"$regex": pattern, "$options": options}}
    expected = sorted(d["_id"] for d in coll.find() if reference.matches(parse_filter(spec), d))
    assert sorted(d["_id"] for d in coll.find(parse_filter(spec))) == expected
    assert coll.count(parse_filter(spec)) == len(expected)
