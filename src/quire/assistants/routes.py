"""`/mcp`: the MCP server over Streamable HTTP (docs/ai.md).

The request's key (`api-key`, `Authorization: Bearer`) is checked here,
before the protocol is looked at: no key or an unknown one is a 401 with
`WWW-Authenticate`, and what the call may do is its role's. The SDK's
transport then answers the request, stateless (every request stands
alone, so any worker or instance answers any request) with JSON answers.

Its session manager runs in a task of the worker's event loop, started by
the first request (granian gives the app no lifespan to start it from):
one per loop, as the SDK wants."""

from __future__ import annotations

import asyncio
import weakref
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import Receive, Scope, Send, route
from quire.assistants import oauth
from quire.assistants.service import Caller
from quire.auth.request import identify, request_key
from quire.auth.service import Identity
from quire.errors import Forbidden, NotFound, Unauthorized
from quire.http import json_response, quire_of

PATH = "/mcp"
_managers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Running] = weakref.WeakKeyDictionary()


class _Running:
    """One event loop's MCP server and its session manager, kept running."""

    def __init__(self, body_limit: int) -> None:
        from mcp.server.transport_security import TransportSecuritySettings

        from quire.assistants.server import build_server

        self.server = build_server()
        # Host and Origin are checked by `check_origin` (the SDK's own check
        # knows only loopback names and would refuse a site behind a proxy)
        self.server.streamable_http_app(stateless_http=True, json_response=True, max_request_body_size=body_limit,
                                        transport_security=TransportSecuritySettings(
                                            enable_dns_rebinding_protection=False))
        self.manager = self.server.session_manager
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._hold(), name="mcp-session-manager")
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():
            ready.cancel()
            self._task.result()  # its failure, raised here

    async def _hold(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()


async def _running(body_limit: int) -> _Running:
    loop = asyncio.get_running_loop()
    running = _managers.get(loop)
    if running is None:
        running = _managers[loop] = _Running(body_limit)
    await running.start()
    return running


class _Answered(Response):
    """The SDK's answer to the request, with the headers every answer of
    the app carries (the request id, HSTS, CORS) added to its own."""

    def __init__(self, caller: Caller, body_limit: int) -> None:
        super().__init__(status_code=200)
        self.caller = caller
        self.body_limit = body_limit
        self.body = None  # type: ignore[assignment]  # the SDK streams it: no ETag, never a 304
        self.raw_headers = [(b"cache-control", b"no-store")]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from quire.assistants.server import CALLER

        running = await _running(self.body_limit)
        extra = self.raw_headers

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                self.status_code = message["status"]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        token = CALLER.set(self.caller)
        try:
            await running.manager.handle_request(scope, receive, with_headers)
        finally:
            CALLER.reset(token)


def check_origin(request: Request) -> None:
    """A browser's page may call only from this site or an origin the API
    allows (`[api] cors_origins`): MCP's rule against DNS rebinding."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    allowed = quire_of(request).settings.api.cors_origins
    try:
        same = urlsplit(origin).netloc == request.headers.get("host", "")
    except ValueError:
        same = False
    if not (same or "*" in allowed or origin in allowed):
        raise Forbidden(f"Origin {origin} may not call {PATH}")


async def mcp_endpoint(request: Request) -> Response:
    quire = quire_of(request)
    settings = quire.settings.assistants
    if not settings.enabled:
        raise NotFound("Not found")
    check_origin(request)
    identity = await _caller(request)
    client = request.headers.get("user-agent", "")[:80] or "an assistant"
    # a base64 upload is a third larger than its file
    body_limit = max(quire.max_body, settings.max_upload_bytes * 4 // 3 + 64 * 1024)
    return _Answered(Caller(identity, quire, client), body_limit)


async def _caller(request: Request) -> Identity:
    """The key's identity, or with single sign-on a provider's access token
    for `/mcp` (oauth.py): its user's. Else a 401 that says how to sign in."""
    sent = request_key(request)
    with_oauth = oauth.enabled(quire_of(request))
    try:
        if with_oauth and oauth.looks_like_token(sent):
            return await oauth.user_identity(request, sent or "")
        identity = identify(request)
    except oauth.TokenRefused as exc:
        raise _refused(request, str(exc), with_oauth, sent is not None) from None
    except Unauthorized:  # an unknown key
        raise _refused(request, "Authentication failed", with_oauth, True) from None
    if identity.anonymous:
        how = "an API key (api-key: <key> or Authorization: Bearer <key>)"
        if with_oauth:
            how += " or an access token of the site's sign-in provider for this address"
        raise _refused(request, f"An assistant calls with {how}", with_oauth, False)
    return identity


def _refused(request: Request, message: str, with_oauth: bool, sent: bool) -> Unauthorized:
    challenge = 'Bearer realm="quire"'
    if with_oauth:  # where to sign in: the protected resource metadata (RFC 9728)
        challenge += f', resource_metadata="{oauth.metadata_url(request)}", scope="{oauth.SCOPE}"'
    if sent:
        challenge += ', error="invalid_token"'
    refused = Unauthorized(message)
    refused.headers = {"WWW-Authenticate": challenge}
    return refused


async def resource_metadata(request: Request) -> Response:
    """The protected resource metadata of `/mcp`: which provider to sign in
    with (404 without single sign-on: keys only)."""
    if not oauth.enabled(quire_of(request)):
        raise NotFound("Not found")
    return json_response(oauth.metadata(request), headers={"cache-control": "public, max-age=3600"})


# stateless: no stream a GET would open, no session a DELETE would end (405 for both)
routes = [route(PATH, post=mcp_endpoint, cors=True),
          route(oauth.METADATA_PATH + PATH, get=resource_metadata, cors=True),
          route(oauth.METADATA_PATH, get=resource_metadata, cors=True)]
