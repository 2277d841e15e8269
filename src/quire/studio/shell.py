"""The studio's shell: login and logout, the dashboard (of the panels the
modules declare), the session's event stream, the shipped files and the
API playground.

Pages are rendered on the server (Jinja2) and work without a build step;
the one script, `admin.js`, listens to the session's event stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from quire import stopping
from quire.asgi import route
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.errors import Unauthorized
from quire.http import client_address, quire_of, service
from quire.ui.web import (
    Login,
    clear_session_cookie,
    current_login,
    login_csrf,
    manager_page,
    need_login,
    redirect,
    render,
    safe_next,
    same_origin,
    same_token,
    set_login_csrf,
    set_session_cookie,
    small_checked_form,
    small_form,
    static_response,
)

log = logging.getLogger("quire.admin")
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
STREAM_MAX_SECONDS = 30 * 60.0


def _swagger_dir() -> Path:
    import swagger_ui

    return Path(swagger_ui.__file__).parent / "static"


# -- login and logout ---------------------------------------------------------

async def login_page(request: Request) -> Response:
    if await current_login(request) is not None:
        return redirect(safe_next(request.query_params.get("next")))
    token = login_csrf(request)
    response = render(request, "login.html", csrf=token, next=safe_next(request.query_params.get("next")),
                      error=None, user="")
    set_login_csrf(response, request, token)
    return response


async def login_submit(request: Request) -> Response:
    quire = quire_of(request)
    form = await small_form(request)
    token = login_csrf(request)
    user_name = form.get("user", "").strip()
    target = safe_next(form.get("next"))

    def again(message: str, status: int, headers: dict[str, str] | None = None) -> Response:
        response = render(request, "login.html", status, csrf=token, next=target, error=message, user=user_name)
        response.headers.update(headers or {})
        set_login_csrf(response, request, token)
        return response

    if not same_origin(request) or not same_token(request.cookies.get("quire_login_csrf"), form.get("csrf")):
        return again("The login form expired; please try again.", 403)
    limiter = quire.login_limiter
    address = client_address(request)
    counted = (("login-user", user_name.lower()), ("login-address", address))
    # The attempt is counted before the password is checked, in the same
    # transaction as the check: concurrent attempts on several workers
    # cannot all pass at the last free one.
    now = time.time()
    wait = await limiter.hit_all(counted, now)
    if wait is not None:
        log.warning("login throttled for %s", address)
        await service(request, SessionService).alogin_failed(user_name, "password", "throttled")
        return again(f"Too many failed logins. Try again in {wait} seconds.", 429, {"retry-after": str(wait)})
    user = service(request, UserService).verify_password(user_name, form.get("password", ""))
    if user is None:
        log.info("failed admin login from %s", address)
        await service(request, SessionService).alogin_failed(user_name, "password", "wrong user name or password")
        return again("Wrong user name or password.", 401)
    await limiter.clear("login-user", user_name.lower())
    await limiter.give_back("login-address", address, now)  # only failures count
    session_token, _ = await service(request, SessionService).astart(user, address=address, agent=request.headers.get("user-agent", ""))
    response = redirect(target)
    set_session_cookie(response, request, session_token)
    return response


async def logout_page(request: Request) -> Response:
    login = await current_login(request)
    if login is None:
        return redirect("/auth/login")
    return render(request, "logout.html", login=login)


async def logout_submit(request: Request) -> Response:
    login = await current_login(request)
    if login is None:
        return redirect("/auth/login")
    await small_checked_form(request, login)
    if "sso" in login.session and quire_of(request).settings.sso.configured:
        return redirect("/sso/logout")  # ends this session too, then the provider's
    await service(request, SessionService).aend(login.session["_id"])
    response = redirect("/auth/login")
    clear_session_cookie(response, request)
    return response


# -- pages --------------------------------------------------------------------

async def dashboard(request: Request) -> Response:
    login = await need_login(request)
    if isinstance(login, Response):
        return login
    return render(request, "dashboard.html", login=login, panels=quire_of(request).panels(login.identity))


# -- the session's event stream ------------------------------------------------

async def events(request: Request) -> Response:
    """Server-Sent Events for the session of the cookie: `logout` when the
    provider ended it (back-channel logout). The stream stays bound to the
    session it was opened for, so the notice still arrives after the
    session was destroyed."""
    login = await current_login(request)
    if login is None:
        raise Unauthorized("Not logged in")
    sessions = service(request, SessionService)
    session_id = login.session["_id"]

    async def stream() -> AsyncIterator[bytes]:
        yield b"retry: 3000\n: connected\n\n"
        waited, seen = 0.0, set()  # ids of events sent: ids of other workers need not sort in time
        while waited < STREAM_MAX_SECONDS:
            waiting = [e for e in sessions.events_of(session_id) if e["_id"] not in seen]
            for event in waiting:
                seen.add(event["_id"])
                yield b"data: " + orjson.dumps({"type": event["type"], "data": event["data"]}) + b"\n\n"
            if any(e["type"] == "logout" for e in waiting):
                return
            await asyncio.sleep(POLL_SECONDS)
            if stopping.under_way():
                return  # the worker stops: the browser reconnects to one that serves on
            waited += POLL_SECONDS
            if waited % KEEPALIVE_SECONDS < POLL_SECONDS:
                # A session ended without an event (logout in another tab, an
                # administrator): the stream ends; the reconnect gets 401.
                if not sessions.has_stream(session_id):
                    return
                yield b": keep-alive\n\n"
        # Long-lived streams end now and then (the browser reconnects), so a
        # stream whose client vanished unnoticed cannot poll forever.

    return StreamingResponse(stream(), media_type="text/event-stream",
                             headers={"cache-control": "no-store", "x-accel-buffering": "no"})


# -- the API playground ----------------------------------------------------------

@manager_page
async def playground(request: Request, login: Login) -> Response:
    return render(request, "playground.html", login=login)


async def static_file(request: Request) -> Response:
    """The admin's own files and Swagger UI's, from the installed packages."""
    if request.url.path.startswith("/system/api/"):
        return static_response(request.path_params["name"], [_swagger_dir()])
    return static_response(request.path_params["name"])


async def favicon(request: Request) -> Response:
    """Browsers and tools that ask for /favicon.ico (pages name the SVG)."""
    return RedirectResponse("/admin/static/favicon.svg", status_code=301,
                            headers={"cache-control": "public, max-age=86400"})


routes = [
    route("/", get=dashboard, cors=False),
    route("/auth/login", get=login_page, post=login_submit, cors=False),
    route("/auth/logout", get=logout_page, post=logout_submit, cors=False),
    route("/admin/static/{name:path}", get=static_file, cors=False),
    route("/studio/static/{name:path}", get=static_file, cors=False),
    route("/favicon.ico", get=favicon, cors=False),
    route("/system/events", get=events, cors=False),
    route("/system/api", get=playground, cors=False),
    route("/system/api/static/{name}", get=static_file, cors=False),
]
