"""`GET /api/searchmod/search/{index}`: matching (case, accents, stemming,
prefix, phrases, typos), BM25 ranking with field weights, the response,
pagination with exact totals, `fields`, `filter`, and every error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import Api, create_item
from tests.searchmod.helpers import (
    error_of,
    filler,
    ids,
    posts_model,
    put_index,
    search,
    search_response,
    titles,
)


@pytest.fixture
def corpus(admin: Api) -> dict[str, str]:
    """A small known corpus in index `posts` (fields title, body, slug, tags;
    no weights). Answers the item ids by a short name."""
    posts_model(admin)
    docs = {
        "mars": {"title": "Mars mission", "body": "<p>The <b>crew</b> is running tests &amp; drills</p>",
                 "slug": "mars-mission", "tags": ["space", "red planet"]},
        "moon": {"title": "Moon base", "body": "<p>Building a base on the moon</p>", "slug": "moon-base",
                 "tags": ["space"]},
        "cafe": {"title": "Café crème", "body": "<p>Résumé of a naïve barista</p>", "slug": "cafe",
                 "tags": ["food"]},
        "garden": {"title": "Gardening", "body": "<p>Planting tomatoes in spring</p>", "slug": "garden",
                   "tags": ["home"]},
    }
    made = {key: create_item(admin, "posts", data)["_id"] for key, data in docs.items()}
    filler(admin)
    put_index(admin, "posts", model="posts", fields=["title", "body", "slug", "tags"])
    return made


def found(admin: Api, q: str, **params: Any) -> list[str]:
    return ids(search(admin, "posts", q, limit=100, **params))


# -- matching -----------------------------------------------------------------


@pytest.mark.parametrize("q", ["mission", "MISSION", "Mission", "mIsSiOn"])
def test_words_match_case_insensitively(admin: Api, corpus: dict[str, str], q: str) -> None:
    assert found(admin, q) == [corpus["mars"]]


@pytest.mark.parametrize("q", ["cafe", "CAFÉ", "café", "creme", "resume", "résumé", "naive", "NAÏVE"])
def test_accents_are_ignored_in_the_text_and_the_query(admin: Api, corpus: dict[str, str], q: str) -> None:
    assert found(admin, q) == [corpus["cafe"]]


@pytest.mark.parametrize("q", ["missions", "runs", "planted", "tomato", "builds"])
def test_words_are_stemmed(admin: Api, corpus: dict[str, str], q: str) -> None:
    expected = {"missions": "mars", "runs": "mars", "planted": "garden", "tomato": "garden", "builds": "moon"}
    assert found(admin, q) == [corpus[expected[q]]]


def test_all_words_are_required(admin: Api, corpus: dict[str, str]) -> None:
    assert set(found(admin, "space")) == {corpus["mars"], corpus["moon"]}
    assert found(admin, "space moon") == [corpus["moon"]]
    assert found(admin, "mars moon") == []
    assert found(admin, "space crew") == [corpus["mars"]]


@pytest.mark.parametrize(("q", "key"), [
    ("mis", "mars"), ("missio", "mars"), ("runni", "mars"), ("runnin", "mars"), ("gardeni", "garden"),
    ("crew runni", "mars"), ("space mo", "moon"), ("caf", "cafe"), ("tomatoe", "garden"),
])
def test_the_last_word_is_also_a_prefix(admin: Api, corpus: dict[str, str], q: str, key: str) -> None:
    assert found(admin, q) == [corpus[key]]


def test_only_the_last_word_is_a_prefix(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, "crew mis") == [corpus["mars"]]
    assert found(admin, "mis crew") == []
    assert found(admin, '"mis"') == []  # a closed quote: the word is finished


def test_markup_and_entities_are_not_searchable_text(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, "crew") == [corpus["mars"]]  # text inside <b>
    assert found(admin, "drills") == [corpus["mars"]]
    assert found(admin, "amp") == []  # &amp; is the character &


def test_arrays_are_flattened(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, "planet") == [corpus["mars"]]  # inside the tags array
    assert found(admin, "food") == [corpus["cafe"]]


def test_slugs_are_split_into_words(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, "mars-mission") == [corpus["mars"]]
    assert set(found(admin, "base")) == {corpus["moon"]}


# -- phrases ------------------------------------------------------------------


def test_quoted_phrases_need_the_words_together_and_in_order(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, '"crew is running"') == [corpus["mars"]]
    assert found(admin, '"running tests"') == [corpus["mars"]]
    assert found(admin, '"running crew"') == []
    assert found(admin, '"crew running"') == []  # not adjacent
    assert found(admin, 'crew running') == [corpus["mars"]]  # words, not a phrase: anywhere


def test_phrases_combine_with_words(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, 'space "moon base"') == [corpus["moon"]]
    assert found(admin, '"moon base" space') == [corpus["moon"]]
    assert found(admin, 'mars "moon base"') == []
    assert found(admin, '"on the moon" buil') == [corpus["moon"]]


def test_phrase_words_are_folded_and_stemmed(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, '"CAFÉ CREME"') == [corpus["cafe"]]
    assert found(admin, '"planting tomato"') == [corpus["garden"]]


def test_an_unclosed_quote_is_a_phrase_to_the_end(admin: Api, corpus: dict[str, str]) -> None:
    assert found(admin, '"moon base') == [corpus["moon"]]
    assert found(admin, '"base moon') == []


# -- typos --------------------------------------------------------------------


@pytest.fixture
def words(admin: Api) -> dict[str, str]:
    posts_model(admin)
    made = {w: create_item(admin, "posts", {"title": w})["_id"]
            for w in ("planet", "adventures", "dinosaur", "moon", "gardening")}
    filler(admin)
    put_index(admin, "posts", model="posts", fields=["title"])
    return made


@pytest.mark.parametrize(("q", "word"), [
    ("planat", "planet"),  # 6 letters, one substitution
    ("plnet", "planet"),  # one deletion
    ("plannet", "planet"),  # one insertion
    ("advantores", "adventures"),  # 10 letters: two edits
    ("adevntures", "adventures"),  # a transposition is two edits
    ("dinasaur", "dinosaur"),  # 8 letters: one edit
    ("gardneing", "gardening"),  # 9 letters: two edits
])
def test_typos_are_tolerated(admin: Api, words: dict[str, str], q: str, word: str) -> None:
    result = search(admin, "posts", q)
    assert ids(result) == [words[word]] and result["total"] == 1
    assert result["hits"][0]["_score"] > 0


@pytest.mark.parametrize("q", [
    "moan",  # 4 letters: no tolerance
    "mxon",
    "plnxet",  # 6 letters, two edits (a swap would be one)
    "dinasour",  # 8 letters, two edits
    "advantorez",  # 10 letters, three edits
    "xlanet",  # the first letter is never corrected
    "lanet",
    "qdventures",
])
def test_typos_beyond_the_tolerance_find_nothing(admin: Api, words: dict[str, str], q: str) -> None:
    assert search(admin, "posts", q) == {"hits": [], "total": 0, "query": q, "limit": 50, "offset": 0}


def test_typos_in_every_word_of_a_query(admin: Api, words: dict[str, str]) -> None:
    create_item(admin, "posts", {"title": "planet adventures"})
    result = search(admin, "posts", "planat advantures")
    assert titles(result) == ["planet adventures"]


def test_exact_matches_rank_before_typo_matches(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    # the typo document would win on BM25 alone: short, in the title, the word three times
    typo = create_item(admin, "posts", {"title": "planes planes planes"})
    exact = create_item(admin, "posts", {"title": "Notes", "body": "<p>" + " ".join(["word"] * 40) + " planet</p>"})
    put_index(admin, "posts", model="posts", fields=["title", "body"], weights={"title": 10})
    result = search(admin, "posts", "planet")
    assert ids(result) == [exact["_id"], typo["_id"]]
    assert result["total"] == 2
    assert all(h["_score"] > 0 for h in result["hits"])


def test_prefix_matches_rank_before_typo_matches(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    typo = create_item(admin, "posts", {"title": "plans plans plans"})  # "plans" is one edit from "plane"
    prefix = create_item(admin, "posts", {"title": "Notes", "body": "<p>" + " ".join(["word"] * 40) + " planetarium</p>"})
    put_index(admin, "posts", model="posts", fields=["title", "body"], weights={"title": 10})
    assert ids(search(admin, "posts", "plane")) == [prefix["_id"], typo["_id"]]


def test_scores_never_increase_down_the_hits_even_with_typo_matches(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    create_item(admin, "posts", {"title": "planes planes planes"})
    create_item(admin, "posts", {"title": "Notes", "body": "<p>" + " ".join(["word"] * 40) + " planet</p>"})
    put_index(admin, "posts", model="posts", fields=["title", "body"], weights={"title": 10})
    scores = [h["_score"] for h in search(admin, "posts", "planet")["hits"]]
    assert scores == sorted(scores, reverse=True), scores


# -- ranking ------------------------------------------------------------------


def _scores(result: dict[str, Any]) -> dict[str, float]:
    return {h["_id"]: h["_score"] for h in result["hits"]}


def test_field_weights_decide_between_a_title_and_a_body_match(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    in_title = create_item(admin, "posts", {"title": "nebula report", "body": "<p>plain words here today</p>"})
    in_body = create_item(admin, "posts", {"title": "plain report", "body": "<p>nebula words here today</p>"})
    put_index(admin, "even", model="posts", fields=["title", "body"])
    # unweighted, both match (each field's BM25 is measured against that field's average length)
    even = _scores(search(admin, "even", "nebula"))
    assert set(even) == {in_title["_id"], in_body["_id"]} and min(even.values()) > 0
    put_index(admin, "title3", model="posts", fields=["title", "body"], weights={"title": 3})
    result = search(admin, "title3", "nebula")
    assert ids(result) == [in_title["_id"], in_body["_id"]]
    scores = _scores(result)
    assert scores[in_title["_id"]] > scores[in_body["_id"]] > 0
    put_index(admin, "body3", model="posts", fields=["title", "body"], weights={"body": 3})
    assert ids(search(admin, "body3", "nebula")) == [in_body["_id"], in_title["_id"]]


def test_a_weighted_title_match_beats_a_body_mentioning_the_word_twice(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    in_body = create_item(admin, "posts", {"title": "Notes", "body": "<p>the pulsar and another pulsar</p>"})
    in_title = create_item(admin, "posts", {"title": "Pulsar", "body": "<p>the star and another star</p>"})
    put_index(admin, "posts", model="posts", fields=["title", "body"], weights={"title": 3})
    assert ids(search(admin, "posts", "pulsar")) == [in_title["_id"], in_body["_id"]]


def test_more_mentions_rank_higher(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    once = create_item(admin, "posts", {"title": "x", "body": "<p>comet delta alpha beta gamma epsilon</p>"})
    thrice = create_item(admin, "posts", {"title": "x", "body": "<p>comet comet comet alpha beta gamma</p>"})
    twice = create_item(admin, "posts", {"title": "x", "body": "<p>comet comet delta alpha beta gamma</p>"})
    put_index(admin, "posts", model="posts", fields=["title", "body"])
    result = search(admin, "posts", "comet")
    assert ids(result) == [thrice["_id"], twice["_id"], once["_id"]]
    scores = [h["_score"] for h in result["hits"]]
    assert scores[0] > scores[1] > scores[2] > 0


def test_shorter_documents_rank_higher_for_the_same_mentions(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    long = create_item(admin, "posts", {"title": "quasar one two three four five six seven eight"})
    short = create_item(admin, "posts", {"title": "quasar one"})
    put_index(admin, "posts", model="posts", fields=["title"])
    assert ids(search(admin, "posts", "quasar")) == [short["_id"], long["_id"]]


@pytest.mark.sqlite_only  # the embedded engine's ranking: PostgreSQL's ts_rank_cd has no IDF (docs/search.md)
def test_rare_words_weigh_more_than_common_ones(admin: Api) -> None:
    posts_model(admin)
    filler(admin)
    for i in range(6):
        create_item(admin, "posts", {"title": f"alpha common {i}"})
    more_common = create_item(admin, "posts", {"title": "alpha alpha zeta filler"})
    more_rare = create_item(admin, "posts", {"title": "alpha zeta zeta filler"})
    put_index(admin, "posts", model="posts", fields=["title"])
    assert ids(search(admin, "posts", "alpha zeta")) == [more_rare["_id"], more_common["_id"]]
    assert ids(search(admin, "posts", "zeta alpha")) == [more_rare["_id"], more_common["_id"]]


def test_scores_are_positive_and_never_increase(admin: Api, corpus: dict[str, str]) -> None:
    for q in ["space", "mission", "mi", "spac", "base moon", '"moon base"', "p", "s"]:
        scores = [h["_score"] for h in search(admin, "posts", q)["hits"]]
        assert all(s > 0 for s in scores), (q, scores)
        assert scores == sorted(scores, reverse=True), (q, scores)


# -- the response ---------------------------------------------------------------


def test_hits_carry_id_score_and_the_stored_values_as_in_the_item(admin: Api, corpus: dict[str, str]) -> None:
    result = search(admin, "posts", "crew")
    assert result["query"] == "crew" and result["limit"] == 50 and result["offset"] == 0
    assert result["total"] == 1
    hit = result["hits"][0]
    item = admin.get(f"/api/content/item/posts/{corpus['mars']}").json()
    assert hit == {"_id": corpus["mars"], "_score": hit["_score"], "title": item["title"], "body": item["body"],
                   "slug": item["slug"], "tags": item["tags"]}
    assert hit["body"] == "<p>The <b>crew</b> is running tests &amp; drills</p>"  # rich text with its HTML
    assert "_formatted" not in hit


def test_the_query_is_echoed_as_sent(admin: Api, corpus: dict[str, str]) -> None:
    q = '  Mars  "crew IS running" '
    assert search(admin, "posts", q)["query"] == q


def test_fields_chooses_the_returned_fields(admin: Api, corpus: dict[str, str]) -> None:
    hit = search(admin, "posts", "crew", fields="title,slug")["hits"][0]
    assert set(hit) == {"_id", "_score", "title", "slug"}
    assert hit["slug"] == "mars-mission"
    hit = search(admin, "posts", "crew", fields=" tags , title ")["hits"][0]
    assert set(hit) == {"_id", "_score", "tags", "title"}
    # fields only shapes the hits: searching still uses every indexed field
    assert search(admin, "posts", "drills", fields="title")["total"] == 1


@pytest.mark.parametrize("fields", ["ghost", "title,ghost", "category", "_state"])
def test_fields_naming_a_field_the_index_does_not_store_is_400(admin: Api, corpus: dict[str, str],
                                                               fields: str) -> None:
    message = error_of(search_response(admin, "posts", "crew", fields=fields), 400)
    assert fields.split(",")[-1] in message


# -- pagination -----------------------------------------------------------------


@pytest.fixture
def many(admin: Api) -> list[str]:
    """23 documents with "orbit" (exact), "orbital" (prefix) or "orbil" (a
    typo away), in various numbers, and 5 without."""
    posts_model(admin)
    made = []
    for i in range(23):
        word = ("orbit", "orbital", "orbil")[i % 3]
        made.append(create_item(admin, "posts", {"title": " ".join([word] * (1 + i % 4)) + f" n{i}",
                                                 "body": "<p>" + "pad " * (i % 5) + "</p>", "n": i})["_id"])
    for i in range(5):
        create_item(admin, "posts", {"title": f"unrelated {i}", "n": 100 + i})
    put_index(admin, "posts", model="posts", fields=["title", "body", "n"])
    return made


@pytest.mark.parametrize("params", [{}, {"filter": '{"n": {"$lt": 100}}'}])
def test_pages_partition_the_results_with_exact_totals(admin: Api, many: list[str], params: dict[str, str]) -> None:
    everything = search(admin, "posts", "orbit", limit=1000, **params)
    assert everything["total"] == 23 and sorted(ids(everything)) == sorted(many)
    paged: list[str] = []
    for offset in range(0, 30, 4):
        page = search(admin, "posts", "orbit", limit=4, offset=offset, **params)
        assert page["total"] == 23 and page["limit"] == 4 and page["offset"] == offset
        assert len(page["hits"]) == max(0, min(4, 23 - offset))
        paged += ids(page)
    assert paged == ids(everything)


def test_limit_one_still_counts_every_match(admin: Api, many: list[str]) -> None:
    result = search(admin, "posts", "orbit", limit=1)
    assert len(result["hits"]) == 1 and result["total"] == 23


def test_an_offset_past_the_end_answers_no_hits_and_the_total(admin: Api, many: list[str]) -> None:
    result = search(admin, "posts", "orbit", offset=500)
    assert result["hits"] == [] and result["total"] == 23 and result["offset"] == 500


def test_limit_defaults_to_50_and_may_reach_1000(admin: Api) -> None:
    posts_model(admin)
    for i in range(55):
        create_item(admin, "posts", {"title": f"bulk {i}"})
    put_index(admin, "posts", model="posts", fields=["title"])
    default = search(admin, "posts", "bulk")
    assert len(default["hits"]) == 50 and default["total"] == 55 and default["limit"] == 50
    assert default["offset"] == 0
    maximum = search(admin, "posts", "bulk", limit=1000)
    assert len(maximum["hits"]) == 55 and maximum["limit"] == 1000
    assert len(search(admin, "posts", "bulk", limit="", offset="")["hits"]) == 50  # empty = default


# -- filter ---------------------------------------------------------------------


@pytest.fixture
def shop(admin: Api) -> dict[str, str]:
    posts_model(admin)
    made = {
        "a": create_item(admin, "posts", {"title": "green tea", "tags": ["drink", "hot"], "n": 3,
                                          "meta": {"origin": "japan"}})["_id"],
        "b": create_item(admin, "posts", {"title": "black tea", "tags": ["drink"], "n": 7,
                                          "meta": {"origin": "india"}})["_id"],
        "c": create_item(admin, "posts", {"title": "tea cake", "tags": ["food"], "n": 12})["_id"],
    }
    put_index(admin, "posts", model="posts", fields=["title", "tags", "n", "meta"])
    return made


@pytest.mark.parametrize(("spec", "expected"), [
    ('{"tags": "drink"}', {"a", "b"}),
    ('{"tags": {"$all": ["drink", "hot"]}}', {"a"}),
    ('{"n": {"$gt": 5}}', {"b", "c"}),
    ('{"n": {"$in": [3, 12]}}', {"a", "c"}),
    ('{"meta.origin": "india"}', {"b"}),
    ('{"meta": null}', {"c"}),
    ('{"$or": [{"n": 3}, {"title": "tea cake"}]}', {"a", "c"}),
    ('{"title": {"$regex": "^b"}}', {"b"}),
    ("{n: {$lte: 7}}", {"a", "b"}),  # JSON5, as content filters
    ('{"n": {"$gt": 100}}', set()),
])
def test_filter_uses_mongo_syntax_over_the_stored_fields(admin: Api, shop: dict[str, str], spec: str,
                                                         expected: set[str]) -> None:
    result = search(admin, "posts", "tea", filter=spec)
    assert set(ids(result)) == {shop[k] for k in expected}
    assert result["total"] == len(expected)


def test_exists_in_the_filter_agrees_with_the_content_api(admin: Api, shop: dict[str, str]) -> None:
    for spec in ('{"meta": {"$exists": false}}', '{"meta": {"$exists": true}}'):
        content = admin.get("/api/content/items/posts", params={"filter": spec}).json()
        assert set(ids(search(admin, "posts", "tea", filter=spec))) == {i["_id"] for i in content}, spec


def test_filter_by_id_and_in_bracket_form(admin: Api, shop: dict[str, str]) -> None:
    assert ids(search(admin, "posts", "tea", filter=f'{{"_id": "{shop["b"]}"}}')) == [shop["b"]]
    response = admin.get("/api/searchmod/search/posts?q=tea&filter[tags]=food")
    assert response.status_code == 200 and ids(response.json()) == [shop["c"]]


def test_filter_combines_with_prefix_and_typo_matches(admin: Api, shop: dict[str, str]) -> None:
    assert ids(search(admin, "posts", "cak", filter='{"n": 12}')) == [shop["c"]]
    assert ids(search(admin, "posts", "blakc tea", filter='{"n": 7}')) == [shop["b"]]  # a swap is one edit
    assert ids(search(admin, "posts", "bxakq tea", filter='{"n": 7}')) == []  # 5 letters: one edit only
    assert ids(search(admin, "posts", "tea blaak", filter='{"n": 7}')) == [shop["b"]]
    assert ids(search(admin, "posts", "tea blaak", filter='{"n": 3}')) == []


@pytest.mark.parametrize("field", ["a{b", "{cols}", "x}"])
def test_braces_in_a_filtered_field_name_are_plain_text(admin: Api, shop: dict[str, str], field: str) -> None:
    """The filter's SQL holds the field name; it was once run through
    str.format, so a brace gave a 500 and `{cols}` was even replaced."""
    assert search(admin, "posts", "tea", filter=json.dumps({field: None}))["total"] == 3
    assert search(admin, "posts", "tea", filter=json.dumps({field: 1}))["total"] == 0


@pytest.mark.parametrize(("spec", "needle"), [
    ("[1, 2]", "filter"), ('"tea"', "filter"), ("3", "filter"), ("{bad json", "filter"),
    ('{"$where": "1"}', "$where"), ('{"n": {"$near": 1}}', "$near"),
])
def test_a_bad_filter_is_400(admin: Api, shop: dict[str, str], spec: str, needle: str) -> None:
    assert needle in error_of(search_response(admin, "posts", "tea", filter=spec), 400)


# -- errors -----------------------------------------------------------------------


@pytest.mark.parametrize("q", [None, "", "   ", "!!!", "?", "--", "*", '""', '" "', "___", "(", "'", "\u00a0", "…"])
def test_a_missing_or_wordless_query_is_400(admin: Api, corpus: dict[str, str], q: str | None) -> None:
    assert error_of(search_response(admin, "posts", q), 400) == "Search query required"


@pytest.mark.parametrize(("params", "needle"), [
    ({"limit": "abc"}, "limit"), ({"limit": "1.5"}, "limit"), ({"limit": "-1"}, "limit"),
    ({"limit": "1001"}, "limit"), ({"limit": "1000000"}, "limit"),
    ({"offset": "abc"}, "offset"), ({"offset": "-1"}, "offset"), ({"offset": "2.0"}, "offset"),
])
def test_bad_limit_or_offset_is_400(admin: Api, corpus: dict[str, str], params: dict[str, str], needle: str) -> None:
    assert needle in error_of(search_response(admin, "posts", "space", **params), 400)


@pytest.mark.parametrize("name", ["ghost", "Posts", "1bad", "x" * 70])
def test_an_unknown_index_is_404(admin: Api, corpus: dict[str, str], name: str) -> None:
    assert error_of(search_response(admin, name, "space"), 404) == f"Index '{name}' not found"


@pytest.mark.parametrize("q", ['a"b', 'NEAR(a b)', "title:space", "space*", "^space", "AND", "OR space",
                               "NOT space", "space)", "space -", "x" * 3000, " ".join(["space"] * 100),
                               "東京", "\x00space", "'space'"])
def test_query_syntax_of_the_engine_is_never_interpreted(admin: Api, corpus: dict[str, str], q: str) -> None:
    result = search(admin, "posts", q)
    assert result["query"] == q
    if "space" in q and "NEAR" not in q and "title" not in q:
        assert set(ids(result)) <= {corpus["mars"], corpus["moon"]}


@pytest.mark.parametrize("filtered", [False, True])
def test_a_huge_offset_is_not_a_500(admin: Api, corpus: dict[str, str], filtered: bool) -> None:
    response = search_response(admin, "posts", "space", offset=str(10**20),
                               filter="{}" if filtered else None)
    assert response.status_code in (200, 400), response.text
    if response.status_code == 200:
        assert response.json()["hits"] == []


@pytest.mark.parametrize("q", ["lc", "lcdefault", "lcdefaul"])
def test_internal_locale_terms_are_not_searchable(admin: Api, corpus: dict[str, str], q: str) -> None:
    result = search(admin, "posts", q)
    assert result["total"] == 0, [(h["title"], h["_score"]) for h in result["hits"]]


@pytest.mark.parametrize("q", ["Straße", "straße", "strasse", "ﬁsch"])
def test_sharp_s_and_ligatures_match(admin: Api, q: str) -> None:
    posts_model(admin)
    item = create_item(admin, "posts", {"title": "Straße der ﬁsch"})
    filler(admin)
    put_index(admin, "posts", model="posts", fields=["title"])
    assert ids(search(admin, "posts", q)) == [item["_id"]]


def test_a_large_weight_still_gives_a_numeric_score(admin: Api) -> None:
    posts_model(admin)
    create_item(admin, "posts", {"title": "huge"})
    response = admin.put("/api/searchmod/indexes/posts", content=b'{"model": "posts", "fields": ["title"], '
                         b'"weights": {"title": 1e308}}', headers={"content-type": "application/json"})
    if response.status_code == 400:  # refusing such a weight would be fine too
        return
    assert response.status_code == 200
    hit = search_response(admin, "posts", "huge").json()["hits"][0]
    assert isinstance(hit["_score"], float) and hit["_score"] > 0
