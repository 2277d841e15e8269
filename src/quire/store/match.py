"""The reference evaluator: a filter AST applied to a document in Python.

This is the executable definition of Quire's MongoDB semantics; the SQL
backends must agree with it, and the property tests check that both agree
with an independent MongoDB implementation.

Path traversal follows MongoDB: walking `a.b` through an array looks up `b`
in every object element (one level), a numeric segment indexes an array, and
a field that is absent on some branch leaves a MISSING candidate (which `null`
matches). At the end of the path an array is a candidate itself and so is
each of its elements ("leaf expansion"), except for $size and $elemMatch,
which look at the array only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from quire.store import values
from quire.store.query import And, Cond, ElemMatch, Node, Nor, Or, Path, Projection, Regex

MISSING: Any = object()



def matches(node: Node, doc: Any) -> bool:
    if isinstance(node, And):
        return all(matches(c, doc) for c in node.children)
    if isinstance(node, Or):
        return any(matches(c, doc) for c in node.children)
    if isinstance(node, Nor):
        return not any(matches(c, doc) for c in node.children)
    assert isinstance(node, Cond)
    return cond_matches(node, list(traverse(doc, node.path)))


def traverse(value: Any, path: Path) -> Iterator[Any]:
    """Every terminal value reached by `path` (MISSING where a branch ends)."""
    if not path:
        yield value
        return
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        yield from traverse(value[head], rest) if head in value else iter((MISSING,))
    elif isinstance(value, list):
        if head.isascii() and head.isdigit():  # "²" is no position, as in MongoDB
            index = int(head)
            if index < len(value):
                found = value[index]
                if not rest:
                    # an array picked by position is not looked into at the leaf
                    yield Positional(found) if isinstance(found, list) else found
                elif isinstance(found, dict | list):
                    yield from traverse(found, rest)
                # a scalar element has no fields: it yields nothing, not MISSING
        for element in value:
            if isinstance(element, dict):
                yield from traverse(element, path)
    else:
        yield MISSING


class Positional(list[Any]):
    """An array reached through a numeric path segment (`a.0`)."""


def _expanded(terminals: list[Any]) -> Iterator[Any]:
    for t in terminals:
        if t is MISSING:
            continue
        yield t
        if isinstance(t, list) and not isinstance(t, Positional):
            yield from t


def cond_matches(cond: Cond, terminals: list[Any]) -> bool:
    op, arg = cond.op, cond.value
    if op == "eq":
        return _eq(terminals, arg)
    if op == "ne":
        return not _eq(terminals, arg)
    if op == "in":
        return any(_eq(terminals, v) for v in arg)
    if op == "nin":
        return not any(_eq(terminals, v) for v in arg)
    if op == "all":
        return bool(arg) and all(_eq(terminals, v) for v in arg)
    if op in ("gt", "gte", "lt", "lte"):
        return _compare(terminals, op, arg)
    if op == "exists":
        return any(t is not MISSING for t in terminals) == arg
    if op == "size":
        return any(isinstance(t, list) and len(t) == arg for t in terminals)
    if op == "type":
        return any((values.type_codes(v) & arg) for v in _expanded(terminals))
    if op == "regex":
        return any(isinstance(v, str) and arg.search(v) for v in _expanded(terminals))
    if op == "mod":
        return any(_mod(v, arg) for v in _expanded(terminals))
    if op == "not":
        return not all(cond_matches(c, terminals) for c in arg)
    if op == "elemMatch":
        return any(isinstance(t, list) and any(_elem(arg, e) for e in t) for t in terminals)
    raise AssertionError(op)


def _eq(terminals: list[Any], arg: Any) -> bool:
    if arg is None and any(t is MISSING for t in terminals):
        return True
    return any(values.equal(v, arg) for v in _expanded(terminals))


def _compare(terminals: list[Any], op: str, arg: Any) -> bool:
    if arg is None:  # only null/missing are "equal" to null; nothing is < or > it
        return op in ("gte", "lte") and _eq(terminals, None)
    want = values.rank(arg)
    for v in _expanded(terminals):
        if values.rank(v) != want:
            continue
        c = values.compare(v, arg)
        if (op == "gt" and c > 0) or (op == "gte" and c >= 0) or (op == "lt" and c < 0) or (
            op == "lte" and c <= 0
        ):
            return True
    return False


def _mod(v: Any, arg: tuple[int, int]) -> bool:
    if values.rank(v) != values.NUMBER:
        return False
    divisor, remainder = arg
    n = int(v)  # MongoDB truncates towards zero
    return n - divisor * int(n / divisor) == remainder if abs(n) < 2**53 else (
        _c_mod(n, divisor) == remainder
    )


def _c_mod(n: int, d: int) -> int:
    r = abs(n) % abs(d)
    return -r if n < 0 else r


def _elem(spec: ElemMatch, element: Any) -> bool:
    if spec.query is not None:
        return isinstance(element, dict) and matches(spec.query, element)
    assert spec.ops is not None
    return all(cond_matches(c, [element]) for c in spec.ops)


def regex_search(regex: Regex, text: str) -> bool:
    return regex.search(text)


# ---------------------------------------------------------------- sort / project


def sort_value(doc: Any, path: Path, descending: bool) -> Any:
    """The value a document sorts by: MongoDB takes the smallest (ascending)
    or largest (descending) of a field's values, looking inside arrays."""
    terminals = [t for t in traverse(doc, path) if t is not MISSING]
    flat: list[Any] = []
    for t in terminals:
        if isinstance(t, list):
            flat.extend(t)
        else:
            flat.append(t)
    if not flat and terminals:  # only empty arrays
        return values.BELOW_NULL
    return values.sort_key_value(flat, descending)


def sort_docs(docs: list[Any], sort: list[tuple[Path, int]],
              of: Callable[[Any], Any] | None = None) -> list[Any]:
    """Sort `docs` in place (and return them); `of(item)` is the document
    of an item that is not one itself."""
    for path, direction in reversed(sort):
        desc = direction < 0

        def key(item: Any, path: Path = path, desc: bool = desc) -> values.SortKey:
            return values.SortKey(sort_value(item if of is None else of(item), path, desc))

        docs.sort(key=key, reverse=desc)
    return docs


def project(doc: dict[str, Any], projection: Projection | None) -> dict[str, Any]:
    """Apply a projection to a top-level document (a new dict is returned)."""
    if projection is None:
        return doc
    if projection.include:
        out: dict[str, Any] = {}
        if projection.id_included and "_id" in doc:
            out["_id"] = doc["_id"]
        for path in projection.paths:
            _copy_path(doc, out, path)
        return out
    out = _deep_copy_shallow(doc)
    if not projection.id_included:
        out.pop("_id", None)
    for path in projection.paths:
        _drop_path(out, path)
    return out


def _copy_path(src: Any, dst: dict[str, Any], path: Path) -> None:
    head, rest = path[0], path[1:]
    if not isinstance(src, dict) or head not in src:
        return
    value = src[head]
    if not rest:
        dst[head] = value
    elif isinstance(value, dict):
        _copy_path(value, dst.setdefault(head, {}), rest)
    elif isinstance(value, list):
        items = dst.setdefault(head, [])
        for element in value:
            if isinstance(element, dict):
                sub: dict[str, Any] = {}
                _copy_path(element, sub, rest)
                items.append(sub)


def _deep_copy_shallow(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _deep_copy_shallow(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_deep_copy_shallow(v) for v in doc]
    return doc


def _drop_path(doc: Any, path: Path) -> None:
    head, rest = path[0], path[1:]
    if isinstance(doc, list):
        for element in doc:
            _drop_path(element, path)
        return
    if not isinstance(doc, dict) or head not in doc:
        return
    if not rest:
        del doc[head]
    else:
        _drop_path(doc[head], rest)
