"""Units under the search: the searchable text of field values and the
parsing of a query into words, phrases and the prefix."""

from __future__ import annotations

import pytest

from quire.searchmod.query import parse
from quire.searchmod.text import searchable, strip_html


@pytest.mark.parametrize(("markup", "text"), [
    ("plain text", "plain text"),
    ("<p>Hello <b>world</b></p>", "Hello world"),
    ("<p>one</p><p>two</p>", "one two"),
    ("a<br>b", "a b"),
    ("Tom &amp; Jerry &lt;3", "Tom & Jerry <3"),
    ("x&nbsp;y", "x y"),
    ("<script>alert('x')</script>shown<style>p{}</style>", "shown"),
    ("<img alt='A cat' src='cat.png'>", "A cat"),
    ("<a href='/x' title='Tip'>link</a>", "Tip link"),
    ("<p>un<i>broken</i></p>", "unbroken"),
    ("1 < 2", "1 < 2"),
])
def test_strip_html(markup: str, text: str) -> None:
    assert strip_html(markup) == text


@pytest.mark.parametrize(("value", "words"), [
    (None, []),
    (True, []),
    (42, ["42"]),
    (2.5, ["2.5"]),
    (["a", ["b", {"c": "d"}]], ["a", "b", "d"]),
    ({"x": "<p>one</p>", "y": [1, False, None], "_model": "m", "_id": "abc"}, ["one", "1"]),
    ({"a": {"b": {"c": "deep"}}}, ["deep"]),
])
def test_searchable_flattens_values(value: object, words: list[str]) -> None:
    assert searchable(value).split() == words


def test_searchable_keeps_the_order_of_the_value() -> None:
    assert searchable({"first": "alpha", "second": ["beta", "gamma"], "third": {"x": "delta"}}) == \
        "alpha beta gamma delta"


@pytest.mark.parametrize(("q", "words", "phrases", "prefix"), [
    ("mars", ["mars"], [], "mars"),
    ("Mars Mission", ["mars", "mission"], [], "mission"),
    ("mars ", ["mars"], [], None),
    ('mars "crew missions" mis', ["mars", "mis"], [["crew", "missions"]], "mis"),
    ('"crew missions"', [], [["crew", "missions"]], None),
    ('"crew"', ["crew"], [], None),
    ('"crew missions', [], [["crew", "missions"]], None),
    ("Café CRÈME", ["cafe", "creme"], [], "creme"),
    ("!!! ???", [], [], None),
    ("a-b", ["a", "b"], [], "b"),
])
def test_parse(q: str, words: list[str], phrases: list[list[str]], prefix: str | None) -> None:
    query = parse(q)
    assert (query.words, query.phrases, query.prefix) == (words, phrases, prefix)
    assert query.empty == (not words and not phrases)


def test_parse_keeps_at_most_32_words() -> None:
    assert len(parse(" ".join(f"w{i}" for i in range(50))).words) == 32
