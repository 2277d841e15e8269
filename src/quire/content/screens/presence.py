"""Who else has an item open, and its edit lock (ui/presence.py), for the
item editor (editor.js) and for API clients (`GET /api/content/lock/...`)."""

from __future__ import annotations

import re

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.models import ModelService
from quire.errors import BadRequest
from quire.http import json_response, service
from quire.ui.presence import PresenceService
from quire.ui.screens import checked_form, need, studio_page
from quire.ui.web import Login

RESOURCE = re.compile(r"^content/([A-Za-z][A-Za-z0-9_]{0,63})(?:/([0-9a-f]{24}))?$")


def resource_of(model: str, item_id: str | None) -> str:
    return f"content/{model}" if item_id is None else f"content/{model}/{item_id}"


@studio_page
async def presence(request: Request, login: Login) -> Response:
    """`action` join (also the heartbeat), take or leave, for `resource`;
    the state after it: who holds the lock, who else is there."""
    form = await checked_form(request, login)
    resource = form.get("resource")
    found = RESOURCE.match(resource)
    if found is None:
        raise BadRequest("resource must be content/<model>/<id> or content/<model>")
    service(request, ModelService).get(found.group(1))  # 404 for a model that is not there
    need(login, f"content/{found.group(1)}/read")
    people = service(request, PresenceService)
    action = form.get("action", "join")
    session = login.session["_id"]
    if action == "leave":
        await people.leave(resource, session)
        return json_response({"left": True})
    if action == "take":
        need(login, f"content/{found.group(1)}/update")
        return json_response(await people.take(resource, session, login.user))
    if action != "join":
        raise BadRequest("action must be join, take or leave")
    return json_response(await people.join(resource, session, login.user))


routes = [route("/studio/presence", post=presence, cors=False)]
