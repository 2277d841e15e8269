"""MongoDB aggregation pipelines: the SQL prefix and the evaluation.

Stages are parsed in `stages.py`. A pipeline's leading `$match` stages
and one `$sort`, then `$skip`/`$limit` stages form the `Prefix`, which the
collection runs in SQL like a list (a `$count` right after it is a SQL
count); the stages after it run here, in Python, over the streamed rows,
with the reference evaluator's semantics (`match.py`, `values.py`) for
matching and order.

Work is bounded (`budget.py`): at most MAX_STAGES stages; at most MAX_HELD
documents and values held by the stages that must see everything ($sort,
$group with its $push/$addToSet entries, $lookup matches); at most the
budget's bytes held at once, every document carrying its size from stage to
stage; no built value above MAX_VALUE_UNITS (see `expressions.py`); at most
the budget's seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any

import orjson

from quire.store import match
from quire.store.accumulators import Accumulator, group_key
from quire.store.budget import Budget, StageBudget
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

LOOKUP_BATCH = 100
# Rows read from the store at once: what is read ahead is held, and items
# may be large (up to `[api] max_body_bytes` each).
READ_CHUNK = 100


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

# A document in flight and about its size as JSON (see `budget.py`): read
# from the stored row, or measured where a stage builds it, so a value is
# measured when it is made and not again at every later stage.
Sized = tuple[dict[str, Any], int]
Stream = Iterable[Sized]


def _timed(docs: Iterable[Sized], budget: Budget) -> Iterator[Sized]:
    for doc, size in docs:
        budget.tick()
        if budget.bytes + size > budget.max_bytes:
            budget.fits(size, "the pipeline's input")
        yield doc, size


# (lookup stage, local values) -> candidate documents of the joined model (a
# superset is fine: the exact match is done here)
Fetch = Callable[[Lookup, list[Any]], list[dict[str, Any]]]


def run(stages: list[Stage], docs: Iterable[dict[str, Any]], fetch: Fetch,
        budget: Budget | None = None, first: int = 0) -> Iterator[dict[str, Any]]:
    """Apply `stages` to `docs` lazily; stages that need every document
    ($sort, $group, $count) consume their input when first pulled. `first`
    is the position of `stages[0]` in the pipeline, for messages."""
    budget = budget or Budget()
    sized = _timed(((doc, budget.measure(doc)) for doc in docs), budget)
    return (doc for doc, _ in run_sized(stages, sized, fetch, budget, first))


def run_sized(stages: list[Stage], docs: Iterable[Sized], fetch: Fetch, budget: Budget,
              first: int = 0) -> Iterator[Sized]:
    """`run` over documents whose sizes are known, already checked against
    the clock and the cap (`_timed`, `_decoded`)."""
    stream: Stream = docs
    for i, stage in enumerate(stages, first):
        stream = _apply(stage, stream, fetch, budget.at(f"stage {i} ({stage.operator()})"))
    return iter(stream)


def _apply(stage: Stage, docs: Stream, fetch: Fetch, budget: StageBudget) -> Stream:
    if isinstance(stage, Match):
        node = stage.node
        return ((d, n) for d, n in docs if match.matches(node, d))
    if isinstance(stage, Sort):
        return _sorted(stage, docs, budget)
    if isinstance(stage, Skip):
        return _skip(docs, stage.count)
    if isinstance(stage, Limit):
        return _limit(docs, stage.count)
    if isinstance(stage, Project):
        return _measured((project(stage, d) for d, _ in docs), budget)
    if isinstance(stage, AddFields):
        return _add_fields_sized(stage, docs, budget)
    if isinstance(stage, Group):
        return _group(stage, docs, budget)
    if isinstance(stage, Unwind):
        return (out for d in docs for out in _unwind_sized(stage, d, budget))
    if isinstance(stage, CountStage):
        return _count(stage.name, docs)
    assert isinstance(stage, Lookup)
    return _lookup(stage, docs, fetch, budget)


def _measured(docs: Iterable[dict[str, Any]], budget: StageBudget) -> Iterator[Sized]:
    """Documents a stage built anew, measured field by field (a big value
    they share with others is then measured once: see `Budget.measure`)."""
    for doc in docs:
        size = 2
        for key, value in doc.items():
            size += len(key) + 4 + budget.measure(value)
        budget.fits(size)
        yield doc, size


def _sorted(stage: Sort, docs: Stream, budget: StageBudget) -> Iterator[Sized]:
    held: list[Sized] = []
    for doc, size in docs:
        budget.hold(size, 1)
        held.append((doc, size))
    match.sort_docs(held, stage.keys, of=itemgetter(0))
    held.reverse()
    while held:  # handed on one by one: what the next stage holds is no longer held here
        doc, size = held.pop()
        budget.free(size)
        yield doc, size


def _skip(docs: Stream, count: int) -> Iterator[Sized]:
    for i, doc in enumerate(docs):
        if i >= count:
            yield doc


def _limit(docs: Stream, count: int) -> Iterator[Sized]:
    for i, doc in enumerate(docs):
        yield doc
        if i + 1 >= count:
            return


def _count(name: str, docs: Stream) -> Iterator[Sized]:
    total = sum(1 for _ in docs)
    if total:
        yield {name: total}, len(name) + 14


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


def _add_fields_sized(stage: AddFields, docs: Stream, budget: StageBudget) -> Iterator[Sized]:
    """$addFields; a document's size changes by what its changed top-level
    fields weigh now less what they weighed (only those are measured)."""
    heads = list(dict.fromkeys(path[0] for path, _ in stage.fields))
    measure, whole = budget.measure, budget.budget
    for doc, size in docs:
        out = add_fields(stage.fields, doc)
        for head in heads:
            new, old = out.get(head, MISSING), doc.get(head, MISSING)
            if new is not MISSING:
                size += len(head) + 4 + (len(new) + 2 if type(new) is str else measure(new))
            if old is not MISSING:
                size -= len(head) + 4 + (len(old) + 2 if type(old) is str else measure(old))
        if whole.bytes + size > whole.max_bytes:
            budget.fits(size)
        yield out, size


def _group(stage: Group, docs: Stream, budget: StageBudget) -> Iterator[Sized]:
    groups: dict[Any, tuple[Any, int, list[Accumulator]]] = {}  # key -> (_id, bytes held, accumulators)
    fixed = 2 + sum(len(name) + 12 for name, _, _ in stage.accumulators)  # {"_id":..., "name": 0, ...}
    for doc, _ in docs:
        key_value = stage.key(doc)
        key = group_key(key_value)
        entry = groups.get(key)
        if entry is None:
            value = None if key_value is MISSING else bounded(key_value)
            size = fixed + 6 + budget.measure(value)
            budget.hold(size, 1)
            entry = groups[key] = (value, size, [kind(budget) for _, kind, _ in stage.accumulators])
        for (_, _, expr), acc in zip(stage.accumulators, entry[2], strict=True):
            acc.add(expr(doc))
    done = list(groups.values())
    groups.clear()
    done.reverse()
    while done:  # handed on one by one, as $sort does
        key_value, held, accs = done.pop()
        out = {"_id": key_value}
        size = held
        for (name, _, _), acc in zip(stage.accumulators, accs, strict=True):
            out[name] = acc.result()
            size += acc.size - 8
            held += acc.held
        budget.free(held)
        yield out, size


def _unwind_sized(stage: Unwind, sized: Sized, budget: StageBudget) -> Iterator[Sized]:
    """$unwind; an output document weighs its input less the array plus the
    element (each element measured once, the array is their sum)."""
    doc, size = sized
    value: Any = doc
    for key in stage.path:  # $unwind walks objects only
        value = value.get(key, MISSING) if isinstance(value, dict) else MISSING
    index = 0 if stage.index_field is None else len(stage.index_field[-1]) + 12
    if isinstance(value, list) and value:
        sizes = [budget.measure(e) for e in value]
        rest = size - 2 - len(value) - sum(sizes) + index
        for i, element in enumerate(value):
            out = set_path(doc, stage.path, element)
            if stage.index_field is not None:
                out = set_path(out, stage.index_field, i)
            budget.fits(rest + sizes[i])
            yield out, rest + sizes[i]
    elif isinstance(value, list) or value is None or value is MISSING:
        if stage.preserve:
            out = set_path(doc, stage.path, MISSING) if isinstance(value, list) else doc
            yield (out if stage.index_field is None else set_path(out, stage.index_field, None)), size + index
    else:
        yield (doc if stage.index_field is None else set_path(doc, stage.index_field, None)), size + index


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


def _lookup(stage: Lookup, docs: Stream, fetch: Fetch, budget: StageBudget) -> Iterator[Sized]:
    """$lookup in batches: a batch's documents and the candidates fetched
    for it are held while it is joined."""
    batch: list[Sized] = []
    held = 0
    for doc, size in docs:
        budget.hold(size)
        held += size
        batch.append((doc, size))
        if len(batch) >= LOOKUP_BATCH:
            yield from _join(stage, batch, fetch, budget)
            budget.free(held)
            batch, held = [], 0
    if batch:
        yield from _join(stage, batch, fetch, budget)
        budget.free(held)


def _join(stage: Lookup, batch: list[Sized], fetch: Fetch, budget: StageBudget) -> Iterator[Sized]:
    budget.budget.tick()
    wanted = [local_values(doc, stage.local) for doc, _ in batch]
    union: list[Any] = []
    seen: set[Any] = set()
    for found in wanted:
        for value in found:
            key = group_key(value)
            if key not in seen:
                seen.add(key)
                union.append(value)
    budget.budget.where = budget.where  # a fetch holding what it reads charges this stage
    fetched = fetch(stage, union)
    candidates = [(c, list(match.traverse(c, stage.foreign)), budget.measure(c) + 1) for c in fetched]
    held = sum(n for _, _, n in candidates)
    budget.hold(held)
    field = len(stage.into[-1]) + 6
    for (doc, size), found in zip(batch, wanted, strict=True):
        cond = Cond(stage.foreign, "in", found)
        joined = [(c, n) for c, terminals, n in candidates if match.cond_matches(cond, terminals)]
        budget.take(len(joined))  # what they weigh is held above, while the batch is joined
        out_size = size + field + sum(n for _, n in joined)
        yield set_path(doc, stage.into, [c for c, _ in joined]), out_size
    budget.free(held)


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
    budget = budget or Budget()
    first = len(stages) - len(rest)  # the position of rest[0], for messages
    nodes = ([base] if base is not None else []) + prefix.nodes
    node = nodes[0] if len(nodes) == 1 else And(nodes)
    if prefix.limit == 0:
        return run(rest, iter(()), fetch, budget, first)
    if rest and isinstance(rest[0], CountStage):  # counted in SQL, no row is read
        total = max(coll.count(node) - prefix.skip, 0)
        total = total if prefix.limit is None else min(total, prefix.limit)
        return run(rest[1:], iter([{rest[0].name: total}] if total else []), fetch, budget, first + 1)
    chunks = coll.stream_raw(node, prefix.sort, prefix.limit, prefix.skip or None, READ_CHUNK)
    docs = _decoded(chunks, prepare, budget)
    return (doc for doc, _ in run_sized(rest, docs, fetch, budget, first))


def _decoded(chunks: Iterable[list[bytes]], prepare: Callable[[dict[str, Any]], dict[str, Any]],
             budget: Budget) -> Iterator[Sized]:
    """Rows read ahead, held while their chunk is read, decoded one by one
    (a row's length is its size: localizing only drops keys), checked
    against the clock as `_timed` does."""
    reader = budget.at("the pipeline's input")
    for chunk in chunks:
        held = sum(len(row) for row in chunk)
        reader.hold(held)
        for row in chunk:
            budget.tick()
            yield prepare(orjson.loads(row)), len(row)
        reader.free(held)
