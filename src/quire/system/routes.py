"""HTTP routes of the management API (`/api/system/...`, role `admin` or
permission `system/manage`) and of the OpenAPI document (public)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire import metrics, openapi, schema
from quire.asgi import route
from quire.auth.request import identify, require_manage
from quire.auth.service import AuthService
from quire.content import schemas
from quire.content.library import ComponentLibrary
from quire.content.locales import LocaleService
from quire.content.models import ModelService, parse_change
from quire.errors import BadRequest, Unauthorized
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


async def list_components(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, ComponentLibrary).all())


async def get_component(request: Request) -> Response:
    require_manage(request)
    return json_response(service(request, ComponentLibrary).get(request.path_params["name"]))


async def put_component(request: Request) -> Response:
    identity = require_manage(request)
    library = service(request, ComponentLibrary)
    return json_response(await library.asave(request.path_params["name"], await _body(request), identity))


async def delete_component(request: Request) -> Response:
    identity = require_manage(request)
    await service(request, ComponentLibrary).aremove(request.path_params["name"], identity)
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


async def change_key(request: Request) -> Response:
    """`{"mcp_publish": true|false}`: whether assistants may publish with the
    key (docs/ai.md); admins only."""
    identity = require_manage(request)
    body = await _body(request)
    if not isinstance(body, dict) or set(body) != {"mcp_publish"}:
        raise BadRequest("The body is {\"mcp_publish\": true|false}", fields=["mcp_publish"])
    changed = await service(request, AuthService).aset_assistants_publish(request.path_params["id"],
                                                                          body["mcp_publish"], identity)
    return json_response(changed)


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


async def get_schema(request: Request) -> Response:
    """The site's schema snapshot (docs/moving.md#schema)."""
    require_manage(request)
    return Response(schema.canonical(schema.snapshot(quire_of(request))), media_type="application/json")


async def diff_schema(request: Request) -> Response:
    """The plan that makes the site's schema the one sent."""
    require_manage(request)
    plan = schema.diff(quire_of(request), await _body(request))
    return json_response({**plan.to_json(), "summary": plan.describe().splitlines()})


async def apply_schema(request: Request) -> Response:
    """A plan of `diff_schema` made: 412 when the site changed since,
    400 when a change loses data and `allowDataLoss=1` is not sent."""
    identity = require_manage(request)
    allow = request.query_params.get("allowDataLoss", "") in ("1", "true")
    plan = schema.read_plan(await _body(request))
    done = await schema.apply(quire_of(request), plan, identity, allow_data_loss=allow)
    return json_response({"applied": [asdict(step) for step in done.steps],
                          "schema": schema.digest(schema.snapshot(quire_of(request)))})


async def openapi_json(request: Request) -> Response:
    """The document, with the typed schemas and read paths of the models
    the caller's role may read (content/schemas.py). The routes' part never
    changes while the process runs; the whole is encoded once per role and
    state of the models (about 100 KB, public, so cheap to be asked for)."""
    quire = quire_of(request)
    try:
        identity = identify(request)
    except Unauthorized:  # the document is public: a key it does not know reads the public role's
        identity = quire.auth.identify(None)
    kept = quire.cache.memo("openapi", 1)
    base = kept.get("document")
    if base is None:
        base = openapi.document(quire.modules)
        base["paths"].update(custom.paths_of(quire))  # the site's hooks' endpoints
        kept.put("document", base)
    holder = quire.cache.memo("openapi.per_role", 1)
    per_role = holder.get("value")
    if per_role is None:  # the encoded documents by role: a new dict on any change of models or roles
        per_role = quire.cache.system(dict)
        holder.put("value", per_role)
    bodies: dict[Any, bytes] = per_role.get()
    key = (identity.role, identity.permissions)
    body = bodies.get(key)
    if body is None:
        models = service(request, ModelService).all()
        document = {**base, "paths": {**base["paths"], **schemas.paths(models, identity, base["paths"])},
                    "components": {**base["components"],
                                   "schemas": {**base["components"]["schemas"],
                                               **schemas.components(models, identity)}}}
        body = bodies[key] = orjson.dumps(document)
    return raw_json_response(body)


async def get_metrics(request: Request) -> Response:
    """Prometheus' text format (docs/operations.md): a key with
    `system/metrics`, or none with `[server] metrics_open`."""
    quire = quire_of(request)
    if not quire.settings.server.metrics_open:
        identify(request).require("system/metrics")

    def gauges() -> Iterable[Any]:
        counts = quire.jobs.counts()
        yield ("quire_jobs", "Jobs by kind and state (pending, running, failed)", ["kind", "state"],
               [([kind, state], float(n)) for (kind, state), n in counts.items()])
        for module in quire.modules:
            if module.gauges is not None:
                yield from module.gauges(quire)

    return Response(metrics.scrape(metrics.Sampled(gauges)), media_type=metrics.CONTENT_TYPE,
                    headers={"Cache-Control": "no-store"})


routes = [
    route("/metrics", get=get_metrics),
    route("/api/system/models", get=list_models),
    route("/api/system/models/{name}", get=get_model, put=put_model, delete=delete_model),
    route("/api/system/models/{name}/usage", get=model_usage),
    route("/api/system/models/{name}/indexes", get=model_indexes),
    route("/api/system/components", get=list_components),
    route("/api/system/components/{name}", get=get_component, put=put_component, delete=delete_component),
    route("/api/system/roles", get=list_roles),
    route("/api/system/roles/{name}", get=get_role, put=put_role, delete=delete_role),
    route("/api/system/keys", get=list_keys, post=create_key),
    route("/api/system/keys/{id}", patch=change_key, delete=delete_key),
    route("/api/system/locales", get=get_locales, put=put_locales),
    route("/api/system/schema", get=get_schema),
    route("/api/system/schema/diff", post=diff_schema),
    route("/api/system/schema/apply", post=apply_schema),
    route("/api/openapi.json", get=openapi_json),
]
