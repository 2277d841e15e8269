"""Content: models (singleton, collection, tree) and their items."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.bundleparts import BatchedPart, BundlePart
from quire.catalogue import (
    AFTER,
    BEFORE,
    INSIDE,
    MAX_DETAIL_ITEMS,
    REMOVE,
    WRITE,
    Audit,
    fields_changed,
    names,
    spec,
    text,
)
from quire.content import openapi, routes
from quire.content.asset_refs import AssetRefs
from quire.content.bulk import BulkEdits
from quire.content.bundle import items_part
from quire.content.library import ComponentLibrary
from quire.content.locales import LocaleService, content_rename_part
from quire.content.models import ModelService
from quire.content.schema import component_part, locale_part, model_part
from quire.content.screens import (
    bulk,
    editor,
    home,
    lists,
    live,
    locales,
    models,
    pickers,
    presence,
    previews,
)
from quire.content.screens import library as library_screens
from quire.content.screens import transfer as transfers
from quire.content.service import AssetLookup, ContentService
from quire.modules import Module, NavEntry, Services
from quire.schemaparts import SchemaPart
from quire.store.budget import Limits


def build(services: Services) -> None:
    settings, store = services.settings, services.store
    cache = services.cache
    events = services.events
    locales = services.add("locales", LocaleService(store, cache, events, settings.content.default_locale_name))
    models = services.add("models", ModelService(store, cache, events, locales))
    services.add("components", ComponentLibrary(store, cache, models, events))  # shared blocks
    locales.renamer.add_part(content_rename_part(models))
    services.on_start(locales.renamer.resume)  # a rename a stopped server left half done
    # asset references in answers become asset objects (the assets module's service is an AssetLookup)
    assets: AssetLookup = services.assets
    aggregate_limits = Limits(settings.content.aggregate_max_bytes, settings.content.aggregate_max_seconds)
    content = services.add("content", ContentService(
        store, cache, models, locales, events, assets, settings.api.max_populate_depth,
        aggregate_limits=aggregate_limits, aggregations_at_once=settings.content.aggregations_at_once))
    content.register_jobs(services.jobs, settings.content.publish_lease_seconds)  # `_publish_at` / `_unpublish_at`
    services.add("asset_refs", AssetRefs(store, models, locales))
    services.add("bulk_edits", BulkEdits(content))


def subscribe(services: Services) -> None:
    """The index of where assets are used follows every item write."""
    refs = services.get(AssetRefs)
    services.events.on("content.item.saved", refs.saved)
    services.events.on("content.item.remove", refs.removed)
    services.events.on("content.model.remove", refs.model_removed)
    refs.setup()


def bundle(services: Services) -> list[BundlePart | BatchedPart]:
    """Shared blocks (model saves copy them in), models, then locales; the
    items of every model go last, in batches."""
    return [services.get(ComponentLibrary).bundle_part(), services.get(ModelService).bundle_part(),
            services.get(LocaleService).bundle_part(),
            items_part(services.get(ContentService))]


# Per model: content/<model>/read|create|update|delete|publish (auth/permissions.py).
HERE = Path(__file__).parent


def _manager(identity: Any) -> bool:
    return bool(identity.can("system/manage"))


def _scheduled(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {"scheduled": payload["scheduled"]}


def _model_saved(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    """Whether the model is new, which fields changed, which were dropped."""
    previous = payload["previous"]
    fields = {f["name"]: f for f in payload["definition"].get("fields", [])}
    before = {f["name"]: f for f in (previous or {}).get("fields", [])}
    detail: dict[str, Any] = {"created": previous is None}
    if previous is not None:
        detail["fields"] = names(n for n in {*fields, *before} if fields.get(n) != before.get(n))
    if payload.get("dropped"):
        detail["dropped"] = names(payload["dropped"])
    return detail


def _model_renamed(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    renames = list(payload["renames"].items())[:MAX_DETAIL_ITEMS]
    return {"renamed": {text(k): text(v) for k, v in renames}}


def _component_saved(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {"created": payload["created"]}


ITEMS, MODELS, COMPONENTS = "content/{model}", "models", "components"

# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    spec("content.item.save.before", BEFORE, "model", "item", "is_update", "identity"),
    spec("content.item.saved", INSIDE, "model", "item", "is_update", "previous", "identity", delivered=True,
         resource=ITEMS, subject="item", change=WRITE, versioned=True,
         audit=Audit("item.*", fields_changed("item"), one_by_one=False)),
    spec("content.item.save.after", AFTER, "model", "item", "is_update", "identity"),
    spec("content.item.remove", INSIDE, "model", "item", "identity", delivered=True,
         resource=ITEMS, subject="item", change=REMOVE, versioned=True, audit=Audit("item.delete", one_by_one=False)),
    spec("content.item.publish", INSIDE, "model", "item", "scheduled", "identity", delivered=True,
         resource=ITEMS, subject="item", audit=Audit("item.publish", _scheduled)),
    spec("content.item.unpublish", INSIDE, "model", "item", "scheduled", "identity", delivered=True,
         resource=ITEMS, subject="item", audit=Audit("item.unpublish", _scheduled)),
    spec("content.draft.saved", INSIDE, "model", "item", "identity", delivered=True,
         resource=ITEMS, subject="item", audit="item.draft"),
    spec("content.draft.remove", INSIDE, "model", "item", "identity", delivered=True,
         resource=ITEMS, subject="item", audit="item.draft.discard"),
    spec("content.previews.end", INSIDE, "identity", resource="previews", audit="previews.end"),
    spec("content.model.save", INSIDE, "model", "definition", "previous", "renames", "dropped", "identity", sync=True,
         resource=MODELS, subject="model", audit=Audit("model.save", _model_saved)),
    spec("content.model.remove", INSIDE, "model", "identity", sync=True,
         resource=MODELS, subject="model", audit="model.delete"),
    spec("content.model.rename", INSIDE, "model", "keys", "renames", "identity", sync=True,
         resource=MODELS, subject="model", audit=Audit("model.rename", _model_renamed)),
    spec("content.locales.save", INSIDE, "codes", sync=True),
    spec("content.component.save", INSIDE, "component", "created", "identity", sync=True,
         resource=COMPONENTS, subject="component", audit=Audit("component.save", _component_saved)),
    spec("content.component.remove", INSIDE, "component", "identity", sync=True,
         resource=COMPONENTS, subject="component", audit="component.delete"),
]


def schema(services: Services) -> list[SchemaPart]:
    """Shared blocks, locales, then models."""
    return [component_part(services.get(ComponentLibrary)), locale_part(services.get(LocaleService)),
            model_part(services.get(ModelService))]


module = Module("content", events=SENT, build=build, subscribe=subscribe, bundle=bundle, schema=schema,
                openapi=openapi.paths,
                routes=[*routes.routes, *home.routes, *models.routes, *lists.routes, *bulk.routes, *presence.routes, *live.routes, *transfers.routes, *editor.routes,
                        *locales.routes, *previews.routes, *library_screens.routes],
                templates=HERE / "templates", static=HERE / "static",
                panels=home.panels, find=home.find, usage=pickers.asset_usage,
                nav=[
                    NavEntry("Content", "/studio/content", "Content", lambda identity: True, order=10),
                    NavEntry("Models", "/studio/models", "Settings", _manager, order=80),
                    NavEntry("Shared blocks", "/studio/blocks", "Settings", _manager, order=81),
                    NavEntry("Locales", "/studio/settings/locales", "Settings", _manager, order=82),
                    NavEntry("Preview links", "/studio/settings/previews", "Settings", _manager, order=89),
                ])
