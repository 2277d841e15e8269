"""HTTP routes of the translations API (`/api/l10n/...`)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.errors import BadRequest
from quire.http import json_response, quire_of, read_body, read_json, service
from quire.l10n.formats import FORMATS
from quire.l10n.service import MANAGE, L10nService


def _nested(request: Request) -> bool:
    raw = request.query_params.get("nested")
    if raw is None or raw == "":
        return False
    flag = raw.lower()
    if flag in ("1", "true"):
        return True
    if flag in ("0", "false"):
        return False
    raise BadRequest("<nested> must be 1, true, 0 or false")


def _format(request: Request) -> str:
    fmt = request.query_params.get("format") or "json"
    if fmt not in FORMATS:
        raise BadRequest("<format> must be json, po or i18next")
    return fmt


async def list_projects(request: Request) -> Response:
    identity = identify(request)
    return json_response(service(request, L10nService).list_projects(identity))


async def get_project(request: Request) -> Response:
    identity = identify(request)
    nested = _nested(request)
    return json_response(service(request, L10nService).full(request.path_params["name"], identity, nested))


async def get_locale(request: Request) -> Response:
    identity = identify(request)
    nested = _nested(request)
    params = request.path_params
    return json_response(service(request, L10nService).one_locale(params["name"], params["locale"], identity, nested))


async def put_project(request: Request) -> Response:
    identity = identify(request)
    identity.require(MANAGE)  # before reading the body: a stranger's upload is not read
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, L10nService).put(request.path_params["name"], body, identity))


async def patch_project(request: Request) -> Response:
    identity = identify(request)
    identity.require(MANAGE)
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    return json_response(await service(request, L10nService).patch(request.path_params["name"], body, identity))


async def delete_project(request: Request) -> Response:
    identity = identify(request)
    await service(request, L10nService).delete(request.path_params["name"], identity)
    return json_response({"success": True})


async def export_project(request: Request) -> Response:
    identity = identify(request)
    fmt = _format(request)
    locale = request.query_params.get("locale") or None
    found = service(request, L10nService).export(request.path_params["name"], fmt, locale, identity)
    return Response(found.body, media_type=found.media_type, headers={
        "Content-Disposition": f'attachment; filename="{found.filename}"',
    })


async def import_project(request: Request) -> Response:
    identity = identify(request)
    identity.require(MANAGE)
    fmt = _format(request)
    locale = request.query_params.get("locale") or None
    quire = quire_of(request)
    raw = await read_body(request, quire.max_body)
    project = await service(request, L10nService).import_file(request.path_params["name"], fmt, raw, locale, identity)
    return json_response(project)


# `export` and `import` come before `{locale}`: the first route that matches
# wins, and neither word is a locale code, so no project locale is hidden.
routes = [
    route("/api/l10n/projects", get=list_projects),
    route("/api/l10n/project/{name}/export", get=export_project),
    route("/api/l10n/project/{name}/import", post=import_project),
    route("/api/l10n/project/{name}", get=get_project, put=put_project, patch=patch_project,
          delete=delete_project),
    route("/api/l10n/project/{name}/{locale}", get=get_locale),
]
