"""Accepting or dismissing an asset's suggested alt text and tags
(docs/ai.md#alt-text-and-tags): `POST /api/assets/suggestion/{id}` and the
asset's page in the studio."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.http import json_response, quire_of, read_json, service
from quire.ui.screens import checked_form, redirect_flash, studio_page
from quire.ui.web import Login
from quire.vision.service import VisionService


async def decide(request: Request) -> Response:
    """`{"accept": true}`: the suggestion becomes the asset's alt text (where
    it has none) and tags; `false` dismisses it."""
    identity = identify(request)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    accept = body.get("accept") if isinstance(body, dict) else None
    return json_response(await service(request, VisionService).decide(request.path_params["id"], accept, identity))


@studio_page
async def decide_page(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    asset_id = request.path_params["id"]
    accept = form.get("accept") == "1"
    await service(request, VisionService).decide(asset_id, accept, login.identity)
    said = "Accepted the suggested alt text and tags." if accept else "Dismissed the suggestion."
    return redirect_flash(request, f"/studio/assets/{asset_id}", said)


routes = [
    route("/api/assets/suggestion/{id}", post=decide),
    route("/studio/assets/{id}/suggestion", post=decide_page, cors=False),
]
