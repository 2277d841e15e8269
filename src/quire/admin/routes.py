"""The admin shell: login and logout, the dashboard, API keys, users and
sessions, the session's event stream, and the API playground.

Pages are rendered on the server (Jinja2) and work without a build step;
the one script, `admin.js`, listens to the session's event stream.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response, StreamingResponse

from quire.admin.accounts import user_action
from quire.admin.web import (
    HERE,
    Login,
    clear_session_cookie,
    current_login,
    login_csrf,
    redirect,
    render,
    safe_next,
    same_origin,
    same_token,
    set_login_csrf,
    set_session_cookie,
    static_response,
)
from quire.asgi import route
from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.content.models import ModelService
from quire.content.service import ContentService, ReadOptions
from quire.errors import ApiError, Forbidden, Unauthorized
from quire.http import client_address, quire_of, read_small_form, service

log = logging.getLogger("quire.admin")
STATIC = HERE / "static"
POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
STREAM_MAX_SECONDS = 30 * 60.0
MAX_FORM_BYTES = 64 * 1024
MAX_FORM_FIELDS = 50


def _swagger_dir() -> Path:
    import swagger_ui

    return Path(swagger_ui.__file__).parent / "static"


async def _form(request: Request) -> dict[str, str]:
    return await read_small_form(request, MAX_FORM_BYTES, MAX_FORM_FIELDS)


async def _checked_form(request: Request, login: Login) -> dict[str, str]:
    """The fields of a state-changing form whose CSRF token is the session's."""
    form = await _form(request)
    if not same_origin(request) or not same_token(login.session["csrf"], form.get("csrf")):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
    return form


def _manager_page(handler: Callable[[Request, Login], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A page for users whose role may manage the system (system/manage)."""

    async def page(request: Request) -> Response:
        login = await _need_login(request)
        if isinstance(login, Response):
            return login
        if not login.manager:
            return _forbidden(request, login)
        return await handler(request, login)

    return page


async def _need_login(request: Request) -> Login | Response:
    login = await current_login(request)
    if login is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return redirect(f"/auth/login?next={quote(target, safe='/')}" if target != "/" else "/auth/login")
    return login


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
    form = await _form(request)
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
    await _checked_form(request, login)
    if "sso" in login.session and quire_of(request).settings.sso.configured:
        return redirect("/sso/logout")  # ends this session too, then the provider's
    await service(request, SessionService).aend(login.session["_id"])
    response = redirect("/auth/login")
    clear_session_cookie(response, request)
    return response


# -- pages --------------------------------------------------------------------

async def dashboard(request: Request) -> Response:
    login = await _need_login(request)
    if isinstance(login, Response):
        return login
    models = [m for m in service(request, ModelService).all() if login.can(f"content/{m.name}/read")]
    recent: list[dict[str, Any]] = []
    for model in models:
        if model.type == "singleton":
            continue
        page = service(request, ContentService).list_page(model.name, ReadOptions(sort={"_modified": -1}, limit=5), login.identity)
        for row in page.rows:
            item = orjson.loads(row)
            recent.append({"model": model.name, "_id": item.get("_id"), "_modified": item.get("_modified", 0),
                           "title": _title(item)})
    recent.sort(key=lambda r: r["_modified"], reverse=True)
    return render(request, "dashboard.html", login=login, models=models, recent=recent[:10])


def _title(item: dict[str, Any]) -> str:
    for key in ("title", "name", "label", "slug"):
        if isinstance(item.get(key), str) and item[key]:
            return str(item[key])
    return str(item.get("_id", ""))


@_manager_page
async def keys_page(request: Request, login: Login) -> Response:
    return render(request, "keys.html", login=login, keys=service(request, AuthService).list_keys(),
                  roles=[r["name"] for r in service(request, AuthService).list_roles()], created=None, error=None)


@_manager_page
async def keys_submit(request: Request, login: Login) -> Response:
    form = await _checked_form(request, login)
    created, error = None, None
    try:
        if form.get("action") == "revoke":
            await service(request, AuthService).adelete_key(form.get("id", ""), login.identity)
        else:
            created = await service(request, AuthService).acreate_key(form.get("name", ""), form.get("role", ""),
                                                                      login.identity)
    except ApiError as exc:
        error = exc.message
    status = 400 if error else 200
    return render(request, "keys.html", status, login=login, keys=service(request, AuthService).list_keys(),
                  roles=[r["name"] for r in service(request, AuthService).list_roles()], created=created, error=error)


@_manager_page
async def users_page(request: Request, login: Login) -> Response:
    return _users(request, login, None, None)


NEW_USER_FIELDS = ("user", "email", "name", "role", "password")


def _users(request: Request, login: Login, error: str | None, done: str | None, status: int = 200,
           typed: dict[str, str] | None = None, field_errors: dict[str, str] | None = None) -> Response:
    names = {u["_id"]: u["user"] for u in service(request, UserService).list_all()}
    sessions = [{**s, "user_name": names.get(s["user"], "?"), "current": s["_id"] == login.session["_id"]}
                for s in service(request, SessionService).list_all()]
    return render(request, "users.html", status, login=login, users=service(request, UserService).list_all(), sessions=sessions,
                  roles=service(request, AuthService).list_roles(), error=error, done=done,
                  typed=typed or {}, field_errors=field_errors or {})


@_manager_page
async def users_submit(request: Request, login: Login) -> Response:
    form = await _checked_form(request, login)
    quire = quire_of(request)
    action = form.get("action", "")
    try:
        done = await user_action(quire, login, action, form)
    except ApiError as exc:
        if action != "create":
            return _users(request, login, exc.message, None, 400)
        # A refused new user: the reason next to the field it names (at the
        # top when it names none of the form's), and what was typed kept.
        named = [f for f in exc.extra.get("fields", []) if f in NEW_USER_FIELDS]
        typed = {k: form.get(k, "").strip() for k in NEW_USER_FIELDS if k != "password"}
        return _users(request, login, exc.message, None, 400, typed, {f: exc.message for f in named[:1]})
    return _users(request, login, None, done)


def _forbidden(request: Request, login: Login) -> Response:
    return render(request, "message.html", 403, login=login, title="Not allowed",
                  message="Your role does not allow this page.")


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

@_manager_page
async def playground(request: Request, login: Login) -> Response:
    return render(request, "playground.html", login=login)


async def static_file(request: Request) -> Response:
    """The admin's own files and Swagger UI's, from the installed packages."""
    folder = _swagger_dir() if request.url.path.startswith("/system/api/") else STATIC
    return static_response(folder, request.path_params["name"])


async def favicon(request: Request) -> Response:
    """Browsers and tools that ask for /favicon.ico (pages name the SVG)."""
    return RedirectResponse("/admin/static/favicon.svg", status_code=301,
                            headers={"cache-control": "public, max-age=86400"})


routes = [
    route("/", get=dashboard, cors=False),
    route("/auth/login", get=login_page, post=login_submit, cors=False),
    route("/auth/logout", get=logout_page, post=logout_submit, cors=False),
    route("/admin/keys", get=keys_page, post=keys_submit, cors=False),
    route("/admin/users", get=users_page, post=users_submit, cors=False),
    route("/admin/static/{name:path}", get=static_file, cors=False),
    route("/favicon.ico", get=favicon, cors=False),
    route("/system/events", get=events, cors=False),
    route("/system/api", get=playground, cors=False),
    route("/system/api/static/{name}", get=static_file, cors=False),
]
