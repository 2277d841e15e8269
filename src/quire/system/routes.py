"""HTTP routes of the management API (`/api/system/...`, role `admin` or
permission `system/manage`) and of the OpenAPI document (public)."""

from __future__ import annotations

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire import openapi
from quire.asgi import route
from quire.auth.request import require_manage
from quire.auth.service import AuthService
from quire.content.locales import LocaleService
from quire.content.models import ModelService, parse_change
from quire.http import json_response, quire_of, raw_json_response, read_json, service
from quire.system import custom


async def _body(request: Request) -> object:
    quire = quire_of(request)
    return await read_json(request, quire.max_body, quire.max_depth)


async def list_models(request: Request) -> Response:
    require_manage(request)
    return json_response([m.to_json() for m in service(request, ModelService).all()])


async def get_model(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, ModelService).get(request.path_params["name"]).to_json())


async def put_model(request: Request) -> Response:
    identity = require_manage(request)
    model, renames, drop = parse_change(request.path_params["name"], await _body(request))
    saved = await service(request, ModelService).asave(model, renames, drop, identity)
    return json_response(saved.to_json())


async def model_usage(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, ModelService).field_usage(request.path_params["name"]).to_json())


async def model_indexes(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, ModelService).indexes(request.path_params["name"]))


async def delete_model(request: Request) -> Response:
    identity = require_manage(request)
    await service(request, ModelService).adelete(request.path_params["name"], identity)
    return json_response({"success": True})


async def list_roles(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, AuthService).list_roles())


async def get_role(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, AuthService).get_role(request.path_params["name"]))


async def put_role(request: Request) -> Response:
    identity = require_manage(request)
    body = await _body(request)
    role = await service(request, AuthService).asave_role(request.path_params["name"], body, identity)
    return json_response(role)


async def delete_role(request: Request) -> Response:
    identity = require_manage(request)
    await service(request, AuthService).adelete_role(request.path_params["name"], identity)
    return json_response({"success": True})


async def list_keys(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, AuthService).list_keys())


async def create_key(request: Request) -> Response:
    identity = require_manage(request)
    body = await _body(request)
    if not isinstance(body, dict):
        body = {}
    created = await service(request, AuthService).acreate_key(body.get("name"), body.get("role"), identity)
    return json_response(created)


async def delete_key(request: Request) -> Response:
    identity = require_manage(request)
    await service(request, AuthService).adelete_key(request.path_params["id"], identity)
    return json_response({"success": True})


async def get_locales(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, LocaleService).list())


async def put_locales(request: Request) -> Response:
    require_manage(request)
    body = await _body(request)
    saved = await service(request, LocaleService).asave(body)
    return json_response(saved)


async def openapi_json(request: Request) -> Response:
    # The document never changes while the process runs: built and encoded
    # once per app (about 100 KB, public, so also cheaper to be asked for).
    quire = quire_of(request)
    kept = quire.cache.memo("openapi", 1)
    body = kept.get("document")
    if body is None:
        document = openapi.document(quire.modules)
        document["paths"].update(custom.paths_of(quire))  # the site's hooks' endpoints
        body = orjson.dumps(document)
        kept.put("document", body)
    return raw_json_response(body)


routes = [
    route("/api/system/models", get=list_models),
    route("/api/system/models/{name}", get=get_model, put=put_model, delete=delete_model),
    route("/api/system/models/{name}/usage", get=model_usage),
    route("/api/system/models/{name}/indexes", get=model_indexes),
    route("/api/system/roles", get=list_roles),
    route("/api/system/roles/{name}", get=get_role, put=put_role, delete=delete_role),
    route("/api/system/keys", get=list_keys, post=create_key),
    route("/api/system/keys/{id}", delete=delete_key),
    route("/api/system/locales", get=get_locales, put=put_locales),
    route("/api/openapi.json", get=openapi_json),
]
