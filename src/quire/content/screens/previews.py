"""Settings → Preview links (`system/manage`): what preview links are and
one button that ends every link given out so far, for a link shared
further than meant (tokens are not stored, so they end all at once)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.service import ContentService
from quire.http import service
from quire.ui.screens import checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

PAGE = "/studio/settings/previews"
MANAGE = "system/manage"


@studio_page
async def previews_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return render(request, login, "content/settings_previews.html")


@studio_page
async def end_all(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    await service(request, ContentService).end_previews(login.identity)
    return redirect_flash(request, PAGE, "Every preview link given out so far has stopped working.")


routes = [
    route(PAGE, get=previews_page, cors=False),
    route(PAGE + "/end", post=end_all, cors=False),
]
