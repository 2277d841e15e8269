"""Aggregation expressions and `$group` accumulators, MongoDB semantics.

An expression is parsed once into a callable taking the current document;
unknown operators and wrong argument counts are a `BadRequest` at parse
time, wrong value types (`$add` on a string) one at evaluation time. A field
path (`"$a.b"`) walks objects, and maps over arrays: `$a.b` on
`{"a": [{"b": 1}, {"b": 2}]}` is `[1, 2]`. A field that does not exist
evaluates to MISSING, which `$project`/`$addFields` leave out, comparisons
order below null and `$ifNull` replaces.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from quire.errors import BadRequest
from quire.store import values
from quire.store.match import MISSING

Expr = Callable[[Any], Any]
MAX_DEPTH = 32
# A value an expression builds (an array literal, a string, a $push array)
# may not exceed this many units (about bytes): with shared references, a
# few stages of `["$a", "$a"]` would otherwise double an answer each time.
MAX_VALUE_UNITS = 1_000_000
_INT64 = 2**63

ARITY: dict[str, tuple[int, int | None]] = {
    "$concat": (0, None), "$add": (0, None), "$multiply": (0, None),
    "$subtract": (2, 2), "$divide": (2, 2),
    "$toLower": (1, 1), "$toUpper": (1, 1), "$size": (1, 1),
    "$first": (1, 1), "$last": (1, 1), "$not": (1, 1),
    "$ifNull": (2, None), "$cond": (3, 3), "$in": (2, 2),
    "$and": (0, None), "$or": (0, None),
    "$eq": (2, 2), "$ne": (2, 2), "$gt": (2, 2), "$gte": (2, 2), "$lt": (2, 2), "$lte": (2, 2),
}


def parse_expression(spec: Any, depth: int = 0) -> Expr:
    """An expression: a field path, `$$ROOT`, a literal, an array or object
    of expressions, or a one-key `{"$operator": args}` object."""
    if depth > MAX_DEPTH:
        raise BadRequest("Pipeline expression is nested too deeply")
    if isinstance(spec, str) and spec.startswith("$"):
        return _parse_reference(spec)
    if isinstance(spec, list):
        items = [parse_expression(s, depth + 1) for s in spec]
        return lambda doc: bounded([_present(e(doc)) for e in items])
    if isinstance(spec, dict):
        if len(spec) == 1 and next(iter(spec)).startswith("$"):
            op, arg = next(iter(spec.items()))
            return _parse_operator(op, arg, depth)
        fields = []
        for key, sub in spec.items():
            check_field_name(key)
            fields.append((key, parse_expression(sub, depth + 1)))
        return lambda doc: bounded(_object(fields, doc))
    values.rank(spec)  # only JSON values
    return lambda doc: spec


def check_field_name(key: Any) -> None:
    if not isinstance(key, str) or not key or key.startswith("$") or "." in key:
        raise BadRequest(f"Invalid field name '{key}' in pipeline expression")


def _object(fields: list[tuple[str, Expr]], doc: Any) -> dict[str, Any]:
    out = {}
    for key, expr in fields:
        value = expr(doc)
        if value is not MISSING:
            out[key] = value
    return out


def _present(value: Any) -> Any:
    """Array elements that are missing become null, as in MongoDB."""
    return None if value is MISSING else value


def _parse_reference(spec: str) -> Expr:
    if spec.startswith("$$"):
        variable, dot, rest = spec.partition(".")
        if variable == "$$REMOVE" and not dot:
            return lambda doc: MISSING
        if variable not in ("$$ROOT", "$$CURRENT"):
            raise BadRequest(f"Unknown pipeline variable {variable}")
        if not dot:
            return lambda doc: doc
        spec = "$" + rest  # $$ROOT.a is $a: no stage here rebinds the current document
    path = parse_path(spec[1:], spec)
    return lambda doc: get_path(doc, path)


def parse_path(text: str, shown: str) -> tuple[str, ...]:
    parts = tuple(text.split("."))
    if any(not p or p.startswith("$") for p in parts):
        raise BadRequest(f"Invalid field path '{shown}' in pipeline")
    return parts


def get_path(value: Any, path: tuple[str, ...]) -> Any:
    """A field path's value: objects are walked, arrays mapped over (their
    elements where the rest of the path is missing are left out)."""
    for i, key in enumerate(path):
        if isinstance(value, dict):
            if key not in value:
                return MISSING
            value = value[key]
        elif isinstance(value, list):
            rest = path[i:]
            found = (get_path(e, rest) for e in value if isinstance(e, dict | list))
            return [v for v in found if v is not MISSING]
        else:
            return MISSING
    return value


def _parse_operator(op: str, arg: Any, depth: int) -> Expr:
    if op == "$literal":
        values.rank(arg)
        return lambda doc: arg
    if op not in ARITY:
        raise BadRequest(f"Unknown expression operator {op}")
    if op == "$cond" and isinstance(arg, dict):
        unknown = set(arg) - {"if", "then", "else"}
        if unknown or len(arg) != 3:
            raise BadRequest("$cond needs if, then and else")
        arg = [arg["if"], arg["then"], arg["else"]]
    raw_args = arg if isinstance(arg, list) else [arg]
    low, high = ARITY[op]
    if len(raw_args) < low or (high is not None and len(raw_args) > high):
        count = str(low) if low == high else f"at least {low}" if high is None else f"{low} to {high}"
        raise BadRequest(f"{op} needs {count} argument{'s' if count != '1' else ''}")
    args = [parse_expression(a, depth + 1) for a in raw_args]
    return _OPERATORS[op](args)


# ---------------------------------------------------------------- operators


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _nullish(value: Any) -> bool:
    return value is None or value is MISSING


def _type_name(value: Any) -> str:
    if value is MISSING:
        return "missing"
    return {1: "null", 2: "number", 3: "string", 4: "object", 5: "array", 8: "bool"}[values.rank(value)]


def number(value: Any) -> Any:
    """Keep results JSON-serialisable: integers beyond 64 bits become
    doubles, as MongoDB's long overflow does."""
    if isinstance(value, int) and not -_INT64 <= value < _INT64:
        return float(value)
    return value


def _arithmetic(op: str, args: list[Expr], fold: Callable[[Any, Any], Any], start: Any) -> Expr:
    def run(doc: Any) -> Any:
        result = start
        items = [a(doc) for a in args]
        for value in items:
            if _nullish(value):
                return None
            if not _is_number(value):
                raise BadRequest(f"{op} only supports numbers, not {_type_name(value)}")
        for value in items:
            result = number(fold(result, value))
        return result

    return run


def _two_numbers(op: str, a: Any, b: Any) -> bool:
    """False when either is null or missing (the answer is null); a 400
    naming the operator when either is not a number."""
    if _nullish(a) or _nullish(b):
        return False
    if not (_is_number(a) and _is_number(b)):
        raise BadRequest(f"{op} only supports numbers, not {_type_name(a if not _is_number(a) else b)}")
    return True


def _subtract(args: list[Expr]) -> Expr:
    def run(doc: Any) -> Any:
        a, b = args[0](doc), args[1](doc)
        return number(a - b) if _two_numbers("$subtract", a, b) else None

    return run


def _divide(args: list[Expr]) -> Expr:
    def run(doc: Any) -> Any:
        a, b = args[0](doc), args[1](doc)
        if not _two_numbers("$divide", a, b):
            return None
        if b == 0:
            raise BadRequest("$divide by zero")
        return a / b

    return run


def _concat(args: list[Expr]) -> Expr:
    def run(doc: Any) -> Any:
        parts = [a(doc) for a in args]
        for part in parts:
            if _nullish(part):
                return None
            if not isinstance(part, str):
                raise BadRequest(f"$concat only supports strings, not {_type_name(part)}")
        return bounded("".join(parts))

    return run


def _case(op: str, change: Callable[[str], str]) -> Callable[[list[Expr]], Expr]:
    def build(args: list[Expr]) -> Expr:
        def run(doc: Any) -> Any:
            value = args[0](doc)
            if _nullish(value):
                return ""
            if _is_number(value):
                return str(value)
            if not isinstance(value, str):
                raise BadRequest(f"{op} only supports strings, not {_type_name(value)}")
            return change(value)

        return run

    return build


def _array_op(op: str, pick: Callable[[list[Any]], Any]) -> Callable[[list[Expr]], Expr]:
    def build(args: list[Expr]) -> Expr:
        def run(doc: Any) -> Any:
            value = args[0](doc)
            if op != "$size" and _nullish(value):
                return None
            if not isinstance(value, list):
                raise BadRequest(f"{op} needs an array, not {_type_name(value)}")
            return pick(value)

        return run

    return build


def _if_null(args: list[Expr]) -> Expr:
    def run(doc: Any) -> Any:
        for a in args[:-1]:
            value = a(doc)
            if not _nullish(value):
                return value
        return args[-1](doc)

    return run


def truthy(value: Any) -> bool:
    """Aggregation truth: false, null, 0 and missing are false."""
    return not (value is False or _nullish(value) or (_is_number(value) and value == 0))


def _cond(args: list[Expr]) -> Expr:
    return lambda doc: args[1](doc) if truthy(args[0](doc)) else args[2](doc)


def compare(a: Any, b: Any) -> int:
    """MongoDB's order of values, with missing below null."""
    if a is MISSING or b is MISSING:
        return (b is MISSING) - (a is MISSING)
    return values.compare(a, b)


def _comparison(op: str) -> Callable[[list[Expr]], Expr]:
    test: Callable[[int], bool] = {
        "$eq": lambda c: c == 0, "$ne": lambda c: c != 0, "$gt": lambda c: c > 0,
        "$gte": lambda c: c >= 0, "$lt": lambda c: c < 0, "$lte": lambda c: c <= 0,
    }[op]

    def build(args: list[Expr]) -> Expr:
        return lambda doc: test(compare(args[0](doc), args[1](doc)))

    return build


def _in(args: list[Expr]) -> Expr:
    def run(doc: Any) -> Any:
        needle, haystack = args[0](doc), args[1](doc)
        if not isinstance(haystack, list):
            raise BadRequest(f"$in needs an array, not {_type_name(haystack)}")
        return any(compare(needle, v) == 0 for v in haystack)

    return run


_OPERATORS: dict[str, Callable[[list[Expr]], Expr]] = {
    "$add": lambda args: _arithmetic("$add", args, lambda a, b: a + b, 0),
    "$multiply": lambda args: _arithmetic("$multiply", args, lambda a, b: a * b, 1),
    "$subtract": _subtract,
    "$divide": _divide,
    "$concat": _concat,
    "$toLower": _case("$toLower", str.lower),
    "$toUpper": _case("$toUpper", str.upper),
    "$size": _array_op("$size", len),
    "$first": _array_op("$first", lambda a: a[0] if a else MISSING),
    "$last": _array_op("$last", lambda a: a[-1] if a else MISSING),
    "$ifNull": _if_null,
    "$cond": _cond,
    "$in": _in,
    "$and": lambda args: lambda doc: all(truthy(a(doc)) for a in args),
    "$or": lambda args: lambda doc: any(truthy(a(doc)) for a in args),
    "$not": lambda args: lambda doc: not truthy(args[0](doc)),
    **{op: _comparison(op) for op in ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")},
}


# ---------------------------------------------------------------- size bound


def units(value: Any, budget: int = MAX_VALUE_UNITS) -> int:
    """About the serialised size of `value`, counted no further than just
    past `budget` (so measuring a huge shared structure stays cheap)."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + sum(len(k) + 3 for k in item)
            stack.extend(item.values())
        elif isinstance(item, list):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 8
        if total > budget:
            return total
    return total


def bounded(value: Any) -> Any:
    if isinstance(value, str | dict | list) and units(value) > MAX_VALUE_UNITS:
        raise BadRequest(f"A pipeline value would exceed {MAX_VALUE_UNITS} bytes")
    return value
