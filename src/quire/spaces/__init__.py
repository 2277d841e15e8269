"""Spaces: several sites in one Quire (docs/spaces.md). This module keeps
the main site's list of them and its API; `quire.served` routes
`/<name>/...` to each space's own app."""

from __future__ import annotations

from quire.modules import Module, Services
from quire.spaces import openapi, routes
from quire.spaces.service import SpaceService


def build(services: Services) -> None:
    # the main site's first path segments: never a space's name
    served = {r.path.split("/")[1].split("{")[0] for m in services.modules for r in m.routes if r.path != "/"}
    services.add("spaces", SpaceService(services.store, services.cache, services.settings, served - {""}))


module = Module("spaces", build=build, routes=routes.routes, openapi=openapi.paths, permissions=(routes.PERMISSION,))
