"""AI assistants over the Model Context Protocol (docs/ai.md): `/mcp`
(Streamable HTTP) and `quire mcp` (stdio), whose writes are drafts."""

from __future__ import annotations

from quire.assistants import openapi, routes
from quire.assistants.service import Assistants
from quire.modules import Module, Services


def build(services: Services) -> None:
    services.add("assistants", Assistants(services, services.settings.assistants))


module = Module("assistants", build=build, routes=routes.routes, openapi=openapi.paths)
