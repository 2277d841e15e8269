"""MongoDB value semantics for JSON values: type classes, ordering, equality.

JSON has six of BSON's types. MongoDB orders values of different types by a
fixed type rank (null < numbers < strings < objects < arrays < booleans) and
compares values of one class by value: numbers numerically (int and float
alike), strings by code point, objects field by field in stored key order,
arrays element by element. Query comparisons ($gt, $lt, ...) only ever match
values of the query value's own class ("type bracketing").
"""

from __future__ import annotations

import math
import re
from typing import Any

NULL, NUMBER, STRING, OBJECT, ARRAY, BOOL = 1, 2, 3, 4, 5, 8

# $type aliases and BSON type codes that JSON documents can carry.
TYPE_ALIASES = {
    "double": 1, "string": 2, "object": 3, "array": 4, "bool": 8, "null": 10,
    "int": 16, "long": 18, "number": -1,
}
TYPE_CODES = set(TYPE_ALIASES.values()) | {19}  # 19 = decimal; never stored by JSON
_INT32 = 2**31
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# MongoDB's own nesting limit for documents. Deeper values would reach code
# that recurses (orjson's encoder stops at 254 levels, Python at ~1,000).
MAX_NESTING = 100
_BAD_TEXT = re.compile(r"[\x00\ud800-\udfff]")


class _BelowNull:
    """The sort key of an empty array: MongoDB orders it before null."""

    def __repr__(self) -> str:
        return "BELOW_NULL"


BELOW_NULL: Any = _BelowNull()


def rank(value: Any) -> int:
    if value is BELOW_NULL:
        return 0
    if value is None:
        return NULL
    if value is True or value is False:
        return BOOL
    if isinstance(value, int | float):
        return NUMBER
    if isinstance(value, str):
        return STRING
    if isinstance(value, dict):
        return OBJECT
    if isinstance(value, list):
        return ARRAY
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def bad_text(text: str) -> bool:
    """Text that SQLite, the file system and RE2 cannot take: a NUL
    character or a lone surrogate (`"\\ud800"` is valid JSON5 and JSON escape
    syntax, but no Unicode text)."""
    return _BAD_TEXT.search(text) is not None


def unsafe(value: Any) -> str | None:
    """Why a JSON value from a request cannot be queried or stored, or None:
    a number that is not finite (JSON5's NaN, Infinity) or an integer outside
    the 64-bit range SQLite holds, or text (a key or a string) with a NUL
    character or a lone surrogate, or nesting deeper than MAX_NESTING arrays
    and objects. Walks without recursion: values can nest as deep as the JSON
    parser allows."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list) and depth > MAX_NESTING:
            return f"is nested deeper than {MAX_NESTING} levels"
        if isinstance(node, str):
            if bad_text(node):
                return "contains a NUL character or a lone surrogate"
        elif isinstance(node, bool) or node is None:
            continue
        elif isinstance(node, int):
            if not INT64_MIN <= node <= INT64_MAX:
                return "contains an integer outside -2^63 .. 2^63-1"
        elif isinstance(node, float):
            if not math.isfinite(node):
                return "contains a number that is not finite (NaN or Infinity)"
        elif isinstance(node, dict):
            for key in node:
                if isinstance(key, str) and bad_text(key):
                    return "contains a NUL character or a lone surrogate"
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list):
            stack.extend((child, depth + 1) for child in node)
    return None


def compare(a: Any, b: Any) -> int:
    """-1, 0 or 1 in MongoDB's total order of values."""
    ra, rb = rank(a), rank(b)
    if ra != rb:
        return -1 if ra < rb else 1
    if ra in (NULL, 0):
        return 0
    if ra in (NUMBER, STRING, BOOL):
        return (a > b) - (a < b)
    if ra == OBJECT:
        for (ka, va), (kb, vb) in zip(a.items(), b.items(), strict=False):
            c = _cmp_int(rank(va), rank(vb)) or _cmp_str(ka, kb) or compare(va, vb)
            if c:
                return c
        return _cmp_int(len(a), len(b))
    for va, vb in zip(a, b, strict=False):
        c = compare(va, vb)
        if c:
            return c
    return _cmp_int(len(a), len(b))


def _cmp_int(a: int, b: int) -> int:
    return (a > b) - (a < b)


def _cmp_str(a: str, b: str) -> int:
    return (a > b) - (a < b)


def equal(a: Any, b: Any) -> bool:
    return rank(a) == rank(b) and compare(a, b) == 0


def type_codes(value: Any) -> set[int]:
    """The BSON type codes (and -1 for "number") that `value` answers to."""
    r = rank(value)
    if r == NULL:
        return {10}
    if r == BOOL:
        return {8}
    if r == STRING:
        return {2}
    if r == OBJECT:
        return {3}
    if r == ARRAY:
        return {4}
    if isinstance(value, float):
        return {1, -1}
    return {16 if -_INT32 <= value < _INT32 else 18, -1}


def sort_key_value(values: list[Any], descending: bool) -> Any:
    """The value MongoDB sorts a document by, given a field's candidate values:
    the smallest (ascending) or largest (descending) of them; missing is null."""
    if not values:
        return None
    best = values[0]
    for v in values[1:]:
        c = compare(v, best)
        if (c > 0) if descending else (c < 0):
            best = v
    return best


class SortKey:
    """Wraps a value so Python's sort uses MongoDB ordering."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __lt__(self, other: SortKey) -> bool:
        return compare(self.value, other.value) < 0

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SortKey) and compare(self.value, other.value) == 0

    __hash__ = None  # type: ignore[assignment]
