"""The embedded engine: tantivy (the Rust full-text library, through its
Python binding), one directory per generation of an index:
`<data>/search/<name>/<generation>`.

Per document (an item in a locale): `id` (stored, for the hit), `lc` (its locale),
and per field `f<i>`, its words stemmed (English Snowball) with positions
(for phrases), `p<i>`, the same words unstemmed (the vocabulary for typo
correction, and long prefixes), and `x<i>`, the first 2 to 6 letters of
each word: the last word typed, when it is that short, is one term
(scored by BM25 like a word) instead of an expansion over the vocabulary.
Fields go by position, so a field renamed changes nothing here. The text
arrives folded (case, accents, ligatures, `ß` -> `ss`) by
`query.tokens`, the same code that folds the queries.

Ranking is BM25 with per-field weights (boosts); tantivy ranks only the
top k (block-max WAND) and counts the rest, so a query costs little even
when it matches most documents.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import tantivy
from rapidfuzz import process
from rapidfuzz.distance import OSA
from tantivy import Occur, Query

from quire.errors import Unavailable
from quire.searchmod.engine import Doc, Hit
from quire.searchmod.query import Query as Parsed
from quire.searchmod.query import tokens

STEM, RAW, EDGE = "quire_stem", "quire_raw", "quire_edge"
WRITER_HEAP = 32 * 1024 * 1024  # catching up: a few items at a time
BUILD_HEAP = 1024 * 1024 * 1024  # a build: few segments (a query visits each), at most 1 GB while it runs
LONGEST = 64  # longer "words" (hashes, base64) are left out, as a search never types them
MAX_VARIANTS = 8
EDGES = range(2, 7)  # prefix lengths indexed as terms of their own


def _analyzer(stemmed: bool) -> tantivy.TextAnalyzer:
    builder = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.whitespace()).filter(tantivy.Filter.remove_long(LONGEST))
    return (builder.filter(tantivy.Filter.stemmer("english")) if stemmed else builder).build()


_STEMMER = _analyzer(True)


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A folded word as the stemmed fields hold it."""
    found = _STEMMER.analyze(word)
    return found[0] if found else word


def schema(fields: int) -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("lc", tokenizer_name="raw", index_option="basic")
    for i in range(fields):
        builder.add_text_field(f"f{i}", tokenizer_name=STEM, index_option="position")
        builder.add_text_field(f"p{i}", tokenizer_name=RAW, index_option="freq")
        builder.add_text_field(f"x{i}", tokenizer_name=EDGE, index_option="freq")
    return builder.build()


def _opened(index: tantivy.Index) -> tantivy.Index:
    index.register_tokenizer(STEM, _analyzer(True))
    index.register_tokenizer(RAW, _analyzer(False))
    # `x<i>` gets each word as a value of its own: its first 2 to 6 letters are its terms
    index.register_tokenizer(EDGE, tantivy.TextAnalyzerBuilder(
        tantivy.Tokenizer.ngram(EDGES.start, EDGES.stop - 1, True)).build())
    return index


@dataclass
class _Reader:
    """An open generation in this process: its searcher is reloaded when
    a writer (of any process) has committed since."""

    index: tantivy.Index
    schema: tantivy.Schema
    meta: str
    stamp: tuple[int, int, int]
    searcher: tantivy.Searcher
    vocabulary: dict[str, list[str]] = field(default_factory=dict)  # first letter -> words
    deletions: dict[str, dict[str, list[str]]] = field(default_factory=dict)  # letter -> key -> words


class _Writer:
    def __init__(self, index: tantivy.Index, fields: int, heap: int) -> None:
        self.fields = fields
        self.writer = index.writer(heap, 1)

    def add(self, docs: list[Doc]) -> None:
        for doc in docs:
            values: dict[str, Any] = {"id": doc.id, "lc": doc.locale}
            for i, text in enumerate(doc.texts[:self.fields]):
                words = tokens(text)
                values[f"f{i}"] = values[f"p{i}"] = " ".join(words)
                values[f"x{i}"] = words
            self.writer.add_document(tantivy.Document(**values))

    def replace(self, item_id: str, docs: list[Doc]) -> None:
        self.writer.delete_documents_by_term("id", item_id)
        self.add(docs)

    def clear(self) -> None:
        self.writer.delete_all_documents()

    def commit(self) -> None:
        self.writer.commit()
        self.writer.wait_merging_threads()  # ends the writer: its lock is free again

    def abort(self) -> None:
        """Drop what was not committed and free the engine's lock."""
        with contextlib.suppress(Exception):  # a writer that already failed may refuse either
            self.writer.rollback()
        with contextlib.suppress(Exception):
            self.writer.wait_merging_threads()


@contextlib.contextmanager
def file_lock(root: Path, name: str) -> Iterator[bool]:
    """The index's writer lock if free (True), without waiting."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f"{name}.lock", os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class TantivyEngine:
    def __init__(self, root: Path) -> None:
        self.root = root
        self._readers: dict[tuple[str, int], _Reader] = {}

    def writer_lock(self, name: str) -> AbstractContextManager[bool]:
        """A file lock beside the index (the processes of one machine)."""
        return file_lock(self.root, name)

    def path(self, name: str, generation: int) -> Path:
        return self.root / name / str(generation)

    # -- writing ----------------------------------------------------------

    def writer(self, name: str, generation: int, fields: int, fresh: bool = False) -> _Writer:
        path = self.path(name, generation)
        if fresh:
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
            index = _opened(tantivy.Index(schema(fields), str(path), reuse=False))
            return _Writer(index, fields, BUILD_HEAP)
        return _Writer(_opened(tantivy.Index.open(str(path))), fields, WRITER_HEAP)

    def drop(self, name: str, keep: int | None = None) -> None:
        for key in [k for k in self._readers if k[0] == name and k[1] != keep]:
            del self._readers[key]
        folder = self.root / name
        if not folder.is_dir():
            return
        for entry in folder.iterdir():
            if entry.name != str(keep):
                shutil.rmtree(entry, ignore_errors=True)
        if keep is None:
            shutil.rmtree(folder, ignore_errors=True)

    # -- reading ----------------------------------------------------------

    def _reader(self, name: str, generation: int) -> _Reader:
        found = self._readers.get((name, generation))
        try:
            meta = os.stat(found.meta if found else self.path(name, generation) / "meta.json")
        except FileNotFoundError:
            self._readers.pop((name, generation), None)
            raise Unavailable(f"Index '{name}' has lost its files: rebuild it") from None
        stamp = (meta.st_ino, meta.st_mtime_ns, meta.st_size)  # tantivy replaces the file on every commit
        if found is None:
            path = self.path(name, generation)
            index = _opened(tantivy.Index.open(str(path)))
            index.config_reader("Manual")
            index.reload()
            found = self._readers[(name, generation)] = _Reader(index, index.schema, str(path / "meta.json"), stamp,
                                                                index.searcher())
        elif found.stamp != stamp:
            found.index.reload()
            found.searcher = found.index.searcher()
            found.stamp = stamp
            found.vocabulary, found.deletions = {}, {}
        return found

    def count(self, name: str, generation: int, locale: str) -> int:
        reader = self._reader(name, generation)
        return _count(reader.searcher.search(Query.term_query(reader.schema, "lc", locale), 1, count=True))

    def variants(self, name: str, generation: int, fields: int, word: str) -> list[str]:
        return self._variants(self._reader(name, generation), fields, word)

    def _variants(self, reader: _Reader, fields: int, word: str) -> list[str]:
        """Words one edit away from a word of 5+ letters, two from 9+ (an
        edit: a letter added, removed, replaced, or two neighbours swapped).
        The first letter is taken as typed, so the candidates are the
        words of one letter (read from the index once per commit). For one
        edit they come from a table of the words with one letter (not the
        first) left out: two words one edit apart share such a key, so only
        those few are measured."""
        if len(word) < 5 or not word.isalpha():
            return []
        letter = word[0]
        words = reader.vocabulary.get(letter)
        if words is None:
            words = reader.vocabulary[letter] = sorted(
                {t for n in range(fields) for t, _ in reader.searcher.terms_with_prefix(f"p{n}", letter)})
        if len(word) >= 9:
            candidates = [t for t in words if abs(len(t) - len(word)) <= 2]
            found = process.extract(word, candidates, scorer=OSA.distance, score_cutoff=2, limit=MAX_VARIANTS)
            return [t for t, _, _ in found if t != word]
        table = reader.deletions.get(letter)
        if table is None:
            table = reader.deletions[letter] = {}
            for t in words:
                for key in _deletions(t):
                    table.setdefault(key, []).append(t)
        near = {t for key in _deletions(word) for t in table.get(key, ()) if t != word}
        scored = sorted((OSA.distance(word, t), t) for t in near)
        return [t for distance, t in scored if distance <= 1][:MAX_VARIANTS]

    def search(self, name: str, generation: int, query: Parsed, locale: str | None, weights: list[float],
               limit: int, offset: int, typos: bool = True) -> tuple[list[Hit], int]:
        """Exact hits (every word stemmed, every phrase; or the words but the
        last and the last as a prefix) rank first; hits found only through
        a corrected typo follow, their scores squeezed below the lowest
        exact score so scores never rise down the list."""
        reader = self._reader(name, generation)
        searcher, plan = reader.searcher, _Plan(reader.schema, weights)
        scope = [Query.const_score_query(Query.term_query(reader.schema, "lc", locale), 0.0)] if locale else []
        phrases = [plan.phrase(p) for p in query.phrases]
        words = [plan.word(w) for w in query.words]
        exact = _all([*scope, *words, *phrases])
        if query.prefix:
            prefixed = _all([*scope, *words[:-1], *phrases, plan.prefix(query.prefix)])
            exact = Query.boolean_query([(Occur.Should, exact), (Occur.Should, prefixed)])
        found = searcher.search(exact, max(limit, 1), count=True, offset=offset)
        exact_total = _count(found)
        page = [(score, address) for score, address in found.hits][:limit]
        total = exact_total
        fuzzy = self._fuzzy(reader, plan, query, scope, phrases) if typos else None
        if fuzzy is not None:
            only = Query.boolean_query([(Occur.Must, fuzzy), (Occur.MustNot, exact)])
            wanted = limit - len(page)
            more = searcher.search(only, max(wanted, 1), count=True, offset=max(0, offset - exact_total))
            total += _count(more)
            if wanted > 0 and more.hits:
                floor = 1.0
                if page:
                    floor = page[-1][0]
                elif exact_total:
                    floor = searcher.search(exact, 1, count=False, offset=exact_total - 1).hits[0][0]
                page += [(floor * s / (s + 1), a) for s, a in more.hits[:wanted]]
        return [Hit(str(searcher.doc(a).get_first("id")), float(s)) for s, a in page], total

    def _fuzzy(self, reader: _Reader, plan: _Plan, query: Parsed, scope: list[Query],
               phrases: list[Query]) -> Query | None:
        """Each word, or a word a typo away from it; None when no word has
        such a neighbour."""
        parts, changed = [], False
        for word in query.words:
            variants = self._variants(reader, len(plan.weights), word)
            changed = changed or bool(variants)
            parts.append(Query.boolean_query([(Occur.Should, plan.word(word)),
                                              *((Occur.Should, plan.raw(v)) for v in variants)]))
        return _all([*scope, *parts, *phrases]) if changed else None


class _Plan:
    """Query pieces over every field of an index, each field boosted by its weight."""

    def __init__(self, schema: tantivy.Schema, weights: list[float]) -> None:
        self.schema = schema
        self.weights = weights

    def _any(self, make: object) -> Query:
        assert callable(make)
        return Query.boolean_query([(Occur.Should, Query.boost_query(make(i), w)) for i, w in enumerate(self.weights)])

    def word(self, word: str) -> Query:
        stemmed = stem(word)
        return self._any(lambda i: Query.term_query(self.schema, f"f{i}", stemmed))

    def raw(self, word: str) -> Query:
        return self._any(lambda i: Query.term_query(self.schema, f"p{i}", word))

    def phrase(self, words: list[str]) -> Query:
        stems: list[str | tuple[int, str]] = [stem(w) for w in words]
        return self._any(lambda i: Query.phrase_query(self.schema, f"f{i}", stems))

    def prefix(self, prefix: str) -> Query:
        if len(prefix) in EDGES:
            return self._any(lambda i: Query.term_query(self.schema, f"x{i}", prefix))
        if len(prefix) >= LONGEST:
            return Query.empty_query()  # no word that long is indexed
        # the prefix is word characters only (`tokens`): nothing in it is regex syntax
        return self._any(lambda i: Query.regex_query(self.schema, f"p{i}", prefix + ".*"))


def _deletions(word: str) -> set[str]:
    """The word, and the word with one letter but the first left out."""
    return {word, *(word[:i] + word[i + 1:] for i in range(1, len(word)))}


def _all(queries: list[Query]) -> Query:
    return queries[0] if len(queries) == 1 else Query.boolean_query([(Occur.Must, q) for q in queries])


def _count(result: tantivy.SearchResult) -> int:
    """The exact number of matches (asked with `count=True`; the binding's
    type stubs do not declare the attribute)."""
    return int(result.count)  # type: ignore[attr-defined]
