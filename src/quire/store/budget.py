"""What one aggregation may take: documents held, bytes held, seconds.

Stages that must see everything (`$sort`, `$group` with its `$push` and
`$addToSet` entries, `$lookup` matches) hold documents; every document in
flight carries its size, measured where a stage builds it (`units`: about
its size as JSON, each document counted as if written on its own, so values
documents share count once per document, as in the answer). `Budget.hold`
adds to what the request holds at once and `free` gives it back; a document
that passes a stage without being held must still fit (`fits`) beside what
is held. Past the byte cap the request is a 400 naming the stage, its
position in the pipeline and its operator.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from quire.errors import BadRequest
from quire.store.expressions import units

MAX_HELD = 100_000
# Wall time one aggregation may take (`[content] aggregate_max_seconds`).
# Every stage runs in one of the worker's few aggregation slots, and a join
# that no index serves ($lookup on an unindexed field of a large model scans
# it once per batch) could otherwise hold one for minutes; checked between
# documents and before each $lookup batch.
MAX_SECONDS = 5.0
# Bytes one aggregation may hold at once (`[content] aggregate_max_bytes`):
# with Python's share above the JSON size and two aggregations a worker, a
# few workers stay well under a gigabyte or two (docs/configuration.md).
MAX_BYTES = 256 << 20
# Containers this long are remembered once measured (the last few): documents
# share values, and a stage that measures what it builds (`$project`) would
# otherwise walk the same big array again for every document.
REMEMBER_LENGTH = 256
REMEMBERED = 8


@dataclass(frozen=True, slots=True)
class Limits:
    """An aggregation's bytes and seconds (`[content] aggregate_max_bytes`,
    `aggregate_max_seconds`)."""

    max_bytes: int = MAX_BYTES
    seconds: float = MAX_SECONDS


def _megabytes(count: int) -> str:
    return f"{count / (1 << 20):g} MB"


class Budget:
    """Counts what one aggregation holds: documents and values, bytes, time.
    Stages hold through their `StageBudget` (`at`), which keeps what each
    holds for the refusal's message."""

    def __init__(self, limit: int | None = None, limits: Limits | None = None) -> None:
        self.limit = MAX_HELD if limit is None else limit
        self.max_bytes = MAX_BYTES if limits is None else limits.max_bytes
        self.seconds = MAX_SECONDS if limits is None else limits.seconds
        self.deadline = time.monotonic() + self.seconds
        self.held = 0  # documents and values
        self.bytes = 0  # held now
        self.peak = 0
        self.stages: dict[str, StageBudget] = {}
        self.sizes: dict[int, tuple[Any, int]] = {}  # id -> (container, size), kept alive while remembered
        self.where = "the pipeline's input"  # the stage at work, for a fetch's holding

    def at(self, where: str) -> StageBudget:
        """The budget as the stage `where` (`stage 5 ($sort)`) holds it."""
        found = self.stages.get(where)
        if found is None:
            found = self.stages[where] = StageBudget(self, where)
        return found

    def tick(self) -> None:
        """Refuse an aggregation that has run longer than its seconds."""
        if time.monotonic() > self.deadline:
            raise BadRequest(
                f"Aggregation takes longer than {self.seconds:g} seconds; "
                "narrow it with $match or $limit before $lookup, $sort and $group"
            )

    def take(self, count: int) -> None:
        """Count `count` more documents or values held."""
        self.tick()
        self.held += count
        if self.held > self.limit:
            raise BadRequest(
                f"Aggregation holds more than {self.limit} documents or values; "
                "narrow it with $match or $limit before $sort, $group and $lookup"
            )

    def room(self) -> int:
        """Bytes that may still be held."""
        return self.max_bytes - self.bytes

    def measure(self, value: Any) -> int:
        """About `value`'s size as JSON, counted no further than just past
        the room left (a larger value is refused anyway)."""
        if isinstance(value, str):
            return len(value) + 2
        if isinstance(value, dict | list):
            if len(value) < REMEMBER_LENGTH:
                return units(value, self.max_bytes - self.bytes)
            known = self.sizes.get(id(value))
            if known is not None:
                return known[1]
            room = self.room()
            size = units(value, room)
            if size <= room:  # counted whole, not cut short
                if len(self.sizes) >= REMEMBERED:
                    del self.sizes[next(iter(self.sizes))]
                self.sizes[id(value)] = (value, size)
            return size
        return 8

    def hold(self, size: int, where: str | None = None) -> None:
        """Hold `size` more bytes for `where` (the stage at work), refused
        past the cap."""
        self.at(where or self.where).hold(size)

    def fits(self, size: int, where: str | None = None) -> None:
        """A document of `size` bytes passing through `where`, held by
        nothing there, must fit beside what is held; past the cap the stage
        holding most is named, or `where` when it alone is too big."""
        if self.bytes + size > self.max_bytes:
            holder = max(self.stages.values(), key=lambda stage: stage.held, default=None)
            alone = size > self.max_bytes or holder is None or holder.held <= 0
            raise self.over(where if alone or holder is None else holder.where)

    def over(self, where: str | None) -> BadRequest:
        """The refusal: past the cap at `where`."""
        return BadRequest(
            f"Aggregation needs more than {_megabytes(self.max_bytes)} of memory at {where or self.where}; "
            "narrow what reaches it with $match or $limit, or keep fewer fields with $project"
        )


class StageBudget:
    """A stage's part of the budget: what it holds, charged to `where`
    (`stage 5 ($sort)`) in the refusal's message."""

    __slots__ = ("budget", "held", "where")

    def __init__(self, budget: Budget, where: str) -> None:
        self.budget = budget
        self.where = where
        self.held = 0

    def take(self, count: int) -> None:
        """Count `count` more documents or values held."""
        self.budget.take(count)

    def measure(self, value: Any) -> int:
        """About `value`'s size as JSON (`Budget.measure`)."""
        return self.budget.measure(value)

    def hold(self, size: int, values: int = 0) -> None:
        """Hold `size` more bytes (and count `values` more documents or
        values), refused past either cap."""
        budget = self.budget
        if values:
            budget.take(values)
        self.held += size
        budget.bytes += size
        if budget.bytes > budget.max_bytes:
            raise budget.over(self.where)
        if budget.bytes > budget.peak:
            budget.peak = budget.bytes

    def free(self, size: int) -> None:
        """Give back `size` bytes this stage held."""
        self.held -= size
        self.budget.bytes -= size

    def fits(self, size: int) -> None:
        """A document of `size` bytes passing this stage must fit beside
        what is held (`Budget.fits`)."""
        budget = self.budget
        if budget.bytes + size > budget.max_bytes:
            budget.fits(size, self.where)
