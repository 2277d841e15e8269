"""Resolve content links (`{"_model": m, "_id": id}`) into the linked items,
one store query per linked model per level."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

Slot = tuple[Any, Any]  # (container, key) holding a link
Fetch = Callable[[str, list[str]], dict[str, dict[str, Any]]]


def is_link(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 2
        and isinstance(value.get("_model"), str)
        and isinstance(value.get("_id"), str)
    )


def _slots(value: Any) -> Iterator[Slot]:
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, child in items:
        if is_link(child):
            yield value, key
        else:
            yield from _slots(child)


def populate(docs: list[dict[str, Any]], depth: int, fetch: Fetch) -> None:
    """Replace links in `docs` in place, `depth` hops deep. `fetch(model,
    ids)` answers the readable, published items by id (one query); a link it
    does not answer becomes None."""
    level: list[Any] = docs
    for _ in range(depth):
        slots = [s for doc in level for s in _slots(doc)]
        if not slots:
            return
        wanted: dict[str, list[str]] = defaultdict(list)
        for container, key in slots:
            link = container[key]
            wanted[link["_model"]].append(link["_id"])
        found = {model: fetch(model, ids) for model, ids in wanted.items()}
        level = []
        for container, key in slots:
            link = container[key]
            item = found[link["_model"]].get(link["_id"])
            if item is not None:
                item = dict(item)  # one copy per place, so deeper hops stay independent
                level.append(item)
            container[key] = item
