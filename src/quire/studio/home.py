"""The studio's front page: every model the user may read, by kind, with
how many items each holds (drafts included) and the way to a new item."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.admin.web import Login
from quire.asgi import route
from quire.content.models import ModelService
from quire.content.service import ContentService, ReadOptions
from quire.http import quire_of, service
from quire.studio.settings_webhooks import disabled_webhooks
from quire.studio.web import render, static_file, studio_page


@studio_page
async def content_home(request: Request, login: Login) -> Response:
    models = [m for m in service(request, ModelService).all() if login.can(f"content/{m.name}/read")]
    content = service(request, ContentService)
    counts = {m.name: content.count(m.name, ReadOptions(drafts=login.can(f"content/{m.name}/update")),
                                    login.identity) for m in models}
    return render(request, login, "studio/home.html", models=models, counts=counts,
                  disabled_webhooks=disabled_webhooks(quire_of(request), login))


routes = [
    route("/studio/content", get=content_home, cors=False),
    route("/studio/static/{name:path}", get=static_file, cors=False),
]
