"""Serving the endpoints a site's hooks add (`quire.endpoints`): each a
route under `/api/custom/` that identifies the caller as every API route
does, checks the endpoint's permission (none for a public one), and
answers what the handler returns as JSON. A handler's `ApiError` is its
status and message; anything else a 500 with `{"error": ...}`, logged."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import Route, route
from quire.auth.request import identify
from quire.auth.service import Identity
from quire.endpoints import Endpoint
from quire.http import json_response, quire_of, read_json
from quire.modules import Services
from quire.openapi import op, param


@dataclass
class Call:
    """What a handler gets: the request, the caller, the services (as a
    hook's `quire`), the path's parameters and the query's."""

    request: Request
    identity: Identity
    quire: Services
    params: dict[str, str]
    query: dict[str, str] = field(default_factory=dict)

    async def json(self) -> Any:
        """The request's JSON body (None when empty), within the API's limits."""
        return await read_json(self.request, self.quire.max_body, self.quire.max_depth)


def _handler(made: Endpoint) -> Any:
    async def answer(request: Request) -> Response:
        identity = identify(request)
        if made.permission is not None:
            identity.require(made.permission)
        call = Call(request, identity, quire_of(request), dict(request.path_params), dict(request.query_params))
        if inspect.iscoroutinefunction(made.handler):
            result = await made.handler(call)
        else:  # plain code may wait on the store: off the event loop
            result = await anyio.to_thread.run_sync(made.handler, call)
        return result if isinstance(result, Response) else json_response(result)

    return answer


def routes_of(services: Services) -> list[Route]:
    """A route per path, with the methods its endpoints answer."""
    by_path: dict[str, dict[str, Any]] = {}
    for made in services.endpoints:
        by_path.setdefault(made.path, {})[made.method.lower()] = _handler(made)
    return [route(path, **handlers) for path, handlers in by_path.items()]


def paths_of(services: Services) -> dict[str, Any]:
    """The endpoints in the OpenAPI document (tag `custom`)."""
    out: dict[str, Any] = {}
    for made in services.endpoints:
        names = [part[1:-1] for part in made.path.split("/") if part.startswith("{")]
        summary = made.summary or f"{made.method} {made.path} (a hook's endpoint)"
        if made.permission:
            summary += f"; needs {made.permission}"
        out.setdefault(made.path, {})[made.method.lower()] = op(
            summary, [param(n, "path", "string", n) for n in names], (400, 403, 404), tag="custom",
            body=made.method in ("POST", "PUT", "PATCH"), security=made.permission is not None)
    return out
