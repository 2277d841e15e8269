"""Content items: `ContentService` is the read side (`content/reads.py`)
and the write side (`content/writes.py`) in one object, the one routes,
hooks (`quire.content.save`), pages, search, bundles and the demo use."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from quire.auth.permissions import content as perm
from quire.auth.service import Identity
from quire.cache import Cache
from quire.content.drafts import DraftWriter, shown
from quire.content.fill import doc_rev
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.preview import PreviewTokens, fill
from quire.content.reads import (
    PUBLISHED,
    AssetLookup,
    ContentReader,
    Page,
    ReadOptions,
    parse_fields,
)
from quire.content.writes import READ_ONLY, STATES
from quire.errors import BadRequest, NotFound
from quire.events import Events, refusals_as_412
from quire.jobs import Jobs
from quire.slots import LoopSlots
from quire.store import Store
from quire.store.budget import Limits

__all__ = ["PUBLISHED", "AssetLookup", "READ_ONLY", "STATES", "ContentService", "Page", "ReadOptions"]


class ContentService(ContentReader, DraftWriter):
    """Reads and writes of items, drafts and preview links."""

    def __init__(
        self,
        store: Store,
        cache: Cache,
        models: ModelService,
        locales: LocaleService,
        events: Events,
        assets: AssetLookup | None = None,
        max_populate: int = 5,
        jobs: Jobs | None = None,
        aggregate_limits: Limits | None = None,
        aggregations_at_once: int = 2,
    ) -> None:
        ContentReader.__init__(self, cache, models, locales, assets, max_populate)
        DraftWriter.__init__(self, store, models, locales, events, jobs)
        self.previews = PreviewTokens(store, cache)
        # what one aggregation may take, and how many run at once on a worker
        self.aggregate_limits = aggregate_limits or Limits()
        self.aggregation_slots = LoopSlots(lambda: aggregations_at_once)

    def item_or_draft(self, name: str, item_id: str | None, opts: ReadOptions, identity: Identity,
                      links_as: Identity | None = None) -> tuple[dict[str, Any], int, bool]:
        """The item's draft if it has one, else the item in any state (a
        singleton not stored yet: its defaults), for who may update the
        model (`?draft=1`, a preview link); with the revision answered and
        whether it is the draft. Links are read as `links_as` (the caller,
        for a preview link: it opens its one item only)."""
        model = self.readable(name, identity)
        identity.require(perm(name, "update"))
        projection = parse_fields(opts.fields)  # bad parameters answer 400 before any lookup
        live = self._live(model, self.models.collection(model), item_id)
        doc: dict[str, Any]
        is_draft = False
        if live is not None:
            draft = self.drafts(model).get(live["_id"])
            doc, is_draft = (shown(draft), True) if draft is not None else (live, False)
        elif model.type == "singleton" and item_id is None:
            doc = self._singleton_defaults(model)
        else:
            raise NotFound("Item not found")
        answer = self.transform(model, [doc], opts, projection, links_as or identity)[0]
        return answer, doc_rev(doc), is_draft

    def preview_identity(self, name: str, item_id: str | None, token: str, identity: Identity) -> Identity:
        """The caller, allowed to read model `name`'s drafts for a valid
        preview token of this item (403 otherwise); links to other models
        are read with the caller's own permissions."""
        model = self.models.get(name)
        if item_id is None:  # a singleton's one item: the token names its id
            live = self._live(model, self.models.collection(model), None)
            if live is None:
                raise NotFound("Item not found")
            item_id = live["_id"]
        self.previews.check(token, f"content/{name}", item_id)
        granted = frozenset({perm(name, "read"), perm(name, "update")})
        return replace(identity, permissions=identity.permissions | granted)

    async def end_previews(self, identity: Identity) -> None:
        """End every preview link of items and pages given out so far (a
        link was shared too widely): a new signing key, on every instance.
        Needs `system/manage`."""
        identity.require("system/manage")
        async with self.store.atomic():
            self.previews.rotate()
            with refusals_as_412():
                await self.events.emit("content.previews.end", identity=identity)

    def preview_link(self, name: str, item_id: str | None, identity: Identity, seconds: Any,
                     locale: Any = None) -> dict[str, Any]:
        """A preview token for the item (who may update the model), and
        the model's preview addresses filled in with it and the item's
        draft (or live) values."""
        if locale is not None and not isinstance(locale, str):
            raise BadRequest("locale must be a locale code", fields=["locale"])
        model = self.models.get(name)
        item, _, _ = self.item_or_draft(name, item_id, ReadOptions(), identity)
        if "_id" not in item:  # a singleton never saved: nothing to preview yet
            raise NotFound("Item not found")
        issued = self.previews.issue(f"content/{name}", item["_id"], seconds)
        values = {**item, "id": item["_id"], "model": name, "token": issued["token"], "locale": locale or ""}
        links = [{"name": entry["name"], "url": fill(entry["uri"], values)} for entry in model.preview]
        return {**issued, "links": links}
