"""API keys, roles and permissions, users, admin sessions.

The module builds the services every other module checks callers with:
`auth` (keys, roles), `users`, `sessions` and `login_limiter`."""

from __future__ import annotations

from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.bundleparts import BundlePart
from quire.modules import Module, Services
from quire.ratelimit import RateLimiter


def build(services: Services) -> None:
    store, admin = services.store, services.settings.admin
    auth = services.add("auth", AuthService(store, services.cache, services.permissions, services.events))
    services.add("users", UserService(store, auth))
    services.add("sessions", SessionService(store, admin.session_idle_seconds, admin.session_max_seconds,
                                            services.events))
    services.add("login_limiter", RateLimiter(store, admin.login_attempts, admin.login_window_seconds,
                                              "system/login_failures"))


def bundle(services: Services) -> list[BundlePart]:
    return [services.get(AuthService).roles_part()]


module = Module("auth", build=build, bundle=bundle, permissions=("system/manage",))
