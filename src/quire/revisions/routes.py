"""HTTP routes of revisions (`/api/revisions/...`): the history of an item,
a page or the pages' settings, one revision, two compared, and a restore.
The same four routes for each kind of document (`Target`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import Route, route
from quire.auth.permissions import content as perm
from quire.auth.request import identify
from quire.content.models import ModelService
from quire.errors import BadRequest, NotFound
from quire.http import int_param, json_response, service
from quire.ids import is_id
from quire.revisions.service import PAGES, SETTINGS, RevisionService, check_number

MAX_LIMIT = 200
MANAGE_PAGES = "pages/manage"


@dataclass(frozen=True)
class Target:
    """The document a route names: its resource and id, and how to restore it."""

    resource: str
    item: str
    restore: Callable[[int], Awaitable[dict[str, Any]]]


def content_target(request: Request) -> Target:
    """An item: the model must exist and the caller may update its items
    (a history shows drafts and what was removed)."""
    model, item_id = request.path_params["model"], request.path_params["id"]
    identity = identify(request)
    service(request, ModelService).get(model)  # 404 for a model that does not exist
    identity.require(perm(model, "update"))
    if not is_id(item_id):
        raise NotFound("Item not found")
    revisions = service(request, RevisionService)
    return Target(f"content/{model}", item_id, lambda n: revisions.restore_item(model, item_id, n, identity))


def page_target(request: Request) -> Target:
    page_id = request.path_params["id"]
    identity = identify(request)
    identity.require(MANAGE_PAGES)
    if not is_id(page_id):
        raise NotFound("Page not found")
    revisions = service(request, RevisionService)
    return Target(PAGES, page_id, lambda n: revisions.restore_page(page_id, n, identity))


def settings_target(request: Request) -> Target:
    identity = identify(request)
    identity.require(MANAGE_PAGES)
    revisions = service(request, RevisionService)
    return Target(SETTINGS, "settings", lambda n: revisions.restore_settings(n, identity))


def routes_for(base: str, target_of: Callable[[Request], Target]) -> list[Route]:
    async def history(request: Request) -> Response:
        target = target_of(request)
        limit = int_param(request, "limit")
        if limit is not None and not 1 <= limit <= MAX_LIMIT:
            raise BadRequest(f"limit must be between 1 and {MAX_LIMIT}", fields=["limit"])
        page, total = service(request, RevisionService).history(target.resource, target.item, limit or 50,
                                                                int_param(request, "skip") or 0)
        return json_response({"data": page, "total": total})

    async def revision(request: Request) -> Response:
        target = target_of(request)
        n = check_number(request.path_params["n"])
        return json_response(service(request, RevisionService).get(target.resource, target.item, n))

    async def compare(request: Request) -> Response:
        target = target_of(request)
        revisions = service(request, RevisionService)
        query = request.query_params
        last = revisions.last(target.resource, target.item)
        if last is None:
            raise NotFound(f"{target.item} has no revisions")
        b = check_number(query.get("to", ""), "to") if "to" in query else last["n"]
        a = check_number(query.get("from", ""), "from") if "from" in query else max(b - 1, 0)
        return json_response({"from": a, "to": b, "changes": revisions.compare(target.resource, target.item, a, b)})

    async def restore(request: Request) -> Response:
        target = target_of(request)
        return json_response(await target.restore(check_number(request.path_params["n"])))

    return [route(base, get=history), route(base + "/diff", get=compare), route(base + "/{n}", get=revision),
            route(base + "/{n}/restore", post=restore)]


routes = [
    # the settings before pages/{id}: "settings" is no page id
    *routes_for("/api/revisions/pages/settings", settings_target),
    *routes_for("/api/revisions/pages/{id}", page_target),
    *routes_for("/api/revisions/content/{model}/{id}", content_target),
]
