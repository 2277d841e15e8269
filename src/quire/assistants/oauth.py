"""OAuth for `/mcp`, as the Model Context Protocol describes it (docs/ai.md):
Quire is the resource server and the site's single sign-on provider
(`[sso]`) the authorization server. An assistant learns where to sign in
from the protected resource metadata (RFC 9728) that a 401 names, signs the
user in there, and calls with an access token for `/mcp` (RFC 8707: a JWT
whose audience is `/mcp`'s address), which is checked here: the provider's
signature, issuer, audience and time. The call then runs as the Quire user
signed in through that provider (found by issuer and subject, active),
with that user's role, and as an assistant: drafts only."""

from __future__ import annotations

import time
from typing import Any

from starlette.requests import Request

from quire.auth.service import AuthService, Identity
from quire.auth.users import UserService
from quire.modules import Services
from quire.sso.provider import ProviderError
from quire.sso.service import SsoService
from quire.sso.tokens import LEEWAY, TokenError, UnknownKeyError, decode

METADATA_PATH = "/.well-known/oauth-protected-resource"
SCOPE = "mcp"


class TokenRefused(Exception):
    """An access token that does not open `/mcp`; the message says why."""


def resource_url(request: Request) -> str:
    """`/mcp`'s address, as tokens name it in their audience: under the
    site's public address (`[server] public_url`), else this request's."""
    quire: Services = request.app.state.quire
    base = quire.public_url.rstrip("/") if quire.public_url else f"{request.url.scheme}://{request.url.netloc}"
    return base + request.scope.get("root_path", "") + "/mcp"


def metadata_url(request: Request) -> str:
    resource = resource_url(request)
    scheme, _, rest = resource.partition("://")
    host, _, path = rest.partition("/")
    return f"{scheme}://{host}{METADATA_PATH}/{path}"


def enabled(quire: Services) -> bool:
    """With single sign-on, on the main site (a space's users are the main
    site's, and so is its sign-in: a space's `/mcp` takes its keys)."""
    return quire.settings.sso.configured and quire.settings.assistants.enabled and quire.space_name is None


def metadata(request: Request) -> dict[str, Any]:
    """The protected resource metadata of `/mcp` (RFC 9728)."""
    settings = request.app.state.quire.settings.sso
    issuer = (settings.issuer or settings.provider_url).rstrip("/")
    return {"resource": resource_url(request), "authorization_servers": [issuer], "scopes_supported": [SCOPE],
            "bearer_methods_supported": ["header"], "resource_name": "Quire (MCP)"}


def looks_like_token(text: str | None) -> bool:
    """A JWT (three parts), not an API key."""
    return bool(text) and text.count(".") == 2 and not text.startswith("qk_")  # type: ignore[union-attr]


async def user_identity(request: Request, token: str) -> Identity:
    """The identity of the user a provider's access token for `/mcp` names."""
    quire: Services = request.app.state.quire
    sso = quire.get(SsoService)
    try:
        try:
            claims = decode(token, await sso.provider.keys())
        except UnknownKeyError:  # the provider rotated its keys
            claims = decode(token, await sso.provider.keys(refresh=True))
    except ProviderError as exc:
        raise TokenRefused(f"The sign-in provider could not be asked: {exc}") from None
    except TokenError as exc:
        raise TokenRefused(str(exc)) from None
    settings = quire.settings.sso
    issuer = (settings.issuer or settings.provider_url).rstrip("/")
    if str(claims.get("iss", "")).rstrip("/") != issuer:
        raise TokenRefused("The token is not the sign-in provider's")
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience]
    if resource_url(request) not in audiences:
        raise TokenRefused(f"The token is not for {resource_url(request)} (ask for it with that resource)")
    now = time.time()
    expires = claims.get("exp")
    if not isinstance(expires, (int, float)) or expires < now - LEEWAY:
        raise TokenRefused("The token has expired")
    if isinstance(claims.get("nbf"), (int, float)) and claims["nbf"] > now + LEEWAY:
        raise TokenRefused("The token is not valid yet")
    subject = claims.get("sub")
    user = quire.get(UserService).by_sso(claims["iss"], subject) if isinstance(subject, str) else None
    if user is None or not user.get("active", True):
        raise TokenRefused("No active user of this site signed in with this account: sign in to the studio once "
                           "through single sign-on first")
    return quire.get(AuthService).role_identity(user["role"], user["_id"], user["user"])
