"""The ASGI application: routing, CORS, errors and the access log in one thin
layer over Starlette's Request and Response.

Starlette's application stack wraps every response in several middleware
layers; for a JSON API whose answers are mostly a few kilobytes those layers
cost more than the work itself, so dispatch is done here directly.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import unquote_plus

from starlette.datastructures import QueryParams, State
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from quire import tracing
from quire.errors import ApiError
from quire.forwarded import serving
from quire.requestid import REQUEST_ID, request_id
from quire.responses import json_response
from quire.store.values import bad_text

log = logging.getLogger("quire")
access_log = logging.getLogger("quire.access")

Handler = Callable[[Request], Awaitable[Response]]
_PARAM = re.compile(r"{([a-zA-Z_][a-zA-Z0-9_]*)(:path)?}")


@dataclass
class Route:
    """A path with one handler per HTTP method. `cors`: whether other sites'
    pages may call it (the API); the admin's pages and single sign-on are for
    this site's own pages only, so they answer no CORS headers."""

    path: str
    handlers: dict[str, Handler]
    cors: bool = True

    def __post_init__(self) -> None:
        escaped = re.escape(self.path).replace(r"\{", "{").replace(r"\}", "}").replace(r"\:", ":")
        pattern = _PARAM.sub(lambda m: f"(?P<{m.group(1)}>{'.+' if m.group(2) else '[^/]+'})", escaped)
        self.regex = re.compile(f"^{pattern}$")
        if "GET" in self.handlers and "HEAD" not in self.handlers:
            self.handlers = {"GET": self.handlers["GET"], "HEAD": self.handlers["GET"],
                             **{m: h for m, h in self.handlers.items() if m != "GET"}}

    @property
    def methods(self) -> set[str]:
        return set(self.handlers)


def route(path: str, *, cors: bool = True, **handlers: Handler) -> Route:
    return Route(path, {method.upper(): fn for method, fn in handlers.items()}, cors)


class App:
    """Dispatches HTTP requests to routes; every failure becomes JSON."""

    def __init__(
        self,
        routes: list[Route],
        *,
        cors_origins: list[str],
        access_log_enabled: bool,
        cors_headers: list[str],
        cors_methods: list[str],
        on_startup: Callable[[], None] | None = None,
        on_shutdown: Callable[[], None] | None = None,
        before_request: Callable[[], None] | None = None,
        limit_request: Callable[[Scope], list[tuple[bytes, bytes]] | None] | None = None,
        observe: Callable[[str, str, int, float], None] | None = None,
        conditional: Callable[[Scope, Response], Response] | None = None,
        strict_transport: bool = False,
    ) -> None:
        self.routes = routes
        self.state = State()
        self._static = {r.path: r for r in routes if "{" not in r.path}
        self._dynamic = [r for r in routes if "{" in r.path]
        self._by_area = _areas(self._dynamic)
        self._any_origin = "*" in cors_origins
        self._origins = set(cors_origins)
        self._any_header = "*" in cors_headers
        self._allow_headers = ", ".join(h.lower() for h in cors_headers)
        self._allow_methods = ", ".join(m.upper() for m in cors_methods)
        self._log = access_log_enabled
        self._on_startup = on_startup
        self._on_shutdown = on_shutdown
        # run once per request before its handler (the app's cache looks
        # for commits of other processes there)
        self._before_request = before_request
        # a request's rate limit (app.api_limit): headers for its answer, or
        # an ApiError (429) instead of the handler
        self._limit_request = limit_request
        # each answer once sent: (route pattern, method, status, seconds) (quire.metrics)
        self._observe = observe
        # an answer's ETag and Cache-Control, or its 304 (quire.conditional)
        self._conditional = conditional
        # Served as https (`[server] public_url`): browsers are told to use
        # https only for a year, so a later http:// link or a downgrade on
        # the way cannot read the session cookie or an API key.
        self._extra_headers = [(b"strict-transport-security", HSTS)] if strict_transport else []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            token = REQUEST_ID.set(request_id(_header(scope, b"x-request-id")))
            try:
                with tracing.request_span(scope["method"], scope["path"], scope["headers"]):
                    if self._log:
                        await self._logged(scope, receive, send)
                    else:
                        await self._http(scope, receive, send)
            finally:
                REQUEST_ID.reset(token)
        elif scope["type"] == "lifespan":
            await self._lifespan(receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                if self._on_startup:
                    self._on_startup()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                if self._on_shutdown:
                    self._on_shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _logged(self, scope: Scope, receive: Receive, send: Send) -> None:
        start = time.perf_counter()
        status = [500]

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        broken = ""
        try:
            await self._http(scope, receive, capture)
        except BaseException:
            # The status line below was sent, but the answer was cut short.
            broken = " broken off"
            raise
        finally:
            # the path only: a query string may carry an api_key
            ms = (time.perf_counter() - start) * 1000
            path = scope.get("root_path", "") + scope["path"]  # a space's requests under its name
            access_log.info("%s %s %d %.1fms%s", scope["method"], path, status[0], ms, broken,
                            extra={"method": scope["method"], "path": path, "status": status[0], "ms": round(ms, 1)})

    def _match(self, path: str) -> tuple[Route | None, dict[str, str]]:
        found = self._static.get(path)
        if found is not None:
            return found, {}
        for r in self._by_area.get(_area(path), self._by_area[""]):
            m = r.regex.match(path)
            if m:
                return r, m.groupdict()
        return None, {}

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        scope["app"] = self
        path = scope["path"]
        bad_path = bad_text(path)
        target, params = (None, {}) if bad_path else self._match(path)
        origin = _header(scope, b"origin") if target is None or target.cors else None
        cors = self._cors_origin(origin) if origin is not None else None
        if scope["method"] == "OPTIONS" and origin is not None and _header(scope, b"access-control-request-method"):
            await self._preflight(cors, scope, receive, send)
            return
        response = await self._respond(scope, receive, target, params, bad_path)
        if tracing.enabled():
            tracing.annotate({"http.response.status_code": response.status_code,
                              "http.route": target.path if target is not None else "",
                              "quire.request_id": REQUEST_ID.get() or ""})
        if self._conditional is not None:
            response = self._conditional(scope, response)
        # Browsers must not read any answer as another type than it says
        # (a JSON error shown as HTML, an upload as script).
        _nosniff(response)
        response.raw_headers.append((b"x-request-id", (REQUEST_ID.get() or "").encode()))
        if self._extra_headers:
            response.raw_headers.extend(self._extra_headers)
        if cors is not None:
            response.headers["access-control-allow-origin"] = cors
            vary = response.headers.get("vary")
            response.headers["vary"] = f"{vary}, Origin" if vary else "Origin"
        try:
            await response(scope, receive, send)
        except (OSError, ClientDisconnect):
            log.info("%s %s: the client left before the answer was complete", scope["method"], path)
            raise
        except Exception:
            # Errors are turned into answers before the status is sent
            # (`_respond`); one raised while a streamed body is being sent
            # can no longer change the status. Re-raised, it makes the server
            # close the connection without ending the body, so the client
            # sees a broken answer, not a complete-looking one.
            log.exception("%s %s: the answer broke off after its status was sent", scope["method"], path)
            raise
        finally:
            if self._observe is not None:
                self._observe(target.path if target is not None else "(no route)", scope["method"],
                              response.status_code, time.perf_counter() - started)

    async def _respond(self, scope: Scope, receive: Receive, target: Route | None,
                       params: dict[str, str], bad_path: bool) -> Response:
        if bad_path:
            # a NUL (or a lone surrogate, which no UTF-8 URL decodes to): no
            # file or id holds one; refused here once for every route
            return json_response({"error": "The path cannot contain NUL characters"}, 400)
        limited = None  # the rate limit's headers, on every answer it counted (an error too)
        try:
            if target is None:
                return json_response({"error": "Not found"}, 404)
            handler = target.handlers.get(scope["method"])
            if handler is None:
                allow = ", ".join(target.handlers)
                return json_response({"error": "Method not allowed"}, 405, {"Allow": allow})
            scope["path_params"] = params
            serving.set(scope)
            if self._before_request is not None:
                self._before_request()
            if self._limit_request is not None:
                limited = self._limit_request(scope)
            response = await handler(QuireRequest(scope, receive))
        except ApiError as exc:
            response = json_response(exc.body(), exc.status, exc.headers or None)
        except Exception:
            log.exception("unhandled error on %s %s", scope["method"], scope["path"])
            return json_response({"error": "Internal server error"}, 500)
        if limited:
            response.raw_headers.extend(limited)
        return response

    def _cors_origin(self, origin: str) -> str | None:
        if self._any_origin:
            return "*"
        return origin if origin in self._origins else None

    async def _preflight(self, cors: str | None, scope: Scope, receive: Receive, send: Send) -> None:
        if cors is None:
            response = json_response({"error": "Disallowed CORS origin"}, 400)
        else:
            allow_headers = self._allow_headers
            vary = "Origin"
            if self._any_header:
                # `*` in the answer would not cover Authorization, and not
                # any header on a request with credentials: name what was asked.
                allow_headers = _header(scope, b"access-control-request-headers") or ""
                vary = "Origin, Access-Control-Request-Headers"
            response = Response(status_code=204, headers={
                "access-control-allow-origin": cors,
                "access-control-allow-methods": self._allow_methods,
                "access-control-allow-headers": allow_headers,
                "access-control-max-age": "600",
                "vary": vary,
            })
        _nosniff(response)
        await response(scope, receive, send)


class QuireRequest(Request):
    """Starlette's request with a leaner reading of the query string: the
    same pairs as `parse_qsl(keep_blank_values=True)` (what Starlette
    uses), but percent-decoding only the parts that hold an escape, which
    cost a list page about 5 µs of its 90 the Starlette way."""

    @property
    def query_params(self) -> QueryParams:
        found = self.__dict__.get("_query_params")
        if found is None:
            found = self.__dict__["_query_params"] = QueryParams(query_pairs(self.scope["query_string"]))
        return found


def query_pairs(raw: bytes) -> list[tuple[str, str]]:
    """`a=1&b=%7B%7D` -> [("a", "1"), ("b", "{}")], as `parse_qsl` with
    blank values kept: `&` separates, `+` is a space, escapes are UTF-8
    (a bad one replaced)."""
    pairs = []
    for part in raw.decode("latin-1").split("&"):
        if not part:
            continue
        key, _, value = part.partition("=")
        if "%" in part or "+" in part:
            key, value = unquote_plus(key), unquote_plus(value)
        pairs.append((key, value))
    return pairs


HSTS = b"max-age=31536000"


def _nosniff(response: Response) -> None:
    """`X-Content-Type-Options: nosniff` unless the answer has that header:
    on the raw list the answer sends (what `headers.setdefault` does,
    without making a MutableHeaders for every answer)."""
    raw = response.raw_headers
    for name, _ in raw:
        if name == b"x-content-type-options":
            return
    raw.append((b"x-content-type-options", b"nosniff"))


def _area(path: str) -> str:
    """The first two segments of a path with their slashes (`/api/content/`),
    or "" when it has fewer."""
    end = path.find("/", path.find("/", 1) + 1)
    return path[:end + 1] if end > 0 else ""


def _areas(dynamic: list[Route]) -> dict[str, list[Route]]:
    """The routes with parameters a path can match, by its area (`_area`),
    in their order: only a route whose fixed start covers two whole
    segments is left out of other areas. "" holds those that can match any."""
    of = [_area(r.path[:r.path.index("{")]) for r in dynamic]
    areas: dict[str, list[Route]] = {"": [r for r, a in zip(dynamic, of, strict=True) if not a]}
    for area in dict.fromkeys(a for a in of if a):
        areas[area] = [r for r, a in zip(dynamic, of, strict=True) if not a or a == area]
    return areas


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None

