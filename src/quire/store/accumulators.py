"""`$group` accumulators and the group key, MongoDB semantics.

Groups are keyed by MongoDB equality: `1` and `1.0` are one group, `true`
and `1` are two, objects compare field by field in order. A missing key
groups as null.

An accumulator holds what it keeps in the aggregation's budget (`Holder`):
`$push`/`$addToSet` every entry, `$first`/`$last`/`$min`/`$max` the value
kept; its `size` is then about its result's size as JSON.
"""

from __future__ import annotations

import abc
from typing import Any, Protocol

from quire.errors import BadRequest
from quire.store import values
from quire.store.expressions import (
    MAX_VALUE_UNITS,
    MISSING,
    Expr,
    compare,
    number,
    parse_expression,
    units,
)


def group_key(value: Any) -> Any:
    """A hashable stand-in for `value` under MongoDB equality."""
    if value is MISSING or value is None:
        return (values.NULL,)
    rank = values.rank(value)
    if rank == values.OBJECT:
        return (rank, tuple((k, group_key(v)) for k, v in value.items()))
    if rank == values.ARRAY:
        return (rank, tuple(group_key(v) for v in value))
    return (rank, value)  # Python already has 1 == 1.0 with equal hashes


class Holder(Protocol):
    """The part of an aggregation's budget an accumulator charges."""

    def take(self, count: int) -> None:
        """Count `count` more documents or values held."""

    def measure(self, value: Any) -> int:
        """About `value`'s size as JSON."""

    def hold(self, size: int, values: int = 0) -> None:
        """Hold `size` more bytes and count `values` more values (refused
        past the caps)."""

    def free(self, size: int) -> None:
        """Give back `size` bytes."""


class Accumulator(abc.ABC):
    """One accumulator of one group."""

    size = 8  # about the result's size as JSON (a number's)
    held = 0  # bytes charged to the budget beyond the group's fixed share

    def __init__(self, budget: Holder) -> None:
        self.budget = budget

    @abc.abstractmethod
    def add(self, value: Any) -> None:
        """Take one document's value."""

    @abc.abstractmethod
    def result(self) -> Any:
        """The group's value."""


class Sum(Accumulator):
    total: Any = 0

    def add(self, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.total = number(self.total + value)

    def result(self) -> Any:
        return self.total


class Avg(Accumulator):
    total: Any = 0
    count = 0

    def add(self, value: Any) -> None:
        if isinstance(value, int | float) and not isinstance(value, bool):
            self.total += value
            self.count += 1

    def result(self) -> Any:
        return self.total / self.count if self.count else None


class Kept(Accumulator):
    """An accumulator keeping one value; the budget holds its size."""

    def keep(self, value: Any) -> None:
        size = 8 if value is MISSING else self.budget.measure(value)
        self.budget.hold(size - self.size)
        self.held += size - self.size
        self.size = size


class Extreme(Kept):
    """$min (sign 1) or $max (sign -1); nulls and missing values are skipped."""

    sign = 1
    best: Any = MISSING

    def add(self, value: Any) -> None:
        if value is None or value is MISSING:
            return
        if self.best is MISSING or compare(value, self.best) * self.sign < 0:
            self.keep(value)
            self.best = value

    def result(self) -> Any:
        return None if self.best is MISSING else self.best


class Min(Extreme):
    sign = 1


class Max(Extreme):
    sign = -1


class First(Kept):
    seen = False
    value: Any = None

    def add(self, value: Any) -> None:
        if not self.seen:
            self.keep(value)
            self.seen = True
            self.value = value

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


class Last(Kept):
    value: Any = None

    def add(self, value: Any) -> None:
        self.keep(value)
        self.value = value

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


class Push(Accumulator):
    """$push; the array it builds is bounded in size like any built value."""

    size = 2

    def __init__(self, budget: Holder) -> None:
        super().__init__(budget)
        self.items: list[Any] = []

    def add(self, value: Any) -> None:
        if value is MISSING:
            return
        entry = units(value) + 1
        self.size += entry
        if self.size > MAX_VALUE_UNITS:
            raise BadRequest(f"A $push or $addToSet array would exceed {MAX_VALUE_UNITS} bytes")
        self.budget.hold(entry, 1)
        self.held += entry
        self.items.append(value)

    def result(self) -> Any:
        return self.items


class AddToSet(Push):
    """$addToSet; the set of keys seen is held too, about as big again as
    the entries (a key is the value remade as tuples)."""

    def __init__(self, budget: Holder) -> None:
        super().__init__(budget)
        self.seen: set[Any] = set()

    def add(self, value: Any) -> None:
        if value is MISSING:
            return
        key = group_key(value)
        if key not in self.seen:
            before = self.size
            super().add(value)
            self.seen.add(key)
            self.budget.hold(self.size - before)
            self.held += self.size - before


class Count(Sum):
    def add(self, value: Any) -> None:
        self.total += 1


ACCUMULATORS: dict[str, type[Accumulator]] = {
    "$sum": Sum, "$avg": Avg, "$min": Min, "$max": Max, "$first": First, "$last": Last,
    "$push": Push, "$addToSet": AddToSet, "$count": Count,
}


def parse_accumulator(name: str, spec: Any) -> tuple[type[Accumulator], Expr]:
    """`{"$sum": expr}` -> the accumulator class and its argument."""
    if not isinstance(spec, dict) or len(spec) != 1:
        raise BadRequest(f"$group field {name} must be an object with one accumulator, like {{\"$sum\": 1}}")
    op, arg = next(iter(spec.items()))
    kind = ACCUMULATORS.get(op)
    if kind is None:
        raise BadRequest(f"Unknown $group accumulator {op}")
    if op == "$count":
        if arg != {}:
            raise BadRequest("$count accumulator takes no argument: {\"$count\": {}}")
        return kind, lambda doc: None
    if isinstance(arg, list):
        raise BadRequest(f"{op} in $group takes one expression, not an array")
    return kind, parse_expression(arg)
