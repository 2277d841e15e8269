"""build_app(settings) -> the ASGI application, and the `Quire` container of
services that routes reach through `request.app.state.quire`."""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import time
from collections.abc import AsyncIterator
from importlib.metadata import entry_points
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from quire import openapi
from quire.auth.service import AuthService
from quire.config import Settings, load_settings
from quire.content import routes as content_routes
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.errors import ApiError, ConfigError
from quire.events import Events
from quire.http import json_response
from quire.store import SqliteStore
from quire.system import routes as system_routes

log = logging.getLogger("quire")
access_log = logging.getLogger("quire.access")


class Quire:
    """The services of one running instance (one per process)."""

    def __init__(self, settings: Settings, events: Events | None = None) -> None:
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = SqliteStore(settings.db_path)
        self.events = events or Events()
        self.auth = AuthService(self.store)
        self.locales = LocaleService(self.store, settings.get("content", "default_locale_name"))
        self.models = ModelService(self.store, self.locales)
        self.content = ContentService(
            self.store, self.models, self.locales, self.events, settings.get("api", "max_populate_depth")
        )
        self.max_body: int = settings.get("api", "max_body_bytes")
        self.max_depth: int = settings.get("api", "max_json_depth")
        load_hooks(self.events, settings.get("hooks", "modules"))

    def close(self) -> None:
        self.store.close()


def load_hooks(events: Events, modules: list[str]) -> None:
    """Hook modules expose `register(events)`: from the entry-point group
    `quire.hooks` and from `[hooks] modules` in quire.toml."""
    registrars: list[Any] = [ep.load() for ep in entry_points(group="quire.hooks")]
    for name in modules:
        try:
            registrars.append(importlib.import_module(name))
        except ImportError as exc:
            raise ConfigError(f"setting 'hooks.modules': cannot import {name}: {exc}") from None
    for registrar in registrars:
        register = getattr(registrar, "register", registrar)
        register(events)


# -- errors -------------------------------------------------------------------

_HTTP_MESSAGES = {404: "Not found", 405: "Method not allowed"}


async def api_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ApiError)
    return json_response(exc.body(), exc.status, exc.headers or None)


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = _HTTP_MESSAGES.get(exc.status_code, exc.detail)
    return json_response({"error": message}, exc.status_code, dict(exc.headers or {}) or None)


async def server_error(request: Request, exc: Exception) -> Response:
    log.error("unhandled error on %s %s", request.method, request.url.path, exc_info=exc)
    return json_response({"error": "Internal server error"}, 500)


# -- middleware ---------------------------------------------------------------


class AccessLog:
    """One line per request: method, path (never the query: it may hold a
    key), status, milliseconds."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [500]

        async def capture(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            ms = (time.perf_counter() - start) * 1000
            access_log.info("%s %s %d %.1fms", scope["method"], scope["path"], status[0], ms)


def build_app(settings: Settings, events: Events | None = None) -> Starlette:
    quire = Quire(settings, events)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            quire.close()

    routes = [*system_routes.routes, *content_routes.routes, *openapi.routes]
    middleware = [
        Middleware(
            CORSMiddleware,
            allow_origins=settings.get("api", "cors_origins"),
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
            allow_headers=["api-key", "authorization", "content-type", "x-persona-audience",
                           "x-persona-tz-offset", "x-persona-vars"],
            max_age=600,
        )
    ]
    if not settings.get("server", "quiet"):
        middleware.insert(0, Middleware(AccessLog))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        exception_handlers={ApiError: api_error, HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
    app.state.quire = quire
    return app


def app_from_env() -> Starlette:
    """The factory granian's workers call: settings come from the environment
    that `quire serve` prepared (QUIRE_DATA, QUIRE_CONFIG)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings(os.environ.get("QUIRE_DATA", "./data"), os.environ.get("QUIRE_CONFIG") or None)
    return build_app(settings)
