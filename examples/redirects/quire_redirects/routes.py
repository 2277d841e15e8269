"""`/api/redirects`: the rules (`redirects/read`, changes `redirects/manage`)
and `resolve`, what a site asks for a path it cannot serve."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.errors import BadRequest
from quire.http import json_response, quire_of, read_json, service
from quire_redirects.service import RedirectService

READ, MANAGE = "redirects/read", "redirects/manage"


async def list_rules(request: Request) -> Response:
    identify(request).require(READ)
    return json_response({"data": service(request, RedirectService).all()})


async def create_rule(request: Request) -> Response:
    identity = identify(request)
    identity.require(MANAGE)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, RedirectService).create(body, identity))


async def one_rule(request: Request) -> Response:
    identify(request).require(READ)
    return json_response(service(request, RedirectService).get(request.path_params["id"]))


async def change_rule(request: Request) -> Response:
    identity = identify(request)
    identity.require(MANAGE)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, RedirectService).update(request.path_params["id"], body, identity))


async def delete_rule(request: Request) -> Response:
    identity = identify(request)
    identity.require(MANAGE)
    await service(request, RedirectService).delete(request.path_params["id"], identity)
    return json_response({"success": True})


async def resolve(request: Request) -> Response:
    identify(request).require(READ)
    path = request.query_params.get("path")
    if not path:
        raise BadRequest("<path> is missing: /api/redirects/resolve?path=/old-page")
    return json_response(service(request, RedirectService).resolve(path))


routes = [
    route("/api/redirects", get=list_rules, post=create_rule),
    route("/api/redirects/resolve", get=resolve),
    route("/api/redirects/{id}", get=one_rule, put=change_rule, delete=delete_rule),
]
