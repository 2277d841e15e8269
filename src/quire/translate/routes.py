"""`/api/translate/...`: machine translation of what is missing, as tasks
(docs/ai.md#machine-translation)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.request import identify
from quire.errors import Unauthorized
from quire.http import json_response, quire_of, read_json, service
from quire.translate.service import TranslateService


async def _body(request: Request) -> object:
    quire = quire_of(request)
    if not await request.body():
        return {}
    return await read_json(request, quire.max_body, quire.max_depth)


async def translate_item(request: Request) -> Response:
    identity = identify(request)
    params = request.path_params
    task = await service(request, TranslateService).ask("item", params["model"], params.get("id"),
                                                        await _body(request), identity)
    return json_response(task, 202)


async def translate_model(request: Request) -> Response:
    identity = identify(request)
    task = await service(request, TranslateService).ask("model", request.path_params["model"], None,
                                                        await _body(request), identity)
    return json_response(task, 202)


async def translate_project(request: Request) -> Response:
    identity = identify(request)
    task = await service(request, TranslateService).ask("project", request.path_params["name"], None,
                                                        await _body(request), identity)
    return json_response(task, 202)


async def translate_pages(request: Request) -> Response:
    identity = identify(request)
    task = await service(request, TranslateService).ask("pages", "pages", None, await _body(request), identity)
    return json_response(task, 202)


async def get_task(request: Request) -> Response:
    """A task by its id (an unguessable one, answered to who asked for it):
    for any key or user, never anonymously."""
    if identify(request).anonymous:
        raise Unauthorized("Authentication failed")
    return json_response(service(request, TranslateService).task(request.path_params["id"]))


async def project_marks(request: Request) -> Response:
    identity = identify(request)
    translate = service(request, TranslateService)
    if request.method == "GET":
        return json_response(translate.project_marks(request.path_params["name"], identity))
    return json_response(await translate.reviewed(request.path_params["name"], await _body(request), identity))


routes = [
    route("/api/translate/item/{model}", post=translate_item),
    route("/api/translate/item/{model}/{id}", post=translate_item),
    route("/api/translate/model/{model}", post=translate_model),
    route("/api/translate/project/{name}", post=translate_project),
    route("/api/translate/pages", post=translate_pages),
    route("/api/translate/project/{name}/unreviewed", get=project_marks, post=project_marks),
    route("/api/translate/tasks/{id}", get=get_task),
]
