"""HTTP routes of webhooks (`/api/webhooks...`), all needing `webhooks/manage`."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.errors import BadRequest
from quire.http import int_param, json_response, quire_of, read_json, service
from quire.webhooks.service import MANAGE, WebhookService, public

MAX_LIMIT = 200


def _manager(request: Request) -> WebhookService:
    identify(request).require(MANAGE)
    return service(request, WebhookService)


async def _body(request: Request) -> Any:
    quire = quire_of(request)
    return await read_json(request, quire.max_body, quire.max_depth)


async def list_webhooks(request: Request) -> Response:
    return json_response(_manager(request).all())


async def create(request: Request) -> Response:
    webhooks = _manager(request)
    return json_response(await webhooks.create(await _body(request), identify(request)))


async def one(request: Request) -> Response:
    webhooks = _manager(request)
    hook_id = request.path_params["id"]
    if request.method == "GET":
        return json_response(public(webhooks.get(hook_id)))
    if request.method == "DELETE":
        await webhooks.delete(hook_id, identify(request))
        return json_response({"success": True})
    body = await _body(request)  # a bad body is a 400 (or 413) whatever the id
    return json_response(await webhooks.update(hook_id, body, identify(request)))


async def rotate(request: Request) -> Response:
    return json_response(await _manager(request).rotate(request.path_params["id"], identify(request)))


async def enable(request: Request) -> Response:
    return json_response(await _manager(request).enable(request.path_params["id"], identify(request)))


async def deliveries(request: Request) -> Response:
    webhooks = _manager(request)
    limit = int_param(request, "limit")
    if limit is not None and not 1 <= limit <= MAX_LIMIT:
        raise BadRequest(f"limit must be between 1 and {MAX_LIMIT}", fields=["limit"])
    page, total = webhooks.delivery_log(request.path_params["id"], limit or 50, int_param(request, "skip") or 0)
    return json_response({"data": page, "total": total})


async def redeliver(request: Request) -> Response:
    webhooks = _manager(request)
    return json_response(await webhooks.redeliver(request.path_params["id"], request.path_params["delivery"]))


routes = [
    route("/api/webhooks", get=list_webhooks, post=create),
    route("/api/webhooks/{id}", get=one, put=one, delete=one),
    route("/api/webhooks/{id}/rotate", post=rotate),
    route("/api/webhooks/{id}/enable", post=enable),
    route("/api/webhooks/{id}/deliveries", get=deliveries),
    route("/api/webhooks/{id}/deliveries/{delivery}/redeliver", post=redeliver),
]
