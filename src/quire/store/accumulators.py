"""`$group` accumulators and the group key, MongoDB semantics.

Groups are keyed by MongoDB equality: `1` and `1.0` are one group, `true`
and `1` are two, objects compare field by field in order. A missing key
groups as null.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

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


class Accumulator(abc.ABC):
    """One accumulator of one group."""

    def __init__(self, budget: Callable[[int], None]) -> None:
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


class Extreme(Accumulator):
    """$min (sign 1) or $max (sign -1); nulls and missing values are skipped."""

    sign = 1
    best: Any = MISSING

    def add(self, value: Any) -> None:
        if value is None or value is MISSING:
            return
        if self.best is MISSING or compare(value, self.best) * self.sign < 0:
            self.best = value

    def result(self) -> Any:
        return None if self.best is MISSING else self.best


class Min(Extreme):
    sign = 1


class Max(Extreme):
    sign = -1


class First(Accumulator):
    seen = False
    value: Any = None

    def add(self, value: Any) -> None:
        if not self.seen:
            self.seen = True
            self.value = value

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


class Last(Accumulator):
    value: Any = None

    def add(self, value: Any) -> None:
        self.value = value

    def result(self) -> Any:
        return None if self.value is MISSING else self.value


class Push(Accumulator):
    """$push; the array it builds is bounded in size like any built value."""

    size = 0

    def __init__(self, budget: Callable[[int], None]) -> None:
        super().__init__(budget)
        self.items: list[Any] = []

    def add(self, value: Any) -> None:
        if value is MISSING:
            return
        self.size += units(value) + 1
        if self.size > MAX_VALUE_UNITS:
            raise BadRequest(f"A $push or $addToSet array would exceed {MAX_VALUE_UNITS} bytes")
        self.budget(1)
        self.items.append(value)

    def result(self) -> Any:
        return self.items


class AddToSet(Push):
    def __init__(self, budget: Callable[[int], None]) -> None:
        super().__init__(budget)
        self.seen: set[Any] = set()

    def add(self, value: Any) -> None:
        if value is MISSING:
            return
        key = group_key(value)
        if key not in self.seen:
            self.seen.add(key)
            super().add(value)


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
