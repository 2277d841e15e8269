"""API keys, roles and permissions, users, admin sessions.

The module builds the services every other module checks callers with:
`auth` (keys, roles), `users`, `sessions` and `login_limiter`."""

from __future__ import annotations

from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.bundleparts import BundlePart
from quire.catalogue import INSIDE, spec
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


# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    spec("auth.key.save", INSIDE, "key", "is_update", "identity", sync=True),
    spec("auth.key.remove", INSIDE, "key", "identity", sync=True),
    spec("auth.role.save", INSIDE, "role", "permissions", "previous", "is_update", "identity", sync=True),
    spec("auth.role.remove", INSIDE, "role", "identity", sync=True),
    spec("auth.user.save", INSIDE, "user", "changed", "is_update", "identity", sync=True),
    spec("auth.user.remove", INSIDE, "user", "identity", sync=True),
    spec("auth.login", INSIDE, "user", "method", sync=True),
    spec("auth.login.failed", INSIDE, "user_name", "method", "reason", sync=True),
    spec("auth.logout", INSIDE, "user_id", "reason", "identity", sync=True),
]


module = Module("auth", events=SENT, build=build, bundle=bundle, permissions=("system/manage",))
