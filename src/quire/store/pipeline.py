"""MongoDB aggregation pipelines: parsing, the SQL prefix, evaluation.

A pipeline is parsed whole before anything runs, so an unknown stage or
operator is a 400 naming it and never a half-done answer. Its leading
`$match` stages, then a `$sort`, then `$skip`/`$limit` stages form the
`Prefix`, which the collection runs in SQL like a list (a `$count` right
after it is a SQL count); the stages after it run here, in Python, over
the streamed rows, with the reference evaluator's semantics (`match.py`,
`values.py`) for matching and order.

Work is bounded: at most MAX_STAGES stages; at most MAX_HELD documents and
values held at once by the stages that must see everything ($sort, $group
with its $push/$addToSet entries, $lookup matches); no built value above
MAX_VALUE_UNITS (see `expressions.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from quire.errors import BadRequest
from quire.store import match
from quire.store.accumulators import Accumulator, group_key, parse_accumulator
from quire.store.expressions import (
    MISSING,
    Expr,
    bounded,
    check_field_name,
    parse_expression,
    parse_path,
)
from quire.store.query import And, Cond, Node, Nor, Or, Path, Projection, parse_filter, parse_sort

if TYPE_CHECKING:
    from quire.store.sqlite import Collection

MAX_STAGES = 32
MAX_HELD = 100_000
LOOKUP_BATCH = 200
REFUSED = {"$out", "$merge", "$function", "$accumulator", "$where", "$graphLookup", "$facet",
           "$unionWith", "$currentOp", "$collStats", "$indexStats", "$listSessions", "$planCacheStats"}


# ---------------------------------------------------------------- stages


class Stage:
    """A parsed pipeline stage."""


@dataclass(slots=True)
class Match(Stage):
    node: Node


@dataclass(slots=True)
class Sort(Stage):
    keys: list[tuple[Path, int]]


@dataclass(slots=True)
class Skip(Stage):
    count: int


@dataclass(slots=True)
class Limit(Stage):
    count: int


@dataclass(slots=True)
class Project(Stage):
    include: bool
    id_included: bool
    paths: list[Path]
    computed: list[tuple[Path, Expr]]


@dataclass(slots=True)
class AddFields(Stage):
    fields: list[tuple[Path, Expr]]


@dataclass(slots=True)
class Group(Stage):
    key: Expr
    accumulators: list[tuple[str, type[Accumulator], Expr]]


@dataclass(slots=True)
class Unwind(Stage):
    path: Path
    index_field: Path | None
    preserve: bool


@dataclass(slots=True)
class CountStage(Stage):
    name: str


@dataclass(slots=True)
class Lookup(Stage):
    source: str
    local: Path
    foreign: Path
    into: Path


def parse_pipeline(spec: Any, rewrite_keys: Callable[[Any], Any] = lambda s: s) -> list[Stage]:
    """Validate and parse a pipeline; `rewrite_keys` adapts `$match` and
    `$sort` documents (the content layer's `title:de` keys)."""
    if not isinstance(spec, list):
        raise BadRequest("Pipeline is not valid list format")
    if len(spec) > MAX_STAGES:
        raise BadRequest(f"Pipeline has more than {MAX_STAGES} stages")
    stages = []
    for i, raw in enumerate(spec):
        if not isinstance(raw, dict) or len(raw) != 1:
            raise BadRequest(f"Pipeline stage {i} must be an object with one key, like {{\"$match\": {{}}}}")
        name, arg = next(iter(raw.items()))
        parse = _PARSERS.get(name)
        if parse is None:
            if name in REFUSED or (isinstance(name, str) and name.startswith("$")):
                raise BadRequest(f"Pipeline stage {name} is not supported")
            raise BadRequest(f"Pipeline stage {i} has no stage name: {name} does not start with $")
        if name in ("$match", "$sort"):
            arg = rewrite_keys(arg)
        stages.append(parse(arg))
    return stages


def _parse_match(arg: Any) -> Stage:
    if not isinstance(arg, dict):
        raise BadRequest("$match needs an object")
    return Match(parse_filter(arg))


def _parse_sort(arg: Any) -> Stage:
    if not isinstance(arg, dict) or not arg:
        raise BadRequest("$sort needs an object of fields, like {\"title\": 1}")
    return Sort(parse_sort(arg))


def _count_arg(name: str, arg: Any, positive: bool) -> int:
    if isinstance(arg, float) and arg.is_integer():
        arg = int(arg)
    if isinstance(arg, bool) or not isinstance(arg, int) or arg < (1 if positive else 0):
        raise BadRequest(f"{name} needs a {'positive' if positive else 'non-negative'} integer")
    return arg


def _flatten(spec: dict[str, Any], prefix: Path, out: list[tuple[Path, Any]], stage: str) -> None:
    """`{"a": {"b": 1}}` -> `[(("a", "b"), 1)]`; operator objects stay values."""
    for key, value in spec.items():
        if not isinstance(key, str) or not key or key.startswith("$"):
            raise BadRequest(f"Invalid field name '{key}' in {stage}")
        path = prefix + parse_path(key, key)
        nested = isinstance(value, dict) and value and not next(iter(value)).startswith("$")
        if nested:
            _flatten(value, path, out, stage)
        else:
            out.append((path, value))


def _check_collisions(paths: list[Path], stage: str) -> None:
    seen = sorted(paths)
    for a, b in zip(seen, seen[1:], strict=False):
        if b[: len(a)] == a:
            raise BadRequest(f"{stage}: path collision at {'.'.join(b)}")


def _parse_project(arg: Any) -> Stage:
    if not isinstance(arg, dict) or not arg:
        raise BadRequest("$project needs an object with at least one field")
    flat: list[tuple[Path, Any]] = []
    _flatten(arg, (), flat, "$project")
    _check_collisions([p for p, _ in flat], "$project")
    include: bool | None = None
    id_included = True
    paths: list[Path] = []
    computed: list[tuple[Path, Expr]] = []
    for path, value in flat:
        flag = _flag(value)
        if path == ("_id",) and flag is not None:
            id_included = flag
        elif flag is None:
            computed.append((path, parse_expression(value)))
        elif include is not None and include != flag:
            raise BadRequest("$project cannot mix inclusion and exclusion")
        else:
            include = flag
            paths.append(path)
    if computed and include is False:
        raise BadRequest("$project cannot mix exclusion and computed fields")
    if include is None:
        include = bool(computed) or id_included
    return Project(include, id_included, paths, computed)


def _flag(value: Any) -> bool | None:
    """Whether a $project value includes (True), excludes (False) or is an expression (None)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    return None


def _parse_add_fields(arg: Any) -> Stage:
    if not isinstance(arg, dict) or not arg:
        raise BadRequest("$addFields needs an object with at least one field")
    flat: list[tuple[Path, Any]] = []
    _flatten(arg, (), flat, "$addFields")
    _check_collisions([p for p, _ in flat], "$addFields")
    return AddFields([(path, parse_expression(value)) for path, value in flat])


def _parse_group(arg: Any) -> Stage:
    if not isinstance(arg, dict) or "_id" not in arg:
        raise BadRequest("$group needs an _id (null to group everything)")
    accumulators = []
    for name, spec in arg.items():
        if name == "_id":
            continue
        check_field_name(name)
        kind, expr = parse_accumulator(name, spec)
        accumulators.append((name, kind, expr))
    return Group(parse_expression(arg["_id"]), accumulators)


def _field_reference(value: Any, stage: str) -> Path:
    if not isinstance(value, str) or not value.startswith("$") or value.startswith("$$"):
        raise BadRequest(f"{stage} needs a field path starting with $, like \"$tags\"")
    return parse_path(value[1:], value)


def _parse_unwind(arg: Any) -> Stage:
    if isinstance(arg, str):
        return Unwind(_field_reference(arg, "$unwind"), None, False)
    if not isinstance(arg, dict) or "path" not in arg:
        raise BadRequest("$unwind needs a path")
    unknown = set(arg) - {"path", "includeArrayIndex", "preserveNullAndEmptyArrays"}
    if unknown:
        raise BadRequest(f"$unwind does not know {', '.join(sorted(unknown))}")
    index = arg.get("includeArrayIndex")
    if index is not None and (not isinstance(index, str) or not index or index.startswith("$")):
        raise BadRequest("$unwind includeArrayIndex must be a field name")
    preserve = arg.get("preserveNullAndEmptyArrays", False)
    if not isinstance(preserve, bool):
        raise BadRequest("$unwind preserveNullAndEmptyArrays must be true or false")
    return Unwind(
        _field_reference(arg["path"], "$unwind"),
        parse_path(index, index) if index is not None else None,
        preserve,
    )


def _parse_count(arg: Any) -> Stage:
    if not isinstance(arg, str) or not arg or arg.startswith("$") or "." in arg:
        raise BadRequest("$count needs a field name")
    return CountStage(arg)


def _parse_lookup(arg: Any) -> Stage:
    if not isinstance(arg, dict):
        raise BadRequest("$lookup needs an object")
    if "pipeline" in arg or "let" in arg:
        raise BadRequest("$lookup with pipeline or let is not supported; use localField and foreignField")
    wanted = {"from", "localField", "foreignField", "as"}
    unknown = set(arg) - wanted
    if unknown:
        raise BadRequest(f"$lookup does not know {', '.join(sorted(unknown))}")
    missing = wanted - set(arg)
    if missing:
        raise BadRequest(f"$lookup needs {', '.join(sorted(missing))}")
    if not all(isinstance(arg[k], str) and arg[k] for k in wanted):
        raise BadRequest("$lookup from, localField, foreignField and as must be strings")
    return Lookup(
        arg["from"],
        parse_path(arg["localField"], arg["localField"]),
        parse_path(arg["foreignField"], arg["foreignField"]),
        parse_path(arg["as"], arg["as"]),
    )


_PARSERS: dict[str, Callable[[Any], Stage]] = {
    "$match": _parse_match,
    "$sort": _parse_sort,
    "$skip": lambda a: Skip(_count_arg("$skip", a, positive=False)),
    "$limit": lambda a: Limit(_count_arg("$limit", a, positive=True)),
    "$project": _parse_project,
    "$addFields": _parse_add_fields,
    "$set": _parse_add_fields,
    "$group": _parse_group,
    "$unwind": _parse_unwind,
    "$count": _parse_count,
    "$lookup": _parse_lookup,
}


# ---------------------------------------------------------------- SQL prefix


@dataclass(slots=True)
class Prefix:
    """The leading stages a collection query runs: filter, order, window."""

    nodes: list[Node] = field(default_factory=list)
    sort: list[tuple[Path, int]] = field(default_factory=list)
    skip: int = 0
    limit: int | None = None


def split(stages: list[Stage], in_sql: Callable[[set[str]], bool]) -> tuple[Prefix, list[Stage]]:
    """The longest `$match* $sort? ($skip|$limit)*` head whose fields
    `in_sql` accepts (by top-level field name), and the stages after it."""
    prefix = Prefix()
    i = 0
    for stage in stages:
        if not (isinstance(stage, Match) and in_sql(_heads(stage.node))):
            break
        prefix.nodes.append(stage.node)
        i += 1
    head = stages[i] if i < len(stages) else None
    if isinstance(head, Sort) and in_sql({path[0] for path, _ in head.keys}):
        prefix.sort = head.keys
        i += 1
    for stage in stages[i:]:
        if isinstance(stage, Skip):
            prefix.skip += stage.count
            prefix.limit = None if prefix.limit is None else max(prefix.limit - stage.count, 0)
        elif isinstance(stage, Limit):
            prefix.limit = stage.count if prefix.limit is None else min(prefix.limit, stage.count)
        else:
            break
        i += 1
    return prefix, stages[i:]


def _heads(node: Node) -> set[str]:
    if isinstance(node, And | Or | Nor):
        return set().union(*(_heads(c) for c in node.children))
    assert isinstance(node, Cond)
    return {node.path[0]}


# ---------------------------------------------------------------- evaluation


class Budget:
    """Counts documents and values held by stages that see everything."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = MAX_HELD if limit is None else limit
        self.held = 0

    def take(self, count: int) -> None:
        self.held += count
        if self.held > self.limit:
            raise BadRequest(
                f"Aggregation holds more than {self.limit} documents or values; "
                "narrow it with $match or $limit before $sort, $group and $lookup"
            )


# (lookup stage, local values) -> candidate documents of the joined model (a
# superset is fine: the exact match is done here)
Fetch = Callable[[Lookup, list[Any]], list[dict[str, Any]]]


def run(stages: list[Stage], docs: Iterable[dict[str, Any]], fetch: Fetch,
        budget: Budget | None = None) -> Iterator[dict[str, Any]]:
    """Apply `stages` to `docs` lazily; stages that need every document
    ($sort, $group, $count) consume their input when first pulled."""
    budget = budget or Budget()
    stream: Iterable[dict[str, Any]] = docs
    for stage in stages:
        stream = _apply(stage, stream, fetch, budget)
    return iter(stream)


def _apply(stage: Stage, docs: Iterable[dict[str, Any]], fetch: Fetch, budget: Budget) -> Iterable[dict[str, Any]]:
    if isinstance(stage, Match):
        node = stage.node
        return (d for d in docs if match.matches(node, d))
    if isinstance(stage, Sort):
        return _sorted(stage, docs, budget)
    if isinstance(stage, Skip):
        return _skip(docs, stage.count)
    if isinstance(stage, Limit):
        return _limit(docs, stage.count)
    if isinstance(stage, Project):
        return (project(stage, d) for d in docs)
    if isinstance(stage, AddFields):
        return (add_fields(stage.fields, d) for d in docs)
    if isinstance(stage, Group):
        return _group(stage, docs, budget)
    if isinstance(stage, Unwind):
        return (out for d in docs for out in unwind(stage, d))
    if isinstance(stage, CountStage):
        return _count(stage.name, docs)
    assert isinstance(stage, Lookup)
    return _lookup(stage, docs, fetch, budget)


def _sorted(stage: Sort, docs: Iterable[dict[str, Any]], budget: Budget) -> Iterator[dict[str, Any]]:
    held = []
    for doc in docs:
        budget.take(1)
        held.append(doc)
    yield from match.sort_docs(held, stage.keys)


def _skip(docs: Iterable[dict[str, Any]], count: int) -> Iterator[dict[str, Any]]:
    for i, doc in enumerate(docs):
        if i >= count:
            yield doc


def _limit(docs: Iterable[dict[str, Any]], count: int) -> Iterator[dict[str, Any]]:
    for i, doc in enumerate(docs):
        yield doc
        if i + 1 >= count:
            return


def _count(name: str, docs: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    total = sum(1 for _ in docs)
    if total:
        yield {name: total}


def set_path(doc: dict[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A copy of `doc` with `path` set (MISSING removes it); objects on the
    way are copied, never changed, since documents share values. Through an
    array the field is set in each element, a non-object element replaced."""
    head, rest = path[0], path[1:]
    out = dict(doc)
    if not rest:
        if value is MISSING:
            out.pop(head, None)
        else:
            out[head] = value
        return out
    current = doc.get(head)
    if isinstance(current, list):
        out[head] = [set_path(e if isinstance(e, dict) else {}, rest, value) for e in current]
    else:
        out[head] = set_path(current if isinstance(current, dict) else {}, rest, value)
    return out


def project(stage: Project, doc: dict[str, Any]) -> dict[str, Any]:
    if not stage.include:
        out = match.project(doc, _exclusion(stage))
        return out
    out = {}
    if stage.id_included and "_id" in doc:
        out["_id"] = doc["_id"]
    by_head: dict[str, list[Path]] = {}
    for path in stage.paths:
        by_head.setdefault(path[0], []).append(path)
    for key in doc:  # included fields keep the document's order, as in MongoDB
        for path in by_head.get(key, ()):
            match._copy_path(doc, out, path)
    for path, expr in stage.computed:
        value = expr(doc)
        if value is not MISSING:
            out = set_path(out, path, bounded(value))
    return out


def _exclusion(stage: Project) -> Projection:
    return Projection(False, stage.paths, stage.id_included)


def add_fields(fields: list[tuple[Path, Expr]], doc: dict[str, Any]) -> dict[str, Any]:
    computed = [(path, expr(doc)) for path, expr in fields]  # all see the input document
    for path, value in computed:
        doc = set_path(doc, path, bounded(value) if value is not MISSING else value)
    return doc


def _group(stage: Group, docs: Iterable[dict[str, Any]], budget: Budget) -> Iterator[dict[str, Any]]:
    groups: dict[Any, tuple[Any, list[Accumulator]]] = {}
    for doc in docs:
        key_value = stage.key(doc)
        key = group_key(key_value)
        entry = groups.get(key)
        if entry is None:
            budget.take(1)
            value = None if key_value is MISSING else bounded(key_value)
            entry = groups[key] = (value, [kind(budget.take) for _, kind, _ in stage.accumulators])
        for (_, _, expr), acc in zip(stage.accumulators, entry[1], strict=True):
            acc.add(expr(doc))
    for key_value, accs in groups.values():
        out = {"_id": key_value}
        for (name, _, _), acc in zip(stage.accumulators, accs, strict=True):
            out[name] = acc.result()
        yield out


def unwind(stage: Unwind, doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    value: Any = doc
    for key in stage.path:  # $unwind walks objects only
        value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
    if isinstance(value, list) and value:
        for i, element in enumerate(value):
            out = set_path(doc, stage.path, element)
            yield out if stage.index_field is None else set_path(out, stage.index_field, i)
    elif isinstance(value, list) or value is None or value is MISSING:
        if stage.preserve:
            out = set_path(doc, stage.path, MISSING) if isinstance(value, list) else doc
            yield out if stage.index_field is None else set_path(out, stage.index_field, None)
    else:
        yield doc if stage.index_field is None else set_path(doc, stage.index_field, None)


def local_values(doc: dict[str, Any], path: Path) -> list[Any]:
    """The values a $lookup matches on: the field's values, an array's
    elements, null for a missing field."""
    found: list[Any] = []
    for terminal in match.traverse(doc, path):
        if terminal is MISSING:
            found.append(None)
        elif isinstance(terminal, list):
            found.extend(terminal)
        else:
            found.append(terminal)
    return found or [None]


def _lookup(stage: Lookup, docs: Iterable[dict[str, Any]], fetch: Fetch, budget: Budget) -> Iterator[dict[str, Any]]:
    batch: list[dict[str, Any]] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) >= LOOKUP_BATCH:
            yield from _join(stage, batch, fetch, budget)
            batch = []
    if batch:
        yield from _join(stage, batch, fetch, budget)


def _join(stage: Lookup, batch: list[dict[str, Any]], fetch: Fetch, budget: Budget) -> Iterator[dict[str, Any]]:
    wanted = [local_values(doc, stage.local) for doc in batch]
    union: list[Any] = []
    seen: set[Any] = set()
    for found in wanted:
        for value in found:
            key = group_key(value)
            if key not in seen:
                seen.add(key)
                union.append(value)
    candidates = [(c, list(match.traverse(c, stage.foreign))) for c in fetch(stage, union)]
    for doc, found in zip(batch, wanted, strict=True):
        cond = Cond(stage.foreign, "in", found)
        joined = [c for c, terminals in candidates if match.cond_matches(cond, terminals)]
        budget.take(len(joined))
        yield set_path(doc, stage.into, joined)


def aggregate(
    coll: Collection,
    stages: list[Stage],
    fetch: Fetch,
    *,
    base: Node | None = None,
    in_sql: Callable[[set[str]], bool] = lambda heads: True,
    prepare: Callable[[dict[str, Any]], dict[str, Any]] = lambda doc: doc,
    budget: Budget | None = None,
    push: bool = True,
) -> Iterator[dict[str, Any]]:
    """Run `stages` over a collection: the prefix as one SQL query (with
    `base` ANDed into its filter), each row then `prepare`d, the rest here.
    `push=False` runs every stage here (the tests' reference)."""
    prefix, rest = split(stages, in_sql) if push else (Prefix(), stages)
    nodes = ([base] if base is not None else []) + prefix.nodes
    node = nodes[0] if len(nodes) == 1 else And(nodes)
    if prefix.limit == 0:
        return run(rest, iter(()), fetch, budget)
    if rest and isinstance(rest[0], CountStage):  # counted in SQL, no row is read
        total = max(coll.count(node) - prefix.skip, 0)
        total = total if prefix.limit is None else min(total, prefix.limit)
        return run(rest[1:], iter([{rest[0].name: total}] if total else []), fetch, budget)
    chunks = coll.stream_raw(node, prefix.sort, prefix.limit, prefix.skip or None)
    docs = (prepare(orjson.loads(row)) for chunk in chunks for row in chunk)
    return run(rest, docs, fetch, budget)
