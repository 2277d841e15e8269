"""API keys, roles and permissions, users, admin sessions.

The module builds the services every other module checks callers with:
`auth` (keys, roles), `users`, `sessions` and `login_limiter`."""

from __future__ import annotations

from typing import Any

from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.bundleparts import BundlePart
from quire.catalogue import INSIDE, REMOVE, WRITE, Audit, names, spec, text
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


def _key(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    # the key's name and role; its text and hash never reach the handler
    return {"name": text(payload["key"]["name"]), "role": payload["key"]["role"]}


def _role_saved(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    granted = {p for p, on in payload["permissions"].items() if on}
    before = {p for p, on in (payload["previous"] or {}).items() if on}
    return {"created": payload["previous"] is None, "granted": names(granted - before),
            "revoked": names(before - granted)}


def _user_saved(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    user = payload["user"]
    detail: dict[str, Any] = {"user": text(user.get("user", "")), "role": user.get("role")}
    if payload["is_update"]:
        detail["fields"] = names(payload["changed"])  # `password` by name when it changed, never a value
    return detail


def _user_removed(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {"user": text(payload["user"].get("user", ""))}


def _login_failed(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    """The name tried: as typed when it is a user's, else masked (its first
    character and its length, enough to tell attempts apart), since an
    unknown name is often a password typed into the wrong field. The
    password itself is never sent."""
    name = payload["user_name"]
    if name and services.get(UserService).by_name(name) is None:
        name = f"{name[:1]}… ({len(name)} characters)"
    return {"user": text(name), "method": payload["method"], "reason": text(payload["reason"])}


# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    spec("auth.key.save", INSIDE, "key", "is_update", "identity", sync=True,
         resource="keys", subject="key", change=WRITE, audit=Audit("key.*", _key)),
    spec("auth.key.remove", INSIDE, "key", "identity", sync=True,
         resource="keys", subject="key", change=REMOVE, audit=Audit("key.delete", _key)),
    spec("auth.role.save", INSIDE, "role", "permissions", "previous", "is_update", "identity", sync=True,
         resource="roles", subject="role", change=WRITE, audit=Audit("role.save", _role_saved)),
    spec("auth.role.remove", INSIDE, "role", "identity", sync=True,
         resource="roles", subject="role", change=REMOVE, audit="role.delete"),
    spec("auth.user.save", INSIDE, "user", "changed", "is_update", "identity", sync=True,
         resource="users", subject="user", change=WRITE, audit=Audit("user.*", _user_saved)),
    spec("auth.user.remove", INSIDE, "user", "identity", sync=True,
         resource="users", subject="user", change=REMOVE, audit=Audit("user.delete", _user_removed)),
    spec("auth.login", INSIDE, "user", "method", sync=True, resource="sessions", subject="user",
         audit=Audit("login", lambda payload, services: {"method": payload["method"]}, author=("user",))),
    spec("auth.login.failed", INSIDE, "user_name", "method", "reason", sync=True, resource="sessions",
         audit=Audit("login.failed", _login_failed, author=())),
    # a logout's author: the administrator who ended the session, else its user
    spec("auth.logout", INSIDE, "user_id", "reason", "identity", sync=True, resource="sessions", subject="user_id",
         audit=Audit("logout", lambda payload, services: {"reason": payload["reason"]},
                     author=("identity", "user_id"))),
]


module = Module("auth", events=SENT, build=build, bundle=bundle, permissions=("system/manage",),
                schema=lambda services: [services.get(AuthService).roles_schema_part()])
