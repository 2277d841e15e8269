"""Pages: a tree of pages with routes per locale, menus, settings, sitemaps."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from quire.bundleparts import BundlePart
from quire.catalogue import (
    AFTER,
    BEFORE,
    INSIDE,
    REMOVE,
    WRITE,
    Audit,
    changed,
    fields_changed,
    spec,
)
from quire.content.service import ContentService
from quire.errors import NotFound
from quire.modules import FeedKind, Module, NavEntry, Services
from quire.pages import locales, openapi, routes
from quire.pages.menus import MenuService
from quire.pages.screens import menus
from quire.pages.screens import pages as page_screens
from quire.pages.service import PageOptions, PagesService


def build(services: Services) -> None:
    pages = services.add("pages", PagesService(services.store, services.cache, services.get(ContentService), services.events,
                                               services.settings.pages))
    services.add("menus", MenuService(services.store, pages, services.events))


def subscribe(services: Services) -> None:
    """A route lookup in any locale is one index probe: the indexes follow
    the locales, inside the transaction that changes them."""
    pages = services.get(PagesService)
    services.events.on("content.locales.save", lambda codes, **_: pages.ensure_indexes(codes))
    services.locales.renamer.add_part(locales.rename_part(services.get(MenuService)))


def bundle(services: Services) -> list[BundlePart]:
    """Pages, then the menus that link them and the settings."""
    return [services.get(PagesService).bundle_part(), *services.get(MenuService).bundle_parts()]


HERE = Path(__file__).parent


def _reader(identity: Any) -> bool:
    return bool(identity.can("pages/read") or identity.can("pages/manage"))


def _manager(identity: Any) -> bool:
    return bool(identity.can("pages/manage"))


def _settings_changed(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {"fields": changed(payload["previous"], payload["settings"])}


# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    spec("pages.page.save.before", BEFORE, "page", "is_update", "identity"),
    spec("pages.page.saved", INSIDE, "page", "previous", "identity", delivered=True,
         resource="pages", subject="page", change=WRITE, versioned=True,
         audit=Audit("page.*", fields_changed("page"), one_by_one=False)),
    spec("pages.page.save.after", AFTER, "page", "is_update", "identity"),
    spec("pages.page.remove", INSIDE, "page", "identity", delivered=True,
         resource="pages", subject="page", change=REMOVE, versioned=True, audit="page.delete"),
    spec("pages.settings.save", BEFORE, "settings", "identity"),
    spec("pages.settings.saved", INSIDE, "settings", "previous", "identity", delivered=True,
         resource="pages/settings", subject="settings", change=WRITE, versioned=True,
         audit=Audit("page.settings", _settings_changed)),
    spec("pages.menu.save", BEFORE, "menu", "identity", delivered=True,
         resource="pages/menus", subject="menu", audit="menu.save"),
    spec("pages.menu.remove", BEFORE, "menu", "identity", delivered=True,
         resource="pages/menus", subject="menu", audit="menu.delete"),
]


def _read_pages(services: Services, ids: list[str], locale: str | None, identity: Any) -> dict[str, Any]:
    pages, found = services.get(PagesService), {}
    for page_id in ids:
        with contextlib.suppress(NotFound):  # unpublished or gone: not in the reader's view
            found[page_id] = pages.by_id(page_id, PageOptions(locale=locale), identity)
    return found


def _read_menus(services: Services, names: list[str], locale: str | None, identity: Any) -> dict[str, Any]:
    menus, found = services.get(MenuService), {}
    for name in names:
        with contextlib.suppress(NotFound):
            found[name] = menus.get(name, locale, identity)
    return found


# what the change feed carries of pages and menus (docs/delivery.md)
FEED = [
    FeedKind("@pages", ("pages.page.saved",), ("pages.page.remove",), "page", "pages/read", _read_pages,
             visible=lambda doc: doc.get("_state") == 1),
    FeedKind("@menus", ("pages.menu.save",), ("pages.menu.remove",), "menu", "pages/read", _read_menus,
             ident=lambda doc: str(doc["name"])),
]


module = Module("pages", events=SENT, feed=FEED, build=build, subscribe=subscribe, bundle=bundle,
                schema=lambda services: [services.get(MenuService).settings_schema_part()], openapi=openapi.paths,
                routes=[*routes.routes, *page_screens.routes, *menus.routes], find=page_screens.find, usage=page_screens.locale_usage,
                templates=HERE / "templates", static=HERE / "static",
                nav=[
                    NavEntry("Pages", "/studio/pages", "Site", _reader, order=50),
                    NavEntry("Menus", "/studio/menus", "Site", _manager, order=55),
                    NavEntry("Page settings", "/studio/pages/settings", "Site", _manager, order=58),
                ],
                permissions=("pages/read", "pages/manage"))
