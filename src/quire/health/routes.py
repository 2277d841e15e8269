"""`GET /api/system/healthcheck`: answers when the database does."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.health.service import HealthService
from quire.http import json_response, service


async def healthcheck(request: Request) -> Response:
    service(request, HealthService).check()
    # a cached "ok" would hide a server that went down since
    return json_response({"status": "ok"}, headers={"Cache-Control": "no-store"})


routes = [route("/api/system/healthcheck", get=healthcheck)]
