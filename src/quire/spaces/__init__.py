"""Spaces: several sites in one Quire (docs/spaces.md). This module keeps
the main site's list of them and its API; `quire.served` routes
`/<name>/...` to each space's own app."""

from __future__ import annotations

from pathlib import Path

from quire.auth.users import UserService
from quire.cdn.purge import Purges
from quire.modules import Module, NavEntry, Services
from quire.spaces import openapi, routes, screens
from quire.spaces.service import SpaceService


def build(services: Services) -> None:
    # the main site's first path segments: never a space's name
    served = {r.path.split("/")[1].split("{")[0] for m in services.modules for r in m.routes if r.path != "/"}
    spaces = services.add("spaces", SpaceService(services.store, services.cache, services.settings, served - {""},
                                                 services.jobs, services.get(UserService)))
    services.spaces_of = spaces.places  # the studio's space switcher


def subscribe(services: Services) -> None:
    """With a CDN, a switched alias or a removed space has every answer
    served under its name purged (`site:<name>`, quire.conditional)."""
    if services.settings.cdn.purge_url:
        purges = services.get(Purges)
        services.get(SpaceService).switched.append(lambda name: purges.add([f"site:{name}"]))


HERE = Path(__file__).parent

module = Module("spaces", build=build, subscribe=subscribe, routes=[*routes.routes, *screens.routes],
                openapi=openapi.paths, permissions=(routes.PERMISSION,), templates=HERE / "templates",
                nav=[NavEntry("Spaces", screens.PAGE, "Settings", lambda identity: identity.can(routes.PERMISSION),
                              order=88)])
