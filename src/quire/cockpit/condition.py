"""Cockpit's field conditions (`condition`: a JavaScript expression its
admin runs in the browser, `data.category == 'events'`) as Quire's
`showWhen` JSON Logic rules (content/conditions.py), for the simple ones:
comparisons of `data.<field>` with a literal, and a field alone (`data.x`,
`!data.x`), joined by `&&` or `||` without parentheses. Any other
expression is not guessed at: None, and the import names it."""

from __future__ import annotations

import json
import re
from typing import Any

TERM = re.compile(
    r"""^\s*(?P<not>!)?\s*data\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*"""
    r"""(?:(?P<op>===|!==|==|!=|>=|<=|>|<)\s*(?P<value>'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null))?\s*$""")
MAX_TEXT = 500


def to_rule(text: Any, names: dict[str, str] | None = None) -> dict[str, Any] | None:
    """The JSON Logic rule of a simple condition (field names through
    `names`, the import's renames); None for anything else."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT or any(c in text for c in "()[]{};`"):
        return None
    alternatives = []
    for part in text.split("||"):
        terms = []
        for piece in part.split("&&"):
            term = _term(piece, names or {})
            if term is None:
                return None
            terms.append(term)
        alternatives.append(terms[0] if len(terms) == 1 else {"and": terms})
    return alternatives[0] if len(alternatives) == 1 else {"or": alternatives}


def _term(text: str, names: dict[str, str]) -> dict[str, Any] | None:
    found = TERM.match(text)
    if found is None:
        return None
    field = {"var": names.get(found["name"], found["name"])}
    if found["op"] is None:
        return {"!": [field]} if found["not"] else {"!!": [field]}
    if found["not"]:
        return None  # `!data.x == 1` binds as (!data.x) == 1: not what it looks like
    return {found["op"]: [field, _literal(found["value"])]}


def _literal(text: str) -> Any:
    if text[0] == "'":  # a JavaScript single-quoted string, as JSON
        text = '"' + text[1:-1].replace('\\"', '"').replace("\\'", "'").replace('"', '\\"') + '"'
    return json.loads(text)
