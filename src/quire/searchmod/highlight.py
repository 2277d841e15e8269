"""`_formatted` of a hit: a field's searchable text, HTML-escaped, with the
words the query matched in <mark>; a long field is a snippet around the
first match."""

from __future__ import annotations

import html
import re

from quire.searchmod.index import stem
from quire.searchmod.query import Query, fold

SNIPPET_AT = 300  # longer texts are answered as a snippet
SNIPPET_WORDS = 24
_WORD = re.compile(r"\w+", re.UNICODE)


class Marker:
    """Which words of a text the query matched: a word or phrase word of
    the query (stemmed as the index stems), a typo correction of one, or
    a word starting with the unfinished last word."""

    def __init__(self, query: Query, variants: set[str]) -> None:
        self.stems = {stem(w) for w in query.words} | {stem(w) for p in query.phrases for w in p}
        self.variants = variants
        self.prefix = query.prefix

    def matches(self, word: str) -> bool:
        folded = fold(word)
        return (stem(folded) in self.stems or folded in self.variants
                or (self.prefix is not None and folded.startswith(self.prefix)))

    def format(self, text: str) -> str:
        words = list(_WORD.finditer(text))
        marked = [self.matches(m.group(0)) for m in words]
        start, end, lead, tail = 0, len(text), "", ""
        if len(text) > SNIPPET_AT and words:
            first = next((i for i, hit in enumerate(marked) if hit), 0)
            lo = max(0, first - SNIPPET_WORDS // 2)
            hi = min(len(words) - 1, lo + SNIPPET_WORDS - 1)
            start, end = words[lo].start(), words[hi].end()
            lead, tail = ("…" if lo else ""), ("…" if hi < len(words) - 1 else "")
        out, at = [lead], start
        for m, hit in zip(words, marked, strict=True):
            if hit and start <= m.start() and m.end() <= end:
                out += [html.escape(text[at:m.start()]), f"<mark>{html.escape(m.group(0))}</mark>"]
                at = m.end()
        out += [html.escape(text[at:end]), tail]
        return "".join(out)
