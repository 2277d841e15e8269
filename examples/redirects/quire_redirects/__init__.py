"""Redirect rules for Quire, as a module from a package: an API, a studio
screen (Site → Redirects), a settings section, an export part, two
permissions and a field type (`urlPath`); its screen also uses Quire's
own `color` type, through the type's record (check, input, script). Installed beside Quire, it is
found through its `quire.modules` entry point (pyproject.toml)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from quire.bundleparts import BundlePart
from quire.catalogue import INSIDE, spec
from quire.modules import Module, NavEntry, Services
from quire_redirects import openapi, routes, screens
from quire_redirects.fieldtype import URL_PATH
from quire_redirects.service import RedirectService
from quire_redirects.settings import RedirectSettings

HERE = Path(__file__).parent
log = logging.getLogger("quire.redirects")


def build(services: Services) -> None:
    settings = services.settings.section(RedirectSettings)
    services.add("redirects", RedirectService(services.store, services.events, settings.max_rules))


def subscribe(services: Services) -> None:
    """Deleting a page of the site is when a redirect is most often
    forgotten: the log says which rules still send visitors to its route."""
    redirects = services.get(RedirectService)

    def page_removed(page: dict[str, Any] | None = None, **_: Any) -> None:
        route = (page or {}).get("_r")
        if route:
            pointing = [r["from"] for r in redirects.all() if r["to"] == route]
            if pointing:
                log.warning("redirects: the removed page %s is the target of %s", route, ", ".join(pointing))

    services.events.on("pages.page.remove", page_removed)


def bundle(services: Services) -> list[BundlePart]:
    return [services.get(RedirectService).bundle_part()]


# the events it sends, in its write's transaction (hooks may follow them);
# the audit log records each as the declaration says, with nothing of
# the audit module changed
SENT = [spec("redirects.rule.save", INSIDE, "rule", "identity", resource="redirects", subject="rule",
             audit="redirect.save"),
        spec("redirects.rule.remove", INSIDE, "rule", "identity", resource="redirects", subject="rule",
             audit="redirect.delete")]

module = Module(
    "redirects", build=build, events=SENT, subscribe=subscribe, bundle=bundle,
    routes=[*routes.routes, *screens.routes], openapi=openapi.paths,
    permissions=(routes.READ, routes.MANAGE), field_types=[URL_PATH],
    templates=HERE / "templates", static=HERE / "static",
    nav=[NavEntry("Redirects", screens.PAGE, "Site", screens.may_see, order=65)],
)
