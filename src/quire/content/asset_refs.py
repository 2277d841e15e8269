"""Where assets are used: an index of the asset references held by items.

One small document per (asset, model, item) in `content/asset_refs`, with
store indexes on `asset` and on `item`, kept by the content events inside
each write's transaction (`content.item.saved`, `content.item.remove`,
`content.model.remove`). "Used by 3 items" is then one indexed count, and
its list one indexed page: no model's table is read to answer it.

The index is built once from the stored items the first time the app
starts with it (a meta key remembers it was), so data from before it
exists is counted too. What it does not follow: a field removed from a
model leaves its references in the index until the item is saved again
(readers skip, and do not count, listed items that no longer exist).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson

from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService
from quire.content.reads import _asset_slots
from quire.ids import is_id, new_id
from quire.store import Store

log = logging.getLogger("quire.content")

REFS = "content/asset_refs"
BUILT = "content.asset_refs.built"
HINTS = {"asset": "text", "model": "text", "item": "text"}


class AssetRefs:
    def __init__(self, store: Store, models: ModelService, locales: LocaleService) -> None:
        self.store = store
        self.models = models
        self.locales = locales
        self.refs = store.collection(REFS, HINTS)

    # -- keeping the index ----------------------------------------------------

    def setup(self) -> None:
        """The store indexes, and the first build from stored items."""
        self.store.ensure_indexes(REFS, [[("asset",)], [("item",)]])
        if self.store.get_meta(BUILT) == "1":
            return
        with self.store.transaction():
            if self.store.get_meta(BUILT) == "1":  # another worker built it meanwhile
                return
            count = 0
            for model in self.models.all():
                count += self._index_model(model)
            self.store.set_meta(BUILT, "1")
        if count:
            log.info("asset references: indexed %d references of stored items", count)

    def _index_model(self, model: Model) -> int:
        if not model.has_assets:
            return 0
        coll = self.store.collection(model.collection)
        count = 0
        for chunk in coll.stream_raw():
            for raw in chunk:
                item = orjson.loads(raw)
                count += self._put(model, item)
        return count

    def asset_ids(self, model: Model, item: dict[str, Any]) -> list[str]:
        """The asset ids an item's fields refer to (each once)."""
        slots: list[tuple[Any, Any, str]] = []
        _asset_slots(model.asset_fields(self.locales.codes()), item, slots)
        return sorted({ref for _, _, ref in slots if is_id(ref)})

    def _put(self, model: Model, item: dict[str, Any]) -> int:
        ids = self.asset_ids(model, item)
        for asset in ids:
            self.refs.insert({"_id": new_id(), "asset": asset, "model": model.name, "item": item["_id"]})
        return len(ids)

    def saved(self, model: str, item: dict[str, Any], previous: dict[str, Any] | None = None, **_: Any) -> None:
        """`content.item.saved` (inside the write's transaction). A new item
        has no references yet (a removed one's went with it)."""
        found = self.models.find(model)
        if found is None or not isinstance(item.get("_id"), str):
            return
        if previous is not None:
            self.refs.delete_many({"item": item["_id"]})
        if found.has_assets:
            self._put(found, item)

    def removed(self, model: str, item: dict[str, Any], **_: Any) -> None:
        if isinstance(item.get("_id"), str):
            self.refs.delete_many({"item": item["_id"]})

    def model_removed(self, model: str, **_: Any) -> None:
        self.refs.delete_many({"model": model})

    # -- reading --------------------------------------------------------------

    def missing(self) -> tuple[int, int]:
        """(items, assets): the items that refer to assets the site does not
        have, and how many such assets (a bundle brought without its files)."""
        assets = self.store.collection("assets/assets")
        known = set(assets.ids()) if assets.exists() else set()
        items: set[str] = set()
        gone: set[str] = set()
        for ref in self.refs.find():
            if ref["asset"] not in known:
                gone.add(ref["asset"])
                items.add(ref["item"])
        return len(items), len(gone)

    def count(self, asset_id: str) -> int:
        """How many items refer to the asset (one indexed count)."""
        return self.refs.count({"asset": asset_id}) if is_id(asset_id) else 0

    def used_by(self, asset_id: str, limit: int = 50) -> tuple[list[tuple[str, str]], int]:
        """(model, item id) of the first `limit` items that refer to the
        asset, and how many there are."""
        if not is_id(asset_id):
            return [], 0
        docs = self.refs.find({"asset": asset_id}, [(("model",), 1), (("item",), 1)], limit)
        total = self.count(asset_id)
        pairs = [(d["model"], d["item"]) for d in docs]
        kept = self._existing(pairs)
        # references whose item went another way (a model dropped by an
        # import, a restored database) are not counted where they are seen
        return kept, total - (len(pairs) - len(kept))

    def _existing(self, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The pairs whose model and item still exist (one read per model)."""
        by_model: dict[str, list[str]] = {}
        for model, item in pairs:
            by_model.setdefault(model, []).append(item)
        found: set[tuple[str, str]] = set()
        for name, ids in by_model.items():
            found_model = self.models.find(name)
            if found_model is not None:
                present = self.store.collection(found_model.collection).get_many(ids)
                found.update((name, item) for item in present)
        return [pair for pair in pairs if pair in found]
