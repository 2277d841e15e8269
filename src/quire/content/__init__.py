"""Content: models (singleton, collection, tree) and their items."""

from __future__ import annotations

from quire.content import openapi, routes
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.modules import Module, Services


def build(services: Services) -> None:
    settings, store = services.settings, services.store
    locales = services.add("locales", LocaleService(store, settings.get("content", "default_locale_name")))
    models = services.add("models", ModelService(store, locales))
    assets = services.assets
    content = ContentService(store, models, locales, services.events, settings.get("api", "max_populate_depth"))
    content.resolve_assets = assets.get_many
    content.resolve_asset_json = assets.get_many_json
    services.add("content", content)


# Per model: content/<model>/read|create|update|delete|publish (auth/permissions.py).
module = Module("content", build=build, routes=routes.routes, openapi=openapi.paths)
