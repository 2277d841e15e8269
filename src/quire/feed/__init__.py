"""The change feed (docs/delivery.md): every content write recorded in the
change log inside its own transaction, read back as a reader's changes
over `GET /api/content/changes`, pulled as JSON pages or streamed as
Server-Sent Events."""

from __future__ import annotations

from typing import Any

from quire.catalogue import REMOVE, WRITE, where
from quire.content.service import ContentService
from quire.feed import openapi, routes
from quire.feed.log import ChangeLog
from quire.feed.stream import Hub
from quire.feed.view import Readers
from quire.modules import FeedKind, Module, Services


def build(services: Services) -> None:
    settings = services.settings.feed
    log = services.add("changes", ChangeLog(services.store, settings.keep_days, services.jobs))
    kinds = {kind.name: kind for module in services.modules for kind in module.feed}
    readers = Readers(services.get(ContentService), services, kinds)
    services.add("feed_hub", Hub(readers, log, settings.poll_ms / 1000, settings.queue,
                                 settings.streams_per_key, settings.streams_per_worker))


def _published(doc: Any) -> bool:
    return isinstance(doc, dict) and doc.get("_state") == 1


def subscribe(services: Services) -> None:
    """Every content write and removal is recorded (the catalogue says
    which events report one: `change=WRITE` / `REMOVE`)."""
    log = services.get(ChangeLog)

    def saved(name: str) -> Any:
        def record(model: str, item: dict[str, Any], identity: Any = None, previous: Any = None,
                   **_: Any) -> None:
            log.record(name, model, item["_id"], identity, _published(item), _published(previous))
        return record

    def kind_saved(kind: FeedKind, name: str) -> Any:
        def record(identity: Any = None, previous: Any = None, **payload: Any) -> None:
            doc = payload[kind.key]
            was = kind.visible(previous) if isinstance(previous, dict) else False
            log.record(name, kind.name, kind.ident(doc), identity, kind.visible(doc), was)
        return record

    def kind_removed(kind: FeedKind, name: str) -> Any:
        def record(identity: Any = None, **payload: Any) -> None:
            doc = payload[kind.key]
            log.record(name, kind.name, kind.ident(doc), identity, False, kind.visible(doc))
        return record

    def removed(name: str) -> Any:
        def record(model: str, item: dict[str, Any], identity: Any = None, **_: Any) -> None:
            log.record(name, model, item["_id"], identity, False, _published(item))
        return record

    for event in where(services.catalogue, "content.item.*", change=WRITE):
        services.events.on(event.name, saved(event.name))
    for event in where(services.catalogue, "content.item.*", change=REMOVE):
        services.events.on(event.name, removed(event.name))
    for module in services.modules:  # pages, menus, assets, translations: as their modules declare
        for kind in module.feed:
            for name in kind.saved:
                services.events.on(name, kind_saved(kind, name))
            for name in kind.removed:
                services.events.on(name, kind_removed(kind, name))


def gauges(services: Services) -> list[Any]:
    return [("quire_feed_last_change", "The number of the change feed's last change (its growth: writes)", [],
             [([], float(services.get(ChangeLog).latest()))])]


module = Module("feed", build=build, subscribe=subscribe, routes=routes.routes, openapi=openapi.paths,
                gauges=gauges)
