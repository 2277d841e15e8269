"""`/api/system/spaces`: the main site's admins list, create and remove its
spaces (docs/spaces.md)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.http import json_response, quire_of, read_json, service
from quire.spaces.service import SpaceService

PERMISSION = "system/spaces"


async def list_spaces(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).all())


async def create_space(request: Request) -> Response:
    identity = identify(request)
    identity.require(PERMISSION)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, SpaceService).create(body, identity))


async def get_space(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).get(request.path_params["name"]))


async def remove_space(request: Request) -> Response:
    identify(request).require(PERMISSION)
    await service(request, SpaceService).remove(request.path_params["name"])
    return json_response({"success": True})


async def list_aliases(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).list_aliases())


async def point_alias(request: Request) -> Response:
    identity = identify(request)
    identity.require(PERMISSION)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, SpaceService).point(request.path_params["name"], body, identity))


async def remove_alias(request: Request) -> Response:
    identify(request).require(PERMISSION)
    await service(request, SpaceService).unalias(request.path_params["name"])
    return json_response({"success": True})


routes = [
    route("/api/system/spaces", get=list_spaces, post=create_space),
    route("/api/system/spaces/{name}", get=get_space, delete=remove_space),
    route("/api/system/aliases", get=list_aliases),
    route("/api/system/aliases/{name}", put=point_alias, delete=remove_alias),
]
