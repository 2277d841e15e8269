"""Resolve content links (`{"_model": m, "_id": id}`) into the linked items,
one store query per linked model per level."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

Slot = tuple[Any, Any]  # (container, key) holding a link
Fetch = Callable[[str, list[str]], dict[str, dict[str, Any]]]
# The top-level keys of a model's items that can hold links, or None for
# "look everywhere" (a model that is not known).
LinkKeys = Callable[[str], list[str] | None]


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
        elif isinstance(child, dict | list):
            yield from _slots(child)


def _doc_slots(doc: dict[str, Any], keys: list[str] | None) -> Iterator[Slot]:
    if keys is None:
        yield from _slots(doc)
        return
    for key in keys:
        child = doc.get(key)
        if is_link(child):
            yield doc, key
        elif isinstance(child, dict | list):
            yield from _slots(child)


def populate(
    model: str, docs: list[dict[str, Any]], depth: int, fetch: Fetch, link_keys: LinkKeys
) -> list[tuple[str, dict[str, Any]]]:
    """Replace links in `docs` (items of `model`) in place, `depth` hops deep.
    `fetch(model, ids)` answers the readable, published items by id (one
    query); a link it does not answer becomes None. A resolved item carries
    `_model`. Answers the items put in, with their model names."""
    level: list[tuple[str, dict[str, Any]]] = [(model, d) for d in docs]
    placed: list[tuple[str, dict[str, Any]]] = []
    keys_of: dict[str, list[str] | None] = {}
    for _ in range(depth):
        slots: list[Slot] = []
        for name, doc in level:
            if name not in keys_of:
                keys_of[name] = link_keys(name)
            slots.extend(_doc_slots(doc, keys_of[name]))
        if not slots:
            return placed
        wanted: dict[str, list[str]] = defaultdict(list)
        for container, key in slots:
            link = container[key]
            wanted[link["_model"]].append(link["_id"])
        found = {name: fetch(name, ids) for name, ids in wanted.items()}
        level = []
        for container, key in slots:
            link = container[key]
            item = found[link["_model"]].get(link["_id"])
            if item is not None:
                # one copy per place, so deeper hops stay independent; it says its model, as in Cockpit
                item = {**item, "_model": link["_model"]}
                level.append((link["_model"], item))
            container[key] = item
        placed += level
    return placed
