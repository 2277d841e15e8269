"""What every page of the studio needs: templates, the session cookie,
CSRF checks, security headers, safe redirects and the shipped files.

Templates and files come from the folders the modules declare
(`Module.templates`, `Module.static`), registered when an instance is
built (`use_module_files`): a module's templates live in
`templates/<module>/` of its package, so their names never collide, and
its scripts and styles are served at `/studio/static/<name>` beside the
shared ones of this package."""

from __future__ import annotations

import functools
import hmac
import re
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from jinja2 import ChoiceLoader, Environment, FileSystemLoader, select_autoescape
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response

from quire import tracing
from quire.auth.service import AuthService, Identity
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.errors import Forbidden
from quire.http import json_response, quire_of, read_small_form
from quire.modules import Module, Services
from quire.ui import zones

SESSION_COOKIE = "quire_session"
MAX_FORM_BYTES = 64 * 1024  # a small form: login, keys, users
MAX_FORM_FIELDS = 50
LOGIN_CSRF_COOKIE = "quire_login_csrf"
HERE = Path(__file__).parent
STATIC = HERE / "static"
# this package's folder first (base.html, message.html, ui/layout.html), then
# each module's, in the order the modules are listed
_loaders: list[FileSystemLoader] = [FileSystemLoader(HERE / "templates")]
templates = Environment(loader=ChoiceLoader(_loaders), autoescape=select_autoescape(default=True))
_static: list[Path] = [STATIC]

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


# A space's studio (quire.sites) is served under the space's name: its
# pages, the API and the files it links to answer there; these stay the
# main site's (the shipped files, the user's own settings, the users, who
# are shared, and the session's event stream).
SPACE_ROOTS = frozenset({"studio", "admin", "api", "storage", "system", "demo", "mcp"})
SHARED_PATHS = ("/studio/static", "/admin/static", "/system/api/static", "/studio/me", "/admin/users",
                "/system/events")
_PATH_ATTRIBUTE = re.compile(r'(\s[\w:.-]+=")(/[^"]*)"')


def space_path(base: str, url: str, *, root: bool = False) -> str:
    """`url`, a path of a space's own app, as the browser must ask for it:
    under the space's name `base` when the space answers it (`root`: "/" is
    the space's dashboard too); the main site's paths as they are."""
    if not base or not url.startswith("/") or url.startswith("//"):
        return url
    if root and (url == "/" or url.startswith("/?")):
        return base + url
    if any(url == p or url.startswith((p + "/", p + "?")) for p in SHARED_PATHS):
        return url
    first = url[1:].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return base + url if first in SPACE_ROOTS else url


def in_space(html: str, base: str) -> str:
    """A page of a space's studio with its links, forms' targets and
    scripts' addresses under the space's name (`space_path`). A form's
    values (`value=`, such as the `back` field) stay the app's own paths:
    they come back to it."""

    def moved(match: re.Match[str]) -> str:
        if match.group(1).endswith(' value="'):
            return match.group(0)
        return f'{match.group(1)}{space_path(base, match.group(2))}"'

    return _PATH_ATTRIBUTE.sub(moved, html)


@dataclass
class Login:
    """The logged-in user of a request. In a space's studio, `user["role"]`
    is the user's role there, and `outsider` a user with none."""

    session: dict[str, Any]
    user: dict[str, Any]
    identity: Identity
    outsider: bool = False
    main_user: dict[str, Any] | None = None  # in a space: the user as the main site has it

    def can(self, permission: str) -> bool:
        return self.identity.can(permission)

    @property
    def manager(self) -> bool:
        return self.identity.can("system/manage")


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return render_in(templates, request, template, status, **context)


def use_module_files(modules: Sequence[Module]) -> None:
    """Find the templates and shipped files of `modules` too. The folders
    are the packages' own, the same for every instance of a process, so
    they are added once and never removed."""
    for module in modules:
        if module.templates is not None and all(Path(loader.searchpath[0]) != module.templates
                                                for loader in _loaders):
            _loaders.append(FileSystemLoader(module.templates))
        if module.static is not None and module.static not in _static:
            _static.append(module.static)


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

    def spaces() -> list[tuple[str, str, str]]:  # the space switcher (base.html)
        home = quire.main_site or quire
        if not isinstance(login, Login) or home.spaces_of is None:
            return []
        return home.spaces_of(login.main_user or login.user)

    # the zone every time of the page is shown in (admin.js formats them)
    zone = zones.zone_name(request, login.user["_id"]) if isinstance(login, Login) else ""
    base = request.scope.get("root_path", "")  # a space's studio: its name
    with tracing.span("render", {"quire.template": template}):
        html = env.get_template(template).render(
            request=request, sso_enabled=sso.configured, login_text=sso.login_text, nav=nav,
            find_enabled=quire.find_path is not None, user_zone=zone, space_base=base, space_places=spaces,
            space_name=quire.space_name, **context,
        )
    return HTMLResponse(in_space(html, base) if base else html, status, headers=SECURITY_HEADERS)


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


def static_response(name: str, folders: Sequence[Path] | None = None) -> Response:
    """A file that this package or a module ships (`name` may name a
    subfolder, such as `vendor/`): scripts, styles, images and licence
    texts, looked for in `folders` (by default this package's and every
    module's). Anything else, `..` included, is a 404."""
    for folder in _static if folders is None else folders:
        if name in _shipped(folder):
            return FileResponse(folder / name, headers={"cache-control": "public, max-age=3600",
                                                        "x-content-type-options": "nosniff"})
    return json_response({"error": "Not found"}, 404)


@functools.cache
def _shipped(folder: Path) -> frozenset[str]:
    kinds = (".js", ".css", ".png", ".svg", ".txt", ".LICENSE")
    return frozenset(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                     if p.is_file() and (p.suffix in kinds or p.name.endswith(".LICENSE")))


async def current_login(request: Request) -> Login | None:
    """The live session of the request's cookie and its active user. Its
    writes (ending an expired session or one of a deactivated user) wait
    for the write lock off the event loop.

    A space's studio trusts the main site's sessions and users; the role
    there is the user's role in that space (`user["spaces"]`), admin for
    the main site's admins, and none for anyone else (`outsider`)."""
    here = quire_of(request)
    home = here.main_site or here
    session = await home.get(SessionService).alookup(request.cookies.get(SESSION_COOKIE))
    if session is None:
        return None
    user = home.get(UserService).get(session["user"])
    if user is None or not user.get("active", True):
        await home.get(SessionService).aend(session["_id"], "deactivated")
        return None
    auth = here.get(AuthService)
    if here.space_name is not None:
        role = "admin" if user.get("role") == "admin" else (user.get("spaces") or {}).get(here.space_name)
        if not isinstance(role, str) or not auth.role_exists(role):
            return Login(session, {**user, "role": "none"}, auth.role_identity("public", user["_id"], user["user"]),
                         outsider=True, main_user=user)
        return Login(session, {**user, "role": role}, auth.role_identity(role, user["_id"], user["user"]),
                     main_user=user)
    return Login(session, user, auth.role_identity(user["role"], user["_id"], user["user"]))


def outsider_page(request: Request, login: Login) -> Response:
    """A space's studio to a user without a role in it."""
    return render(request, "message.html", 403, login=None, title="Not allowed",
                  message=f"You have no role in the space {quire_of(request).space_name}; "
                          "an administrator of the main site can give you one.")


def login_target(request: Request) -> str:
    """The login form, coming back to this page after it (a space's page
    under the space's name)."""
    target = request.scope.get("root_path", "") + request.url.path
    target += f"?{request.url.query}" if request.url.query else ""
    return f"/auth/login?next={quote(target, safe='/')}" if target != "/" else "/auth/login"


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


# -- pages of the shell and of settings (small forms, a manager's pages) ---------

async def small_form(request: Request) -> dict[str, str]:
    return await read_small_form(request, MAX_FORM_BYTES, MAX_FORM_FIELDS)


async def small_checked_form(request: Request, login: Login) -> dict[str, str]:
    """The fields of a state-changing form whose CSRF token is the session's."""
    form = await small_form(request)
    if not same_origin(request) or not same_token(login.session["csrf"], form.get("csrf")):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
    return form


def manager_page(handler: Callable[[Request, Login], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
    """A page for users whose role may manage the system (system/manage)."""

    async def page(request: Request) -> Response:
        login = await need_login(request)
        if isinstance(login, Response):
            return login
        if not login.manager:
            return forbidden_page(request, login)
        return await handler(request, login)

    return page


async def need_login(request: Request) -> Login | Response:
    login = await current_login(request)
    if login is None:
        return redirect(login_target(request))
    if login.outsider:
        return outsider_page(request, login)
    return login


def forbidden_page(request: Request, login: Login) -> Response:
    return render(request, "message.html", 403, login=login, title="Not allowed",
                  message="Your role does not allow this page.")
