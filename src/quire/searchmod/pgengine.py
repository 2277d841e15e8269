"""The PostgreSQL engine: PostgreSQL's own full text (`tsvector`, GIN,
`ts_rank_cd`) and `pg_trgm` for typo tolerance, for a store that runs on
PostgreSQL (several instances share the index as they share the content).

Tables, in the store's schema (the first of its `search_path`), two per
generation of an index, named after the index (a short prefix of the name
and a hash of all of it, as PostgreSQL cuts names at 63 bytes):

- `search_<name>_<hash>_<generation>`: a row per document (item id,
  locale, `doc`, a weighted `tsvector` with a GIN index);
- `..._<generation>_words`: the index's vocabulary (its unstemmed words)
  with a trigram GIN index, where typos find their corrections.

A table per generation, not a generation column: a build fills a table
nobody reads yet (bulk `COPY`, the GIN index made once at the end), the
switch is the service's mark, and dropping a generation is a `DROP TABLE`
(no million-row `DELETE` and the vacuum after it).

Words are cut, folded and stemmed here in Python by the same code as the
embedded engine (`query.tokens`, `index.stem`: English Snowball), not by a
text search configuration: queries arrive folded by `query.fold`, and the
highlighter stems with `index.stem`, so the index must hold exactly those
forms (`unaccent` folds `ø` to `o` where `fold` keeps it; `english` drops
stop words that phrases need). The `tsvector` is written as a literal of
lexemes and positions: for each word its stem, and the word itself when
it differs (the unstemmed forms serve prefixes, which stemming would
break: `runni` must find `running`, whose stem is `run`), both at the
word's position. Field `i` carries weight label A, B, C, then D for the
fourth and every later field; a gap of one position between fields keeps
a phrase inside one field.

Ranking: `ts_rank_cd` of the document against the query's terms (any
of them; the match decides which documents, the rank only orders them),
with the per-call field weights as the label weights, divided by 1 + the
log of the document's number of words. There is no IDF: a rare word
weighs what a common one does. Hits found only through a corrected typo
rank after the exact ones, squeezed below the lowest exact score, as the
embedded engine does.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg import errors, sql
from rapidfuzz import process
from rapidfuzz.distance import OSA

from quire.errors import Unavailable
from quire.searchmod.engine import Doc, Hit
from quire.searchmod.index import LONGEST, MAX_VARIANTS, stem
from quire.searchmod.query import Query, tokens

Connect = Callable[[], AbstractContextManager[psycopg.Connection[Any]]]

LABELS = "ABCD"
MAX_POSITION = 16_383  # PostgreSQL's highest position; later words share it
MAX_POSITIONS = 255  # positions kept per lexeme (PostgreSQL keeps at most 256)
MAX_VECTOR = 900_000  # bytes of lexemes and positions per document (PostgreSQL's limit is 1 MB)
MAX_CANDIDATES = 5_000  # vocabulary words measured for one typo, at most
_GENERATION = re.compile(r"^(\d+)(_words)?$")


class MissingExtension(Unavailable):
    """The database lacks `pg_trgm` and this role may not create it."""


def table_prefix(name: str) -> str:
    """What every table of index `name` starts with: readable, unique, short."""
    slug = re.sub(r"[^a-z0-9_]", "_", name.lower())[:16]
    return f"search_{slug}_{hashlib.sha256(name.encode()).hexdigest()[:8]}_"


class _Tables:
    def __init__(self, name: str, generation: int) -> None:
        base = f"{table_prefix(name)}{generation}"
        self.docs = sql.Identifier(base)
        self.words = sql.Identifier(f"{base}_words")
        self.base = base


# -- documents and queries as PostgreSQL text ----------------------------------------


def _quoted(lexeme: str) -> str:
    """A lexeme in `tsvector`/`tsquery` input syntax (words are `\\w`
    characters, but the quoting does not rely on it)."""
    if "'" in lexeme or "\\" in lexeme:
        lexeme = lexeme.replace("\\", "\\\\").replace("'", "''")
    return f"'{lexeme}'"


@dataclass
class Vector:
    literal: str  # the `tsvector`: stems and unstemmed words with positions and weight labels
    words: set[str]  # the unstemmed words (the vocabulary's part)
    length: int  # how many words (what the score is divided by the log of)


# "1A", "2A", ...: a position with its label, as `tsvector` input writes it (made once, not per word)
_MARKS = {label: [f"{p}{label}" for p in range(MAX_POSITION + 1)] for label in LABELS}


def document(texts: list[str], fields: int) -> Vector:
    """A document as the table holds it."""
    marks: dict[str, list[str]] = {}  # unstemmed word -> its positions with labels
    at = 0
    for i, text in enumerate(texts[:fields]):
        table = _MARKS[LABELS[min(i, len(LABELS) - 1)]]
        for word in tokens(text):
            at += 1
            mark = table[at if at < MAX_POSITION else MAX_POSITION]
            found = marks.get(word)
            if found is None:
                marks[word] = [mark]
            else:
                found.append(mark)
        at += 1  # the gap between fields: a phrase never spans two
    length = at - min(fields, len(texts))
    lexemes: dict[str, list[str]] = {}
    size = 0
    for word in list(marks):
        if len(word) >= LONGEST // 4 and len(word.encode()) >= LONGEST:
            length -= len(marks.pop(word))  # hashes, base64: a search never types them (as the embedded engine)
            continue
        if size > MAX_VECTOR:
            del marks[word]  # a huge document keeps the words it had room for
            continue
        found = marks[word]
        stemmed = stem(word)
        for lexeme in (word,) if stemmed == word else (word, stemmed):
            kept = lexemes.get(lexeme)
            if kept is None:
                lexemes[lexeme] = found
            else:  # the stem of one word is another word of the document
                lexemes[lexeme] = sorted(kept + found, key=lambda m: int(m[:-1]))
            size += (len(lexeme) if lexeme.isascii() else len(lexeme.encode())) + 2 * len(found) + 4
    literal = " ".join(f"{_quoted(lexeme)}:{','.join(found[:MAX_POSITIONS])}" for lexeme, found in lexemes.items())
    return Vector(literal, set(marks), length)


def _possible(word: str) -> bool:
    return len(word.encode()) < LONGEST  # a longer word is in no document


def _conjunction(parts: list[str | None]) -> str | None:
    """`a & b & ...`, or None when one part can never match."""
    if any(p is None for p in parts):
        return None
    return " & ".join(f"({p})" for p in parts if p is not None)


def _term(word: str) -> str | None:
    return _quoted(stem(word)) if _possible(word) else None


def _phrase(words: list[str]) -> str | None:
    if not all(_possible(w) for w in words):
        return None
    return " <-> ".join(_quoted(stem(w)) for w in words)


def exact_query(query: Query) -> str | None:
    """Every word (stemmed) and phrase; or every word but the last, the
    phrases, and the last word as a prefix of an unstemmed word. None:
    nothing can match."""
    phrases = [_phrase(p) for p in query.phrases]
    exact = _conjunction([*(_term(w) for w in query.words), *phrases])
    if query.prefix is None:
        return exact
    prefix = f"{_quoted(query.prefix)}:*" if _possible(query.prefix) else None
    prefixed = _conjunction([*(_term(w) for w in query.words[:-1]), *phrases, prefix])
    branches = [b for b in (exact, prefixed) if b is not None]
    return " | ".join(f"({b})" for b in branches) if branches else None


def fuzzy_query(query: Query, variants: dict[str, list[str]]) -> str | None:
    """Every word or one of its corrections, and every phrase."""
    parts: list[str | None] = []
    for word in query.words:
        options = [t for t in (_term(word), *(_quoted(v) for v in variants.get(word, []))) if t is not None]
        parts.append(" | ".join(options) if options else None)
    return _conjunction([*parts, *(_phrase(p) for p in query.phrases)])


def rank_query(query: Query, variants: dict[str, list[str]]) -> str:
    """Any term of the query: what `ts_rank_cd` scores (each occurrence of
    one counts, by its field's weight)."""
    terms = [*(_term(w) for w in query.words), *(_term(w) for p in query.phrases for w in p)]
    if query.prefix is not None and _possible(query.prefix):
        terms.append(f"{_quoted(query.prefix)}:*")
    terms += [_quoted(v) for found in variants.values() for v in found]
    kept = list(dict.fromkeys(t for t in terms if t is not None))
    return " | ".join(kept) if kept else "''"


def label_weights(weights: list[float]) -> list[float]:
    """`ts_rank_cd`'s weights ({D, C, B, A}, each in [0, 1]) from the
    fields' weights: fields 1 to 3 have a label each, the fourth and later
    ones share D and count with the largest of their weights."""
    if not weights:
        return [1.0, 1.0, 1.0, 1.0]
    per_label = [*weights[:3], max(weights[3:])] if len(weights) > 3 else list(weights)
    top = max(per_label)
    scaled = [max(w / top, 1e-6) for w in per_label]  # rank order is scale-free; float4 wants no underflow
    scaled += [1.0] * (4 - len(scaled))  # labels no field uses
    return list(reversed(scaled))


# -- typo tolerance ------------------------------------------------------------------------


def _trigrams(word: str) -> int:
    padded = f"  {word} "
    return len({padded[i:i + 3] for i in range(len(padded) - 2)})


def similarity_floor(word: str, edits: int) -> float:
    """The least `pg_trgm` similarity a word `edits` edits from `word` can
    have: an edit (a letter added, removed or replaced, two neighbours
    swapped) takes at most 4 of the word's trigrams away and brings at most
    4 new ones, so at least a-4k of the a trigrams are shared, of at most
    a+4k in all."""
    a = _trigrams(word)
    return max(0.0, (a - 4 * edits) / (a + 4 * edits))


def closest(word: str, candidates: Iterable[str]) -> list[str]:
    """The embedded engine's rule over candidate words: one edit (optimal
    string alignment) for a word of 5 to 8 letters, two from 9, at most
    MAX_VARIANTS, nearest first."""
    ordered = sorted(set(candidates))
    if len(word) >= 9:
        found = process.extract(word, ordered, scorer=OSA.distance, score_cutoff=2, limit=MAX_VARIANTS)
        return [t for t, _, _ in found if t != word]
    scored = sorted((OSA.distance(word, t), t) for t in ordered if t != word)
    return [t for distance, t in scored if distance <= 1][:MAX_VARIANTS]


# -- the engine ----------------------------------------------------------------------------


class PostgresEngine:
    """An `Engine` over PostgreSQL. `connect()` answers a context manager
    giving a psycopg 3 connection (a pool's `connection`, or
    `psycopg.connect(url)`); leaving it commits, as psycopg's do."""

    def __init__(self, connect: Connect) -> None:
        self.connect = connect
        self._trgm: sql.Identifier | None = None  # the schema pg_trgm lives in

    def prepare(self) -> None:
        """Make sure `pg_trgm` is there (creating it if this role may);
        called by every operation once, and by a server at start to fail
        early with the message a DBA needs."""
        if self._trgm is None:
            with self.connect() as conn:
                self._trgm = _ensure_trgm(conn)

    @contextlib.contextmanager
    def _reading(self, name: str) -> Iterator[psycopg.Connection[Any]]:
        """A connection in a transaction of its own (`set_config(..., true)`
        lasts until its end, even on a connection in autocommit mode)."""
        with _answering(name):
            self.prepare()
            with self.connect() as conn, conn.transaction():
                yield conn

    @contextlib.contextmanager
    def writer_lock(self, name: str) -> Iterator[bool]:
        """The index's writer lock across every server instance, if it is
        free (True), without waiting: what `index.file_lock` (a file
        lock, one machine) is to one server. A transaction advisory lock
        on a connection of its own, so a process that dies drops it."""
        with _answering(name), self.connect() as conn, conn.transaction():
            row = conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))",
                               (f"quire-search-writer:{name}",)).fetchone()
            yield bool(row and row[0])

    # -- writing ----------------------------------------------------------

    def writer(self, name: str, generation: int, fields: int, fresh: bool = False) -> PostgresWriter:
        with _answering(name):
            self.prepare()
        assert self._trgm is not None
        return PostgresWriter(self.connect, name, _Tables(name, generation), fields, fresh, self._trgm)

    def drop(self, name: str, keep: int | None = None) -> None:
        prefix = table_prefix(name)
        with _answering(name), self.connect() as conn, conn.transaction():
            rows = conn.execute(
                "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace"
                " AND relkind = 'r' AND starts_with(relname, %s)", (prefix,)).fetchall()
            for (relname,) in rows:
                found = _GENERATION.match(relname[len(prefix):])
                if found and int(found.group(1)) != keep:
                    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(relname)))

    # -- reading ----------------------------------------------------------

    def count(self, name: str, generation: int, locale: str) -> int:
        with self._reading(name) as conn:
            row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE locale = %s").format(
                _Tables(name, generation).docs), (locale,)).fetchone()
        return int(row[0]) if row else 0

    def variants(self, name: str, generation: int, fields: int, word: str) -> list[str]:
        with self._reading(name) as conn:
            return self._variants(conn, _Tables(name, generation), word)

    def _variants(self, conn: psycopg.Connection[Any], tables: _Tables, word: str) -> list[str]:
        """Vocabulary words a typo away from `word` (the embedded engine's
        rule). Candidates share the first letter, are near in length and,
        for a word in ASCII letters, pass the trigram index at the least
        similarity such a neighbour can have; the edit distance decides."""
        if len(word) < 5 or not word.isalpha():
            return []
        edits = 2 if len(word) >= 9 else 1
        floor = similarity_floor(word, edits) if word.isascii() else 0.0
        assert self._trgm is not None
        trigram: sql.Composable = sql.SQL("")
        if floor > 0:
            # pg_trgm splits words at what its locale calls non-letters, so only ASCII words go through it
            conn.execute("SELECT set_config('pg_trgm.similarity_threshold', %s, true)", (str(floor - 1e-6),))
            trigram = sql.SQL("AND word OPERATOR({}.%%) %(word)s").format(self._trgm)
        query = sql.SQL(
            "SELECT word FROM {words} WHERE word >= %(first)s AND word < %(after)s"
            " AND length(word) BETWEEN %(short)s AND %(long)s {trigram}"
            " ORDER BY {schema}.similarity(word, %(word)s) DESC LIMIT %(most)s"
        ).format(words=tables.words, trigram=trigram, schema=self._trgm)
        rows = conn.execute(query, {"word": word, "first": word[0], "after": chr(ord(word[0]) + 1),
                                    "short": len(word) - edits, "long": len(word) + edits,
                                    "most": MAX_CANDIDATES}).fetchall()
        return closest(word, (r[0] for r in rows))

    def search(self, name: str, generation: int, query: Query, locale: str | None, weights: list[float],
               limit: int, offset: int, typos: bool = True) -> tuple[list[Hit], int]:
        """Exact hits first (every word, every phrase; or the last word as
        a prefix), then those found only through a corrected typo, their
        scores squeezed below the lowest exact one."""
        tables = _Tables(name, generation)
        with self._reading(name) as conn:
            variants = {w: found for w in dict.fromkeys(query.words)
                        if typos and (found := self._variants(conn, tables, w))}
            exact = exact_query(query)
            tier = _Tier(conn, tables, locale, label_weights(weights))
            page: list[tuple[str, float]] = []
            total, lowest = 0, None
            if exact is not None:  # scored by the words as typed (a correction adds nothing)
                page, total, lowest = tier.run(exact, None, rank_query(query, {}), limit, offset)
            fuzzy = fuzzy_query(query, variants) if variants else None
            if fuzzy is not None:
                wanted = max(limit - len(page), 0)
                more, more_total, _ = tier.run(fuzzy, exact, rank_query(query, variants), wanted,
                                               max(0, offset - total))
                total += more_total
                floor = lowest if lowest is not None else 1.0
                page += [(item, floor * s / (s + 1)) for item, s in more]
        return [Hit(item, score) for item, score in page], total


class _Tier:
    """One tier of a search (the exact matches, or those found only through
    typos): its page, its exact count and its lowest score, in one statement."""

    def __init__(self, conn: psycopg.Connection[Any], tables: _Tables, locale: str | None,
                 weights: list[float]) -> None:
        self.conn, self.tables, self.locale, self.weights = conn, tables, locale, weights

    def run(self, match: str, unless: str | None, rank: str, limit: int,
            offset: int) -> tuple[list[tuple[str, float]], int, float | None]:
        """Documents matching `match` and not `unless`, ordered by their
        `ts_rank_cd` against `rank` (ties by id, so pages partition)."""
        where = [sql.SQL("doc @@ %(match)s::tsquery")]
        if self.locale is not None:
            where.append(sql.SQL("locale = %(locale)s"))
        if unless is not None:
            where.append(sql.SQL("NOT doc @@ %(unless)s::tsquery"))
        statement = sql.SQL(
            # normalised here, not by ts_rank_cd's flag 1: its length would
            # count a word's stem and unstemmed form twice
            "WITH m AS MATERIALIZED (SELECT id, ts_rank_cd(%(weights)s::float4[], doc, %(rank)s::tsquery, 0)"
            " / (1 + ln(greatest(length, 1)))::float8 AS score FROM {docs} WHERE {where})"
            " SELECT NULL::text, count(*)::float8, min(score) FROM m"
            " UNION ALL (SELECT id, score, NULL FROM m ORDER BY score DESC, id LIMIT %(limit)s OFFSET %(offset)s)"
        ).format(docs=self.tables.docs, where=sql.SQL(" AND ").join(where))
        rows = self.conn.execute(statement, {
            "weights": self.weights, "rank": rank, "match": match, "unless": unless,
            "locale": self.locale, "limit": limit, "offset": offset}).fetchall()
        page, total, lowest = [], 0, None
        for item, value, least in rows:
            if item is None:
                total, lowest = int(value), least
            else:
                page.append((str(item), float(value)))
        return page, total, lowest


class PostgresWriter:
    """Writes into one generation in one transaction (on a connection of
    its own), made visible by `commit()`. A fresh generation gets its
    tables now and its indexes at the commit, after the bulk load."""

    def __init__(self, connect: Connect, name: str, tables: _Tables, fields: int, fresh: bool,
                 trgm: sql.Identifier) -> None:
        self.name, self.tables, self.fields, self.fresh, self.trgm = name, tables, fields, fresh, trgm
        self._stack = ExitStack()
        self.words: set[str] = set()  # unstemmed words written (for the vocabulary)
        self.gone: set[str] = set()  # lexemes of replaced documents (words that may have left it)
        with self._failing():
            self.conn = self._stack.enter_context(connect())
            # a transaction of our own, also on a connection in autocommit mode
            self._stack.enter_context(self.conn.transaction())
            # one writer per generation across every process: the caller's
            # lock may be a file lock on one machine
            self.conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (tables.base,))
            if fresh:
                self._create()
            else:
                self.conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 0").format(tables.docs))

    @contextlib.contextmanager
    def _failing(self) -> Iterator[None]:
        """A failure rolls everything back and frees the connection."""
        try:
            with _answering(self.name):
                yield
        except BaseException:
            self.abort()
            raise

    def _create(self) -> None:
        t = self.tables
        self.conn.execute(sql.SQL("DROP TABLE IF EXISTS {}, {}").format(t.docs, t.words))
        self.conn.execute(sql.SQL("CREATE TABLE {} (id text NOT NULL, locale text NOT NULL, length integer NOT NULL,"
                                  " doc tsvector NOT NULL)").format(t.docs))
        self.conn.execute(sql.SQL('CREATE TABLE {} (word text COLLATE "C" PRIMARY KEY)').format(t.words))

    def add(self, docs: list[Doc]) -> None:
        with self._failing():
            self._add(docs)

    def _add(self, docs: list[Doc]) -> None:
        rows = []
        for doc in docs:
            vector = document(doc.texts, self.fields)
            self.words |= vector.words
            rows.append((doc.id, doc.locale, vector.length, vector.literal))
        if not rows:
            return
        with self.conn.cursor() as cursor, cursor.copy(
                sql.SQL("COPY {} (id, locale, length, doc) FROM STDIN").format(self.tables.docs)) as copy:
            for row in rows:
                copy.write_row(row)

    def replace(self, item_id: str, docs: list[Doc]) -> None:
        with self._failing():
            removed = self.conn.execute(sql.SQL("DELETE FROM {} WHERE id = %s RETURNING tsvector_to_array(doc)")
                                        .format(self.tables.docs), (item_id,)).fetchall()
            for (lexemes,) in removed:
                self.gone.update(lexemes)
            self._add(docs)

    def clear(self) -> None:
        with self._failing():
            # DELETE, not TRUNCATE: searches keep reading the committed rows meanwhile
            self.conn.execute(sql.SQL("DELETE FROM {}").format(self.tables.docs))
            self.conn.execute(sql.SQL("DELETE FROM {}").format(self.tables.words))
        self.words.clear()
        self.gone.clear()

    def commit(self) -> None:
        with self._failing():
            self._write_vocabulary()
            if self.fresh:
                self._index()
            self._stack.close()  # commits, then gives the connection back (or rolls back if COMMIT fails)

    def _write_vocabulary(self) -> None:
        """New words in; words of replaced documents that no document holds
        any more out (the check finds a word by the GIN index)."""
        t = self.tables
        if self.words:
            self.conn.execute(sql.SQL("INSERT INTO {} (word) SELECT unnest(%s::text[]) ON CONFLICT DO NOTHING")
                              .format(t.words), (sorted(self.words),))
        vanished = sorted(self.gone - self.words)
        if vanished:
            self.conn.execute(sql.SQL(
                "DELETE FROM {words} v WHERE v.word = ANY(%s::text[])"
                " AND NOT EXISTS (SELECT 1 FROM {docs} d WHERE d.doc @@ quote_literal(v.word)::tsquery)"
            ).format(words=t.words, docs=t.docs), (vanished,))

    def _index(self) -> None:
        t, base = self.tables, self.tables.base
        self.conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (doc)").format(
            sql.Identifier(f"{base}_gin"), t.docs))
        self.conn.execute(sql.SQL("CREATE INDEX {} ON {} (id)").format(sql.Identifier(f"{base}_id"), t.docs))
        self.conn.execute(sql.SQL("CREATE INDEX {} ON {} (locale)").format(sql.Identifier(f"{base}_lc"), t.docs))
        self.conn.execute(sql.SQL("CREATE INDEX {} ON {} USING gin (word {}.gin_trgm_ops)").format(
            sql.Identifier(f"{base}_trgm"), t.words, self.trgm))
        self.conn.execute(sql.SQL("ANALYZE {}").format(t.docs))
        self.conn.execute(sql.SQL("ANALYZE {}").format(t.words))

    def abort(self) -> None:
        """Roll back what was not committed and give the connection back."""
        with contextlib.suppress(Exception):  # a broken connection refuses to roll back: it is closed anyway
            self._stack.__exit__(psycopg.Rollback, psycopg.Rollback(), None)


@contextlib.contextmanager
def _answering(name: str) -> Iterator[None]:
    """Database failures as the API's errors: a 503, never a 500."""
    try:
        yield
    except errors.UndefinedTable:
        raise Unavailable(f"Index '{name}' has lost its tables: rebuild it") from None
    except psycopg.OperationalError as exc:  # the server is gone, a timeout, a lock not had in time
        raise Unavailable(f"Index '{name}' cannot be reached now: try again") from exc


def _ensure_trgm(conn: psycopg.Connection[Any]) -> sql.Identifier:
    """The schema of `pg_trgm`, creating the extension when it is missing
    (a trusted extension: the database owner, or a role with CREATE on
    the database, may). Its functions are named with their schema, which
    need not be on the search path."""
    found = _trgm_schema(conn)
    if found is not None:
        return found
    try:
        with conn.transaction():
            # in `public` where there is one: made from a space's schema it would go when the
            # space is removed (quire.spaces), with every other site's trigram indexes
            has_public = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = 'public'").fetchone()
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm" + (" SCHEMA public" if has_public else ""))
    except errors.InsufficientPrivilege:
        database = conn.info.dbname
        raise MissingExtension(
            f"Search on PostgreSQL needs the pg_trgm extension, and this role may not create it: "
            f"a database administrator must run CREATE EXTENSION pg_trgm; in database {database}") from None
    except (errors.UniqueViolation, errors.DuplicateObject):
        pass  # another process created it at the same moment
    found = _trgm_schema(conn)
    if found is None:
        raise MissingExtension("Search on PostgreSQL needs the pg_trgm extension (it was not created)")
    return found


def _trgm_schema(conn: psycopg.Connection[Any]) -> sql.Identifier | None:
    row = conn.execute("SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace"
                       " WHERE e.extname = 'pg_trgm'").fetchone()
    return sql.Identifier(row[0]) if row else None
