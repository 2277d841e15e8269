"""`highlight=1`: `_formatted` with each returned field's text, HTML
stripped and escaped, matches in <mark>, long fields as a snippet."""

from __future__ import annotations

import re

import pytest

from tests.conftest import Api, create_item
from tests.searchmod.helpers import filler, posts_model, put_index, search

LONG_BODY = ("<p>" + " ".join(["lorem"] * 80) + " the <i>target</i> word " + " ".join(["ipsum"] * 80) + "</p>")


@pytest.fixture
def marked(admin: Api) -> dict[str, str]:
    posts_model(admin)
    made = {
        "tom": create_item(admin, "posts", {"title": "Tom & Jerry <3 mission", "body": LONG_BODY,
                                            "tags": ["cartoon", "cat & mouse"], "n": 42})["_id"],
        "crew": create_item(admin, "posts", {"title": "Crew missions", "slug": "crew",
                                             "body": "<p>the <b>crew</b> is running &lt;fast&gt;</p>"})["_id"],
        "evil": create_item(admin, "posts", {"title": "Escapes", "body": "<p>adventures</p>",
                                             "tags": ["&lt;mark&gt;fake&lt;/mark&gt; adventures"]})["_id"],
    }
    filler(admin)
    put_index(admin, "posts", model="posts", fields=["title", "body", "tags", "n"])
    return made


def formatted(admin: Api, q: str, **params: str) -> dict[str, dict[str, str]]:
    result = search(admin, "posts", q, highlight="1", **params)
    return {h["_id"]: h["_formatted"] for h in result["hits"]}


def test_formatted_only_when_asked(admin: Api, marked: dict[str, str]) -> None:
    for params in ({}, {"highlight": "0"}, {"highlight": "no"}, {"highlight": ""}):
        assert all("_formatted" not in h for h in search(admin, "posts", "crew", **params)["hits"])
    for flag in ("1", "true"):
        assert all("_formatted" in h for h in search(admin, "posts", "crew", highlight=flag)["hits"])


def test_matches_are_marked_and_the_text_escaped(admin: Api, marked: dict[str, str]) -> None:
    crew = formatted(admin, "crew")[marked["crew"]]
    assert crew["title"] == "<mark>Crew</mark> missions"
    assert crew["body"] == "the <mark>crew</mark> is running &lt;fast&gt;"  # HTML stripped, text escaped
    tom = formatted(admin, "jerry")[marked["tom"]]
    assert tom["title"] == "Tom &amp; <mark>Jerry</mark> &lt;3 mission"
    assert tom["tags"] == "cartoon cat &amp; mouse"
    assert tom["n"] == "42"


def test_every_returned_field_is_formatted_and_only_those(admin: Api, marked: dict[str, str]) -> None:
    assert set(formatted(admin, "crew")[marked["crew"]]) == {"title", "body", "tags", "n"}
    hit = search(admin, "posts", "crew", highlight="1", fields="body")["hits"][0]
    assert set(hit) == {"_id", "_score", "body", "_formatted"}
    assert hit["_formatted"] == {"body": "the <mark>crew</mark> is running &lt;fast&gt;"}


def test_stemmed_matches_are_marked(admin: Api, marked: dict[str, str]) -> None:
    shown = formatted(admin, "mission")
    assert shown[marked["crew"]]["title"] == "Crew <mark>missions</mark>"
    assert shown[marked["tom"]]["title"] == "Tom &amp; Jerry &lt;3 <mark>mission</mark>"


def test_prefix_matches_are_marked(admin: Api, marked: dict[str, str]) -> None:
    assert formatted(admin, "runni")[marked["crew"]]["body"] == "the crew is <mark>running</mark> &lt;fast&gt;"
    assert formatted(admin, "crew runn")[marked["crew"]]["body"] == \
        "the <mark>crew</mark> is <mark>running</mark> &lt;fast&gt;"


def test_phrases_are_marked(admin: Api, marked: dict[str, str]) -> None:
    body = formatted(admin, '"crew is running"')[marked["crew"]]["body"]
    assert re.sub(r"</mark>(\s*)<mark>", r"\1", body) == "the <mark>crew is running</mark> &lt;fast&gt;"


def test_typo_matches_are_marked(admin: Api, marked: dict[str, str]) -> None:
    assert formatted(admin, "advantures")[marked["evil"]]["body"] == "<mark>adventures</mark>"


def test_markup_in_the_text_cannot_fake_marks(admin: Api, marked: dict[str, str]) -> None:
    tags = formatted(admin, "adventures")[marked["evil"]]["tags"]
    # tags are plain text: what was written is shown, escaped, and only the real match is marked
    assert tags.count("<mark>") == 1 and tags.endswith("<mark>adventures</mark>")
    assert tags.startswith("&amp;lt;mark&amp;gt;fake") and "<mark>fake" not in tags


def test_long_fields_are_answered_as_a_snippet_around_the_match(admin: Api, marked: dict[str, str]) -> None:
    body = formatted(admin, "target")[marked["tom"]]["body"]
    assert "<mark>target</mark>" in body
    text = body.replace("<mark>", "").replace("</mark>", "")
    assert len(text) < 300 and "…" in text
    assert "the target word" in text
    # the field itself is answered whole, with its HTML
    hit = search(admin, "posts", "target", highlight="1")["hits"][0]
    assert hit["body"] == LONG_BODY


def test_a_long_field_without_a_match_is_shortened_too(admin: Api, marked: dict[str, str]) -> None:
    body = formatted(admin, "jerry")[marked["tom"]]["body"]
    assert "<mark>" not in body and len(body) < 300


def test_a_long_field_is_a_snippet_for_prefix_only_matches(admin: Api, marked: dict[str, str]) -> None:
    shown = formatted(admin, "jerr")[marked["tom"]]
    assert shown["title"] == "Tom &amp; <mark>Jerry</mark> &lt;3 mission"
    assert len(shown["body"]) < 300, len(shown["body"])


def test_formatted_follows_updates(admin: Api, marked: dict[str, str]) -> None:
    response = admin.post("/api/content/item/posts", json={"data": {"_id": marked["crew"], "body": "<p>new crew text</p>"}})
    assert response.status_code == 200
    assert formatted(admin, "crew")[marked["crew"]]["body"] == "new <mark>crew</mark> text"
