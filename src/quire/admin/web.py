"""What every admin page needs: templates, the session cookie, CSRF checks,
security headers and safe redirects."""

from __future__ import annotations

import functools
import hmac
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from quire.auth.service import AuthService, Identity
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.http import json_response, quire_of, service
from quire.modules import Services

SESSION_COOKIE = "quire_session"
LOGIN_CSRF_COOKIE = "quire_login_csrf"
HERE = Path(__file__).parent
_templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(default=True))

# The admin pages load scripts and styles from this server only.
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'")
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


@dataclass
class Login:
    """The logged-in user of a request."""

    session: dict[str, Any]
    user: dict[str, Any]
    identity: Identity

    def can(self, permission: str) -> bool:
        return self.identity.can(permission)

    @property
    def manager(self) -> bool:
        return self.identity.can("system/manage")


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return render_in(_templates, request, template, status, **context)


def templates_with(folder: Path) -> Environment:
    """A template environment for a module above this one (the studio): its
    own folder first, then the admin's, so its pages extend `base.html`."""
    return Environment(loader=ChoiceLoader([FileSystemLoader(folder), _templates.loader]),  # type: ignore[list-item]
                       autoescape=select_autoescape(default=True))


def render_in(env: Environment, request: Request, template: str, status: int = 200,
              **context: Any) -> HTMLResponse:
    # the sign-on button: from the settings (the sso module sits above this one)
    quire = quire_of(request)
    sso = quire.settings.sso
    login = context.get("login")
    # called by base.html only: htmx fragments (a saved cell, a progress bar)
    # never pay for the sidebar's badges
    def nav() -> list[tuple[str, list[dict[str, Any]]]]:
        return sidebar(quire, login, request.url.path) if isinstance(login, Login) else []

    html = env.get_template(template).render(
        request=request, sso_enabled=sso.configured, login_text=sso.login_text, nav=nav,
        find_enabled=quire.find_path is not None, **context,
    )
    return HTMLResponse(html, status, headers=SECURITY_HEADERS)


def sidebar(quire: Services, login: Login, path: str) -> list[tuple[str, list[dict[str, Any]]]]:
    """The sidebar's links the user may follow, by group in the order the
    modules declare them; the link whose address is the longest start of
    `path` is the current one."""
    shown = [e for e in quire.nav if e.allowed(login.identity)]
    current = max((e.href for e in shown if path == e.href or (e.href != "/" and path.startswith(e.href + "/"))),
                  key=len, default=None)
    groups: dict[str, list[dict[str, Any]]] = {}
    for e in shown:
        badge = e.badge(quire, login) if e.badge is not None else 0
        groups.setdefault(e.group, []).append({"label": e.label, "href": e.href, "badge": badge,
                                                "current": e.href == current})
    return list(groups.items())


def static_response(folder: Path, name: str) -> Response:
    """A file of `folder` (or of a subfolder of it, such as `vendor/`) that
    the package ships: scripts, styles, images and licence texts. Anything
    else, `..` included, is a 404."""
    if name not in _shipped(folder):
        return json_response({"error": "Not found"}, 404)
    return FileResponse(folder / name, headers={"cache-control": "public, max-age=3600",
                                                "x-content-type-options": "nosniff"})


@functools.cache
def _shipped(folder: Path) -> frozenset[str]:
    kinds = (".js", ".css", ".png", ".svg", ".txt", ".LICENSE")
    return frozenset(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                     if p.is_file() and (p.suffix in kinds or p.name.endswith(".LICENSE")))


async def current_login(request: Request) -> Login | None:
    """The live session of the request's cookie and its active user. Its
    writes (ending an expired session or one of a deactivated user) wait
    for the write lock off the event loop."""
    session = await service(request, SessionService).alookup(request.cookies.get(SESSION_COOKIE))
    if session is None:
        return None
    user = service(request, UserService).get(session["user"])
    if user is None or not user.get("active", True):
        await service(request, SessionService).aend(session["_id"], "deactivated")
        return None
    return Login(session, user, service(request, AuthService).role_identity(user["role"], user["_id"], user["user"]))


def secure_cookies(request: Request) -> bool:
    quire = quire_of(request)
    mode = quire.settings.admin.secure_cookies
    if mode != "auto":
        return bool(mode == "always")
    return quire.public_url.startswith("https://") or request.url.scheme == "https"


def set_session_cookie(response: Response, request: Request, token: str) -> None:
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="lax", path="/",
                        secure=secure_cookies(request))


def clear_session_cookie(response: Response, request: Request) -> None:
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax",
                           secure=secure_cookies(request))


def login_csrf(request: Request) -> str:
    """The login form's token: double-submitted (cookie and field), as no
    session exists yet to hold it."""
    return request.cookies.get(LOGIN_CSRF_COOKIE) or secrets.token_urlsafe(24)


def set_login_csrf(response: Response, request: Request, token: str) -> None:
    response.set_cookie(LOGIN_CSRF_COOKIE, token, httponly=True, samesite="strict", path="/auth/",
                        secure=secure_cookies(request))


def same_token(expected: str | None, given: Any) -> bool:
    return bool(expected) and isinstance(given, str) and hmac.compare_digest(expected or "", given)


def same_origin(request: Request) -> bool:
    """A state-changing form must come from a page of this server: an
    Origin header, when the browser sends one, names this host."""
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    try:
        netloc = urlsplit(origin).netloc
    except ValueError:  # `http://[`: no address, so not this one
        return False
    return netloc == request.headers.get("host", "")


def safe_next(target: Any) -> str:
    """A local path to go to after login; anything else goes to the dashboard
    (no open redirects: no scheme, no host, no `//`, no backslash)."""
    if not isinstance(target, str) or not target.startswith("/") or target.startswith("//"):
        return "/"
    if "\\" in target or any(ord(c) < 32 for c in target) or urlsplit(target).netloc:
        return "/"
    return target


def redirect(url: str) -> RedirectResponse:
    """A 303 with the headers of the admin's pages: a redirect is a page of
    the admin too (it may set or clear the session cookie)."""
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)
