"""Compile a filter AST into an SQLite WHERE clause over JSON documents.

Each collection is a table `(id TEXT PRIMARY KEY, data TEXT)` where `data` is
the whole document as JSON text. The generic compilation reproduces
MongoDB's path traversal with nested `json_each` subqueries; `match.py` is
its specification. When the caller knows that a top-level field only ever
holds a scalar of one JSON type (a model field validated on write), the
condition compiles to a plain `json_extract(...) <op> ?`, which SQLite can
answer from an expression index.

Paths are written into the SQL as literals (never user-controlled SQL: every
segment is validated and quoted) because an expression index only matches a
query that repeats its expression literally. Values are always bound
parameters.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from quire.errors import BadRequest
from quire.store import values
from quire.store.query import And, Cond, ElemMatch, Node, Nor, Or, Path, unparse

# Field hints: the JSON type class every stored value of a top-level field has
# (or the field is null/missing). "id" is the id column.
Hints = dict[str, str]
HINT_CLASSES = {"text": values.STRING, "number": values.NUMBER, "bool": values.BOOL}
# SQLite's json_type() names of the values each hint covers
HINT_JSON_TYPES = {"text": ("text",), "number": ("integer", "real"), "bool": ("true", "false")}

_TYPE_SQL = {
    1: "{T}='real'",
    2: "{T}='text'",
    3: "{T}='object'",
    4: "{T}='array'",
    8: "{T} IN ('true','false')",
    10: "{T}='null'",
    16: "({T}='integer' AND {V} BETWEEN -2147483648 AND 2147483647)",
    18: "({T}='integer' AND {V} NOT BETWEEN -2147483648 AND 2147483647)",
    19: "0",
    -1: "{T} IN ('integer','real')",
}
ROOT = "'$'"  # the SQL literal of the JSON root path
_OPS = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def json_path(path: Path | list[str]) -> str:
    """The SQL literal of a JSON path: '$."a"."b"'."""
    for seg in path:
        if '"' in seg or "\\" in seg:
            raise BadRequest(f"Invalid field path '{'.'.join(path)}'")
    inner = "".join(f'."{seg}"' for seg in path)
    return "'$" + inner.replace("'", "''") + "'"


def field_expr(path: Path | list[str]) -> str:
    """The SQL expression of a top-level field; also used for indexes."""
    if tuple(path) == ("_id",):
        return "id"
    return f"json_extract(data, {json_path(path)})"


@dataclass(slots=True)
class Loc:
    """A candidate value in SQL: its value V, its json type T, and, when T is
    object or array, a JSON text source and path (`src`, `jp`)."""

    V: str
    T: str
    src: str
    jp: str
    element: bool = False  # src/jp only valid when T is object/array
    positional: bool = False  # reached by an array index: no leaf expansion

    def json_each(self, alias: str) -> str:
        return f"json_each({self.src}, {self.jp}) AS {alias}"


Leaf = Callable[[Loc], str]


class Compiler:
    def __init__(self, hints: Hints | None = None) -> None:
        self.hints = hints or {}
        self.params: list[Any] = []
        self._n = 0

    # -- plumbing ---------------------------------------------------------

    def bind(self, value: Any) -> str:
        if isinstance(value, dict | list):
            value = orjson.dumps(value).decode()
        self.params.append(value)
        return "?"

    def alias(self) -> str:
        self._n += 1
        return f"j{self._n}"

    # -- nodes --------------------------------------------------------------

    def compile(self, node: Node, src: str = "data", root: bool = True) -> str:
        if isinstance(node, And):
            if not node.children:
                return "1"
            return "(" + " AND ".join(self.compile(c, src, root) for c in node.children) + ")"
        if isinstance(node, Or):
            return "(" + " OR ".join(self.compile(c, src, root) for c in node.children) + ")"
        if isinstance(node, Nor):
            return "(" + " OR ".join(self.compile(c, src, root) for c in node.children) + ") IS NOT 1"
        assert isinstance(node, Cond)
        if root and len(node.path) == 1 and node.path[0] in self.hints:
            fast = self._hinted(node, self.hints[node.path[0]])
            if fast is not None:
                return fast
        mark = len(self.params)
        sql = self._cond(node, src)
        if _too_deep(sql):
            # Deep paths inside nested $elemMatch grow SQL past what SQLite's
            # parser takes; such a condition runs the reference evaluator.
            del self.params[mark:]
            spec = self.bind(orjson.dumps(unparse(node)).decode())
            sql = f"qmatch({src}, {spec})"
        return sql

    def _cond(self, cond: Cond, src: str) -> str:
        path, op, arg = cond.path, cond.op, cond.value
        if op == "eq":
            return self._eq(path, src, arg)
        if op == "ne":
            return _not(self._eq(path, src, arg))
        if op in ("in", "nin"):
            sql = "(" + " OR ".join(self._eq(path, src, v) for v in arg) + ")" if arg else "0"
            return sql if op == "in" else _not(sql)
        if op == "all":
            return "(" + " AND ".join(self._eq(path, src, v) for v in arg) + ")" if arg else "0"
        if op in _OPS:
            if arg is None:
                return self._eq(path, src, None) if op in ("gte", "lte") else "0"
            return self.candidates(src, path, self.expanded(lambda loc: self.compare(loc, op, arg)))
        if op == "exists":
            sql = self.candidates(src, path, lambda loc: f"{loc.T} IS NOT NULL")
            return sql if arg else _not(sql)
        if op == "not":
            inner = " AND ".join(self._cond(c, src) for c in arg)
            return _not(f"({inner})")
        if op == "elemMatch":
            return self.candidates(src, path, lambda loc: self._elem_match(loc, arg))
        if op == "size":  # looks at the array itself, never inside it
            return self.candidates(src, path, lambda loc: self.leaf(loc, op, arg))
        return self.candidates(src, path, self.expanded(lambda loc: self.leaf(loc, op, arg)))

    def _eq(self, path: Path, src: str, arg: Any) -> str:
        sql = self.candidates(src, path, self.expanded(lambda loc: self.equals(loc, arg)))
        if arg is None:
            sql = f"({sql} OR {self.missing(src, ROOT, path)})"
        return sql

    # -- traversal --------------------------------------------------------

    def candidates(
        self, src: str, path: Path, leaf: Leaf, jp: str = ROOT, positional: bool = False
    ) -> str:
        """SQL true when some terminal value of `path` under (src, jp)
        satisfies `leaf`; mirrors match.traverse."""
        if not path:
            return leaf(
                Loc(f"json_extract({src}, {jp})", f"json_type({src}, {jp})", src, jp,
                    positional=positional)
            )
        head, rest = path[0], path[1:]
        parts = [self.candidates(src, rest, leaf, _child(jp, head))]
        if jp == ROOT:  # a root (the document or an object element) is an object
            return parts[0]
        if head.isascii() and head.isdigit():  # "²" is no position, as in MongoDB
            parts.append(self.candidates(src, rest, leaf, _index(jp, head), positional=not rest))
        e = self.alias()
        inner = self.candidates(f"{e}.value", path, leaf)
        parts.append(
            f"(json_type({src}, {jp})='array' AND EXISTS (SELECT 1 FROM json_each({src}, {jp}) "
            f"AS {e} WHERE CASE WHEN {e}.type='object' THEN {inner} ELSE 0 END))"
        )
        return "(" + " OR ".join(parts) + ")"

    def missing(self, src: str, jp: str, path: Path) -> str:
        """SQL true when some branch of `path` ends without a value."""
        head, rest = path[0], path[1:]
        child = _child(jp, head)
        t = f"json_type({src}, {jp})"
        if rest:
            on_object = f"(json_type({src}, {child}) IS NULL OR {self.missing(src, child, rest)})"
        else:
            on_object = f"json_type({src}, {child}) IS NULL"
        if jp == ROOT:  # a root is an object
            return f"({on_object})"
        parts = [f"({t}='object' AND {on_object})", f"{t} NOT IN ('object','array')"]
        on_array = []
        if head.isascii() and head.isdigit() and rest:
            idx = _index(jp, head)
            on_array.append(
                f"(json_type({src}, {idx}) IN ('object','array') AND {self.missing(src, idx, rest)})"
            )
        e = self.alias()
        on_array.append(
            f"EXISTS (SELECT 1 FROM json_each({src}, {jp}) AS {e} WHERE CASE WHEN "
            f"{e}.type='object' THEN {self.missing(e + '.value', ROOT, path)} ELSE 0 END)"
        )
        parts.append(f"({t}='array' AND (" + " OR ".join(on_array) + "))")
        return "(" + " OR ".join(parts) + ")"

    def expanded(self, leaf: Leaf) -> Leaf:
        """Leaf expansion: an array terminal matches if it or an element does."""

        def run(loc: Loc) -> str:
            if loc.positional:
                return leaf(loc)
            e = self.alias()
            element = Loc(f"{e}.value", f"{e}.type", f"{e}.value", ROOT, element=True)
            each = (
                f"EXISTS (SELECT 1 FROM {loc.json_each(e)} WHERE {leaf(element)})"
            )
            guard = f"CASE WHEN {loc.T}='array' THEN {each} ELSE 0 END"
            return f"({leaf(loc)} OR {guard})"

        return run

    # -- leaves -----------------------------------------------------------

    def equals(self, loc: Loc, arg: Any) -> str:
        r = values.rank(arg)
        if r == values.NULL:
            return f"{loc.T}='null'"
        if r == values.BOOL:
            return f"{loc.T}='{'true' if arg else 'false'}'"
        if r == values.NUMBER:
            return f"({loc.T} IN ('integer','real') AND {loc.V} = {self.bind(arg)})"
        if r == values.STRING:
            return f"({loc.T}='text' AND {loc.V} = {self.bind(arg)})"
        kind = "object" if r == values.OBJECT else "array"
        return f"({loc.T}='{kind}' AND qcmp({loc.V}, {self.bind(arg)}) = 0)"

    def compare(self, loc: Loc, op: str, arg: Any) -> str:
        sym = _OPS[op]
        r = values.rank(arg)
        if r == values.NUMBER:
            return f"({loc.T} IN ('integer','real') AND {loc.V} {sym} {self.bind(arg)})"
        if r == values.STRING:
            return f"({loc.T}='text' AND {loc.V} {sym} {self.bind(arg)})"
        if r == values.BOOL:
            return f"({loc.T} IN ('true','false') AND {loc.V} {sym} {self.bind(int(arg))})"
        kind = "object" if r == values.OBJECT else "array"
        return f"({loc.T}='{kind}' AND qcmp({loc.V}, {self.bind(arg)}) {sym} 0)"

    def leaf(self, loc: Loc, op: str, arg: Any) -> str:
        if op == "regex":
            key = arg.options + "/" + arg.pattern
            literal = regex_literal(arg.pattern)
            # (placeholders are positional: each bound where its `?` is written)
            if literal is not None and "i" not in arg.options:
                # a plain word: a substring test in SQL, exact for any text
                return f"({loc.T}='text' AND instr({loc.V}, {self.bind(literal)}) > 0)"
            if literal is not None and literal.isascii():
                # LIKE folds ASCII letters only, which is all RE2's (?i) folds
                # in an ASCII text; a text with other characters (the Kelvin
                # sign folds to k) that LIKE does not match asks RE2
                like = self.bind("%" + _LIKE_SPECIAL.sub(r"\\\g<0>", literal) + "%")
                return (f"({loc.T}='text' AND ({loc.V} LIKE {like} ESCAPE '\\' OR "
                        f"(length(CAST({loc.V} AS BLOB)) <> length({loc.V}) AND qregex({self.bind(key)}, {loc.V}))))")
            return f"({loc.T}='text' AND qregex({self.bind(key)}, {loc.V}))"
        if op == "mod":
            divisor, remainder = arg
            return (
                f"({loc.T} IN ('integer','real') AND "
                f"(CAST({loc.V} AS INTEGER) % {self.bind(divisor)}) = {self.bind(remainder)})"
            )
        if op == "type":
            return "(" + " OR ".join(_TYPE_SQL[c].format(T=loc.T, V=loc.V) for c in sorted(arg)) + ")"
        if op == "size":
            return (
                f"CASE WHEN {loc.T}='array' THEN json_array_length({loc.src}, {loc.jp}) = "
                f"{self.bind(arg)} ELSE 0 END"
            )
        raise AssertionError(op)

    def _elem_match(self, loc: Loc, spec: ElemMatch) -> str:
        e = self.alias()
        if spec.query is not None:
            cond = f"CASE WHEN {e}.type='object' THEN {self.compile(spec.query, f'{e}.value', False)} ELSE 0 END"
        else:
            assert spec.ops is not None
            element = Loc(f"{e}.value", f"{e}.type", f"{e}.value", ROOT, element=True)
            cond = " AND ".join(self._element_op(element, c) for c in spec.ops)
        return (
            f"CASE WHEN {loc.T}='array' THEN EXISTS (SELECT 1 FROM {loc.json_each(e)} "
            f"WHERE {cond}) ELSE 0 END"
        )

    def _element_eq(self, loc: Loc, value: Any) -> str:
        return self.expanded(lambda x: self.equals(x, value))(loc)

    def _element_op(self, loc: Loc, cond: Cond) -> str:
        """An operator applied to one array element treated as a value."""
        op, arg = cond.op, cond.value
        if op == "eq":
            return self.expanded(lambda x: self.equals(x, arg))(loc)
        if op == "ne":
            return _not(self.expanded(lambda x: self.equals(x, arg))(loc))
        if op in ("in", "nin"):
            sql = "(" + " OR ".join(self._element_eq(loc, v) for v in arg) + ")" if arg else "0"
            return sql if op == "in" else _not(sql)
        if op == "all":
            return "(" + " AND ".join(self._element_eq(loc, v) for v in arg) + ")" if arg else "0"
        if op in _OPS:
            if arg is None:
                return self.expanded(lambda x: self.equals(x, None))(loc) if op in ("gte", "lte") else "0"
            return self.expanded(lambda x: self.compare(x, op, arg))(loc)
        if op == "exists":
            return "1" if arg else "0"
        if op == "not":
            return _not("(" + " AND ".join(self._element_op(loc, c) for c in arg) + ")")
        if op == "elemMatch":
            return self._elem_match(loc, arg)
        if op == "size":
            return self.leaf(loc, op, arg)
        return self.expanded(lambda x: self.leaf(x, op, arg))(loc)

    # -- hinted fast path -------------------------------------------------

    def _hinted(self, cond: Cond, hint: str) -> str | None:
        expr = field_expr(cond.path)
        klass = values.STRING if hint == "id" else HINT_CLASSES[hint]
        op, arg = cond.op, cond.value

        def eq(v: Any) -> str:
            if v is None:
                return "0" if hint == "id" else f"{expr} IS NULL"
            if values.rank(v) != klass:
                return "0"
            return f"{expr} = {self.bind(v)}"

        if op == "eq":
            return eq(arg)
        if op == "ne":
            return _not(eq(arg))
        if op in ("in", "nin"):
            good = [v for v in arg if v is not None and values.rank(v) == klass]
            parts = [f"{expr} IN ({', '.join(self.bind(v) for v in good)})"] if good else []
            if any(v is None for v in arg):
                parts.append(eq(None))
            sql = "(" + " OR ".join(parts) + ")" if parts else "0"
            return sql if op == "in" else _not(sql)
        if op in _OPS:
            if arg is None:
                return eq(None) if op in ("gte", "lte") else "0"
            if values.rank(arg) != klass:
                return "0"
            return f"{expr} {_OPS[op]} {self.bind(arg)}"
        if op == "exists" and hint == "id":
            return "1" if arg else "0"
        return None


MAX_PAREN_NESTING = 60
MAX_SUBQUERY_NESTING = 4  # SQLite's parser stack overflows near 6; keep headroom


def _too_deep(sql: str) -> bool:
    """Whether SQLite's parser would refuse `sql` for nesting: too many
    parentheses or subqueries inside each other (string literals skipped)."""
    if sql.count("SELECT") <= MAX_SUBQUERY_NESTING and sql.count("(") <= MAX_PAREN_NESTING:
        return False  # cannot nest deeper than it has
    stack: list[int] = []
    quoted = False
    for token in re.finditer(r"'|\(|\)|SELECT", sql):
        t = token.group()
        if t == "'":
            quoted = not quoted
        elif quoted:
            continue
        elif t == "(":
            stack.append(0)
            if len(stack) > MAX_PAREN_NESTING:
                return True
        elif t == ")":
            stack.pop()
        elif stack:
            stack[-1] = 1
            if sum(stack) > MAX_SUBQUERY_NESTING:
                return True
    return False


def _child(jp: str, key: str) -> str:
    if '"' in key or "\\" in key:
        raise BadRequest(f"Invalid field name '{key}'")
    return jp[:-1] + f'."{key}"'.replace("'", "''") + "'"


def _index(jp: str, digits: str) -> str:
    return jp[:-1] + f"[{int(digits)}]'"


def _not(sql: str) -> str:
    """Negation that treats SQL NULL (unknown) as false first."""
    return f"({sql}) IS NOT 1"


def compile_filter(node: Node, hints: Hints | None = None) -> tuple[str, list[Any]]:
    c = Compiler(hints)
    sql = c.compile(node)
    if _too_deep(sql):  # many nested logical operators: evaluate in Python
        return "qmatch(data, ?)", [orjson.dumps(unparse(node)).decode()]
    return sql, c.params


@dataclass(slots=True)
class SortTerm:
    """One ORDER BY expression: a hinted field's own value, or else the
    MongoDB sort key computed in Python (`keyed`: a byte string)."""

    expr: str
    params: list[Any]
    desc: bool
    keyed: bool


def sort_terms(sort: list[tuple[Path, int]], hints: Hints | None) -> list[SortTerm]:
    hints = hints or {}
    terms = []
    for path, direction in sort:
        desc = direction < 0
        if len(path) == 1 and path[0] in hints:
            terms.append(SortTerm(field_expr(path), [], desc, False))
        else:
            path_param = orjson.dumps(list(path)).decode()
            terms.append(SortTerm(f"qsortkey(data, ?, {1 if desc else 0})", [path_param], desc, True))
    return terms


def ties_descend(terms: list[SortTerm]) -> bool:
    """Ties go by creation order (rowid), in the direction of the last sort
    key: an index on the sorted fields ends in rowid, so it then yields the
    whole order and SQLite can stop after `limit` rows instead of sorting
    them all."""
    return bool(terms) and terms[-1].desc


def compile_sort(sort: list[tuple[Path, int]], hints: Hints | None, params: list[Any]) -> str:
    """ORDER BY terms; hinted fields sort by their index expression, others by a
    MongoDB sort key computed in Python (`qsortkey`)."""
    terms = sort_terms(sort, hints)
    parts = []
    for term in terms:
        params.extend(term.params)
        parts.append(f"{term.expr} {'DESC' if term.desc else 'ASC'}")
    parts.append("rowid DESC" if ties_descend(terms) else "rowid ASC")
    return ", ".join(parts)


def compile_after(terms: list[SortTerm], keys: tuple[Any, ...], rowid: int) -> tuple[str, list[Any]]:
    """SQL true for the rows that come after the position (`keys`: the values
    the ORDER BY terms had on a row, `rowid`: that row's) in the order
    `compile_sort` gives: (keys..., rowid) compared lexicographically, each
    in its direction, SQL NULL (a missing or null hinted field) first when
    ascending and last when descending, as SQLite orders them."""
    alternatives: list[str] = []
    params: list[Any] = []
    equal: list[str] = []
    equal_params: list[Any] = []
    for term, key in zip(terms, keys, strict=True):
        beyond, beyond_params = _beyond(term, key)
        if beyond != "0":
            alternatives.append(" AND ".join([*equal, beyond]))
            params += equal_params + beyond_params
        equal.append(f"{term.expr} IS ?")
        equal_params += [*term.params, key]
    alternatives.append(" AND ".join([*equal, "rowid < ?" if ties_descend(terms) else "rowid > ?"]))
    params += [*equal_params, rowid]
    return "(" + " OR ".join(f"({a})" for a in alternatives) + ")", params


def _beyond(term: SortTerm, key: Any) -> tuple[str, list[Any]]:
    """SQL true when the term's value comes after `key` in its direction."""
    if key is None:
        return ("0", []) if term.desc else (f"{term.expr} IS NOT NULL", list(term.params))
    if term.desc and not term.keyed:  # a sort key (bytes) is never NULL
        return f"({term.expr} < ? OR {term.expr} IS NULL)", [*term.params, key, *term.params]
    return f"{term.expr} {'<' if term.desc else '>'} ?", [*term.params, key]


def after_ranges(term: SortTerm, key: Any) -> list[tuple[str, list[Any]]]:
    """Where the rows after a position can be, by the first sort term alone,
    as ranges SQLite can seek in an index on it, in the order they come;
    the rows of each range come before those of the next. (`E <= v OR E IS
    NULL` in one query would make SQLite scan the index from the start.)"""
    e, p = term.expr, term.params
    if term.keyed:
        return [(f"{e} {'<=' if term.desc else '>='} ?", [*p, key])]
    if key is None:
        return [(f"{e} IS NULL", list(p))] if term.desc else [(f"{e} IS NULL", list(p)), (f"{e} IS NOT NULL", list(p))]
    if term.desc:
        return [(f"{e} <= ?", [*p, key]), (f"{e} IS NULL", list(p))]
    return [(f"{e} >= ?", [*p, key])]


_LIKE_SPECIAL = re.compile(r"[%_\\]")
_REGEX_META = set("\\.^$|?*+()[]{}")


def regex_literal(pattern: str) -> str | None:
    """The text a `$regex` pattern matches literally (`re.escape`d words,
    `c\\+\\+`), or None when it uses any of the syntax: such a pattern is
    a substring test SQL can make without calling Python per row."""
    out = []
    chars = iter(pattern)
    for c in chars:
        if c == "\\":
            nxt = next(chars, None)
            if nxt is None or nxt.isalnum() or nxt == "_" or not nxt.isascii():
                return None  # \d, \b, \x41, \pL ... or a trailing backslash
            out.append(nxt)
        elif c in _REGEX_META:
            return None
        else:
            out.append(c)
    return "".join(out)
