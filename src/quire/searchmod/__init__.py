"""Full-text search (`searchmod`): indexes that follow content, ranked
queries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.catalogue import REMOVE, WRITE, where
from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.modules import Module, NavEntry, Services
from quire.searchmod import locales, openapi, routes, screens
from quire.searchmod.follow import QUEUE
from quire.searchmod.service import SearchService
from quire.store.queue import Queue


def build(services: Services) -> None:
    content, models = services.get(ContentService), services.get(ModelService)
    search = SearchService(services.store, content, models, services.events, services.cache,
                           services.settings.data_dir / "search")
    services.add("search", search)
    services.item_search = search  # the studio's content lists search with it
    services.on_start(search.start)
    services.on_close(lambda: search.close(catch_up=not services.stopping_worker))


def subscribe(services: Services) -> None:
    """Indexes follow content: every item an event declares written or
    removed (catalogue.py) is indexed again, after its model's changes."""
    search = services.get(SearchService)
    for event in where(services.catalogue, "content.item.*", change=WRITE):
        services.events.on(event.name, search.item_saved)
    for event in where(services.catalogue, "content.item.*", change=REMOVE):
        services.events.on(event.name, search.item_removed)
    services.events.on("content.model.remove", search.model_removed)
    services.events.on("content.model.rename", search.model_renamed)
    services.locales.renamer.add_part(locales.rename_part(search))


HERE = Path(__file__).parent


def _searcher(identity: Any) -> bool:
    return bool(identity.can("searchmod/read") or identity.can("searchmod/manage"))


def gauges(services: Services) -> list[Any]:
    waiting = Queue(services.store, QUEUE).waiting()
    return [("quire_search_queue_rows", "Content writes not yet in the search indexes (their lag)", [],
             [([], float(waiting))])]


module = Module("searchmod", gauges=gauges, build=build, subscribe=subscribe, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates",
                nav=[NavEntry("Search", "/studio/search", "Site", _searcher, order=60)],
                permissions=("searchmod/read", "searchmod/manage"),
                schema=lambda services: [services.get(SearchService).schema_part()])
