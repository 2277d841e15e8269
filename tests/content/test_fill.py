"""fill.py: the fields a stored row lacks at its top level are spliced in as
null (a missing `_rev` as 1); the answer per row is kept for the same bytes."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from quire.content.fill import Filler

NAMES = ["title", "views", "body", "t"]
ID = "0123456789abcdef01234567"

# keys that collide with the field names, and text that looks like JSON keys
keys = st.sampled_from([*NAMES, "_id", "_model", "_rev", "x", "title_de"])
text = st.one_of(
    st.sampled_from(['"title":', '{"views":1}', "\\", '\\"', "{", "}", '","body":', "titles"]),
    st.text(max_size=8),
)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), text)
values = st.recursive(
    st.one_of(scalars, st.just({"_id": ID}), st.just({"_model": "m", "_id": ID})),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
docs = st.dictionaries(keys, values, max_size=6).map(lambda d: {"_id": ID, **d})


def expected(doc: dict[str, Any]) -> dict[str, Any]:
    return {**doc, **{name: None for name in NAMES if name not in doc}, "_rev": doc.get("_rev", 1)}


@settings(max_examples=400, deadline=None)
@given(docs)
def test_row_answers_the_document_with_every_field(doc: dict[str, Any]) -> None:
    filler = Filler(NAMES)
    row = orjson.dumps(doc)
    out = filler.row(row)
    assert list(orjson.loads(out).items()) == list(expected(doc).items())  # stored order kept, nulls after
    assert filler.row(row) is out  # again: the kept answer
    if all(name in doc for name in [*NAMES, "_rev"]):
        assert out is row


def test_answer_is_kept_for_the_same_bytes_only() -> None:
    filler = Filler(NAMES)
    row = orjson.dumps({"_id": ID, "title": "a"})
    first = filler.row(row)
    assert filler.row(bytes(bytearray(row))) is first  # equal bytes: the kept answer
    changed = orjson.dumps({"_id": ID, "_rev": 2, "title": "a", "views": 1, "body": "", "t": 0})
    assert filler.row(changed) is changed  # same id, other bytes: decided again
    other = Filler(["title", "extra"])  # another definition: decided again
    assert orjson.loads(other.row(row)) == {"_id": ID, "title": "a", "extra": None, "_rev": 1}


def test_streamed_rows_are_not_kept() -> None:
    filler = Filler(NAMES)
    row = orjson.dumps({"_id": "f" * 24, "title": "streamed"})
    out = filler.rows([row], keep=False)[0]
    assert filler.row(bytes(bytearray(row))) is not out


def test_key_nested_in_an_object_is_not_the_field() -> None:
    row = orjson.dumps({"_id": ID, "seo": {"title": "x", "views": 1, "body": "", "t": 0}})
    assert orjson.loads(Filler(NAMES).row(row))["title"] is None


def test_document_form_fills_a_copy() -> None:
    doc = {"_id": ID, "title": "a"}
    out = Filler(NAMES).doc(doc)
    assert out == {"_id": ID, "title": "a", "views": None, "body": None, "t": None, "_rev": 1}
    assert doc == {"_id": ID, "title": "a"}
    full = expected(doc)
    assert Filler(NAMES).doc(full) is full


def test_model_without_fields_leaves_rows_with_a_revision_alone() -> None:
    row = orjson.dumps({"_id": ID, "_rev": 3})
    assert Filler([]).rows([row])[0] is row
    assert orjson.loads(Filler([]).row(orjson.dumps({"_id": ID}))) == {"_id": ID, "_rev": 1}


@settings(max_examples=300, deadline=None)
@given(docs, st.integers(0, 2**62))
def test_rev_of_reads_the_revision_with_or_without_decoding(doc: dict[str, Any], rev: int) -> None:
    from quire.content.fill import rev_of
    from quire.content.writes import place_rev

    placed = dict(doc)
    place_rev(placed, rev)
    assert rev_of(orjson.dumps(placed)) == rev  # where writes put it
    assert rev_of(orjson.dumps({**doc, "_rev": rev})) == rev  # anywhere else: decoded
    legacy = {k: v for k, v in doc.items() if k != "_rev"}
    assert rev_of(orjson.dumps(legacy)) == 1
