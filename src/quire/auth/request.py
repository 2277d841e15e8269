"""Who is calling: the API key of a request, resolved to an Identity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request

from quire.auth.service import Identity

if TYPE_CHECKING:
    from quire.modules import Services


def request_key(request: Request) -> str | None:
    """The key from `api_key` (query), else `api-key` (header), else Bearer."""
    key = request.query_params.get("api_key")
    if key:
        return key
    key = request.headers.get("api-key")
    if key:
        return key
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer ":
        return auth[7:].strip() or None
    return None


def identify(request: Request) -> Identity:
    quire: Services = request.app.state.quire
    return quire.auth.identify(request_key(request))


def require_manage(request: Request) -> Identity:
    identity = identify(request)
    identity.require("system/manage")
    return identity
