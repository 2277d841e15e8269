"""Parse MongoDB-style filters, sorts and projections into a validated AST.

Parsing happens once per request, at the edge; both backends (SQL compile and
the reference evaluator in `match.py`) consume the same AST. Anything the
parser does not know is a `BadRequest` naming the operator or field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import re2

from quire.errors import BadRequest
from quire.store import values

Path = tuple[str, ...]

COMPARISONS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"}
FIELD_OPERATORS = COMPARISONS | {
    "$in", "$nin", "$all", "$size", "$exists", "$type", "$regex", "$options",
    "$not", "$elemMatch", "$mod",
}
LOGICAL = {"$and", "$or", "$nor"}
MAX_DEPTH = 32
# SQLite refuses an expression nested more than 1,000 levels, and a chain of
# N conditions joined by AND/OR nests N levels; 500 leaves room for the
# terms one condition compiles to. Each value of $in, $nin and $all counts.
MAX_CONDITIONS = 500
MAX_SORT_KEYS = 32  # MongoDB's limit for the keys of one sort


class Node:
    """A filter node."""


@dataclass(slots=True)
class And(Node):
    children: list[Node]


@dataclass(slots=True)
class Or(Node):
    children: list[Node]


@dataclass(slots=True)
class Nor(Node):
    children: list[Node]


@dataclass(slots=True)
class Cond(Node):
    """One operator applied to the candidate values of `path`.

    op is one of eq ne gt gte lt lte in nin all size exists type regex mod
    elemMatch not. For `not`, value is a list of Conds on the same path; for
    `elemMatch`, an ElemMatch.
    """

    path: Path
    op: str
    value: Any


@dataclass(slots=True)
class Regex:
    pattern: str
    options: str
    compiled: Any = field(repr=False, compare=False, default=None)

    def search(self, text: str) -> bool:
        return self.compiled.search(text) is not None


@dataclass(slots=True)
class ElemMatch:
    """Either a document query on each element (`query`) or operators applied
    to each element's value (`ops`, Conds with an empty path)."""

    query: Node | None
    ops: list[Cond] | None


def parse_filter(spec: Any) -> Node:
    """Parse a filter document. `{}` or None matches everything."""
    if spec is None:
        return And([])
    if not isinstance(spec, dict):
        raise BadRequest("filter must be an object")
    node = _parse_doc(spec, 0)
    if _conditions(node) > MAX_CONDITIONS:
        raise BadRequest(f"filter has more than {MAX_CONDITIONS} conditions")
    return node


def _conditions(node: Node | Cond) -> int:
    """How many conditions a filter holds, counted as MAX_CONDITIONS counts them."""
    if isinstance(node, And | Or | Nor):
        return sum(_conditions(c) for c in node.children)
    assert isinstance(node, Cond)
    if node.op in ("in", "nin", "all"):
        return max(1, len(node.value))
    if node.op == "not":
        return sum(_conditions(c) for c in node.value)
    if node.op == "elemMatch":
        spec: ElemMatch = node.value
        if spec.query is not None:
            return 1 + _conditions(spec.query)
        return 1 + sum(_conditions(c) for c in spec.ops or [])
    return 1


def _parse_doc(spec: dict[str, Any], depth: int) -> Node:
    if depth > MAX_DEPTH:
        raise BadRequest("filter is nested too deeply")
    nodes: list[Node] = []
    for key, value in spec.items():
        if not isinstance(key, str):
            raise BadRequest("filter keys must be strings")
        if key.startswith("$"):
            nodes.append(_parse_logical(key, value, depth))
        else:
            nodes.extend(_parse_field(_parse_path(key), value, depth))
    return nodes[0] if len(nodes) == 1 else And(nodes)


def _parse_logical(key: str, value: Any, depth: int) -> Node:
    if key not in LOGICAL:
        raise BadRequest(f"Unknown operator {key}")
    if not isinstance(value, list) or not value:
        raise BadRequest(f"{key} needs a non-empty array")
    children = []
    for item in value:
        if not isinstance(item, dict):
            raise BadRequest(f"{key} entries must be objects")
        children.append(_parse_doc(item, depth + 1))
    return {"$and": And, "$or": Or, "$nor": Nor}[key](children)


def _parse_path(key: str) -> Path:
    if values.bad_text(key):
        raise BadRequest("Invalid field path: it contains a NUL character or a lone surrogate")
    parts = tuple(key.split("."))
    if any(not p or p.startswith("$") for p in parts):
        raise BadRequest(f"Invalid field path '{key}'")
    return parts


def _is_operator_doc(value: Any) -> bool:
    return isinstance(value, dict) and bool(value) and next(iter(value)).startswith("$")


def _parse_field(path: Path, value: Any, depth: int) -> list[Cond]:
    if not _is_operator_doc(value):
        _check_value(value)
        return [Cond(path, "eq", value)]
    return _parse_ops(path, value, depth)


def _parse_ops(path: Path, ops: dict[str, Any], depth: int) -> list[Cond]:
    conds: list[Cond] = []
    if "$options" in ops and "$regex" not in ops:
        raise BadRequest("$options needs $regex")
    for op, arg in ops.items():
        if not isinstance(op, str) or not op.startswith("$"):
            raise BadRequest(f"Unknown operator {op} (cannot mix operators and fields)")
        if op not in FIELD_OPERATORS:
            raise BadRequest(f"Unknown operator {op}")
        if op == "$options":
            continue
        conds.append(_parse_op(path, op, arg, ops, depth))
    return conds


def _parse_op(path: Path, op: str, arg: Any, ops: dict[str, Any], depth: int) -> Cond:
    name = op[1:]
    if op in COMPARISONS:
        _check_value(arg)
        return Cond(path, name, arg)
    if op in ("$in", "$nin", "$all"):
        if not isinstance(arg, list):
            raise BadRequest(f"{op} needs an array")
        for item in arg:
            if _is_operator_doc(item):
                raise BadRequest(f"{op} entries cannot be operators")
            _check_value(item)
        return Cond(path, name, arg)
    if op == "$size":
        if _integral(arg) is None or arg != int(arg) or arg < 0:
            raise BadRequest("$size needs a non-negative integer")
        return Cond(path, "size", int(arg))
    if op == "$exists":
        return Cond(path, "exists", _truthy(arg))
    if op == "$type":
        return Cond(path, "type", _parse_type(arg))
    if op == "$regex":
        return Cond(path, "regex", compile_regex(arg, ops.get("$options", "")))
    if op == "$mod":
        return Cond(path, "mod", _parse_mod(arg))
    if op == "$not":
        if isinstance(arg, dict) and arg and _is_operator_doc(arg):
            return Cond(path, "not", _parse_ops(path, arg, depth + 1))
        raise BadRequest("$not needs an operator object")
    # $elemMatch
    if not isinstance(arg, dict):
        raise BadRequest("$elemMatch needs an object")
    keys = list(arg)
    if keys and all(k.startswith("$") and k not in LOGICAL for k in keys):
        return Cond(path, "elemMatch", ElemMatch(None, _parse_ops((), arg, depth + 1)))
    return Cond(path, "elemMatch", ElemMatch(_parse_doc(arg, depth + 1), None))


def _truthy(arg: Any) -> bool:
    return arg not in (False, 0, None)


def _parse_type(arg: Any) -> frozenset[int]:
    items = arg if isinstance(arg, list) else [arg]
    if not items:
        raise BadRequest("$type needs a type")
    codes = set()
    for item in items:
        if isinstance(item, str) and item in values.TYPE_ALIASES:
            codes.add(values.TYPE_ALIASES[item])
        elif isinstance(item, int) and not isinstance(item, bool) and item in values.TYPE_CODES:
            codes.add(item)
        else:
            raise BadRequest(f"Unknown $type {item!r}")
    return frozenset(codes)


def _integral(arg: Any) -> int | None:
    """A 64-bit integer from a JSON number (fractions cut off, as MongoDB
    does for $mod); None for anything else, NaN, Infinity or out of range."""
    if isinstance(arg, bool) or not isinstance(arg, int | float):
        return None
    if isinstance(arg, float) and not math.isfinite(arg):
        return None
    whole = int(arg)
    return whole if values.INT64_MIN <= whole <= values.INT64_MAX else None


def _parse_mod(arg: Any) -> tuple[int, int]:
    if not isinstance(arg, list) or len(arg) != 2:
        raise BadRequest("$mod needs [divisor, remainder]")
    divisor, remainder = _integral(arg[0]), _integral(arg[1])
    if divisor is None or remainder is None:
        raise BadRequest("$mod needs [divisor, remainder], integers between -2^63 and 2^63-1")
    if divisor == 0:
        raise BadRequest("$mod divisor cannot be 0")
    return divisor, remainder


def compile_regex(pattern: Any, options: Any) -> Regex:
    """Compile with RE2: linear time, so no pattern can backtrack forever."""
    if not isinstance(pattern, str) or not isinstance(options, str):
        raise BadRequest("$regex and $options must be strings")
    if values.bad_text(pattern):
        raise BadRequest("Invalid $regex: it contains a NUL character or a lone surrogate")
    bad = set(options) - set("ims")
    if bad:
        raise BadRequest(f"Unsupported $options {''.join(sorted(bad))!r} (use i, m, s)")
    opts = re2.Options()
    opts.log_errors = False
    opts.max_mem = 8 << 20
    flags = "".join(sorted(set(options)))
    try:
        compiled = re2.compile((f"(?{flags})" if flags else "") + pattern, opts)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        if isinstance(detail, bytes):
            detail = detail.decode("utf-8", "replace")
        raise BadRequest(f"Invalid $regex: {detail}") from None
    return Regex(pattern, options, compiled)


def _check_value(value: Any) -> None:
    """Query values must be JSON values SQLite can compare: finite numbers,
    64-bit integers, text without NUL or lone surrogates. Parameters are
    checked when parsed (`http.py`); filters from elsewhere are checked here."""
    values.rank(value)
    problem = values.unsafe(value)
    if problem:
        raise BadRequest(f"filter value {problem}")


# ---------------------------------------------------------------- sort / fields


def parse_sort(spec: Any) -> list[tuple[Path, int]]:
    if spec is None:
        return []
    if not isinstance(spec, dict):
        raise BadRequest("sort must be an object")
    if len(spec) > MAX_SORT_KEYS:
        raise BadRequest(f"sort has more than {MAX_SORT_KEYS} keys")
    out = []
    for key, direction in spec.items():
        if direction in (1, -1) and not isinstance(direction, bool):
            out.append((_parse_path(key), int(direction)))
        elif direction in ("asc", "desc"):
            out.append((_parse_path(key), 1 if direction == "asc" else -1))
        else:
            raise BadRequest(f"sort direction of '{key}' must be 1 or -1")
    return out


@dataclass(slots=True)
class Projection:
    include: bool
    paths: list[Path]
    id_included: bool


def parse_fields(spec: Any) -> Projection | None:
    """A MongoDB projection; mixing inclusion and exclusion (other than `_id`)
    is refused like MongoDB does."""
    if spec is None or spec == {}:
        return None
    if not isinstance(spec, dict):
        raise BadRequest("fields must be an object")
    include: bool | None = None
    id_included = True
    paths = []
    for key, flag in spec.items():
        if isinstance(flag, bool) or flag in (0, 1):
            on = bool(flag)
        else:
            raise BadRequest(f"fields value of '{key}' must be 0 or 1")
        if key == "_id":
            id_included = on
            continue
        if include is None:
            include = on
        elif include != on:
            raise BadRequest("fields cannot mix inclusion and exclusion")
        paths.append(_parse_path(key))
    if include is None:  # only _id given
        include = id_included
    return Projection(include, paths, id_included)


def unparse(node: Node) -> dict[str, Any]:
    """The filter document of an AST (the inverse of `parse_filter`)."""
    if isinstance(node, And | Or | Nor):
        key = {And: "$and", Or: "$or", Nor: "$nor"}[type(node)]
        if isinstance(node, And) and not node.children:
            return {}
        return {key: [unparse(c) for c in node.children]}
    assert isinstance(node, Cond)
    return {".".join(node.path): _unparse_op(node)}


def _unparse_op(cond: Cond) -> dict[str, Any]:
    op, arg = cond.op, cond.value
    if op == "regex":
        return {"$regex": arg.pattern, "$options": arg.options}
    if op == "type":
        return {"$type": sorted(arg)}
    if op == "mod":
        return {"$mod": list(arg)}
    if op == "not":
        merged: dict[str, Any] = {}
        for c in arg:
            merged.update(_unparse_op(c))
        return {"$not": merged}
    if op == "elemMatch":
        if arg.query is not None:
            return {"$elemMatch": unparse(arg.query)}
        ops: dict[str, Any] = {}
        for c in arg.ops:
            ops.update(_unparse_op(c))
        return {"$elemMatch": ops}
    return {f"${op}": arg}
