"""Checks of the provider's JWTs: the ID token of a login and the logout
token of a back-channel logout (OpenID Connect Back-Channel Logout 1.0)."""

from __future__ import annotations

import time
from typing import Any

from joserfc import jwt
from joserfc.errors import InvalidKeyIdError, JoseError
from joserfc.jwk import KeySet

# Signatures by the provider's published keys only: no "none", no shared secrets.
ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]
BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"
LEEWAY = 60  # seconds of clock difference allowed between us and the provider


class TokenError(Exception):
    """A token refused; the message says which rule it broke."""


class UnknownKeyError(TokenError):
    """The token names a key id the provider's keys lack (rotated keys?)."""


def decode(token: str, keys: KeySet) -> dict[str, Any]:
    """The claims of a token whose signature one of `keys` verifies."""
    try:
        return dict(jwt.decode(token, keys, algorithms=ALGORITHMS).claims)
    except InvalidKeyIdError:
        raise UnknownKeyError("Token signed by an unknown key") from None
    except JoseError as exc:
        raise TokenError(f"Token signature or format rejected: {exc.error}") from None
    except ValueError as exc:
        raise TokenError(f"Token could not be read: {exc}") from None


def _audience_ok(claims: dict[str, Any], client_id: str) -> bool:
    aud = claims.get("aud")
    return aud == client_id or (isinstance(aud, list) and client_id in aud)


def check_id_token(claims: dict[str, Any], *, issuer: str, client_id: str, nonce: str,
                   now: float | None = None) -> None:
    now = time.time() if now is None else now
    if claims.get("iss") != issuer:
        raise TokenError("ID token issuer does not match")
    if not _audience_ok(claims, client_id):
        raise TokenError("ID token audience does not match")
    aud = claims.get("aud")
    if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != client_id:
        raise TokenError("ID token authorized party does not match")
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or exp + LEEWAY < now:
        raise TokenError("ID token expired")
    iat = claims.get("iat")
    if not isinstance(iat, int | float) or iat - LEEWAY > now:
        raise TokenError("ID token issued in the future")
    if claims.get("nonce") != nonce:
        raise TokenError("ID token nonce does not match")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise TokenError("ID token has no subject")


def check_logout_token(claims: dict[str, Any], *, issuer: str, client_id: str, max_age: int,
                       now: float | None = None) -> None:
    """api.md's rules (iss, aud, iat, events; sub or sid; no nonce) plus the
    issuer and audience values, freshness and expiry; replay is the caller's."""
    now = time.time() if now is None else now
    missing = [c for c in ("iss", "aud", "iat", "events") if c not in claims]
    if missing:
        raise TokenError(f"Logout token lacks claims: {', '.join(missing)}")
    events = claims["events"]
    if not isinstance(events, dict) or BACKCHANNEL_EVENT not in events:
        raise TokenError("Logout token events lack the back-channel logout event")
    if not claims.get("sub") and not claims.get("sid"):
        raise TokenError("Logout token has neither sub nor sid")
    if "nonce" in claims:
        raise TokenError("Logout token must not carry a nonce")
    if claims["iss"] != issuer:
        raise TokenError("Logout token issuer does not match")
    if not _audience_ok(claims, client_id):
        raise TokenError("Logout token audience does not match")
    iat = claims["iat"]
    if not isinstance(iat, int | float) or iat - LEEWAY > now or now - iat > max_age:
        raise TokenError("Logout token is not fresh")
    exp = claims.get("exp")
    if exp is not None and (not isinstance(exp, int | float) or exp + LEEWAY < now):
        raise TokenError("Logout token expired")
    if not isinstance(claims.get("jti"), str) or not claims["jti"]:
        raise TokenError("Logout token has no jti")
