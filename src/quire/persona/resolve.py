"""Resolving variant containers and replacing variables.

A container is an object with the key `persona:variants`, anywhere in an
answer: a field's value, inside sets, objects, lists and page layouts. For
an audience, each container becomes the `data` of its chosen variant (or
null): inactive variants and those outside their schedule are dropped;
the score is the Jaccard similarity of the request's audience and the
variant's; the highest wins, ties going to the earlier variant; without a
positive score the first eligible variant with an empty audience (the
guest variant) wins, else the first eligible one.

Variables replace `{{ name }}`, `{{ user.city }}` and `{{ name:Default }}`
in strings; values are HTML-escaped, an unknown name without a default
becomes empty text. Nothing here changes the data it is given.
"""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from quire.persona import schedule as schedules

KEY = "persona:variants"
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*)\s*(?::([^}]*?))?\s*\}\}")
_MISSING = object()


def resolve(data: Any, audience: Iterable[str] | None, *, tzoffset: int | None = None,
            variables: dict[str, Any] | None = None, now: datetime | None = None) -> Any:
    """A copy of `data` with containers resolved for `audience` (None:
    containers kept as they are) and, when `variables` are given, the
    placeholders replaced. `tzoffset` is the client's offset in minutes east
    of UTC; `now` defaults to the current time."""
    tags = None if audience is None else {a.strip() for a in audience if a and a.strip()}
    moment = now or datetime.now(UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return _walk(data, tags, tzoffset, variables, moment)


def _walk(value: Any, tags: set[str] | None, tzoffset: int | None, variables: dict[str, Any] | None,
          now: datetime) -> Any:
    """The resolved value; the very same object where nothing changes, so
    only the paths leading to a container or a placeholder are copied."""
    if isinstance(value, dict):
        if tags is not None and isinstance(value.get(KEY), list):
            chosen = choose(value[KEY], tags, tzoffset, now)
            return None if chosen is None else _walk(chosen.get("data"), tags, tzoffset, variables, now)
        out = None
        for k, v in value.items():
            if isinstance(v, dict | list):
                new = _walk(v, tags, tzoffset, variables, now)
            elif variables is not None and isinstance(v, str) and "{{" in v:
                new = substitute(v, variables)
            else:
                continue
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        return value if out is None else out
    if isinstance(value, list):
        items = [_walk(v, tags, tzoffset, variables, now) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if isinstance(value, str) and variables is not None and "{{" in value:
        return substitute(value, variables)
    return value


def choose(variants: list[Any], tags: set[str], tzoffset: int | None, now: datetime) -> dict[str, Any] | None:
    eligible = [v for v in variants if isinstance(v, dict) and _eligible(v, tzoffset, now)]
    best, best_score = None, 0.0
    for variant in eligible:
        score = jaccard(tags, _audience(variant))
        if score > best_score:  # strictly: ties keep the earlier variant
            best, best_score = variant, score
    if best is not None:
        return best
    guest = next((v for v in eligible if not _audience(v)), None)
    return guest if guest is not None else (eligible[0] if eligible else None)


def jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def _audience(variant: dict[str, Any]) -> set[str]:
    tags = variant.get("audience") or []
    return {t.strip() for t in tags if isinstance(t, str) and t.strip()} if isinstance(tags, list) else set()


def _eligible(variant: dict[str, Any], tzoffset: int | None, now: datetime) -> bool:
    if variant.get("active", True) is False:
        return False
    meta = variant.get("meta")
    schedule = meta.get("schedule") if isinstance(meta, dict) else None
    try:
        return schedules.is_open(schedule, now, tzoffset)
    except (schedules.ScheduleError, TypeError, ValueError):
        return False  # a schedule that cannot be read never opens


def substitute(text: str, variables: dict[str, Any]) -> str:
    literals, slots = _template(text)
    if not slots:
        return text
    parts = [literals[0]]
    for (path, default), literal in zip(slots, literals[1:], strict=True):
        parts.append(_value(_lookup(variables, path), default))
        parts.append(literal)
    return "".join(parts)


@functools.lru_cache(maxsize=4096)
def _template(text: str) -> tuple[tuple[str, ...], tuple[tuple[str, str | None], ...]]:
    """`text` split at its placeholders once: the literal parts around them
    and each placeholder's (name, default). Variant texts are few and read
    over and over (every row of a list page holds the same ones), so each
    is parsed once per process: a pure function of the text."""
    literals: list[str] = []
    slots: list[tuple[str, str | None]] = []
    last = 0
    for match in _PLACEHOLDER.finditer(text):
        literals.append(text[last:match.start()])
        slots.append((match.group(1), match.group(2)))
        last = match.end()
    literals.append(text[last:])
    return tuple(literals), tuple(slots)


def _value(value: Any, default: str | None) -> str:
    """What a placeholder becomes: the variable's value, HTML-escaped;
    the default (or empty text) when it is unknown, null, a list or an
    object."""
    if value is _MISSING or value is None or isinstance(value, dict | list):
        return default.strip() if default is not None else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return html.escape(str(value))


def _lookup(variables: dict[str, Any], path: str) -> Any:
    node: Any = variables
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node
