"""Content has a read side and a write side; `quire.content` is both, so
routes, hooks, pages, search, bundles and the demo reach one object."""

from __future__ import annotations

from quire.app import Quire
from quire.content.reads import ContentReader
from quire.content.writes import ContentWriter

WRITES = {"check_data", "save", "stored", "delete"}
READS = {"query", "list_page", "count", "list_stream", "item", "item_raw", "tree", "render", "populate_links",
         "attach_assets", "readable"}


def test_each_side_has_only_its_own_methods() -> None:
    assert set(dir(ContentWriter)) >= WRITES and not READS & set(dir(ContentWriter))
    assert set(dir(ContentReader)) >= READS and not WRITES & set(dir(ContentReader))


def test_the_content_service_is_both(quire: Quire) -> None:
    assert isinstance(quire.content, ContentReader) and isinstance(quire.content, ContentWriter)
    assert quire.content.store is quire.store and quire.content.events is quire.events
