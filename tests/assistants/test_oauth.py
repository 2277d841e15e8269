"""OAuth for `/mcp` against a real OpenID provider (tests/oidc, npm's
oidc-provider with resource indicators): an assistant finds the provider
in the protected resource metadata a 401 names, signs the user in there,
and calls with an access token whose audience is `/mcp`; the call runs as
that Quire user's role, and as an assistant's (drafts only)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import httpx2
import pytest

from quire.app import build_app
from quire.audit.service import AuditQuery, AuditService
from quire.config import load_settings
from tests.assistants.conftest import ToolRefused, answer, mcp_client
from tests.client import TestClient
from tests.sso.provider import jwt_claims, login, pkce_pair, start_provider

RESOURCE = "http://testserver/mcp"
REDIRECT = "http://127.0.0.1:9/callback"
ASSISTANT = {"client_id": "assistant", "token_endpoint_auth_method": "none", "redirect_uris": [REDIRECT],
             "grant_types": ["authorization_code"], "response_types": ["code"]}
QUIRE = {"client_id": "quire", "client_secret": "s" * 32, "redirect_uris": ["http://testserver/sso/callback"],
         "grant_types": ["authorization_code"], "response_types": ["code"]}


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with start_provider(tmp_path_factory.mktemp("oidc"), clients=[ASSISTANT, QUIRE],
                        accounts={"ann": {"email": "ann@example.com", "preferred_username": "ann"}},
                        resources=[RESOURCE]) as started:
        yield started


@pytest.fixture
def site(provider: Any, tmp_path: Path, app_env: dict[str, str]) -> Iterator[Any]:
    app = build_app(load_settings(tmp_path / "data", env={
        **app_env, "QUIRE_SSO_PROVIDER_URL": provider.issuer, "QUIRE_SSO_CLIENT_ID": "quire",
        "QUIRE_SSO_CLIENT_SECRET": "s" * 32, "QUIRE_SERVER_PUBLIC_URL": "http://testserver"}))
    yield app
    app.state.quire.close()


def access_token(provider: Any, username: str, resource: str | None = RESOURCE) -> str:
    """The authorization code flow of a public client with PKCE, as an
    assistant runs it: the user signs in at the provider, the code is
    exchanged for an access token for `resource`."""
    verifier, challenge = pkce_pair()
    asked = {"client_id": "assistant", "response_type": "code", "redirect_uri": REDIRECT, "scope": "openid",
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "s1"}
    if resource:
        asked["resource"] = resource
    with httpx2.Client() as http:
        back = login(http, provider.endpoint("authorization_endpoint") + "?" + urlencode(asked), username)
        code = dict(parse_qsl(urlsplit(back).query))["code"]
        exchange = {"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                    "client_id": "assistant", "code_verifier": verifier}
        if resource:
            exchange["resource"] = resource
        answered = http.post(provider.endpoint("token_endpoint"), data=exchange)
        assert answered.status_code == 200, answered.text
        return str(answered.json()["access_token"])


pytestmark = pytest.mark.anyio


async def test_an_assistant_signs_a_user_in_and_writes_drafts_as_that_user(site: Any, provider: Any) -> None:
    quire = site.state.quire
    key = quire.auth.create_key("setup", "admin")["key"]
    made = TestClient(site).put("/api/system/models/notes", headers={"api-key": key}, json={
        "name": "notes", "type": "collection", "fields": [{"name": "text", "type": "text"}]})
    assert made.status_code == 200
    # the first step of an assistant: a 401 that names where to sign in
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=site), base_url="http://testserver") as http:
        refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        challenge = refused.headers["www-authenticate"]
        assert 'resource_metadata="http://testserver/.well-known/oauth-protected-resource/mcp"' in challenge
        found = (await http.get("/.well-known/oauth-protected-resource/mcp")).json()
        assert found["resource"] == RESOURCE and found["authorization_servers"] == [provider.issuer]

    token = access_token(provider, "ann")
    assert jwt_claims(token)["aud"] == RESOURCE
    # no Quire user signed in with this account yet
    with pytest.raises(ExceptionGroup):
        async with mcp_client(site, None, authorization=f"Bearer {token}") as client:
            await client.call_tool("list_models", {})
    quire.users.save_sso(provider.issuer, "ann", None, {"user": "ann", "email": "ann@example.com", "role": "admin"})
    async with mcp_client(site, None, authorization=f"Bearer {token}", client="claude-code") as client:
        assert [m["name"] for m in answer(await client.call_tool("list_models", {}))["models"]] == ["notes"]
        saved = answer(await client.call_tool("create_item", {"model": "notes", "data": {"text": "hi"}}))["saved"][0]
        assert saved["item"]["_state"] == 0
        with pytest.raises(ToolRefused, match="may not publish"):  # an admin user, as an assistant: drafts only
            answer(await client.call_tool("publish_item", {"model": "notes", "id": saved["_id"]}))
    entries, _ = quire.get(AuditService).find(AuditQuery(action="item.create"))
    assert entries[0]["who"]["name"] == "ann via MCP (claude-code)" and entries[0]["who"]["kind"] == "user"


async def test_tokens_for_something_else_are_refused(site: Any, provider: Any) -> None:
    site.state.quire.users.save_sso(provider.issuer, "ann", None, {"user": "ann", "email": "ann@example.com",
                                                                   "role": "admin"})
    opaque = access_token(provider, "ann", resource=None)  # for the provider's userinfo, not for /mcp
    forged = access_token(provider, "ann")
    head, body, signature = forged.split(".")
    forged = ".".join([head, body[:-4] + ("AAAA" if body[-4:] != "AAAA" else "BBBB"), signature])
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=site), base_url="http://testserver") as http:
        for bad in (opaque, forged, "a.b.c"):
            refused = await http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                      headers={"authorization": f"Bearer {bad}"})
            assert refused.status_code == 401, (bad, refused.text)
            assert 'error="invalid_token"' in refused.headers["www-authenticate"]
