"""Pages: a tree of pages with routes per locale, menus, settings, sitemaps."""

from __future__ import annotations

from quire.modules import Module, Services
from quire.pages import openapi, routes
from quire.pages.menus import MenuService
from quire.pages.service import PagesService


def build(services: Services) -> None:
    pages = services.add("pages", PagesService(services.store, services.cache, services.content, services.events,
                                               services.settings.pages))
    services.add("menus", MenuService(services.store, pages, services.events))


module = Module("pages", build=build, routes=routes.routes, openapi=openapi.paths,
                permissions=("pages/read", "pages/manage"))
