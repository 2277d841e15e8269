"""Content: models (singleton, collection, tree) and their items."""

from __future__ import annotations

from quire.content import openapi, routes
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.modules import Module, Services


def build(services: Services) -> None:
    settings, store = services.settings, services.store
    cache = services.cache
    locales = services.add("locales", LocaleService(store, cache, settings.content.default_locale_name))
    models = services.add("models", ModelService(store, cache, locales))
    # asset references in answers become asset objects (an AssetLookup: the assets module's service)
    services.add("content", ContentService(store, cache, models, locales, services.events, services.assets,
                                           settings.api.max_populate_depth))


# Per model: content/<model>/read|create|update|delete|publish (auth/permissions.py).
module = Module("content", build=build, routes=routes.routes, openapi=openapi.paths)
