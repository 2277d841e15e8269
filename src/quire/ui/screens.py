"""What every studio page shares: the logged-in user and what their role
allows, forms with their CSRF and Origin checks, flash messages after a
save, and rendering on top of the admin's layout."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import orjson
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from quire.errors import ApiError, BadRequest, Forbidden, PayloadTooLarge
from quire.http import check_depth, content_length, limited_receive, quire_of, read_form_pairs
from quire.ui.web import (
    Login,
    current_login,
    login_target,
    outsider_page,
    redirect,
    render_in,
    same_origin,
    same_token,
    secure_cookies,
    static_response,
    templates,
)

FLASH_COOKIE = "quire_flash"
# an item with many localized rich-text fields, sets and repeaters is one form
MAX_FORM_FIELDS = 20_000

# JSON typed into a form nests at most as deep as the API's default body
# (`[api] max_json_depth`): deeper values could not be stored or shown again
FORM_JSON_DEPTH = 64

Handler = Callable[[Request, Login], Awaitable[Response]]


class Form:
    """A posted form; names may repeat (the checkboxes of selected rows)."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        # browsers send every line break of a text area as CRLF: stored as
        # the API's clients write them (LF), so a field nobody touched stays
        # byte for byte what it was
        self.pairs = [(k, v.replace("\r\n", "\n").replace("\r", "\n") if "\r" in v else v) for k, v in pairs]
        self._last = dict(self.pairs)

    def get(self, name: str, default: str = "") -> str:
        return self._last.get(name, default)

    def getlist(self, name: str) -> list[str]:
        return [v for k, v in self.pairs if k == name]

    def __contains__(self, name: object) -> bool:
        return name in self._last


def studio_page(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A studio page: the login is needed (else the login form, coming back
    here after it), and a refusal of the services (no permission, no such
    model or item, a bad form) is shown as a page with its status, never a
    crash."""

    async def page(request: Request) -> Response:
        login = await current_login(request)
        if login is None:
            if request.method != "GET" or request.headers.get("hx-request"):
                return render_in(templates, request, "message.html", 401, login=None, title="Logged out",
                                 message="Your session has ended; log in again.")
            return redirect(login_target(request))
        if login.outsider:
            return outsider_page(request, login)
        try:
            return await handler(request, login)
        except ApiError as exc:
            title = "Not allowed" if isinstance(exc, Forbidden) else "Not found" if exc.status == 404 else "Not done"
            return render(request, login, "message.html", exc.status, title=title, message=exc.message)

    return page


def back_to(value: Any, base: str, *, under: bool = False) -> str:
    """Where a form returns after its write: `value` (a form's `back`
    field: the screen as it was shown, with its query) when it is a path
    of this site equal to `base` (or, `under`, starting with it); else
    `base`. Never another site: no scheme, no host, and a value that does
    not parse as an address (`//[x`) is no address at all."""
    try:
        parts = urlsplit(value if isinstance(value, str) else "")
    except ValueError:
        return base
    if parts.scheme or parts.netloc or not (parts.path == base or under and parts.path.startswith(base + "/")):
        return base
    return parts.path + (f"?{parts.query}" if parts.query else "")


async def multipart_form(request: Request, limit: int, max_files: int) -> FormData:
    """A multipart body (file uploads) of at most `limit` bytes: 413 when it
    says or turns out to be larger, 400 when it does not parse. The caller
    closes it (`await form.close()`)."""
    declared = content_length(request.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise PayloadTooLarge(f"The upload is larger than {limit:,} bytes")
    limited = Request(request.scope, limited_receive(request.receive, limit))
    try:
        return await limited.form(max_files=max_files, max_fields=20)
    except PayloadTooLarge:
        raise
    except Exception as exc:  # a malformed multipart body
        raise BadRequest(f"Malformed multipart body: {exc}") from None


async def multipart_file(request: Request, limit: int) -> tuple[dict[str, str], str, bytes | None]:
    """The text fields, the file's name and its bytes (None: no file) of a
    multipart form of one file named `file` (`multipart_form`'s limits)."""
    form = await multipart_form(request, limit, 1)
    try:
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        part = form.get("file")
        if not isinstance(part, UploadFile):
            return fields, "", None
        return fields, part.filename or "", await part.read()
    finally:
        await form.close()


def json_of(text: str) -> Any:
    """JSON typed into a form, read as the API reads a body: strict JSON
    (no NaN or Infinity), nested at most FORM_JSON_DEPTH levels. A
    ValueError says what is wrong, to be shown next to the input."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"{exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    try:
        check_depth(value, FORM_JSON_DEPTH)
    except BadRequest as exc:
        raise ValueError(exc.message) from None
    return value


def need(login: Login, permission: str) -> None:
    """Refuse (403) unless the user's role has `permission`."""
    if not login.can(permission):
        raise Forbidden(f"Your role does not allow this ({permission}).")


async def checked_form(request: Request, login: Login) -> Form:
    """The fields of a state-changing request: from a page of this site
    (Origin) carrying the session's CSRF token, as a form field `csrf` or,
    from htmx, the `x-csrf-token` header."""
    pairs = await read_form_pairs(request, quire_of(request).max_body, MAX_FORM_FIELDS)
    form = Form(pairs)
    token = form.get("csrf") or request.headers.get("x-csrf-token", "")
    if not same_origin(request) or not same_token(login.session["csrf"], token):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
    return form


def render(request: Request, login: Login, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A studio page, with the flash message a redirect left (shown once).
    Only a page the browser navigates to takes the message: a part of a
    page fetched by a script (htmx, a picker's search) shows none, and one
    still under way as a save redirects would otherwise use it up."""
    fetched = request.headers.get("hx-request") or request.headers.get("sec-fetch-mode", "navigate") != "navigate"
    flash = None if fetched else unquote(request.cookies.get(FLASH_COOKIE, ""))[:500] or None
    response = render_in(templates, request, template, status, login=login, csrf=login.session["csrf"],
                         flash=flash, **context)
    if flash is not None:
        response.delete_cookie(FLASH_COOKIE, path="/", httponly=True, samesite="lax",
                               secure=secure_cookies(request))
    return response


def redirect_flash(request: Request, url: str, message: str) -> RedirectResponse:
    """Go to `url` after a write, which then says `message` once."""
    response = redirect(url)
    response.set_cookie(FLASH_COOKIE, quote(message[:500]), max_age=60, httponly=True, samesite="lax",
                        path="/", secure=secure_cookies(request))
    return response


async def static_file(request: Request) -> Response:
    return static_response(request.path_params["name"])
