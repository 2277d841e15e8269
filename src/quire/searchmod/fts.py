"""The SQLite FTS5 engine: the embedded default behind `Engine`.

Per index, three tables in the main database, written in the caller's
transaction (so an index changes together with the content it follows):

- `sx:<name>` (rowid, id, locale, build, data): one row per item and
  locale, `data` holding the stored fields as JSON (for hits and filters);
- `sx:<name>:stem`: FTS5 over the searchable text of each field with the
  porter stemmer (`missions` finds `mission`), accents removed;
- `sx:<name>:raw`: the same text unstemmed with a prefix index, for the
  last word typed (stemming breaks prefixes: `runni*` would not find
  `running` in stemmed terms);
- `sx:<name>:terms`: the vocabulary (folded words), for typo tolerance.

Ranking is FTS5's BM25 with per-field weights. Exact matches (every word,
the last one also as a prefix) rank above matches found only through a
corrected typo.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import orjson
from rapidfuzz import process
from rapidfuzz.distance import OSA

from quire.searchmod.query import Query, fold, quoted, tokens
from quire.store import SqliteStore
from quire.store.query import Node
from quire.store.sqlcompile import compile_filter

TIER = 1_000_000.0  # sort key = tier * TIER + bm25 (bm25 is negative, small)
# Each row's locale as a searchable token, so a locale is one more term of
# the full-text query (intersected inside FTS5) instead of a join.
LOCALE_COLUMN = "_lc"
MARK_OPEN, MARK_CLOSE = "\x01", "\x02"
SNIPPET_AT = 300
PREFIX_RANKED = 1000  # see Part.scored  # longer fields are answered as a snippet around the matches
_WORD = re.compile(r"\w+", re.UNICODE)


def locale_term(locale: str) -> str:
    """A token only the hidden locale column holds (hex: `pt-BR` and
    `pt_BR` stay apart)."""
    return "lc" + locale.encode().hex()


def columns(count: int) -> list[str]:
    """FTS5 column names: the fields by position (field names could clash
    with FTS5's own names, like `rank`, or differ only in case)."""
    return [f"f{i}" for i in range(count)]


def scoped(count: int, expr: str) -> str:
    """`expr` searched in the field columns only, never the locale column."""
    return "{" + " ".join(columns(count)) + "} : (" + expr + ")"


def index_text(text: str) -> str:
    """What FTS5 gets: compatibility forms unfolded (`ﬁ` -> `fi`), which its
    tokenizer does not do but the query folding does."""
    return unicodedata.normalize("NFKC", text)


def term(word: str) -> str:
    """A word of the query as FTS5 terms: `strasse` also as `straße` and
    the other way round (FTS5 keeps `ß` as it is)."""
    spellings = dict.fromkeys([word, word.replace("ß", "ss"), word.replace("ss", "ß")])
    return quoted(word) if len(spellings) == 1 else "(" + " OR ".join(quoted(s) for s in spellings) + ")"


def table(name: str, part: str = "") -> str:
    return '"' + f"sx:{name}{':' + part if part else ''}" + '"'


@dataclass
class Hit:
    id: str
    data: dict[str, Any]
    score: float
    rowid: int


@dataclass
class Doc:
    """One item in one locale: stored values, and the searchable text of
    each of the index's fields, in order."""

    id: str
    locale: str
    stored: dict[str, Any]
    texts: list[str]


@dataclass
class Part:
    """One FTS5 query of a search: `tier` 0 exact, 1 typo; `within` limits
    it to the rows of another query (the prefix part)."""

    tier: int
    table: str
    weights: str
    match: str
    within: tuple[str, str] | None = None
    ranked: int | None = None  # score only this many of the newest matches

    def _where(self) -> tuple[str, list[Any]]:
        sql, params = f"{self.table} MATCH ?", [self.match]
        if self.within is not None:
            other, expr = self.within
            sql += f" AND rowid IN (SELECT rowid FROM {other} WHERE {other} MATCH ?)"
            params.append(expr)
        return sql, params

    def scored(self) -> tuple[str, list[Any]]:
        where, params = self._where()
        sql = f"SELECT rowid AS rid, bm25({self.table}, {self.weights}) AS sc FROM {self.table} WHERE {where}"
        if self.ranked is not None:
            # BM25 costs about a microsecond a row: a short prefix can match
            # most documents, so only its newest `ranked` matches compete
            # (FTS5 walks them in rowid order and stops there)
            sql = f"SELECT rid, sc FROM ({sql} ORDER BY rowid DESC LIMIT {int(self.ranked)})"
        return sql, params

    def rows(self) -> tuple[str, list[Any]]:
        where, params = self._where()
        return f"SELECT rowid FROM {self.table} WHERE {where}", params


class FtsEngine:
    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    # -- schema -----------------------------------------------------------

    def create(self, name: str, fields: list[str]) -> None:
        """(Re)create the tables of an index for these fields; inside a transaction."""
        self.drop(name)
        names = ", ".join([*columns(len(fields)), LOCALE_COLUMN])
        write = self.store.write
        write(f"CREATE TABLE {table(name)} (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, "
              "locale TEXT NOT NULL, build INTEGER NOT NULL, data TEXT NOT NULL, UNIQUE (id, locale))")
        write(f"CREATE INDEX {table(name, 'build')} ON {table(name)} (build)")
        write(f"CREATE VIRTUAL TABLE {table(name, 'stem')} USING fts5({names}, "
              "tokenize = 'porter unicode61 remove_diacritics 2')")
        write(f"CREATE VIRTUAL TABLE {table(name, 'raw')} USING fts5({names}, "
              "tokenize = 'unicode61 remove_diacritics 2', prefix = '3')")
        write(f"CREATE TABLE {table(name, 'terms')} (term TEXT PRIMARY KEY) WITHOUT ROWID")

    def drop(self, name: str) -> None:
        for part in ("vocab", "terms", "stem", "raw", ""):
            self.store.write(f"DROP TABLE IF EXISTS {table(name, part)}")

    # -- documents --------------------------------------------------------

    def upsert(self, name: str, fields: list[str], docs: list[Doc], build: int,
               known: set[str] | None = None) -> None:
        """Store documents (one item in one locale each), in few statements:
        a build writes 500 items at a time. Their words join the vocabulary
        (for typo correction); `known` spares a build re-adding words it has
        already added."""
        if not docs:
            return
        write, many = self.store.write, self.store.writer_executemany
        names = ", ".join([*columns(len(fields)), LOCALE_COLUMN])
        words = {t for doc in docs for text in doc.texts for t in tokens(text)}
        new_terms = words - known if known is not None else words
        if new_terms:
            many(f"INSERT OR IGNORE INTO {table(name, 'terms')} (term) VALUES (?)", [(t,) for t in new_terms])
            if known is not None:
                known |= new_terms
        ids = list({doc.id for doc in docs})
        marks = ", ".join("?" for _ in ids)
        existing = {(r[0], r[1]): r[2] for r in write(
            f"SELECT id, locale, rowid FROM {table(name)} WHERE id IN ({marks})", ids)}
        next_rowid = int(write(f"SELECT coalesce(max(rowid), 0) FROM {table(name)}").fetchone()[0]) + 1
        inserts, updates, texts = [], [], []
        for doc in docs:
            data = orjson.dumps(doc.stored).decode()
            rowid = existing.get((doc.id, doc.locale))
            if rowid is None:
                rowid, next_rowid = next_rowid, next_rowid + 1  # we hold the write lock
                inserts.append((rowid, doc.id, doc.locale, build, data))
            else:
                updates.append((build, data, rowid))
            texts.append((rowid, *(index_text(t) for t in doc.texts), locale_term(doc.locale)))
        if updates:
            many(f"UPDATE {table(name)} SET build = ?, data = ? WHERE rowid = ?", updates)
            for part in ("stem", "raw"):
                many(f"DELETE FROM {table(name, part)} WHERE rowid = ?", [(u[2],) for u in updates])
        if inserts:
            many(f"INSERT INTO {table(name)} (rowid, id, locale, build, data) VALUES (?, ?, ?, ?, ?)", inserts)
        values = ", ".join("?" for _ in range(len(fields) + 2))
        for part in ("stem", "raw"):
            many(f"INSERT INTO {table(name, part)} (rowid, {names}) VALUES ({values})", texts)

    def delete(self, name: str, doc_id: str) -> None:
        self._delete_where(name, "id = ?", (doc_id,))

    def clear(self, name: str) -> int:
        return self._delete_where(name, "1", ())

    def rename_fields(self, name: str, renames: dict[str, str]) -> None:
        # FTS5 columns are named by position, so only the stored JSON changes
        self.store.collection(f"sx:{name}").move_keys(renames)

    def delete_stale(self, name: str, build: int) -> int:
        """Rows a rebuild did not write again: items that left the index."""
        return self._delete_where(name, "build != ?", (build,))

    def _delete_where(self, name: str, where: str, params: tuple[Any, ...]) -> int:
        write = self.store.write
        rowids = [r[0] for r in write(f"SELECT rowid FROM {table(name)} WHERE {where}", params)]
        for rowid in rowids:
            write(f"DELETE FROM {table(name, 'stem')} WHERE rowid = ?", (rowid,))
            write(f"DELETE FROM {table(name, 'raw')} WHERE rowid = ?", (rowid,))
            write(f"DELETE FROM {table(name)} WHERE rowid = ?", (rowid,))
        return len(rowids)

    def count(self, name: str) -> int:
        """Items in the index (each counted once, whatever its locales)."""
        return int(self.store.execute_read(f"SELECT count(DISTINCT id) FROM {table(name)}").fetchone()[0])

    # -- queries ----------------------------------------------------------

    def typo_variants(self, name: str, word: str) -> list[str]:
        """Terms one edit away from a word of 5+ letters, two from 9+ (an
        edit: a letter added, removed, replaced, or two swapped). The
        first letter is taken as typed: the candidates are one range of the
        vocabulary table. Words of deleted documents stay in the vocabulary;
        a correction to such a word simply finds nothing."""
        if len(word) < 5 or not word.isalpha():
            return []
        edits = 2 if len(word) >= 9 else 1
        first = word[0]
        terms = [r[0] for r in self.store.execute_read(
            f"SELECT term FROM {table(name, 'terms')} WHERE term >= ? AND term < ? "
            "AND length(term) BETWEEN ? AND ?",
            (first, chr(ord(first) + 1), len(word) - edits, len(word) + edits))]
        found = process.extract(word, terms, scorer=OSA.distance, score_cutoff=edits, limit=8)
        return [term for term, _, _ in found if term != word]

    def search(self, name: str, query: Query, locale: str, locales: int, node: Node | None,
               weights: list[float], limit: int, offset: int, typos: bool = True) -> tuple[list[Hit], int]:
        """The page of hits and the exact total. Without a filter every part
        of the query is one FTS5 top-k query and the total one count over
        the union of their rows; a filter on stored fields joins the
        documents (slower, exact all the same)."""
        parts = self._parts(name, query, locale if locales > 1 else None, weights, typos)
        if node is not None:
            return self._filtered(name, parts, locale, node, limit, offset)
        best: dict[int, float] = {}
        k = offset + limit
        for part in parts:
            if part.tier and len(best) >= k:
                break  # typo-only hits rank after every exact one: this page has none
            sql, params = part.scored()
            for rowid, score in self.store.execute_read(f"{sql} ORDER BY 2 LIMIT ?", [*params, k]):
                key = part.tier * TIER + score
                if rowid not in best or key < best[rowid]:
                    best[rowid] = key
        total = self._count(parts)
        page = sorted(best.items(), key=lambda kv: (kv[1], kv[0]))[offset:offset + limit]
        return self._hits(name, page, _floor(best.values())), total

    def _count(self, parts: list[Part]) -> int:
        """Rows matching any part. The typo part holds every row of the
        exact part (its words are the exact words or their variants), so
        the exact part is left out of the union then."""
        if any(p.tier for p in parts):
            parts = [p for p in parts if p.tier or p.table.endswith(':raw"')]
        sql = " UNION ".join(p.rows()[0] for p in parts)
        params = [x for p in parts for x in p.rows()[1]]
        return int(self.store.execute_read(f"SELECT count(*) FROM ({sql})", params).fetchone()[0])

    def _filtered(self, name: str, parts: list[Part], locale: str, node: Node, limit: int,
                  offset: int) -> tuple[list[Hit], int]:
        where, where_params = compile_filter(node, {"_id": "id"})
        parts = [replace(p, ranked=None) for p in parts]  # the total counts these rows: all of them
        scored = [p.scored() for p in parts]
        keyed = " UNION ALL ".join(f"SELECT rid, {p.tier * TIER} + sc FROM ({sql})"
                                   for p, (sql, _) in zip(parts, scored, strict=True))
        params = [x for _, ps in scored for x in ps]
        head = f"WITH hits(rid, k) AS MATERIALIZED ({keyed}), best AS (SELECT rid, MIN(k) AS k FROM hits GROUP BY rid) "
        tail = f" FROM best JOIN {table(name)} AS d ON d.rowid = best.rid WHERE d.locale = ? AND {where}"

        def select(cols: str) -> str:  # joined, not str.format: the filter's SQL may hold braces
            return head + "SELECT " + cols + tail

        args = [*params, locale, *where_params]
        total = int(self.store.execute_read(select("count(*)"), args).fetchone()[0])
        rows = self.store.execute_read(select("best.rid, best.k") + " ORDER BY best.k, best.rid LIMIT ? OFFSET ?",
                                       [*args, limit, offset]).fetchall()
        floor = None
        if rows and rows[-1][1] >= TIER / 2:  # typo hits on this page: every exact one is scored below
            floor = _floor(k for (k,) in self.store.execute_read(
                select("best.k") + " AND best.k < ?", [*args, TIER / 2]))
        return self._hits(name, [(r[0], r[1]) for r in rows], floor), total

    def _hits(self, name: str, page: list[tuple[int, float]], floor: float | None = None) -> list[Hit]:
        """Documents of a page. A typo-only hit's score is squeezed below
        `floor`, the lowest exact score of the query, so scores never rise
        down the list."""
        if not page:
            return []
        marks = ", ".join("?" for _ in page)
        docs = {r[0]: r for r in self.store.execute_read(
            f"SELECT rowid, id, data FROM {table(name)} WHERE rowid IN ({marks})", [r for r, _ in page])}
        hits = []
        for rowid, key in page:
            if rowid not in docs:
                continue
            tier = 1 if key >= TIER / 2 else 0
            score = -(key - tier * TIER)
            if tier:
                score = (floor if floor is not None else 1.0) * score / (score + 1)
            hits.append(Hit(docs[rowid][1], orjson.loads(docs[rowid][2]), score, rowid))
        return hits

    def _parts(self, name: str, query: Query, locale: str | None, weights: list[float],
               typos: bool) -> list[Part]:
        """Exact: every word (stemmed) and phrase. Prefix: the words but the
        last, and the last as a prefix of an unstemmed term. Typos: each
        word or a term a typo away from it (ranked after the others)."""
        stem, raw = table(name, "stem"), table(name, "raw")
        w = ", ".join(str(x) for x in [*weights, 0.0])
        n = len(weights)

        def match(terms: list[str]) -> str:
            scope = [f"{LOCALE_COLUMN} : {quoted(locale_term(locale))}"] if locale else []
            return " AND ".join([*scope, scoped(n, " AND ".join(terms))])

        phrases = [quoted(" ".join(p)) for p in query.phrases]
        words = [term(x) for x in query.words]
        parts = [Part(0, stem, w, match(words + phrases))]
        if query.prefix:
            rest = words[:-1] + phrases
            parts.append(Part(0, raw, w, match([quoted(query.prefix) + "*"]),
                              within=(stem, match(rest)) if rest else None, ranked=PREFIX_RANKED))
        if typos:
            fuzzy, changed = [], False
            for word in query.words:
                variants = self.typo_variants(name, word)
                changed = changed or bool(variants)
                # the word as the exact part has it (so this part holds all its rows), or a variant
                fuzzy.append("(" + " OR ".join([term(word), *(quoted(t) for t in variants)]) + ")")
            if changed:
                parts.append(Part(1, stem, w, match(fuzzy + phrases)))
        return parts

    def highlight(self, name: str, columns: list[str], hits: list[Hit], query: Query, fields: list[str]) -> None:
        """`_formatted`: each returned field's text with the matched words in
        <mark> (HTML-escaped), a snippet for long text."""
        if not hits:
            return
        stem = table(name, "stem")
        terms = [quoted(x) for x in query.words] + [quoted(" ".join(p)) for p in query.phrases]
        for word in query.words:
            terms += [quoted(t) for t in self.typo_variants(name, word)]
        wanted = [(i, f) for i, f in enumerate(columns) if f in fields]
        selects = ", ".join(
            f"highlight({stem}, {i}, '{MARK_OPEN}', '{MARK_CLOSE}'), "
            f"snippet({stem}, {i}, '{MARK_OPEN}', '{MARK_CLOSE}', '…', 24)" for i, _ in wanted)
        marks = ", ".join("?" for _ in hits)
        found: dict[int, list[Any]] = {}
        if terms and selects:
            rows = self.store.execute_read(
                f"SELECT rowid, {selects} FROM {stem} WHERE {stem} MATCH ? AND rowid IN ({marks})",
                [scoped(len(columns), " OR ".join(terms)), *[h.rowid for h in hits]]).fetchall()
            found = {r[0]: list(r[1:]) for r in rows}
        if not found or len(found) < len(hits):  # rows matched only by the prefix: cut here
            rows = self.store.execute_read(
                f"SELECT rowid, {', '.join(f'f{i}' for i, _ in wanted)} FROM {stem} WHERE rowid IN ({marks})",
                [h.rowid for h in hits]).fetchall()
            for r in rows:
                found.setdefault(r[0], [v for text in r[1:] for v in (text, _around(text or "", query.prefix))])
        for hit in hits:
            values = found.get(hit.rowid, [])
            formatted = {}
            for n, (_, column) in enumerate(wanted):
                full, snip = (values[2 * n], values[2 * n + 1]) if values else ("", "")
                text = full if len((full or "").replace(MARK_OPEN, "").replace(MARK_CLOSE, "")) <= SNIPPET_AT else snip
                formatted[column] = _marked(text or "", query.prefix)
            hit.data["_formatted"] = formatted


def _around(text: str, prefix: str | None, words: int = 24) -> str:
    """A snippet of `text` around the first word starting with `prefix`."""
    tokens_at = [m for m in _WORD.finditer(text)]
    if len(text) <= SNIPPET_AT or not tokens_at:
        return text
    first = next((i for i, m in enumerate(tokens_at) if prefix and fold(m.group(0)).startswith(prefix)), 0)
    lo = max(0, first - words // 2)
    hi = min(len(tokens_at) - 1, lo + words - 1)
    snippet = text[tokens_at[lo].start():tokens_at[hi].end()]
    return ("…" if lo else "") + snippet + ("…" if hi < len(tokens_at) - 1 else "")


def _floor(keys: Iterable[float]) -> float | None:
    """The lowest exact score (as a positive number) among sort keys."""
    exact = [-k for k in keys if k < TIER / 2]
    return min(exact) if exact else None


def _marked(text: str, prefix: str | None) -> str:
    """Escape the text, turn the markers into <mark>, and mark the words
    that start with the unfinished last word."""
    out = []
    for i, part in enumerate(re.split(f"[{MARK_OPEN}{MARK_CLOSE}]", text)):
        out.append(f"<mark>{html.escape(part)}</mark>" if i % 2 else _mark_prefix(part, prefix))
    return "".join(out)


def _mark_prefix(text: str, prefix: str | None) -> str:
    if not prefix:
        return html.escape(text)
    pieces, last = [], 0
    for m in _WORD.finditer(text):
        if fold(m.group(0)).startswith(prefix):
            pieces += [html.escape(text[last:m.start()]), f"<mark>{html.escape(m.group(0))}</mark>"]
            last = m.end()
    pieces.append(html.escape(text[last:]))
    return "".join(pieces)
