"""Translations (`l10n`): projects of keys translated per locale."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from quire.bundleparts import BundlePart
from quire.catalogue import BEFORE, INSIDE, spec
from quire.errors import NotFound
from quire.l10n import locales, openapi, routes, screens
from quire.l10n.service import L10nService
from quire.modules import FeedKind, Module, NavEntry, Services


def build(services: Services) -> None:
    services.add("l10n", L10nService(services.store, services.events, services.cache))


def subscribe(services: Services) -> None:
    """A renamed locale code is renamed in the projects holding it."""
    services.locales.renamer.add_part(locales.rename_part(services.get(L10nService)))


def bundle(services: Services) -> list[BundlePart]:
    return [services.get(L10nService).bundle_part()]


HERE = Path(__file__).parent


# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    spec("l10n.project.save", BEFORE, "project", "identity", resource="l10n", subject="project",
         audit="translation.save"),
    spec("l10n.project.remove", INSIDE, "project", "identity", resource="l10n", subject="project",
         audit="translation.delete"),
]


def _read_projects(services: Services, names: list[str], locale: str | None, identity: Any) -> dict[str, Any]:
    l10n, found = services.get(L10nService), {}
    for name in names:
        with contextlib.suppress(NotFound):
            # as GET /api/l10n/project/{name} answers it, or /{locale} with a locale
            found[name] = l10n.one_locale(name, locale, identity) if locale else l10n.full(name, identity)
    return found


# what the change feed carries of translation projects (docs/delivery.md)
FEED = [FeedKind("@translations", ("l10n.project.save",), ("l10n.project.remove",), "project", "l10n/read",
                 _read_projects, ident=lambda doc: str(doc["name"]))]


module = Module("l10n", events=SENT, feed=FEED, build=build, subscribe=subscribe, bundle=bundle, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes],
                templates=HERE / "templates", static=HERE / "static",
                nav=[
                    NavEntry("Translations", "/studio/l10n", "Content", screens.allowed, order=30),
                ],
                permissions=("l10n/read", "l10n/manage"))
