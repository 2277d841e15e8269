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

from typing import Any

import json5
import orjson

from quire.auth.service import Identity
from quire.content.locales import localize, rewrite_locale_keys
from quire.content.models import Model
from quire.content.service import PUBLISHED, ContentService
from quire.errors import BadRequest, PreconditionFailed
from quire.store.expressions import number
from quire.store.pipeline import Budget, aggregate
from quire.store.query import And, Cond
from quire.store.stages import Lookup, parse_pipeline
from quire.store.values import unsafe

MAX_ANSWER_BYTES = 64 << 20
# Past this many distinct local values a $lookup batch reads the joined
# model's published items whole instead of one `$in` query (SQLite bounds
# the size of one expression).
MAX_LOOKUP_KEYS = 100


def parse_pipeline_text(text: str | None) -> Any:
    """The `pipeline` parameter: strict JSON, then JSON5; none is `[]`.
    Values no stage can hold (NaN, Infinity, NUL, lone surrogates, nesting
    past MAX_NESTING) are refused as in every other JSON parameter."""
    if text is None:
        return []
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            value = _doubles_for_huge_ints(json5.loads(text))
        except (ValueError, TypeError, RecursionError):
            raise BadRequest("Pipeline is not valid json") from None
    problem = unsafe(value)
    if problem:
        raise BadRequest(f"<pipeline> {problem}")
    return value


def _doubles_for_huge_ints(value: Any) -> Any:
    """JSON5 reads any integer; past 64 bits it becomes a double, as strict
    JSON reads it, so no answer or query parameter overflows."""
    if isinstance(value, int) and not isinstance(value, bool):
        return number(value)
    if isinstance(value, list):
        return [_doubles_for_huge_ints(v) for v in value]
    if isinstance(value, dict):
        return {k: _doubles_for_huge_ints(v) for k, v in value.items()}
    return value


def run_aggregate(
    content: ContentService, name: str, text: str | None, locale: str | None, identity: Identity
) -> bytes:
    """The answer of an aggregation as a JSON array."""
    model = content.readable(name, identity)
    if model.type == "singleton":
        raise PreconditionFailed(f"Aggregate method not allowed for {name}")
    stages = parse_pipeline(parse_pipeline_text(text), rewrite_locale_keys)
    joined = {s.source: content.readable(s.source, identity) for s in stages if isinstance(s, Lookup)}
    codes = content.locales.codes()
    budget = Budget()

    def prepare(target: Model) -> Any:
        if not locale or not target.localized:
            return lambda doc: doc
        return lambda doc: localize(doc, target.localized, codes, locale)

    def stored_keys(target: Model) -> set[str]:
        """Top-level keys whose stored value differs from the one the
        pipeline sees (localized fields, with locale)."""
        if not locale:
            return set()
        return {f"{f}_{c}" for f in target.localized for c in codes} | set(target.localized)

    cached: dict[str, list[dict[str, Any]]] = {}

    def fetch(stage: Lookup, keys: list[Any]) -> list[dict[str, Any]]:
        target = joined[stage.source]
        coll = content.collection(target)
        if stage.foreign[0] not in stored_keys(target) and len(keys) <= MAX_LOOKUP_KEYS:
            found = coll.find(And([PUBLISHED, Cond(stage.foreign, "in", keys)]), limit=budget.limit + 1)
            if len(found) > budget.limit:
                budget.take(len(found))  # refused: one batch would join too much
        else:
            if stage.source not in cached:
                found = coll.find(PUBLISHED, limit=budget.limit + 1)
                budget.take(len(found))
                cached[stage.source] = found
            found = cached[stage.source]
        shape = prepare(target)
        return [shape(d) for d in found]

    hidden = stored_keys(model)
    docs = aggregate(
        content.collection(model), stages, fetch,
        base=PUBLISHED, in_sql=lambda heads: not heads & hidden, prepare=prepare(model), budget=budget,
    )
    try:
        return _answer(docs)
    except (RecursionError, orjson.JSONEncodeError):  # values built stage upon stage
        raise BadRequest("Aggregation values nest too deeply") from None


def _answer(docs: Any) -> bytes:
    parts: list[bytes] = []
    size = 2
    for doc in docs:
        text = orjson.dumps(doc)
        size += len(text) + 1
        if size > MAX_ANSWER_BYTES:
            raise BadRequest(f"Aggregation answer exceeds {MAX_ANSWER_BYTES >> 20} MB; add $limit or $project")
        parts.append(text)
    return b"[" + b",".join(parts) + b"]"
