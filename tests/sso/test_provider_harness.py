"""The OpenID provider harness itself: discovery, the code flow with PKCE through
the dev login form, claims in the ID token and userinfo, back-channel logout."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx2 as httpx
import pytest

from tests.sso.provider import (
    LogoutReceiver,
    Provider,
    b64url_decode,
    end_session,
    jwt_claims,
    login,
    logout_receiver,
    pkce_pair,
    start_provider,
)

CLIENT_ID, SECRET = "quire", "quire-secret"
REDIRECT = "http://127.0.0.1:9/sso/callback"  # never contacted: login() stops there
AFTER_LOGOUT = "http://127.0.0.1:9/signed-out"
ANN = {
    "email": "ann@example.com",
    "email_verified": True,
    "preferred_username": "ann",
    "name": "Ann",
    "groups": ["editor"],
    "realm_access": {"roles": ["admin", "x"]},
}
BACKCHANNEL_EVENT = "http://schemas.openid.net/event/backchannel-logout"


@pytest.fixture(scope="module")
def receiver() -> Iterator[LogoutReceiver]:
    with logout_receiver() as server:
        yield server


@pytest.fixture(scope="module")
def op(tmp_path_factory: pytest.TempPathFactory, receiver: LogoutReceiver) -> Iterator[Provider]:
    client = {
        "client_id": CLIENT_ID,
        "client_secret": SECRET,
        "redirect_uris": [REDIRECT],
        "post_logout_redirect_uris": [AFTER_LOGOUT],
        "backchannel_logout_uri": receiver.url,
        "backchannel_logout_session_required": True,
        "token_endpoint_auth_method": "client_secret_basic",
    }
    with start_provider(
        tmp_path_factory.mktemp("op"), clients=[client], accounts={"ann": ANN}
    ) as p:
        yield p


def authorize_url(op: Provider, challenge: str | None, **extra: str) -> str:
    params = {
        "client_id": CLIENT_ID,
        "redirect_uri": REDIRECT,
        "response_type": "code",
        "scope": "openid profile email",
        "state": "st-" + secrets.token_hex(4),
        "nonce": "n-" + secrets.token_hex(4),
    }
    if challenge:
        params |= {"code_challenge": challenge, "code_challenge_method": "S256"}
    return f"{op.endpoint('authorization_endpoint')}?{urlencode(params | extra)}"


def sign_in(op: Provider, http: httpx.Client, username: str) -> dict[str, Any]:
    """Log in and redeem the code; returns the token response."""
    verifier, challenge = pkce_pair()
    url = authorize_url(op, challenge)
    back = login(http, url, username)
    assert back.startswith(REDIRECT + "?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(back).query).items()}
    assert query["state"] == parse_qs(urlsplit(url).query)["state"][0]
    assert query["iss"] == op.issuer
    form = {
        "grant_type": "authorization_code",
        "code": query["code"],
        "redirect_uri": REDIRECT,
        "code_verifier": verifier,
    }
    token = httpx.post(op.endpoint("token_endpoint"), data=form, auth=(CLIENT_ID, SECRET))
    assert token.status_code == 200, token.text
    return dict(token.json())


def rs256_valid(token: str, jwk: dict[str, Any]) -> bool:
    """Check an RS256 signature by hand (PKCS#1 v1.5), to prove the published
    key is the one that signs."""
    head, body, sig = token.split(".")

    def num(value: str) -> int:
        return int.from_bytes(b64url_decode(value), "big")

    size = (num(jwk["n"]).bit_length() + 7) // 8
    decoded = pow(num(sig), num(jwk["e"]), num(jwk["n"])).to_bytes(size, "big")
    # DER prefix of a SHA-256 DigestInfo
    info = bytes.fromhex("3031300d060960864801650304020105000420")
    info += hashlib.sha256(f"{head}.{body}".encode()).digest()
    return decoded == b"\x00\x01" + b"\xff" * (size - len(info) - 3) + b"\x00" + info


def test_discovery_and_jwks(op: Provider) -> None:
    doc = httpx.get(op.discovery_url).json()
    assert doc["issuer"] == op.issuer
    assert op.issuer.startswith("http://127.0.0.1:")
    assert doc["backchannel_logout_supported"] is True
    assert doc["backchannel_logout_session_supported"] is True
    assert doc["end_session_endpoint"] == op.issuer + "/session/end"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert {"openid", "profile", "email"} <= set(doc["scopes_supported"])
    assert {"email", "groups", "realm_access", "preferred_username"} <= set(doc["claims_supported"])
    keys = httpx.get(doc["jwks_uri"]).json()["keys"]
    assert [(k["kty"], k["alg"], k["kid"]) for k in keys] == [("RSA", "RS256", "test-rs256")]
    assert "d" not in keys[0]  # public half only


def test_code_flow_claims_in_id_token_and_userinfo(op: Provider) -> None:
    with httpx.Client() as http:
        tokens = sign_in(op, http, "ann")
    id_token = tokens["id_token"]
    (jwk,) = httpx.get(op.endpoint("jwks_uri")).json()["keys"]
    assert rs256_valid(id_token, jwk)
    claims = jwt_claims(id_token)
    assert claims["iss"] == op.issuer and claims["aud"] == CLIENT_ID
    assert claims["sub"] == "ann" and claims["sid"]
    assert {k: claims[k] for k in ANN} == ANN

    info = httpx.get(
        op.endpoint("userinfo_endpoint"),
        headers={"authorization": f"Bearer {tokens['access_token']}"},
    )
    assert info.status_code == 200, info.text
    assert info.json() == {"sub": "ann", **ANN}


def test_unknown_user_has_only_sub(op: Provider) -> None:
    with httpx.Client() as http:
        tokens = sign_in(op, http, "nobody")
    claims = jwt_claims(tokens["id_token"])
    assert claims["sub"] == "nobody"
    assert not set(ANN) & set(claims)
    info = httpx.get(
        op.endpoint("userinfo_endpoint"),
        headers={"authorization": f"Bearer {tokens['access_token']}"},
    )
    assert info.json() == {"sub": "nobody"}


@pytest.mark.parametrize(
    "pkce", [{}, {"code_challenge": "x" * 43, "code_challenge_method": "plain"}]
)
def test_pkce_s256_is_required(op: Provider, pkce: dict[str, str]) -> None:
    with httpx.Client() as http:
        back = login(http, authorize_url(op, None, **pkce), "ann")
    query = parse_qs(urlsplit(back).query)
    assert back.startswith(REDIRECT) and query["error"] == ["invalid_request"]


def test_backchannel_logout(op: Provider, receiver: LogoutReceiver) -> None:
    receiver.tokens.clear()
    with httpx.Client() as http:
        id_token = sign_in(op, http, "ann")["id_token"]
        sid = jwt_claims(id_token)["sid"]
        params = {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": AFTER_LOGOUT,
            "state": "bye",
        }
        url = f"{op.endpoint('end_session_endpoint')}?{urlencode(params)}"
        assert end_session(http, url) == AFTER_LOGOUT + "?state=bye"
        # The provider answers only after delivering, so the POST is here by now.
        assert len(receiver.tokens) == 1, op.log()
        (logout_token,) = receiver.tokens
        # e.g. {"iss": "http://127.0.0.1:PORT", "aud": "quire", "sub": "ann",
        #       "sid": "...", "events": {BACKCHANNEL_EVENT: {}}, "jti": "...",
        #       "iat": ..., "exp": ...}
        claims = jwt_claims(logout_token)
        assert claims["events"] == {BACKCHANNEL_EVENT: {}}
        assert (claims["iss"], claims["aud"]) == (op.issuer, CLIENT_ID)
        assert (claims["sub"], claims["sid"]) == ("ann", sid)
        assert "nonce" not in claims

        # The provider session is gone: the next authorization asks to log in.
        again = http.get(authorize_url(op, pkce_pair()[1]))
        assert "/interaction/" in again.headers["location"]
