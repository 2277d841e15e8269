"""The PostgreSQL engine (`searchmod/pgengine.py`) on a real server: the
behaviours of the embedded engine's tests that do not compare rankings
position by position (folding, stemming, prefixes, phrases, typos,
locales, weights, writes, counts, generations), plus what is its own
(tables per generation, the writer's transaction, the extension)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from quire.errors import Unavailable
from quire.searchmod.engine import Doc
from quire.searchmod.pgengine import (
    MissingExtension,
    PostgresEngine,
    document,
    similarity_floor,
    table_prefix,
)
from quire.searchmod.query import parse

FILLER = ["the quick brown fox", "lorem ipsum dolor", "green fields of wheat", "a quiet village square",
          "coffee and biscuits", "rivers flow to the sea"]


@pytest.fixture
def engine(pg_url: str) -> PostgresEngine:
    return PostgresEngine(lambda: psycopg.connect(pg_url))


def build(engine: PostgresEngine, docs: list[Doc], name: str = "ix", generation: int = 1,
          fields: int = 2) -> None:
    writer = engine.writer(name, generation, fields, fresh=True)
    writer.add(docs)
    writer.commit()


def find(engine: PostgresEngine, q: str, name: str = "ix", generation: int = 1, locale: str | None = None,
         weights: list[float] | None = None, limit: int = 100, offset: int = 0,
         typos: bool = True) -> tuple[list[str], int]:
    hits, total = engine.search(name, generation, parse(q), locale, weights or [1.0, 1.0], limit, offset, typos)
    return [h.id for h in hits], total


def ids(engine: PostgresEngine, q: str, **kw: Any) -> list[str]:
    return find(engine, q, **kw)[0]


@pytest.fixture
def corpus(engine: PostgresEngine) -> PostgresEngine:
    """Title and body of a few known documents, and unrelated filler."""
    docs = [
        Doc("mars", "default", ["Mars mission", "The crew is running tests & drills"]),
        Doc("moon", "default", ["Moon base", "Building a base on the moon"]),
        Doc("cafe", "default", ["Café crème", "Résumé of a naïve barista"]),
        Doc("garden", "default", ["Gardening", "Planting tomatoes in spring"]),
        Doc("street", "default", ["Straße der ﬁsch", ""]),
        *(Doc(f"f{i}", "default", [text, FILLER[-1 - i]]) for i, text in enumerate(FILLER)),
    ]
    build(engine, docs)
    return engine


# -- matching ---------------------------------------------------------------------------


@pytest.mark.parametrize("q", ["mission", "MISSION", "mIsSiOn "])
def test_words_match_case_insensitively(corpus: PostgresEngine, q: str) -> None:
    assert ids(corpus, q) == ["mars"]


@pytest.mark.parametrize("q", ["cafe ", "CAFÉ ", "café ", "creme", "resume", "résumé", "naive", "NAÏVE"])
def test_accents_are_ignored_in_the_text_and_the_query(corpus: PostgresEngine, q: str) -> None:
    assert ids(corpus, q) == ["cafe"]


@pytest.mark.parametrize("q", ["Straße", "strasse", "ﬁsch", "fisch"])
def test_sharp_s_and_ligatures_match(corpus: PostgresEngine, q: str) -> None:
    assert ids(corpus, q) == ["street"]


@pytest.mark.parametrize(("q", "key"), [("missions ", "mars"), ("runs ", "mars"), ("planted ", "garden"),
                                        ("tomato ", "garden"), ("builds ", "moon")])
def test_words_are_stemmed(corpus: PostgresEngine, q: str, key: str) -> None:
    assert ids(corpus, q) == [key]


def test_all_words_are_required_across_fields(corpus: PostgresEngine) -> None:
    assert ids(corpus, "mars crew ") == ["mars"]  # title and body
    assert ids(corpus, "mars moon ") == []


@pytest.mark.parametrize(("q", "key"), [("mis", "mars"), ("runni", "mars"), ("gardeni", "garden"),
                                        ("crew runni", "mars"), ("caf", "cafe"), ("tomatoe", "garden"),
                                        ("m", None)])
def test_the_last_word_is_also_a_prefix_of_an_unstemmed_word(corpus: PostgresEngine, q: str,
                                                              key: str | None) -> None:
    found = ids(corpus, q)
    if key is None:
        assert set(found) == {"mars", "moon"}  # mars, mission, moon
    else:
        assert found == [key]


def test_only_the_last_word_is_a_prefix(corpus: PostgresEngine) -> None:
    assert ids(corpus, "crew mis") == ["mars"]
    assert ids(corpus, "mis crew") == []
    assert ids(corpus, "mis ") == []  # a space after it: a whole word
    assert ids(corpus, '"mis"') == []


def test_phrases_need_the_words_together_in_order_within_one_field(corpus: PostgresEngine) -> None:
    assert ids(corpus, '"crew is running"') == ["mars"]
    assert ids(corpus, '"running crew"') == []
    assert ids(corpus, '"crew running"') == []
    assert ids(corpus, '"planting tomato"') == ["garden"]  # stemmed
    assert ids(corpus, '"on the moon" buil') == ["moon"]  # short words are kept
    assert ids(corpus, '"mission the"') == []  # the title's last word and the body's first do not touch


@pytest.mark.parametrize("q", ["'", "a'b", "space:*", "mars & moon", "!mars", "mars | moon", "(mars", "<->",
                               "x" * 3000, " ".join(["mars"] * 40), "東京", "\\", "mars\\", "\x00mars"])
def test_query_syntax_of_postgresql_is_never_interpreted(corpus: PostgresEngine, q: str) -> None:
    query = parse(q)
    if query.empty:
        return  # the service answers 400 before the engine
    found = ids(corpus, q)  # no error, and words are only words
    if "mars" in q:
        assert set(found) <= {"mars"}


def test_a_document_holds_stems_and_unstemmed_words_at_the_same_positions() -> None:
    vector = document(["Running runs", "run", "x" * 70], 3)
    assert vector.literal.split() == ["'running':1A", "'run':1A,2A,4B", "'runs':2A"]
    assert vector.words == {"running", "runs", "run"}
    assert vector.length == 3  # the word too long to be indexed is not counted
    assert document(["a b"], 1).literal == "'a':1A 'b':2A"


# -- typos ------------------------------------------------------------------------------------


@pytest.fixture
def words(engine: PostgresEngine) -> PostgresEngine:
    docs = [Doc(w, "default", [w, ""]) for w in ("planet", "adventures", "dinosaur", "moon", "gardening")]
    build(engine, docs + [Doc(f"f{i}", "default", [t, ""]) for i, t in enumerate(FILLER)])
    return engine


@pytest.mark.parametrize(("q", "word"), [
    ("planat ", "planet"), ("plnet ", "planet"), ("plannet ", "planet"), ("lpanet", None),
    ("advantores ", "adventures"), ("adevntures ", "adventures"), ("dinasaur ", "dinosaur"),
    ("gardneing ", "gardening"), ("moan ", None), ("plnxet ", None), ("dinasour ", None),
    ("advantorez ", None), ("xlanet ", None), ("qdventures ", None),
])
def test_typos_within_the_tolerance_are_corrected(words: PostgresEngine, q: str, word: str | None) -> None:
    assert find(words, q) == (([word], 1) if word else ([], 0))


def test_typos_can_be_turned_off(words: PostgresEngine) -> None:
    assert find(words, "planat ", typos=False) == ([], 0)


def test_exact_matches_rank_before_typo_matches_with_lower_scores(engine: PostgresEngine) -> None:
    build(engine, [Doc("typo", "default", ["planes planes planes", ""]),
                   Doc("exact", "default", ["Notes", " ".join(["word"] * 40) + " planet"]),
                   *(Doc(f"f{i}", "default", [t, ""]) for i, t in enumerate(FILLER))])
    hits, total = engine.search("ix", 1, parse("planet "), None, [10.0, 1.0], 10, 0)
    assert [h.id for h in hits] == ["exact", "typo"] and total == 2
    assert hits[0].score > hits[1].score > 0
    # the second page starts in the typo tier and still counts everything
    hits, total = engine.search("ix", 1, parse("planet "), None, [10.0, 1.0], 1, 1)
    assert [h.id for h in hits] == ["typo"] and total == 2


def test_corrections_add_nothing_to_the_score_of_an_exact_match(engine: PostgresEngine) -> None:
    build(engine, [Doc("plain", "default", ["planet", "alpha beta gamma"]),
                   Doc("noisy", "default", ["planet", "planes planes gamma"])])
    hits, total = engine.search("ix", 1, parse("planet "), None, [1.0, 1.0], 10, 0)
    assert total == 2 and hits[0].score == hits[1].score > 0


def test_variants_are_words_of_the_index_a_typo_away(words: PostgresEngine) -> None:
    assert words.variants("ix", 1, 2, "planat") == ["planet"]
    assert words.variants("ix", 1, 2, "moan") == []  # too short
    assert words.variants("ix", 1, 2, "gardneing") == ["gardening"]


def test_the_trigram_floor_admits_every_neighbour() -> None:
    """The floor the trigram index filters with is never above the real
    similarity of a word one (two) edits away, as pg_trgm computes it."""
    def similarity(a: str, b: str) -> float:
        grams = [{f"  {w} "[i:i + 3] for i in range(len(w) + 1)} for w in (a, b)]
        return len(grams[0] & grams[1]) / len(grams[0] | grams[1])

    cases = [("mosue", "mouse", 1), ("muose", "mouse", 1), ("plnet", "planet", 1), ("plnaet", "planet", 1),
             ("adevntuers", "adventures", 2), ("gardneing", "gardening", 2), ("banaan", "banana", 1)]
    for typed, word, edits in cases:
        assert similarity_floor(typed, edits) <= similarity(typed, word), (typed, word)


# -- locales, weights, counts -------------------------------------------------------------------


@pytest.fixture
def localized(engine: PostgresEngine) -> PostgresEngine:
    build(engine, [Doc("a", "default", ["house", "red"]), Doc("a", "de", ["haus", "rot"]),
                   Doc("b", "default", ["garden house", ""]), Doc("b", "de", ["garten haus", ""])])
    return engine


def test_a_locale_searches_its_own_documents(localized: PostgresEngine) -> None:
    assert sorted(ids(localized, "haus ", locale="de")) == ["a", "b"]
    assert ids(localized, "haus ", locale="default") == []
    assert ids(localized, "rot ", locale="de") == ["a"]
    assert ids(localized, "garden ", locale="default") == ["b"]


def test_count_counts_the_documents_of_a_locale(localized: PostgresEngine) -> None:
    assert localized.count("ix", 1, "default") == 2
    assert localized.count("ix", 1, "de") == 2
    assert localized.count("ix", 1, "fr") == 0


def test_field_weights_decide_between_a_title_and_a_body_match(engine: PostgresEngine) -> None:
    build(engine, [Doc("title", "default", ["nebula report", "plain words here today"]),
                   Doc("body", "default", ["plain report", "nebula words here today"])])
    assert ids(engine, "nebula ", weights=[3.0, 1.0]) == ["title", "body"]
    assert ids(engine, "nebula ", weights=[1.0, 3.0]) == ["body", "title"]


def test_fields_past_the_fourth_share_a_weight(engine: PostgresEngine) -> None:
    build(engine, [Doc("early", "default", ["", "", "", "comet", "", ""]),
                   Doc("late", "default", ["", "", "", "", "", "comet"])], fields=6)
    hits, _ = engine.search("ix", 1, parse("comet "), None, [1, 1, 1, 1, 1, 5], 10, 0)
    assert {h.id for h in hits} == {"early", "late"}
    assert hits[0].score == hits[1].score  # one label for both: the largest weight


def test_more_mentions_rank_higher_and_scores_are_positive(engine: PostgresEngine) -> None:
    build(engine, [Doc("once", "default", ["x", "comet delta alpha beta gamma epsilon"]),
                   Doc("thrice", "default", ["x", "comet comet comet alpha beta gamma"]),
                   Doc("twice", "default", ["x", "comet comet delta alpha beta gamma"])])
    hits, _ = engine.search("ix", 1, parse("comet "), None, [1.0, 1.0], 10, 0)
    assert [h.id for h in hits] == ["thrice", "twice", "once"]
    assert hits[0].score > hits[1].score > hits[2].score > 0


def test_pages_partition_the_hits_with_exact_totals(engine: PostgresEngine) -> None:
    build(engine, [Doc(f"d{i:02}", "default", [" ".join(["orbit"] * (1 + i % 4)), "pad " * (i % 5)])
                   for i in range(23)] + [Doc("other", "default", ["unrelated", ""])])
    everything, total = find(engine, "orbit ")
    assert total == 23 and len(everything) == 23
    paged: list[str] = []
    for offset in range(0, 30, 4):
        page, total = find(engine, "orbit ", limit=4, offset=offset)
        assert total == 23 and len(page) == max(0, min(4, 23 - offset))
        paged += page
    assert paged == everything
    assert find(engine, "orbit ", limit=0) == ([], 23)
    assert find(engine, "orbit ", offset=500) == ([], 23)


# -- writing --------------------------------------------------------------------------------


def test_replace_changes_and_removes_an_items_documents(corpus: PostgresEngine) -> None:
    writer = corpus.writer("ix", 1, 2)
    writer.replace("mars", [Doc("mars", "default", ["Venus probe", "orbit"])])
    writer.replace("moon", [])
    writer.commit()
    assert ids(corpus, "venus ") == ["mars"]
    assert ids(corpus, "mission ") == []
    assert ids(corpus, "base ") == []
    assert corpus.count("ix", 1, "default") == 10


def test_words_that_left_every_document_leave_the_vocabulary(corpus: PostgresEngine) -> None:
    assert corpus.variants("ix", 1, 2, "missoin") == ["mission"]
    writer = corpus.writer("ix", 1, 2)
    writer.replace("mars", [Doc("mars", "default", ["Mars", "drills"])])
    writer.commit()
    assert corpus.variants("ix", 1, 2, "missoin") == []
    assert corpus.variants("ix", 1, 2, "drils") == ["drills"]  # still there


def test_clear_empties_the_generation(corpus: PostgresEngine) -> None:
    writer = corpus.writer("ix", 1, 2)
    writer.clear()
    writer.add([Doc("new", "default", ["fresh words", ""])])
    writer.commit()
    assert corpus.count("ix", 1, "default") == 1
    assert ids(corpus, "fresh ") == ["new"]
    assert corpus.variants("ix", 1, 2, "missoin") == []


def test_writes_are_invisible_until_the_commit(corpus: PostgresEngine) -> None:
    writer = corpus.writer("ix", 1, 2)
    writer.replace("mars", [])
    writer.add([Doc("pluto", "default", ["Pluto flyby", ""])])
    assert ids(corpus, "mission ") == ["mars"] and ids(corpus, "pluto ") == []
    writer.commit()
    assert ids(corpus, "mission ") == [] and ids(corpus, "pluto ") == ["pluto"]


def test_abort_gives_up_the_writes_and_frees_the_writer(corpus: PostgresEngine) -> None:
    writer = corpus.writer("ix", 1, 2)
    writer.replace("mars", [])
    writer.add([Doc("pluto", "default", ["Pluto flyby", ""])])
    writer.abort()
    assert ids(corpus, "mission ") == ["mars"] and ids(corpus, "pluto ") == []
    again = corpus.writer("ix", 1, 2)  # would wait forever on the advisory lock if it were still held
    again.add([Doc("pluto", "default", ["Pluto flyby", ""])])
    again.commit()
    assert ids(corpus, "pluto ") == ["pluto"]


def test_an_aborted_fresh_build_leaves_nothing(engine: PostgresEngine, pg_url: str) -> None:
    writer = engine.writer("ix", 1, 2, fresh=True)
    writer.add([Doc("a", "default", ["words", ""])])
    writer.abort()
    assert tables(pg_url, "ix") == []


def test_huge_and_odd_documents_are_written(engine: PostgresEngine) -> None:
    body = " ".join(f"w{i}" for i in range(40_000)) + " " + " ".join(["same"] * 1000)
    build(engine, [Doc("huge", "default", ["needle", body]),
                   Doc("odd", "default", ["it's a \\ back'slash \x00 and \ud800 café", "x" * 200])])
    assert ids(engine, "needle ") == ["huge"]
    assert ids(engine, "w39999 ") == ["huge"]
    assert ids(engine, "slash ") == ["odd"]
    assert ids(engine, "x" * 200 + " ") == []  # too long a word to be indexed, as in the embedded engine


def test_a_document_past_postgresqls_tsvector_limit_keeps_its_first_words(engine: PostgresEngine) -> None:
    words = [f"word{i:07}" for i in range(150_000)]  # 1.6 MB of distinct words
    build(engine, [Doc("vast", "default", ["first", " ".join(words)])])
    assert ids(engine, "first ") == ["vast"]
    assert ids(engine, "word0000001 ") == ["vast"]
    assert ids(engine, "word0149999 ") == []


# -- generations and tables -------------------------------------------------------------------


def tables(pg_url: str, name: str) -> list[str]:
    with psycopg.connect(pg_url) as conn:
        rows = conn.execute("SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
                            " AND relkind = 'r' AND starts_with(relname, %s) ORDER BY relname",
                            (table_prefix(name),)).fetchall()
    return [r[0][len(table_prefix(name)):] for r in rows]


def test_a_new_generation_is_built_beside_the_live_one_and_drop_keeps_one(corpus: PostgresEngine,
                                                                           pg_url: str) -> None:
    writer = corpus.writer("ix", 2, 2, fresh=True)
    writer.add([Doc("venus", "default", ["Venus", ""])])
    assert ids(corpus, "mission ", generation=1) == ["mars"]  # the live one answers meanwhile
    writer.commit()
    assert ids(corpus, "venus ", generation=2) == ["venus"] and ids(corpus, "venus ", generation=1) == []
    assert tables(pg_url, "ix") == ["1", "1_words", "2", "2_words"]
    corpus.drop("ix", keep=2)
    assert tables(pg_url, "ix") == ["2", "2_words"]
    with pytest.raises(Unavailable, match="lost its tables"):
        corpus.search("ix", 1, parse("mission"), None, [1.0, 1.0], 10, 0)
    corpus.drop("ix")
    assert tables(pg_url, "ix") == []
    with pytest.raises(Unavailable, match="lost its tables"):
        corpus.writer("ix", 2, 2)
    with pytest.raises(Unavailable, match="lost its tables"):
        corpus.count("ix", 2, "default")


def test_a_fresh_writer_starts_the_generation_over(corpus: PostgresEngine) -> None:
    build(corpus, [Doc("only", "default", ["alone", ""])])
    assert corpus.count("ix", 1, "default") == 1 and ids(corpus, "mission ") == []


def test_indexes_with_similar_or_long_names_keep_apart(engine: PostgresEngine, pg_url: str) -> None:
    names = ["Posts", "posts-2", "posts_2", "p" * 64, "p" * 63 + "q"]
    for i, name in enumerate(names):
        build(engine, [Doc(str(i), "default", [f"word{i}", ""])], name=name, generation=10 ** 12)
    for i, name in enumerate(names):
        assert ids(engine, f"word{i} ", name=name, generation=10 ** 12) == [str(i)]
    engine.drop("posts_2")
    assert tables(pg_url, "posts-2") == [f"{10 ** 12}", f"{10 ** 12}_words"]


# -- the extension ---------------------------------------------------------------------------


def test_pg_trgm_is_found_outside_the_search_path(pg_server: Any, pg_url: str) -> None:
    other = pg_server.fresh_url()  # another schema creates the extension first
    PostgresEngine(lambda: psycopg.connect(other)).prepare()
    try:
        engine = PostgresEngine(lambda: psycopg.connect(pg_url))
        build(engine, [Doc("a", "default", ["planet", ""])])
        assert ids(engine, "planat ") == ["a"]
    finally:
        pg_server.drop_schema(other)


@pytest.fixture
def unprivileged(pg_server: Any) -> Iterator[str]:
    """A database this role may use but not create extensions in."""
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute("CREATE ROLE searcher LOGIN")
        conn.execute("CREATE DATABASE noext")
        conn.execute("REVOKE CREATE ON DATABASE noext FROM PUBLIC")
    yield pg_server.url().replace("quire@", "searcher@").rsplit("/", 1)[0] + "/noext"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute("DROP DATABASE noext")
        conn.execute("DROP ROLE searcher")


def test_a_role_that_may_not_create_pg_trgm_gets_the_command_to_ask_for(unprivileged: str) -> None:
    engine = PostgresEngine(lambda: psycopg.connect(unprivileged))
    with pytest.raises(MissingExtension) as raised:
        engine.prepare()
    assert "CREATE EXTENSION pg_trgm" in raised.value.message and "noext" in raised.value.message
    assert raised.value.status == 503
    with pytest.raises(MissingExtension):
        engine.writer("ix", 1, 1, fresh=True)


# -- connections ------------------------------------------------------------------------------


def test_connections_in_autocommit_mode_still_write_in_one_transaction(pg_url: str) -> None:
    engine = PostgresEngine(lambda: psycopg.connect(pg_url, autocommit=True))
    build(engine, [Doc("a", "default", ["planet", ""]), Doc("b", "default", ["mission", ""])])
    writer = engine.writer("ix", 1, 2)
    writer.replace("a", [])
    assert ids(engine, "planet ") == ["a"]  # not committed yet
    writer.abort()
    assert ids(engine, "planet ") == ["a"]
    assert ids(engine, "planat ") == ["a"]  # the trigram threshold holds for the whole search


def test_a_pool_gets_its_connection_back_after_commit_abort_and_errors(pg_url: str) -> None:
    from psycopg_pool import ConnectionPool

    with ConnectionPool(pg_url, min_size=1, max_size=1, open=True, timeout=5) as pool:
        engine = PostgresEngine(pool.connection)
        build(engine, [Doc("a", "default", ["planet", ""])])
        engine.writer("ix", 1, 2).abort()
        with pytest.raises(Unavailable):
            engine.search("ix", 7, parse("planet"), None, [1.0], 10, 0)
        with pytest.raises(Unavailable):
            engine.writer("ix", 7, 2)
        writer = engine.writer("ix", 1, 2)  # one connection in all: each of the above gave it back
        writer.add([Doc("b", "default", ["planets", ""])])
        writer.commit()
        assert sorted(ids(engine, "planet ")) == ["a", "b"]


def test_an_unreachable_database_is_a_503_not_a_500() -> None:
    engine = PostgresEngine(lambda: psycopg.connect("postgresql://quire@127.0.0.1:1/none", connect_timeout=2))
    calls = [lambda: engine.search("ix", 1, parse("planet"), None, [1.0], 10, 0), lambda: engine.count("ix", 1, "x"),
             lambda: engine.variants("ix", 1, 1, "planat"), lambda: engine.writer("ix", 1, 1, fresh=True),
             lambda: engine.drop("ix")]
    for call in calls:
        with pytest.raises(Unavailable) as raised:
            call()
        assert raised.value.status == 503 and raised.value.message == "Index 'ix' cannot be reached now: try again"


def test_the_writer_lock_is_had_by_one_holder_at_a_time(engine: PostgresEngine) -> None:
    with engine.writer_lock("ix") as first:
        assert first
        with engine.writer_lock("ix") as second, engine.writer_lock("other") as other:
            assert not second and other
    with engine.writer_lock("ix") as again:
        assert again
