"""The PostgreSQL store: typed SQL for hinted fields equals the reference
evaluator, sorts follow MongoDB's order, several store objects (as several
instances) see each other's commits, and a database that goes away answers
503 and is used again when it is back."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quire.errors import BadRequest, StoreBusy, StoreUnavailable
from quire.store import PostgresStore, SqliteStore, parse_filter, parse_sort
from quire.store import match as reference


@pytest.fixture
def pg(pg_url: str) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_url)
    yield store
    store.close()


@pytest.fixture(scope="module")
def shared(pg_server: Any) -> Iterator[PostgresStore]:
    store = PostgresStore(pg_server.fresh_url())
    yield store
    store.close()


@pytest.fixture(scope="module")
def lite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SqliteStore]:
    store = SqliteStore(tmp_path_factory.mktemp("lite") / "s.db")
    yield store
    store.close()


hinted_values = {
    "t": st.one_of(st.none(), st.sampled_from(["", "a", "b", "B", "ab", "é", "Z"])),
    "n": st.one_of(st.none(), st.integers(-3, 3), st.sampled_from([0.5, -1.5, 2.0, 1e3])),
    "f": st.one_of(st.none(), st.booleans()),
}
hinted_docs = st.fixed_dictionaries({}, optional=hinted_values)
any_value = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.5, "", "a", "b", "é"]),
                      st.lists(st.integers(-1, 1), max_size=2))
hinted_filters = st.dictionaries(
    st.sampled_from(["t", "n", "f", "_id", "x"]),
    st.one_of(
        any_value,
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]), any_value),
        st.builds(lambda op, v: {op: v}, st.sampled_from(["$in", "$nin"]), st.lists(any_value, max_size=3)),
        st.builds(lambda b: {"$exists": b}, st.booleans()),
        st.builds(lambda r: {"$regex": r}, st.sampled_from(["a", "b", "^a", "é"])),
    ),
    min_size=1,
    max_size=2,
)
counter = iter(range(10**9))


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(docs=st.lists(hinted_docs, min_size=1, max_size=6), spec=hinted_filters,
       sort=st.sampled_from([{}, {"t": 1}, {"n": -1}, {"f": 1, "n": 1}, {"x": 1}]))
def test_typed_sql_equals_the_reference_and_sqlite(shared: PostgresStore, lite: SqliteStore, docs: list[dict[str, Any]],
                                                   spec: dict[str, Any], sort: dict[str, int]) -> None:
    """The same documents, filter and sort: PostgreSQL selects what the
    reference evaluator selects, and lists them in SQLite's order (ties by
    insertion, in the direction of the last sort key)."""
    name = f"h{next(counter)}"
    hints = {"t": "text", "n": "number", "f": "bool"}
    coll, other = shared.collection(name, hints), lite.collection(name, hints)
    for i, d in enumerate(docs):
        doc = {"_id": f"{i:024x}", **d, **({"x": i % 3} if i % 2 else {})}
        coll.insert(doc)
        other.insert(doc)
    node = parse_filter(spec)
    order = parse_sort(sort) if sort else None
    expected = [d["_id"] for d in other.find(node, order)]
    assert sorted(expected) == sorted(d["_id"] for d in other.find() if reference.matches(node, d))
    assert [d["_id"] for d in coll.find(node, order)] == expected, spec
    assert coll.count(node) == len(expected)
    page, _ = coll.find_page(node, order, 2)
    assert [orjson_id(r) for r in page] == expected[:2]
    shared.drop_collection(name)
    lite.drop_collection(name)


def orjson_id(raw: bytes) -> str:
    import orjson

    return str(orjson.loads(raw)["_id"])


def test_documents_come_back_as_written(pg: PostgresStore) -> None:
    """The JSON text as stored: key order and number spelling kept (jsonb
    alone would sort the keys and drop the `.0`)."""
    coll = pg.collection("c")
    coll.insert({"_id": "a", "zeta": 1.0, "alpha": {"b": 2, "a": 1}})
    assert coll.get_raw("a") == b'{"_id":"a","zeta":1.0,"alpha":{"b":2,"a":1}}'


def test_text_with_a_nul_character_is_stored_as_written(pg: PostgresStore) -> None:
    """`jsonb` holds no NUL: the query copy has U+FFFD there, the answer
    keeps the character."""
    coll = pg.collection("c", {"t": "text"})
    coll.insert({"_id": "a", "t": "x\x00y", "k\x00": ["\x00"]})
    coll.replace({"_id": "b", "t": "plain"})
    coll.update("b", {"t": "z\x00"})
    assert coll.get("a") == {"_id": "a", "t": "x\x00y", "k\x00": ["\x00"]}
    assert coll.get("b") == {"_id": "b", "t": "z\x00"}
    assert [d["_id"] for d in coll.find(parse_filter({"t": {"$regex": "y$"}}))] == ["a"]


def test_sort_follows_mongodb_type_order(pg: PostgresStore) -> None:
    coll = pg.collection("c")
    for v in [True, "b", 2, None, {"x": 1}, [0, 5], "a", 1.5, False]:
        coll.insert({"v": v})
    coll.insert({})
    ascending = [d.get("v", "missing") for d in coll.find(None, parse_sort({"v": 1}))]
    assert sorted(ascending[:2], key=str) == ["missing", None] or set(map(str, ascending[:2])) == {"None", "missing"}
    assert ascending[2:] == [[0, 5], 1.5, 2, "a", "b", {"x": 1}, False, True]


def test_a_commit_of_another_instance_moves_the_generation(pg_url: str) -> None:
    one, two = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        coll = one.collection("c")
        coll.insert({"_id": "x", "v": 1})
        before = two.generation
        coll.insert({"_id": "y", "v": 2})
        deadline = time.monotonic() + 30
        while two.generation == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert two.generation != before
        assert [d["_id"] for d in two.collection("c").find()] == ["x", "y"]
    finally:
        one.close()
        two.close()


def test_the_next_request_of_another_instance_sees_a_commit(pg_url: str) -> None:
    """No waiting for the notice: a request (`mark_stale`, then its first
    cached read) looks at the events table, as SQLite looks at its data
    version, so a load balancer's next request never answers stale."""
    one, two = PostgresStore(pg_url), PostgresStore(pg_url)
    try:
        two.collection("c").insert({"_id": "x"})
        for n in range(20):
            two.mark_stale()
            before = two.generation
            one.collection("c").insert({"_id": f"y{n}"})
            two.mark_stale()
            assert two.generation != before
            time.sleep(0.05)  # the commit's notice too has arrived (and was known already)
            two.mark_stale()
            settled = two.generation
            two.mark_stale()
            assert two.generation == settled  # nothing new: nothing dropped
        own = two.generation
        two.collection("c").insert({"_id": "z"})  # its own commit: moved once, not again on the next look
        moved = two.generation
        assert moved != own
        two.mark_stale()
        assert two.generation == moved
    finally:
        one.close()
        two.close()


def test_write_transactions_of_two_instances_take_turns(pg_url: str) -> None:
    """The site's advisory lock: a second instance's write waits (or says
    busy) while another holds a transaction; a duplicate id is a 400 that
    leaves the transaction usable."""
    one, two = PostgresStore(pg_url), PostgresStore(pg_url, blocking_timeout=0.2)
    try:
        one.collection("c").insert({"_id": "x"})
        with one.transaction():
            one.collection("c").insert({"_id": "y"})
            with pytest.raises(StoreBusy), two.transaction():
                pass
        with two.transaction():
            with pytest.raises(BadRequest, match="Duplicate"):
                two.collection("c").insert({"_id": "x"})
            two.collection("c").insert({"_id": "z"})
        assert sorted(d["_id"] for d in one.collection("c").find()) == ["x", "y", "z"]
    finally:
        one.close()
        two.close()


def test_long_collection_names_get_tables_of_their_own(pg: PostgresStore) -> None:
    a, b = "content/" + "a" * 70 + "1", "content/" + "a" * 70 + "2"
    pg.collection(a).insert({"_id": "1"})
    pg.collection(b).insert({"_id": "2"})
    assert [d["_id"] for d in pg.collection(a).find()] == ["1"]
    assert [d["_id"] for d in pg.collection(b).find()] == ["2"]


def test_a_server_that_goes_away_answers_503_and_is_used_again(pg_server: Any,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    """Stopping the server: reads and writes raise StoreUnavailable (a 503),
    no hang; once it is back the same store object works again. The
    outage is one warning line, and its end another."""
    store = PostgresStore(pg_server.fresh_url())
    try:
        store.collection("c").insert({"_id": "a"})
        pg_server.stop()
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="quire.store"):
            for _ in range(3):
                with pytest.raises(StoreUnavailable):
                    store.collection("c").get("a")
                with pytest.raises(StoreUnavailable):
                    store.collection("c").insert({"_id": "b"})
            assert time.monotonic() - started < 30
            pg_server.restart()
            assert store.collection("c").get("a") == {"_id": "a"}
        store.collection("c").insert({"_id": "b"})
        assert store.collection("c").count() == 2
        said = [r.getMessage() for r in caplog.records if r.name.startswith("quire.store")]
        assert len(said) == 2 and "unavailable" in said[0] and "reachable again" in said[1], said
    finally:
        if pg_server.process is None:
            pg_server.restart()
        store.close()


def test_streams_left_open_do_not_outlive_the_store(pg_url: str) -> None:
    store = PostgresStore(pg_url)
    coll = store.collection("c")
    for n in range(5):
        coll.insert({"n": n})
    stream = coll.stream_raw(None, parse_sort({"_id": 1}), chunk=2)
    assert len(next(stream)) == 2  # a reader that stops here and never closes
    done = threading.Event()

    def close() -> None:
        store.close()
        done.set()

    threading.Thread(target=close).start()
    assert done.wait(10)
