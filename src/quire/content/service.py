"""Content items: `ContentService` is the read side (`content/reads.py`)
and the write side (`content/writes.py`) in one object, the one routes,
hooks (`quire.content.save`), pages, search, bundles and the demo use."""

from __future__ import annotations

from quire.cache import Cache
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.reads import PUBLISHED, AssetLookup, ContentReader, Page, ReadOptions
from quire.content.writes import READ_ONLY, STATES, ContentWriter
from quire.events import Events
from quire.store import Store

__all__ = ["PUBLISHED", "AssetLookup", "READ_ONLY", "STATES", "ContentService", "Page", "ReadOptions"]


class ContentService(ContentReader, ContentWriter):
    def __init__(
        self,
        store: Store,
        cache: Cache,
        models: ModelService,
        locales: LocaleService,
        events: Events,
        assets: AssetLookup | None = None,
        max_populate: int = 5,
    ) -> None:
        ContentReader.__init__(self, cache, models, locales, assets, max_populate)
        ContentWriter.__init__(self, store, models, locales, events)
