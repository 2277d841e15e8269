"""Aggregation pipeline stages: what each stage is, parsed and validated.

A pipeline is parsed whole before anything runs, so an unknown stage or
operator is a 400 naming it and never a half-done answer. Evaluation is in
`pipeline.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from quire.errors import BadRequest
from quire.store.accumulators import Accumulator, parse_accumulator
from quire.store.expressions import Expr, check_field_name, parse_expression, parse_path
from quire.store.query import Node, Path, parse_filter, parse_sort
from quire.store.values import INT64_MAX

MAX_STAGES = 32
REFUSED = {"$out", "$merge", "$function", "$accumulator", "$where", "$graphLookup", "$facet",
           "$unionWith", "$currentOp", "$collStats", "$indexStats", "$listSessions", "$planCacheStats"}


class Stage:
    """A parsed pipeline stage."""

    OPERATOR: ClassVar[str] = ""

    def operator(self) -> str:
        """The stage's name as the pipeline wrote it, for messages."""
        return self.OPERATOR


@dataclass(slots=True)
class Match(Stage):
    OPERATOR: ClassVar[str] = "$match"
    node: Node


@dataclass(slots=True)
class Sort(Stage):
    OPERATOR: ClassVar[str] = "$sort"
    keys: list[tuple[Path, int]]


@dataclass(slots=True)
class Skip(Stage):
    OPERATOR: ClassVar[str] = "$skip"
    count: int


@dataclass(slots=True)
class Limit(Stage):
    OPERATOR: ClassVar[str] = "$limit"
    count: int


@dataclass(slots=True)
class Project(Stage):
    OPERATOR: ClassVar[str] = "$project"
    include: bool
    id_included: bool
    paths: list[Path]
    computed: list[tuple[Path, Expr]]


@dataclass(slots=True)
class AddFields(Stage):
    fields: list[tuple[Path, Expr]]
    name: str = "$addFields"  # or its alias $set

    def operator(self) -> str:
        return self.name


@dataclass(slots=True)
class Group(Stage):
    OPERATOR: ClassVar[str] = "$group"
    key: Expr
    accumulators: list[tuple[str, type[Accumulator], Expr]]


@dataclass(slots=True)
class Unwind(Stage):
    OPERATOR: ClassVar[str] = "$unwind"
    path: Path
    index_field: Path | None
    preserve: bool


@dataclass(slots=True)
class CountStage(Stage):
    OPERATOR: ClassVar[str] = "$count"
    name: str


@dataclass(slots=True)
class Lookup(Stage):
    OPERATOR: ClassVar[str] = "$lookup"
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
    if isinstance(arg, bool) or not isinstance(arg, int) or not (1 if positive else 0) <= arg <= INT64_MAX:
        raise BadRequest(f"{name} needs a {'positive' if positive else 'non-negative'} integer "
                         "up to 2^63-1")
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


def _parse_add_fields(arg: Any, name: str = "$addFields") -> Stage:
    if not isinstance(arg, dict) or not arg:
        raise BadRequest("$addFields needs an object with at least one field")
    flat: list[tuple[Path, Any]] = []
    _flatten(arg, (), flat, "$addFields")
    _check_collisions([p for p, _ in flat], "$addFields")
    return AddFields([(path, parse_expression(value)) for path, value in flat], name)


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
    "$set": lambda a: _parse_add_fields(a, "$set"),
    "$group": _parse_group,
    "$unwind": _parse_unwind,
    "$count": _parse_count,
    "$lookup": _parse_lookup,
}
