"""Revisions: the history of items, pages and the pages' settings, and
restoring a version."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.catalogue import WRITE, EventSpec, where
from quire.content.service import ContentService
from quire.modules import Module, Services
from quire.pages.menus import MenuService
from quire.pages.service import PagesService
from quire.revisions import openapi, routes, screens
from quire.revisions.service import RevisionService


def build(services: Services) -> None:
    services.add("revisions", RevisionService(
        services.store, services.settings.revisions, services.jobs, services.get(ContentService),
        services.get(PagesService), services.get(MenuService)))


def subscribe(services: Services) -> None:
    """Every write of a document whose event is declared `versioned` (an
    item, a page, the pages' settings) records a revision, inside its
    transaction; the history of a removed model goes with it."""
    revisions = services.get(RevisionService)

    def recorder(event: EventSpec) -> Any:
        def record(**payload: Any) -> None:
            doc, identity = payload[event.subject or ""], payload["identity"]
            before, after = (payload["previous"], doc) if event.change == WRITE else (doc, None)
            revisions.record(event.resource_of(payload), event.subject_of(payload), before, after, identity)
        return record

    for event in where(services.catalogue, versioned=True):
        services.events.on(event.name, recorder(event))

    # the history of a model's items follows the model
    def model_removed(model: str, **_: Any) -> None:
        revisions.forget(f"content/{model}")

    def model_renamed(model: str, keys: dict[str, str], **_: Any) -> None:
        revisions.renamed(f"content/{model}", keys)

    services.events.on("content.model.remove", model_removed)
    services.events.on("content.model.rename", model_renamed)


HERE = Path(__file__).parent

module = Module("revisions", build=build, subscribe=subscribe, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates", static=HERE / "static")
