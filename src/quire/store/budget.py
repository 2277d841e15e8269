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
# Wall time one aggregation may take. Every stage runs on the worker's event
# loop, and a join that no index serves ($lookup on an unindexed field of a
# large model scans it once per batch) could otherwise hold a worker for
# minutes; checked between documents and before each $lookup batch.
MAX_SECONDS = 5.0
# Bytes one aggregation may hold at once (`[content] aggregate_max_bytes`).
MAX_BYTES = 256 << 20


@dataclass(frozen=True, slots=True)
class Limits:
    """An aggregation's bytes and seconds (`[content] aggregate_max_bytes`,
    `aggregate_max_seconds`)."""

    max_bytes: int = MAX_BYTES
    seconds: float = MAX_SECONDS


def _megabytes(count: int) -> str:
    return f"{count / (1 << 20):g} MB"


class Budget:
    """Counts what one aggregation holds: documents and values, bytes, time."""

    def __init__(self, limit: int | None = None, limits: Limits | None = None) -> None:
        self.limit = MAX_HELD if limit is None else limit
        self.max_bytes = MAX_BYTES if limits is None else limits.max_bytes
        self.seconds = MAX_SECONDS if limits is None else limits.seconds
        self.deadline = time.monotonic() + self.seconds
        self.held = 0  # documents and values
        self.bytes = 0  # held now
        self.peak = 0
        self.holders: dict[str, int] = {}  # what each stage holds now
        self.where = "the pipeline's input"  # the stage at work, for a fetch's holding

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
            return units(value, self.room())
        return 8

    def hold(self, size: int, where: str | None = None) -> None:
        """Hold `size` more bytes for `where`, refused past the cap."""
        where = where or self.where
        self.bytes += size
        self.holders[where] = self.holders.get(where, 0) + size
        if self.bytes > self.max_bytes:
            raise self._over(where)
        if self.bytes > self.peak:
            self.peak = self.bytes

    def free(self, size: int, where: str | None = None) -> None:
        self.bytes -= size
        self.holders[where or self.where] -= size

    def fits(self, size: int, where: str | None = None) -> None:
        """A document of `size` bytes passing through `where`, held by
        nothing there, must fit beside what is held; past the cap the stage
        holding most is named, or `where` when it alone is too big."""
        if self.bytes + size > self.max_bytes:
            holder = max(self.holders, key=self.holders.__getitem__, default=None)
            alone = size > self.max_bytes or holder is None or self.holders[holder] <= 0
            raise self._over(where if alone else holder)

    def _over(self, where: str | None) -> BadRequest:
        return BadRequest(
            f"Aggregation needs more than {_megabytes(self.max_bytes)} of memory at {where or self.where}; "
            "narrow what reaches it with $match or $limit, or keep fewer fields with $project"
        )


class StageBudget:
    """A stage's view of the budget: holdings are charged to `where`
    (`stage 5 ($sort)`) in the refusal's message."""

    __slots__ = ("budget", "where")

    def __init__(self, budget: Budget, where: str) -> None:
        self.budget = budget
        self.where = where

    def take(self, count: int) -> None:
        self.budget.take(count)

    def measure(self, value: Any) -> int:
        return self.budget.measure(value)

    def hold(self, size: int) -> None:
        self.budget.hold(size, self.where)

    def free(self, size: int) -> None:
        self.budget.free(size, self.where)

    def fits(self, size: int) -> None:
        budget = self.budget
        if budget.bytes + size > budget.max_bytes:
            budget.fits(size, self.where)
