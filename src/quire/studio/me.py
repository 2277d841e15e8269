"""Your settings: what the studio keeps for one user, chosen by that user.
For now the time zone that every time of the studio is shown and typed in
(`ui/zones.py`); the password and single sign-on stay the administrator's
(Users) and the identity provider's."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.http import service
from quire.ui import zones
from quire.ui.prefs import PrefsService
from quire.ui.screens import checked_form, redirect_flash, render, studio_page
from quire.ui.web import Login


@studio_page
async def me_page(request: Request, login: Login) -> Response:
    return _page(request, login)


def _page(request: Request, login: Login, status: int = 200, error: str | None = None,
          typed: str | None = None) -> Response:
    chosen = zones.chosen(request, login.user["_id"])
    browser = zones.browser_zone(request)
    shown = zones.zone_name(request, login.user["_id"])
    return render(request, login, "studio/me.html", status, zone_names=zones.zone_names(),
                  chosen=typed if typed is not None else chosen or "", browser=browser,
                  shown=zones.label(shown), error=error)


@studio_page
async def save_me(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    zone = form.get("timezone").strip()
    if zone and not zones.known(zone):
        return _page(request, login, 400, f"“{zone[:60]}” is not a time zone: choose one from the list", zone[:60])
    await service(request, PrefsService).aset(login.user["_id"], zones.PREF_KEY, zone or None)
    now = zones.label(zone or zones.browser_zone(request) or "UTC")
    return redirect_flash(request, "/studio/me", f"Saved: times are shown and typed in {now}.")


routes = [route("/studio/me", get=me_page, post=save_me, cors=False)]
