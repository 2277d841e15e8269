"""`/api/system/spaces`: the main site's admins list, create and remove its
spaces (docs/spaces.md)."""

from __future__ import annotations

import asyncio

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.errors import BadRequest
from quire.http import json_response, quire_of, read_json, service
from quire.spaces.service import SpaceService

PERMISSION = "system/spaces"


async def list_spaces(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).all())


async def create_space(request: Request) -> Response:
    """A new, empty space; or, with `"from"`, a fork of that space, made
    by a job (202 and its task: `GET /api/system/spaces/tasks/{id}`)."""
    identity = identify(request)
    identity.require(PERMISSION)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    spaces = service(request, SpaceService)
    if isinstance(body, dict) and "from" in body:
        return json_response(await spaces.fork_later(body, identity), 202)
    return json_response(await spaces.create(body, identity))


async def get_space(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).get(request.path_params["name"]))


async def remove_space(request: Request) -> Response:
    identify(request).require(PERMISSION)
    await service(request, SpaceService).remove(request.path_params["name"])
    return json_response({"success": True})


async def diff_space(request: Request) -> Response:
    """A fork against its origin, item by item since the fork."""
    identify(request).require(PERMISSION)
    spaces = service(request, SpaceService)
    name = request.path_params["name"]
    spaces.get(name)
    return json_response(await asyncio.to_thread(spaces.compare().diff, name))


async def merge_space(request: Request) -> Response:
    """GET: the plan of merging a fork into its origin (`?take=origin|fork`);
    POST `{"plan": ..., "take": ...}`: apply that plan, by a job (202)."""
    identity = identify(request)
    identity.require(PERMISSION)
    spaces = service(request, SpaceService)
    name = request.path_params["name"]
    if request.method == "GET":
        spaces.get(name)
        take = request.query_params.get("take", "origin")
        if take not in ("origin", "fork"):
            raise BadRequest("take is origin or fork", fields=["take"])
        return json_response(await asyncio.to_thread(spaces.compare().plan, name, take))
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await spaces.merge_later(name, body, identity), 202)


async def space_keys(request: Request) -> Response:
    """GET: a space's keys (names, roles; never their text) and the roles a
    new one may take. POST `{"name": ..., "role": ...}`: a new key of the
    space, its text answered once."""
    identity = identify(request)
    identity.require(PERMISSION)
    spaces = service(request, SpaceService)
    name = request.path_params["name"]
    if request.method == "GET":
        spaces.get(name)
        return json_response(await asyncio.to_thread(spaces.compare().keys, name))
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)  # a bad body is a 400 first, as everywhere
    spaces.get(name)
    environments = spaces.compare()
    if not isinstance(body, dict):
        raise BadRequest("The body is an object: {\"name\": ..., \"role\": ...}")
    by = identity.key_name or identity.key_id or identity.kind
    return json_response(await asyncio.to_thread(environments.create_key, name, body.get("name"), body.get("role"), by))


async def space_people(request: Request) -> Response:
    """The main site's users with a role in the space."""
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).people(request.path_params["name"]))


async def person_role(request: Request) -> Response:
    """PUT `{"role": R}`: the user's role in the space; DELETE: none."""
    identity = identify(request)
    identity.require(PERMISSION)
    quire = quire_of(request)
    body = {"role": None} if request.method == "DELETE" else await read_json(request, quire.max_body, quire.max_depth)
    spaces = service(request, SpaceService)
    user = request.path_params["user"]
    return json_response(await asyncio.to_thread(spaces.give_role, request.path_params["name"], user, body, identity))


async def list_tasks(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).list_tasks())


async def get_task(request: Request) -> Response:
    identify(request).require(PERMISSION)
    return json_response(service(request, SpaceService).task(request.path_params["id"]))


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
    route("/api/system/spaces/tasks", get=list_tasks),
    route("/api/system/spaces/tasks/{id}", get=get_task),
    route("/api/system/spaces/{name}", get=get_space, delete=remove_space),
    route("/api/system/spaces/{name}/diff", get=diff_space),
    route("/api/system/spaces/{name}/keys", get=space_keys, post=space_keys),
    route("/api/system/spaces/{name}/merge", get=merge_space, post=merge_space),
    route("/api/system/spaces/{name}/people", get=space_people),
    route("/api/system/spaces/{name}/people/{user}", put=person_role, delete=person_role),
    route("/api/system/aliases", get=list_aliases),
    route("/api/system/aliases/{name}", put=point_alias, delete=remove_alias),
]
