"""OpenID Connect single sign-on for the admin, with back-channel logout."""

from __future__ import annotations

from quire.modules import Module, Services
from quire.sso import openapi, routes
from quire.sso.service import SsoService


def build(services: Services) -> None:
    services.add("sso", SsoService(services.store, services.settings.sso, services.auth, services.users, services.sessions))


module = Module("sso", build=build, routes=routes.routes, openapi=openapi.paths)
