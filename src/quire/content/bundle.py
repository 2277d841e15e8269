"""Content items in export/import bundles: `items`, keyed by model name.

Exported model by model as the stored JSON text (no decoding); imported
through `ContentService.check_imported` (every item checked against its
model as the bundle defines it, before anything is stored) and
`ContentService.store_imported` (one item with its events, in the
transactions `bundle.py` opens).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.bundleparts import BatchedPart, Checked
from quire.content.models import Model
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest
from quire.store import Collection


def items_part(content: ContentService) -> BatchedPart:
    """The part of `content`'s items. An entry is (model name, checked item)."""
    targets: dict[str, tuple[Model, Collection]] = {}

    async def load_one(entry: tuple[str, dict[str, Any]], identity: Identity) -> None:
        name, item = entry
        if name not in targets:  # once per model: after the bundle's models were stored
            model = content.models.get(name)
            targets[name] = (model, content.collection(model))
        model, coll = targets[name]
        await content.store_imported(model, coll, item, identity)

    return BatchedPart("items", "items", lambda: _export(content),
                       lambda value, checked: _check(content, value, checked), load_one)


def _export(content: ContentService) -> Iterator[bytes]:
    yield b"{"
    for i, model in enumerate(content.models.all()):
        yield (b"," if i else b"") + orjson.dumps(model.name) + b":["
        first = True
        for rows in content.store.collection(model.collection).stream_raw():
            if rows:
                yield (b"" if first else b",") + b",".join(rows)
                first = False
        yield b"]"
    yield b"}"


def _check(content: ContentService, items: Any, checked: Checked) -> list[tuple[str, dict[str, Any]]]:
    """Every item checked against its model as the bundle defines it (and
    its locales): the entries ready to store, model by model."""
    items = items or {}
    if not isinstance(items, dict):
        raise BadRequest("items must be an object keyed by model name")
    models: dict[str, Model] = checked.values.get("models") or {}
    locales = checked.values.get("locales")
    codes = None
    if locales and isinstance(locales, list):
        codes = [e["i18n"] for e in locales if isinstance(e, dict) and isinstance(e.get("i18n"), str)]
    out: list[tuple[str, dict[str, Any]]] = []
    for name, docs in items.items():
        model = models.get(name) or content.models.get(name)
        if not isinstance(docs, list):
            raise BadRequest(f"items.{name} must be a list")
        ready = []
        for doc in docs:
            if not isinstance(doc, dict) or not isinstance(doc.get("_id"), str):
                raise BadRequest(f"every item of {name} needs an _id")
            try:  # (not `naming`: this loop runs once per item of the bundle)
                ready.append(content.check_imported(model, doc, checked.identity, codes=codes))
            except ApiError as exc:
                exc.message = f"{name}/{doc['_id']}: {exc.message}"
                raise
        if model.type == "tree":
            content.check_imported_tree(model, ready)
        out += [(name, item) for item in ready]
    return out
