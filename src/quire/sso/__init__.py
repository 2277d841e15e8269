"""OpenID Connect single sign-on for the admin, with back-channel logout."""

from __future__ import annotations

from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.modules import Module, Services
from quire.sso import openapi, routes
from quire.sso.service import SsoService


def build(services: Services) -> None:
    auth, users, sessions = services.get(AuthService), services.get(UserService), services.get(SessionService)
    services.add("sso", SsoService(services.store, services.settings.sso, auth, users, sessions))


module = Module("sso", build=build, routes=routes.routes, openapi=openapi.paths)
