"""OpenID Connect single sign-on for the admin, with back-channel logout."""

from __future__ import annotations

from quire.modules import Module, Services
from quire.sso import openapi, routes
from quire.sso.service import SsoService
from quire.sso.settings import SsoSettings


def build(services: Services) -> None:
    settings = SsoSettings.from_values(services.settings.values["sso"])
    services.add("sso", SsoService(services.store, settings, services.auth, services.users, services.sessions))


module = Module("sso", build=build, routes=routes.routes, openapi=openapi.paths)
