"""MongoDB aggregation pipelines: the SQL prefix and the evaluation.

Stages are parsed in `stages.py`. A pipeline's leading `$match` stages
and one `$sort`, then `$skip`/`$limit` stages form the `Prefix`, which the
collection runs in SQL like a list (a `$count` right after it is a SQL
count); the stages after it run here, in Python, over the streamed rows,
with the reference evaluator's semantics (`match.py`, `values.py`) for
matching and order.

Work is bounded: at most MAX_STAGES stages; at most MAX_HELD documents and
values held by the stages that must see everything ($sort, $group with its
$push/$addToSet entries, $lookup matches); no built value above
MAX_VALUE_UNITS (see `expressions.py`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from quire.errors import BadRequest
from quire.store import match
from quire.store.accumulators import Accumulator, group_key
from quire.store.expressions import MISSING, Expr, bounded
from quire.store.query import And, Cond, Node, Nor, Or, Path, Projection
from quire.store.stages import (
    AddFields,
    CountStage,
    Group,
    Limit,
    Lookup,
    Match,
    Project,
    Skip,
    Sort,
    Stage,
    Unwind,
)
from quire.store.values import INT64_MAX

if TYPE_CHECKING:
    from quire.store import Collection

MAX_HELD = 100_000
# Wall time one aggregation may take. Every stage runs on the worker's event
# loop, and a join that no index serves ($lookup on an unindexed field of a
# large model scans it once per batch) could otherwise hold a worker for
# minutes; checked between documents and before each $lookup batch.
MAX_SECONDS = 5.0
LOOKUP_BATCH = 100


# ---------------------------------------------------------------- SQL prefix


@dataclass(slots=True)
class Prefix:
    """The leading stages a collection query runs: filter, order, window."""

    nodes: list[Node] = field(default_factory=list)
    sort: list[tuple[Path, int]] = field(default_factory=list)
    skip: int = 0
    limit: int | None = None


def split(stages: list[Stage], in_sql: Callable[[set[str]], bool]) -> tuple[Prefix, list[Stage]]:
    """The longest head of `$match` stages and one `$sort` (in any order),
    then `$skip`/`$limit` stages, whose fields `in_sql` accepts (by
    top-level field name); and the stages after it."""
    prefix = Prefix()
    i = 0
    for stage in stages:  # a filter and an order commute: $match and one $sort, in any order
        if isinstance(stage, Match) and in_sql(_heads(stage.node)):
            prefix.nodes.append(stage.node)
        elif isinstance(stage, Sort) and not prefix.sort and in_sql({path[0] for path, _ in stage.keys}):
            prefix.sort = stage.keys
        else:
            break
        i += 1
    for stage in stages[i:]:
        if isinstance(stage, Skip):
            prefix.skip = min(prefix.skip + stage.count, INT64_MAX)  # SQLite's OFFSET is 64-bit
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
        self.seconds = MAX_SECONDS
        self.deadline = time.monotonic() + MAX_SECONDS

    def tick(self) -> None:
        """Refuse an aggregation that has run longer than MAX_SECONDS."""
        if time.monotonic() > self.deadline:
            raise BadRequest(
                f"Aggregation takes longer than {self.seconds:g} seconds; "
                "narrow it with $match or $limit before $lookup, $sort and $group"
            )

    def take(self, count: int) -> None:
        self.tick()
        self.held += count
        if self.held > self.limit:
            raise BadRequest(
                f"Aggregation holds more than {self.limit} documents or values; "
                "narrow it with $match or $limit before $sort, $group and $lookup"
            )


def _timed(docs: Iterable[dict[str, Any]], budget: Budget) -> Iterator[dict[str, Any]]:
    for doc in docs:
        budget.tick()
        yield doc


# (lookup stage, local values) -> candidate documents of the joined model (a
# superset is fine: the exact match is done here)
Fetch = Callable[[Lookup, list[Any]], list[dict[str, Any]]]


def run(stages: list[Stage], docs: Iterable[dict[str, Any]], fetch: Fetch,
        budget: Budget | None = None) -> Iterator[dict[str, Any]]:
    """Apply `stages` to `docs` lazily; stages that need every document
    ($sort, $group, $count) consume their input when first pulled."""
    budget = budget or Budget()
    stream: Iterable[dict[str, Any]] = _timed(docs, budget)
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
    budget.tick()
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
