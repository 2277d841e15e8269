"""HTTP routes of search (`/api/searchmod/...`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.http import int_param, json_param, json_response, quire_of, read_json, service
from quire.searchmod.service import SearchService


async def search(request: Request) -> Response:
    identity = identify(request)
    query = request.query_params
    params = {
        "q": query.get("q"),
        "limit": int_param(request, "limit"),
        "offset": int_param(request, "offset"),
        "fields": query.get("fields"),
        "locale": query.get("locale"),
        "filter": json_param(request, "filter"),
        "highlight": query.get("highlight", "") in ("1", "true"),
    }
    return json_response(service(request, SearchService).search(request.path_params["index"], params, identity))


async def list_indexes(request: Request) -> Response:
    return json_response(service(request, SearchService).all(identify(request)))


async def get_index(request: Request) -> Response:
    return json_response(service(request, SearchService).get(request.path_params["name"], identify(request)))


async def put_index(request: Request) -> Response:
    identity = identify(request)
    identity.require("searchmod/manage")
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, SearchService).put(request.path_params["name"], body, identity))


async def delete_index(request: Request) -> Response:
    await service(request, SearchService).delete(request.path_params["name"], identify(request))
    return json_response({"success": True})


async def rebuild(request: Request) -> Response:
    identity = identify(request)
    return json_response(await service(request, SearchService).rebuild(request.path_params["name"], identity))


routes = [
    route("/api/searchmod/search/{index}", get=search),
    route("/api/searchmod/indexes", get=list_indexes),
    route("/api/searchmod/indexes/{name}", get=get_index, put=put_index, delete=delete_index),
    route("/api/searchmod/indexes/{name}/rebuild", post=rebuild),
]
