"""build_app(settings) -> the ASGI application, composed from the list of
feature modules; `Quire` is the services those modules built, hung on
`app.state.quire` (routes reach it through `http.quire_of`)."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire import (
    accounts,
    assets,
    assistants,
    audit,
    auth,
    cdn,
    conditional,
    content,
    feed,
    gql,
    health,
    inbox,
    l10n,
    metrics,
    pages,
    persona,
    revisions,
    searchmod,
    spaces,
    sso,
    stopping,
    studio,
    system,
    tracing,
    translate,
    vision,
    webhooks,
)
from quire.apilimits import ApiLimits
from quire.asgi import App, Scope
from quire.auth.request import IDENTITY, request_key
from quire.cache import Cache
from quire.catalogue import catalogue
from quire.config import Settings
from quire.content import types as field_types
from quire.errors import ApiError
from quire.events import Events
from quire.forwarded import current_client
from quire.hooks import load_hooks
from quire.jobs import Jobs
from quire.modules import Module, Services
from quire.packages import chosen
from quire.store import SqliteStore, open_store
from quire.system.custom import routes_of as custom_routes
from quire.ui.web import use_module_files

log = logging.getLogger("quire")

# Built in this order; a module uses only modules before it in the list
# (what they built, and their code: tests/test_import_shape.py holds it).
MODULES: list[Module] = [
    auth.module, assets.module, persona.module, content.module, pages.module, inbox.module, l10n.module,
    searchmod.module, health.module, system.module, accounts.module, revisions.module, audit.module, webhooks.module,
    feed.module, cdn.module, gql.module, sso.module, spaces.module, translate.module, vision.module, assistants.module,
    studio.module,
]


class Quire(Services):
    """The services of one running instance (one per process)."""

    def __init__(self, settings: Settings, events: Events | None = None,
                 modules: list[Module] | None = None) -> None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        store = open_store(settings.store.url, settings.db_path, settings.store.lock_timeout_ms / 1000)
        if settings.store.auto_indexes and settings.store.auto_index_max and isinstance(store, SqliteStore):
            store.auto_indexes(max_per_collection=settings.store.auto_index_max,
                               min_rows=settings.store.auto_index_min_rows,
                               unused_days=settings.store.auto_index_unused_days)
        super().__init__(settings, store, Cache(store), events or Events())
        self.on_close(store.close)
        # before the modules: they register their kinds of job as they build;
        # closed after theirs (the last registered closes first)
        jobs = self.add("jobs", Jobs(store, settings.jobs))
        self.on_start(jobs.start)
        self.on_close(jobs.close)
        if modules is None:  # Quire's own, then those of installed packages (packages.py)
            modules = MODULES + chosen(settings.modules.packages, settings.modules.skip, MODULES)
        self.modules = modules
        for module in self.modules:
            self.permissions.update(module.permissions)
        self.nav = sorted((e for m in self.modules for e in m.nav), key=lambda e: e.order)
        use_module_files(self.modules)  # their screens' templates and files
        self.catalogue = catalogue(e for m in self.modules for e in m.events)
        for module in self.modules:
            for kind in module.field_types:
                field_types.register(kind, module.name)
        try:
            for module in self.modules:
                if module.build is not None:
                    module.build(self)
            for module in self.modules:
                if module.subscribe is not None:
                    module.subscribe(self)
            load_hooks(self.events, list(settings.hooks.modules), settings.data_dir, self)
        except BaseException:
            self.close()
            raise


def build_app(settings: Settings, events: Events | None = None, modules: list[Module] | None = None) -> App:
    quire = Quire(settings, events, modules)
    metrics.counting(settings.server.metrics)
    app = App(
        [*(r for module in quire.modules for r in module.routes), *custom_routes(quire)],
        cors_origins=list(settings.api.cors_origins),
        cors_headers=list(settings.api.cors_headers),
        cors_methods=list(settings.api.cors_methods),
        access_log_enabled=settings.server.access_log and not settings.server.quiet,
        on_startup=quire.start,
        on_shutdown=lambda: _shut_down(quire),
        before_request=quire.cache.refresh,
        limit_request=api_limit(quire),
        observe=metrics.observe if settings.server.metrics else None,
        conditional=conditional_get(settings, quire.modules),
        strict_transport=settings.server.public_url.startswith("https://"),
    )
    app.state.quire = quire
    return app


def conditional_get(settings: Settings, modules: Sequence[Module]) -> Callable[[Scope, Response], Response]:
    """GET answers of the API with their ETag and Cache-Control, or a 304
    (quire.conditional; `[api] cache_control` per route family), and with
    the CDN's tags when `[cdn]` wants them."""
    cache_control = dict(settings.api.cache_control)
    tagger = conditional.Tagger({m.name: [kind.name for kind in m.feed] for m in modules if m.feed}) \
        if settings.cdn.tagging else None

    def finish(scope: Scope, response: Response) -> Response:
        if scope["method"] != "GET" or not scope["path"].startswith("/api/"):
            return response
        inm = None
        for name, value in scope["headers"]:
            if name == b"if-none-match":
                inm = value.decode("latin-1")
                break
        found = scope.get(IDENTITY)  # the rate limit's lookup, when one ran
        keyed = not found.anonymous if found is not None else request_key(Request(scope)) is not None
        return conditional.finish(response, scope["path"], inm, keyed, cache_control, tagger,
                                  scope.get("root_path", "")[1:])  # a space's or alias's name (quire.sites)

    return finish


def hear_the_stop() -> None:
    """granian tells a worker to stop through the stop signal's handler it
    puts on the worker's event loop as the worker starts
    (`granian._signals.set_loop_signals`, called after this factory ran),
    and calls back only once every connection has ended: an open event
    stream never ends, so the worker was killed after `cli.STOP_SECONDS`.
    Here that handler is replaced by one that does the same (sets
    granian's stop event) and first ends the worker's event streams
    (quire.stopping). Without the function (another granian), streams end
    at the kill, as before."""
    try:
        from granian import _signals
    except ImportError:
        return
    original = getattr(_signals, "set_loop_signals", None)
    if original is None or getattr(original, "quire_hears", False):
        return

    def hearing(loop: Any) -> Any:
        event = original(loop)

        def stop(signum: int, frame: Any) -> None:
            stopping.begin()
            event.set()

        try:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop, signum, None)
        except (NotImplementedError, RuntimeError):  # no signals on this loop: granian's own stay
            log.debug("the stop signal is granian's alone here")
        return event

    hearing.quire_hears = True  # type: ignore[attr-defined]
    _signals.set_loop_signals = hearing


def _shut_down(quire: Quire) -> None:
    """A worker's lifespan ends: done well before `cli.STOP_SECONDS`, after
    which the server kills it (and says so)."""
    quire.stopping_worker = True
    quire.close()
    metrics.flush()  # what this worker held back
    metrics.process_ended()
    tracing.shutdown()


def api_limit(quire: Quire) -> Callable[[Scope], list[tuple[bytes, bytes]] | None] | None:
    """The per-key limit of API requests (`[api] rate_limits`, quire.apilimits),
    or None when no role has one."""
    per_role, default = dict(quire.settings.api.rate_limits), quire.settings.api.rate_limit
    if not default and not any(per_role.values()):
        return None
    limits = ApiLimits(quire.store)
    hops = quire.settings.server.proxy_hops

    def limit(scope: Scope) -> list[tuple[bytes, bytes]] | None:
        if not scope["path"].startswith("/api/"):
            return None
        try:
            identity = scope[IDENTITY] = quire.auth.identify(request_key(Request(scope)))
        except ApiError:
            return None  # an unknown key: its 401 comes from the route
        allowed = per_role.get(identity.role, default)
        if allowed <= 0:
            return None
        return limits.hit(identity.key_id or f"addr:{current_client(hops) or '?'}", allowed)

    return limit
