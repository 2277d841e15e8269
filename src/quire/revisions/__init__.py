"""Revisions: the history of items, pages and the pages' settings, and
restoring a version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.auth.service import Identity
from quire.content.service import ContentService
from quire.modules import Module, Services
from quire.pages.menus import MenuService
from quire.pages.service import PagesService
from quire.revisions import openapi, routes, screens
from quire.revisions.service import PAGES, SETTINGS, RevisionService


def build(services: Services) -> None:
    services.add("revisions", RevisionService(
        services.store, services.settings.revisions, services.jobs, services.get(ContentService),
        services.get(PagesService), services.get(MenuService)))


def subscribe(services: Services) -> None:
    """Every write of an item records a revision, inside its transaction."""
    revisions = services.get(RevisionService)

    def saved(model: str, item: dict[str, Any], previous: dict[str, Any] | None, identity: Identity,
              **_: Any) -> None:
        revisions.record(f"content/{model}", item["_id"], previous, item, identity)

    def removed(model: str, item: dict[str, Any], identity: Identity, **_: Any) -> None:
        revisions.record(f"content/{model}", item["_id"], item, None, identity)

    def model_removed(model: str, **_: Any) -> None:
        revisions.forget(f"content/{model}")

    def model_renamed(model: str, keys: dict[str, str], **_: Any) -> None:
        revisions.renamed(f"content/{model}", keys)

    def page_saved(page: dict[str, Any], previous: dict[str, Any] | None, identity: Identity, **_: Any) -> None:
        revisions.record(PAGES, page["_id"], previous, page, identity)

    def page_removed(page: dict[str, Any], identity: Identity, **_: Any) -> None:
        revisions.record(PAGES, page["_id"], page, None, identity)

    def settings_saved(settings: dict[str, Any], previous: dict[str, Any] | None, identity: Identity,
                       **_: Any) -> None:
        revisions.record(SETTINGS, "settings", previous, settings, identity)

    services.events.on("content.item.saved", saved)
    services.events.on("content.item.remove", removed)
    services.events.on("content.model.remove", model_removed)
    services.events.on("content.model.rename", model_renamed)
    services.events.on("pages.page.saved", page_saved)
    services.events.on("pages.page.remove", page_removed)
    services.events.on("pages.settings.saved", settings_saved)


HERE = Path(__file__).parent

module = Module("revisions", build=build, subscribe=subscribe, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates", static=HERE / "static")
