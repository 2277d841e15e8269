"""A search query as the user typed it, split into what the engine needs.

`mars "crew missions" mis` -> words [mars, mis] (all required), the phrase
[crew, missions], and the last word `mis` also taken as a prefix because
the user may still be typing it. Words are folded the way the index folds
text (case, accents), so the engine can compare them with its terms.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

_TOKEN = re.compile(r"\w+", re.UNICODE)
_PHRASE = re.compile(r'"([^"]*)"?')
MAX_TERMS = 32


def fold(text: str) -> str:
    """Lower case, accents removed, ligatures unfolded, `ß` as `ss`: the
    index holds words folded so, and queries are folded the same way."""
    if text.isascii():  # most text: nothing to decompose
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower().replace("ß", "ss"))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    found = _TOKEN.findall(fold(text))
    return [t for t in found if t.strip("_")] if "_" in text else found


@dataclass
class Query:
    text: str
    words: list[str] = field(default_factory=list)
    phrases: list[list[str]] = field(default_factory=list)
    prefix: str | None = None  # the last word, when it may be unfinished

    @property
    def empty(self) -> bool:
        return not self.words and not self.phrases


def parse(text: str) -> Query:
    query = Query(text)
    rest = _PHRASE.sub(lambda m: _keep_phrase(query, m.group(1)), text)
    query.words = tokens(rest)[:MAX_TERMS]
    ends_open = bool(rest.rstrip() == rest and query.words and not text.rstrip().endswith('"'))
    if ends_open:
        query.prefix = query.words[-1]
    return query


def _keep_phrase(query: Query, inner: str) -> str:
    words = tokens(inner)
    if len(words) > 1:
        query.phrases.append(words[:MAX_TERMS])
        return " "
    return f" {' '.join(words)} "  # a one-word phrase is a word
