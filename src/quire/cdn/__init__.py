"""A CDN or caching proxy in front of the read API (docs/delivery.md#cdn):
answers without a key name what they contain in `Surrogate-Key` and
`Cache-Tag` (quire.conditional), and every write has the tags it touched
purged through the configured purge address (cdn/purge.py).

The tags: `model:<name>` on every answer of a content model, purged when
the model is saved or removed; `list:<name>` on its lists and trees, and
`list:@pages`, `list:@menus`, `list:@assets`, `list:@translations` on the
answers of those modules, purged by any write of one of them; `id:<id>`
for each document an answer holds (linked items, assets, pages), purged
by a write of that document."""

from __future__ import annotations

from typing import Any

from quire.cdn.purge import Purges
from quire.feed.log import ChangeLog
from quire.modules import Module, Services


def build(services: Services) -> None:
    if services.settings.cdn.purge_url:
        services.add("cdn_purges", Purges(services.store, services.jobs, services.settings.cdn))


def change_tags(model: str, item_id: str) -> list[str]:
    """What a write of document `item_id` of `model` (or `@pages`...) touched."""
    return [f"list:{model}", f"id:{item_id}"]


def subscribe(services: Services) -> None:
    if not services.settings.cdn.purge_url:
        return
    purges = services.get(Purges)
    services.get(ChangeLog).listeners.append(lambda model, item_id: purges.add(change_tags(model, item_id)))

    def model_changed(model: str, **_: Any) -> None:
        purges.add([f"model:{model}"])

    for event in ("content.model.save", "content.model.remove"):
        services.events.on(event, model_changed)
    services.events.on("pages.settings.saved", lambda **_: purges.add(["list:@pages"]))


def gauges(services: Services) -> list[Any]:
    if not services.settings.cdn.purge_url:
        return []
    return [("quire_cdn_purges_waiting", "Writes whose tags the CDN has not been sent yet", [],
             [([], float(services.get(Purges).waiting()))])]


module = Module("cdn", build=build, subscribe=subscribe, gauges=gauges)
