"""Compile a filter AST into a PostgreSQL WHERE clause over `jsonb`
documents, as far as PostgreSQL can decide MongoDB's semantics exactly.

A collection is a table `(seq, id, body, data)`: `body` the document's JSON
text as written (answers send it as it is), `data` the same as `jsonb` for
queries. What compiles:

- conditions on a *hinted* top-level field (a model field validated to hold
  one JSON type, or null): typed expressions (`typed_expr`) compared with
  bound values, exact, and what a declared index is built on;
- equality with a scalar on any top-level field: containment (`data @>
  {"f": v}` or `{"f": [v]}`), which the collection's GIN index answers;
- `$exists` on a top-level field (`data ? 'f'`);
- `$and`, `$or` and `$nor` of these.

Everything else (paths into arrays and objects, `$elemMatch`, `$type`,
`$regex` beyond a plain word...) is decided by the reference evaluator
(`match.py`) on the rows the compiled part lets through: `Compiled.exact`
says whether the SQL alone decides. That keeps the semantics MongoDB's by
construction; what the SQL decides is only ever a narrowing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from quire.store import values
from quire.store.query import And, Cond, Node, Nor, Or, Path
from quire.store.sqlcompile import Hints, regex_literal

_OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_CLASSES = {"text": values.STRING, "number": values.NUMBER, "bool": values.BOOL, "id": values.STRING}
_JSON_TYPE = {"text": "string", "number": "number", "bool": "boolean"}
_CAST = {"text": "data->>{k}", "number": "(data->{k})::numeric", "bool": "(data->{k})::boolean"}


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def typed_expr(name: str, hint: str) -> str:
    """The SQL value of a hinted top-level field: its value when it has the
    hinted JSON type, else NULL (missing, null, or a value the hint does not
    cover). Written literally, so an expression index on it serves queries."""
    if hint == "id":
        return "id"
    key = quote_literal(name)
    expr = f"(CASE WHEN jsonb_typeof(data->{key}) = '{_JSON_TYPE[hint]}' THEN {_CAST[hint].format(k=key)} END)"
    return expr + ' COLLATE "C"' if hint == "text" else expr


@dataclass
class Compiled:
    sql: str
    params: list[Any] = field(default_factory=list)
    exact: bool = True


TRUE = "TRUE"


def _bindable(value: Any) -> bool:
    if isinstance(value, str):
        return not values.bad_text(value)
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return values.INT64_MIN <= value <= values.INT64_MAX
    return isinstance(value, float)


def compile_filter(node: Node, hints: Hints | None = None) -> Compiled:
    return _node(node, hints or {})


def _node(node: Node, hints: Hints) -> Compiled:
    if isinstance(node, And):
        parts = [_node(c, hints) for c in node.children]
        kept = [p for p in parts if p.sql != TRUE]
        return Compiled("(" + " AND ".join(p.sql for p in kept) + ")" if kept else TRUE,
                        [x for p in kept for x in p.params], all(p.exact for p in parts))
    if isinstance(node, Or | Nor):
        parts = [_node(c, hints) for c in node.children]
        exact = all(p.exact for p in parts)
        if isinstance(node, Nor):
            if not exact:
                return Compiled(TRUE, [], False)
            return Compiled("NOT COALESCE((" + " OR ".join(p.sql for p in parts) + "), FALSE)",
                            [x for p in parts for x in p.params])
        if any(p.sql == TRUE for p in parts):
            return Compiled(TRUE, [], exact)
        return Compiled("(" + " OR ".join(p.sql for p in parts) + ")", [x for p in parts for x in p.params], exact)
    assert isinstance(node, Cond)
    return _cond(node, hints)


def _cond(cond: Cond, hints: Hints) -> Compiled:
    path = cond.path
    if len(path) == 1 and path[0] in hints:
        done = _hinted(cond, hints[path[0]])
        if done is not None:
            return done
    if len(path) == 1 and path[0] != "_id":
        return _top_level(cond, path[0])
    return Compiled(TRUE, [], False)


def _top_level(cond: Cond, name: str) -> Compiled:
    """An unhinted top-level field: what containment and key presence decide."""
    op, arg = cond.op, cond.value
    if op == "exists" and not values.bad_text(name):
        return Compiled("(data ? %s)" if arg else "NOT (data ? %s)", [name])
    if op == "eq" and arg is not None and not isinstance(arg, dict | list) and not values.bad_text(name):
        if isinstance(arg, str) and values.bad_text(arg):
            return Compiled(TRUE, [], False)
        # the value itself, or an array holding it: MongoDB's equality on a
        # field (one level of array, as `match.traverse` walks)
        one = orjson.dumps({name: arg}).decode()
        many = orjson.dumps({name: [arg]}).decode()
        return Compiled("(data @> %s::jsonb OR data @> %s::jsonb)", [one, many])
    if op == "in" and arg and all(v is not None and not isinstance(v, dict | list) for v in arg) \
            and not values.bad_text(name) and all(_bindable(v) for v in arg):
        docs = [orjson.dumps({name: v}).decode() for v in arg] + [orjson.dumps({name: [v]}).decode() for v in arg]
        return Compiled("(" + " OR ".join("data @> %s::jsonb" for _ in docs) + ")", docs)
    return Compiled(TRUE, [], False)


def _hinted(cond: Cond, hint: str) -> Compiled | None:
    expr = typed_expr(cond.path[0], hint)
    klass = _CLASSES[hint]
    op, arg = cond.op, cond.value
    params: list[Any] = []
    # numbers compare as numeric (the expression's type), so an index serves them
    mark = "%s::numeric" if hint == "number" else "%s"

    def bind(v: Any) -> str:
        params.append(v)
        return mark

    def eq(v: Any) -> str:
        if v is None:
            return "FALSE" if hint == "id" else f"{expr} IS NULL"
        if values.rank(v) != klass:
            return "FALSE"
        return f"{expr} = {bind(v)}"

    def negate(sql: str) -> str:
        return f"NOT COALESCE({sql}, FALSE)"

    if op in ("eq", "ne", "in", "nin") or op in _OPS:
        candidates = arg if op in ("in", "nin") else [arg]
        if not all(_bindable(v) for v in candidates if values.rank(v) == klass):
            return None
    if op == "eq":
        return Compiled(eq(arg), params)
    if op == "ne":
        return Compiled(negate(eq(arg)), params)
    if op in ("in", "nin"):
        good = [v for v in arg if v is not None and values.rank(v) == klass]
        parts = [f"{expr} IN ({', '.join(bind(v) for v in good)})"] if good else []
        if any(v is None for v in arg):
            parts.append(eq(None))
        sql = "(" + " OR ".join(parts) + ")" if parts else "FALSE"
        return Compiled(sql if op == "in" else negate(sql), params)
    if op in _OPS:
        if arg is None:
            return Compiled(eq(None) if op in ("gte", "lte") else "FALSE", params)
        if values.rank(arg) != klass:
            return Compiled("FALSE", params)
        return Compiled(f"{expr} {_OPS[op]} {bind(arg)}", params)
    if op == "exists" and hint == "id":
        return Compiled("TRUE" if arg else "FALSE", params)
    if op == "regex" and hint in ("text", "id") and "i" not in arg.options:
        literal = regex_literal(arg.pattern)
        if literal is not None and not values.bad_text(literal):
            # a plain word: a substring test, exact for any text
            params.append(literal)
            return Compiled(f"strpos({expr}, %s) > 0", params)
    return None


def sort_exprs(sort: list[tuple[Path, int]], hints: Hints) -> list[tuple[str, bool]] | None:
    """ORDER BY expressions (and descending?) when every sort key is a hinted
    top-level field, else None: the sort is MongoDB's, done in Python."""
    out = []
    for path, direction in sort:
        if len(path) != 1 or path[0] not in hints:
            return None
        out.append((typed_expr(path[0], hints[path[0]]), direction < 0))
    return out


def key_fits(key: Any, hint: str) -> bool:
    """Whether a position's key can be compared with a hinted field's
    values (a made-up cursor may hold any JSON value)."""
    if key is None:
        return hint != "id"
    if hint in ("text", "id"):
        return isinstance(key, str) and not values.bad_text(key)
    if hint == "bool":
        return isinstance(key, bool)
    return _bindable(key) and not isinstance(key, bool | str) and key is not None


def order_by(terms: list[tuple[str, bool]]) -> str:
    """Hinted values order as SQLite orders them: NULL (missing or null)
    first ascending, last descending; ties by insertion, in the direction of
    the last key."""
    parts = [f"{e} {'DESC NULLS LAST' if desc else 'ASC NULLS FIRST'}" for e, desc in terms]
    parts.append("seq DESC" if terms and terms[-1][1] else "seq ASC")
    return ", ".join(parts)


def after_clause(terms: list[tuple[str, bool]], keys: tuple[Any, ...], seq: int) -> tuple[str, list[Any]]:
    """SQL true for the rows that come after a position (`keys` the terms'
    values on its row, `seq` that row's) in the order `order_by` gives."""
    alternatives: list[str] = []
    params: list[Any] = []
    equal: list[str] = []
    equal_params: list[Any] = []
    for (expr, desc), key in zip(terms, keys, strict=True):
        if key is None:
            beyond, bp = ("FALSE", []) if desc else (f"{expr} IS NOT NULL", [])
        elif desc:
            beyond, bp = f"({expr} < %s OR {expr} IS NULL)", [key]
        else:
            beyond, bp = f"{expr} > %s", [key]
        if beyond != "FALSE":
            alternatives.append(" AND ".join([*equal, beyond]))
            params += equal_params + bp
        if key is None:
            equal.append(f"{expr} IS NULL")
        else:
            equal.append(f"{expr} = %s")
            equal_params.append(key)
    last_desc = bool(terms) and terms[-1][1]
    alternatives.append(" AND ".join([*equal, "seq < %s" if last_desc else "seq > %s"]))
    params += [*equal_params, seq]
    return "(" + " OR ".join(f"({a})" for a in alternatives) + ")", params
