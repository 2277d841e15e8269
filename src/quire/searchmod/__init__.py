"""Full-text search (`searchmod`): indexes that follow content, ranked
queries."""

from __future__ import annotations

from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.modules import Module, Services
from quire.searchmod import locales, openapi, routes
from quire.searchmod.service import SearchService


def build(services: Services) -> None:
    content, models = services.get(ContentService), services.get(ModelService)
    search = SearchService(services.store, content, models, services.events, services.cache,
                           services.settings.data_dir / "search")
    services.add("search", search)
    services.on_start(search.start)
    services.on_close(search.close)


def subscribe(services: Services) -> None:
    """Indexes follow content: every saved or removed item is indexed again."""
    search = services.get(SearchService)
    services.events.on("content.item.saved", search.item_saved)
    services.events.on("content.item.remove", search.item_removed)
    services.events.on("content.model.remove", search.model_removed)
    services.events.on("content.model.rename", search.model_renamed)
    services.locales.renamer.add_part(locales.rename_part(search))


module = Module("searchmod", build=build, subscribe=subscribe, routes=routes.routes, openapi=openapi.paths,
                permissions=("searchmod/read", "searchmod/manage"))
