"""API endpoints a site's hooks add (`quire.add_endpoint(...)` in a hook's
`register(events, quire)`), as Cockpit serves `config/api/*.php` files:
under `/api/custom/`, each with the permission a caller's key or role must
hold (added to what roles can grant) or public by choice. The system module
serves them (`system/custom.py`) and lists them in the OpenAPI document."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from quire.errors import ConfigError

PREFIX = "/api/custom/"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
# /api/custom/<segments>, a segment a name or a {parameter}
PATH = re.compile(r"^/api/custom(?:/(?:[A-Za-z0-9_.-]+|\{[a-z_][a-z0-9_]*\}))+$")
PERMISSION = re.compile(r"^[a-z][a-z0-9_-]*/[A-Za-z0-9_*/.-]+$")


@dataclass(frozen=True)
class Endpoint:
    """One endpoint: `handler(call)` answers a request (`system.custom.Call`:
    the request, the caller's identity, the services, the path's
    parameters, the query and the JSON body), plain or async; what it
    answers is sent as JSON (a Starlette `Response` as it is)."""

    method: str
    path: str
    handler: Callable[[Any], Any]
    permission: str | None
    summary: str


def endpoint(method: str, path: str, handler: Callable[[Any], Any], permission: str | None = None,
             public: bool = False, summary: str = "") -> Endpoint:
    """An endpoint, checked: a ConfigError says what is wrong."""
    verb = method.upper() if isinstance(method, str) else ""
    if verb not in METHODS:
        raise ConfigError(f"endpoint {path!r}: method must be one of {', '.join(METHODS)}")
    if not isinstance(path, str) or not PATH.match(path):
        raise ConfigError(f"endpoint {path!r}: the path must start with {PREFIX} (names and {{parameters}})")
    if not callable(handler):
        raise ConfigError(f"endpoint {verb} {path}: the handler is not a function")
    if public:
        if permission is not None:
            raise ConfigError(f"endpoint {verb} {path}: public or a permission, not both")
    elif not isinstance(permission, str) or not PERMISSION.match(permission):
        raise ConfigError(f"endpoint {verb} {path}: name the permission a caller needs (such as "
                          f"'custom/stats'), or pass public=True")
    return Endpoint(verb, path, handler, permission, summary if isinstance(summary, str) else "")
