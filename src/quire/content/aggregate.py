"""`GET /content/aggregate/{model}`: a MongoDB aggregation pipeline over the
published items of a collection, with the read rules of lists.

The pipeline's leading `$match`, `$sort`, `$skip` and `$limit` stages run in SQL
(see `store/pipeline.py`); with `locale`, a stage touching a localized field
runs in Python instead, after the items were localized, so that `title`
means the localized title everywhere in the pipeline. `$lookup` joins
another model's published items, localized the same way, and needs read
permission on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.content.locales import localize, rewrite_locale_keys
from quire.content.models import Model
from quire.content.service import PUBLISHED, ContentService
from quire.errors import BadRequest, PreconditionFailed
from quire.store.budget import Budget
from quire.store.pipeline import aggregate
from quire.store.query import And, Cond
from quire.store.stages import Lookup, parse_pipeline

MAX_ANSWER_BYTES = 64 << 20
# Past this many distinct local values a $lookup batch reads the joined
# model's published items whole instead of one `$in` query (SQLite bounds
# the size of one expression).
MAX_LOOKUP_KEYS = 100


def run_aggregate(
    content: ContentService, name: str, pipeline: Any, locale: str | None, identity: Identity
) -> bytes:
    """The answer of an aggregation as a JSON array."""
    model = content.readable(name, identity)
    if model.type == "singleton":
        raise PreconditionFailed(f"Aggregate method not allowed for {name}")
    stages = parse_pipeline(pipeline, rewrite_locale_keys)
    joined = {s.source: content.readable(s.source, identity) for s in stages if isinstance(s, Lookup)}
    codes = content.locales.codes()
    budget = Budget(limits=content.aggregate_limits)

    def prepare(target: Model) -> Any:
        if not locale or not (target.localized or target.localized_inside):
            return lambda doc: doc
        return lambda doc: localize(doc, target.localized, codes, locale, target.localized_inside)

    def stored_keys(target: Model) -> set[str]:
        """Top-level keys whose stored value differs from the one the
        pipeline sees (localized fields, with locale)."""
        if not locale:
            return set()
        return ({f"{f}_{c}" for f in target.localized for c in codes} | set(target.localized)
                | set(target.localized_inside))

    cached: dict[str, list[dict[str, Any]]] = {}

    def fetch(stage: Lookup, keys: list[Any]) -> list[dict[str, Any]]:
        target = joined[stage.source]
        coll = content.collection(target)
        # Rows are weighed before they are decoded: a batch that would join
        # too much is refused before it takes twice its size.
        if stage.foreign[0] not in stored_keys(target) and len(keys) <= MAX_LOOKUP_KEYS:
            rows = coll.find_raw(And([PUBLISHED, Cond(stage.foreign, "in", keys)]), limit=budget.limit + 1)
            if len(rows) > budget.limit:
                budget.take(len(rows))  # refused: one batch would join too much
            budget.fits(sum(len(row) for row in rows))  # held by the $lookup stage once decoded
            found = [orjson.loads(row) for row in rows]
        else:
            if stage.source not in cached:
                rows = coll.find_raw(PUBLISHED, limit=budget.limit + 1)
                budget.take(len(rows))
                budget.hold(sum(len(row) for row in rows))  # kept for every batch, to the end
                cached[stage.source] = [orjson.loads(row) for row in rows]
            found = cached[stage.source]
        shape = prepare(target)
        return [shape(d) for d in found]

    hidden = stored_keys(model)
    docs = aggregate(
        content.collection(model), stages, fetch,
        base=PUBLISHED, in_sql=lambda heads: not heads & hidden, prepare=prepare(model), budget=budget,
    )
    try:
        return answer_json(docs, budget)
    except RecursionError:  # values built stage upon stage
        raise BadRequest("Aggregation values nest too deeply") from None
    except orjson.JSONEncodeError as exc:  # e.g. $concat joining halves of a surrogate pair
        raise BadRequest(f"Aggregation result cannot be written as JSON: {exc}") from None


def answer_json(docs: Iterable[dict[str, Any]], budget: Budget) -> bytes:
    """The documents as a JSON array, held in `budget` as it grows beside
    what the stages still hold, and once more for the final copy. Written
    into one buffer: each bytes object orjson answers keeps the room it
    reserved for the worst case (several times the text)."""
    held = budget.at("the answer")
    out = bytearray(b"[")
    for doc in docs:
        before = len(out)
        if before > 1:
            out += b","
        out += orjson.dumps(doc)  # and that reserve is gone at once
        if len(out) + 1 > MAX_ANSWER_BYTES:
            raise BadRequest(f"Aggregation answer exceeds {MAX_ANSWER_BYTES >> 20} MB; add $limit or $project")
        held.hold(len(out) - before)
    out += b"]"
    held.hold(len(out))
    return bytes(out)
