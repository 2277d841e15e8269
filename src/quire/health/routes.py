"""`GET /api/system/healthcheck`: answers when the database and the file
storage do; `?checks=db,fs` names which (as Cockpit's does)."""

from __future__ import annotations

import anyio
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.errors import BadRequest
from quire.health.service import DEFAULT, HealthService
from quire.http import json_response, service

# Cockpit's caching headers: a cached "ok" would hide a server that went down since
NO_CACHE = {"Cache-Control": "no-store, no-cache, must-revalidate", "Pragma": "no-cache", "Expires": "0"}
MAX_CHECKS = 200  # characters of `checks`


async def healthcheck(request: Request) -> Response:
    checks = _checks(request.query_params.get("checks"))
    await anyio.to_thread.run_sync(service(request, HealthService).check, checks)  # a bucket is a network call
    return json_response({"status": "ok"}, headers={**NO_CACHE, "X-Health-Checks": ", ".join(checks)})


def _checks(text: str | None) -> tuple[str, ...]:
    """The checks asked for, comma-separated; names Quire has nothing to
    check for are taken and ignored, as Cockpit ignores unknown ones."""
    if text is None:
        return DEFAULT
    if len(text) > MAX_CHECKS or not text.isprintable():
        raise BadRequest(f"<checks> must be a comma-separated list of check names (at most {MAX_CHECKS} characters)")
    return tuple(c.strip() for c in text.split(",") if c.strip())


routes = [route("/api/system/healthcheck", get=healthcheck)]
