"""Who is calling: the API key of a request, resolved to an Identity."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote_to_bytes

from starlette.requests import Request

from quire.auth.service import Identity

if TYPE_CHECKING:
    from quire.modules import Services


def request_key(request: Request) -> str | None:
    """The key from `api_key` (query), else `api-key` (header), else Bearer.
    Every request passes here: the query is parsed only when it may name
    `api_key` (spelt out, or percent-encoded), and the headers are read as
    sent, the first of a repeated name counting (as `Headers.get`)."""
    if _may_name_api_key(request.scope["query_string"]):
        key = request.query_params.get("api_key")
        if key:
            return key
    header: bytes | None = None
    auth: bytes | None = None
    for name, value in request.scope["headers"]:
        if name == b"api-key":
            if header is None:
                header = value
        elif name == b"authorization" and auth is None:
            auth = value
    if header:
        return header.decode("latin-1")
    text = "" if auth is None else auth.decode("latin-1")
    if text[:7].lower() == "bearer ":
        return text[7:].strip() or None
    return None


def _may_name_api_key(query: bytes) -> bool:
    """Whether the raw query has a parameter named `api_key`, spelt out or
    with percent-escapes in its name (`api%5Fkey`, as the query parser
    decodes it); other names with escapes (`persona_vars%5Bname%5D`) are
    decoded alone, not the whole query."""
    if b"api_key" in query:
        return True
    if b"%" not in query:
        return False
    for part in query.split(b"&"):
        name = part.partition(b"=")[0]
        if b"%" in name and unquote_to_bytes(name) == b"api_key":
            return True
    return False


IDENTITY = "quire.identity"  # the scope's key for the Identity found before the route (the rate limit's)


def identify(request: Request) -> Identity:
    found = request.scope.get(IDENTITY)
    if found is not None:
        return found
    quire: Services = request.app.state.quire
    return quire.auth.identify(request_key(request))


def require_manage(request: Request) -> Identity:
    identity = identify(request)
    identity.require("system/manage")
    return identity
