"""OpenAPI paths of single sign-on and the admin session's event stream
(merged by quire.openapi.document). These are browser and provider
endpoints: they take no api-key."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    # imported here: quire.openapi imports this module while it loads
    from quire.openapi import op, param

    def sso(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], ok: str) -> dict[str, Any]:
        operation = op(summary, params, errors, tag="sso", ok=ok, security=False)
        operation["responses"]["200"]["content"] = {"text/html": {"schema": {"type": "string"}}}
        return operation

    authenticate = sso("Start the OpenID Connect login: 302 to the provider (state, nonce, PKCE)",
                       [param("next", "query", "string", "Local path to open after the login")], (403, 404),
                       ok="Not used: the answer is a redirect")
    authenticate["responses"]["303"] = {"description": "To the provider's authorization endpoint"}
    authenticate["responses"]["403"]["content"] = {"text/html": {"schema": {"type": "string"}}}
    callback = sso("The provider's redirect: code exchanged, ID token checked, user created or updated, "
                   "session started; 303 to the admin", [
                       param("code", "query", "string", "Authorization code"),
                       param("state", "query", "string", "The state sent by /sso/authenticate"),
                   ], (403, 404), ok="Not used: the answer is a redirect")
    callback["responses"]["303"] = {"description": "Logged in: to the admin (session cookie set)"}
    callback["responses"]["403"]["content"] = {"text/html": {"schema": {"type": "string"}}}
    logout = sso("Log out here, then at the provider when it offers RP-initiated logout", [], (404,),
                 ok="Not used: the answer is a redirect")
    logout["responses"]["303"] = {"description": "To the provider's end-session endpoint or the login page"}
    backchannel = op("Back-channel logout by the provider: form field logout_token (a signed JWT); "
                     "the sessions of its sub or sid are destroyed", [], (400, 404), tag="sso",
                     ok="Accepted: empty body, Cache-Control: no-store", security=False)
    backchannel["responses"]["200"]["content"] = {}
    backchannel["requestBody"] = {"required": True, "content": {"application/x-www-form-urlencoded": {
        "schema": {"type": "object", "required": ["logout_token"],
                   "properties": {"logout_token": {"type": "string"}}}}}}
    events = op("Server-Sent Events of the admin session of the cookie: "
                "{\"type\": \"logout\", \"data\": {\"message\": ...}} after a back-channel logout",
                [], (401,), tag="sso", ok="text/event-stream", security=False)
    events["responses"]["200"]["content"] = {"text/event-stream": {"schema": {"type": "string"}}}
    return {
        "/sso/authenticate": {"get": authenticate},
        "/sso/callback": {"get": callback},
        "/sso/logout": {"get": logout, "post": backchannel},
        "/system/events": {"get": events},
    }
