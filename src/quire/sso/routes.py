"""`/sso/authenticate`, `/sso/callback` and `/sso/logout` (GET: log out here
and at the provider; POST: the provider's back-channel logout)."""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.sessions import SessionService
from quire.errors import ApiError, NotFound
from quire.http import client_address, json_response, quire_of, read_small_form, service
from quire.sso.provider import ProviderError
from quire.sso.service import LoginFailed, SsoService
from quire.sso.tokens import TokenError
from quire.ui.web import (
    SESSION_COOKIE,
    clear_session_cookie,
    redirect,
    render,
    safe_next,
    secure_cookies,
    set_session_cookie,
)

log = logging.getLogger("quire.sso")
BINDING_COOKIE = "quire_sso"
MAX_LOGOUT_BODY = 64 * 1024


def _sso(request: Request) -> SsoService:
    sso = service(request, SsoService)
    if not sso.configured:
        raise NotFound("Missing configuration for sso")
    return sso


def _base(request: Request) -> str:
    public = quire_of(request).public_url
    return public.rstrip("/") if public else str(request.base_url).rstrip("/")


def _redirect_uri(request: Request, sso: SsoService) -> str:
    return sso.settings.redirect_uri or _base(request) + "/sso/callback"


def _failed(request: Request, message: str) -> Response:
    return render(request, "message.html", 403, login=None, title="Login failed", message=message,
                  back="/auth/login", back_text="Back to the login page")


async def authenticate(request: Request) -> Response:
    sso = _sso(request)
    try:
        started = await sso.start(_redirect_uri(request, sso), safe_next(request.query_params.get("next")))
    except ProviderError as exc:
        log.warning("sso login not started: %s", exc)
        return _failed(request, "The identity provider cannot be reached. Try again later.")
    response = redirect(started.url)
    response.set_cookie(BINDING_COOKIE, started.binding, max_age=600, httponly=True, samesite="lax",
                        path="/sso/", secure=secure_cookies(request))
    return response


async def callback(request: Request) -> Response:
    sso = _sso(request)
    params = {k: v for k, v in request.query_params.items()}
    try:
        done = await sso.finish(params, request.cookies.get(BINDING_COOKIE))
    except (LoginFailed, ProviderError) as exc:
        log.warning("sso login failed: %s", exc)
        # no user name is known yet: the reason is one of our own messages
        await service(request, SessionService).alogin_failed("", "sso", str(exc)[:200])
        response = _failed(request, str(exc))
        response.delete_cookie(BINDING_COOKIE, path="/sso/")
        return response
    token, _ = await service(request, SessionService).astart(done.user, sso=done.sso, id_token=done.id_token,
                                           address=client_address(request),
                                           agent=request.headers.get("user-agent", ""))
    log.info("sso login of user %s", done.user["_id"])
    response = redirect(done.next)
    set_session_cookie(response, request, token)
    response.delete_cookie(BINDING_COOKIE, path="/sso/")
    return response


async def logout(request: Request) -> Response:
    """Local logout, then RP-initiated logout at the provider when it has
    an end-session endpoint (back to the login page afterwards)."""
    sso = _sso(request)
    session = await service(request, SessionService).aend_token(request.cookies.get(SESSION_COOKIE))
    target = None
    if session is not None and "sso" in session:
        target = await sso.end_session_url(session.get("id_token"), _base(request) + "/auth/login")
    response = redirect(target or "/auth/login")
    clear_session_cookie(response, request)
    return response


async def backchannel(request: Request) -> Response:
    """The provider's back-channel logout: a form field `logout_token`."""
    sso = _sso(request)
    try:
        form = await read_small_form(request, MAX_LOGOUT_BODY, 10)
        token = form.get("logout_token")
        if not isinstance(token, str) or not token:
            raise TokenError("logout_token is required")
        ended = await sso.backchannel_logout(token)
    except ProviderError as exc:
        log.warning("sso back-channel logout refused from %s: provider: %s", client_address(request), exc)
        return json_response({"error": "The identity provider's keys could not be fetched"}, 400,
                             {"cache-control": "no-store"})
    except (TokenError, ApiError, ValueError) as exc:
        log.warning("sso back-channel logout refused from %s: %s", client_address(request), exc)
        message = str(exc) if isinstance(exc, TokenError) else "The request must be a form with logout_token"
        return json_response({"error": message}, 400, {"cache-control": "no-store"})
    log.info("sso back-channel logout accepted: %d session(s) ended", len(ended))
    return Response(status_code=200, headers={"cache-control": "no-store"})


routes = [
    route("/sso/authenticate", get=authenticate, cors=False),
    route("/sso/callback", get=callback, cors=False),
    route("/sso/logout", get=logout, post=backchannel, cors=False),
]
