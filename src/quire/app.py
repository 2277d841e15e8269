"""build_app(settings) -> the ASGI application, and the `Quire` container of
services that routes reach through `request.app.state.quire`."""

from __future__ import annotations

import logging
import os

from quire import openapi
from quire.admin import routes as admin_routes
from quire.asgi import App
from quire.assets import routes as asset_routes
from quire.assets.service import AssetService
from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.config import Settings, load_settings
from quire.content import routes as content_routes
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.service import ContentService
from quire.events import Events
from quire.hooks import load_hooks
from quire.inbox import routes as inbox_routes
from quire.inbox.forms import FormService
from quire.inbox.mailer import Mailer
from quire.inbox.service import SubmitService
from quire.inbox.submissions import SubmissionService
from quire.l10n import routes as l10n_routes
from quire.l10n.service import L10nService
from quire.pages import routes as pages_routes
from quire.pages.menus import MenuService
from quire.pages.service import PagesService
from quire.ratelimit import RateLimiter
from quire.searchmod import routes as search_routes
from quire.searchmod.service import SearchService
from quire.sso import routes as sso_routes
from quire.sso.service import SsoService
from quire.store import SqliteStore
from quire.system import routes as system_routes

log = logging.getLogger("quire")


class Quire:
    """The services of one running instance (one per process)."""

    def __init__(self, settings: Settings, events: Events | None = None) -> None:
        self.settings = settings
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        self.store = SqliteStore(settings.db_path, lock_timeout=settings.store.lock_timeout_ms / 1000)
        self.events = events or Events()
        self.auth = AuthService(self.store)
        self.users = UserService(self.store, self.auth)
        admin = settings.admin
        self.sessions = SessionService(self.store, admin.session_idle_seconds, admin.session_max_seconds)
        self.login_limiter = RateLimiter(self.store, admin.login_attempts, admin.login_window_seconds,
                                         "system/login_failures")
        self.sso = SsoService(self.store, settings.sso, self.auth,
                              self.users, self.sessions)
        self.locales = LocaleService(self.store, settings.content.default_locale_name)
        self.models = ModelService(self.store, self.locales)
        self.content = ContentService(
            self.store, self.models, self.locales, self.events, settings.api.max_populate_depth
        )
        self.assets = AssetService(self.store, settings.data_dir, self.events, settings.assets)
        self.content.resolve_assets = self.assets.get_many
        self.content.resolve_asset_json = self.assets.get_many_json
        self.pages = PagesService(self.store, self.content, self.events, settings.pages)
        self.menus = MenuService(self.store, self.pages, self.events)
        self.l10n = L10nService(self.store, self.events)
        self.mailer = Mailer(settings.smtp, settings.db_path, self.assets.uploads)
        self.forms = FormService(self.store, self.events)
        self.inbox = SubmitService(self.store, self.events, self.mailer, self.assets.uploads,
                                   settings.inbox, settings.assets)
        self.submissions = SubmissionService(self.store, self.events, self.forms, self.assets.uploads)
        self.search = SearchService(self.store, self.content, self.models, self.events)
        inbox = settings.inbox
        self.rate_limiter = RateLimiter(self.store, inbox.rate_limit, inbox.rate_window_seconds)
        self.public_url: str = settings.server.public_url
        self.max_body: int = settings.api.max_body_bytes
        self.max_depth: int = settings.api.max_json_depth
        try:
            load_hooks(self.events, list(settings.hooks.modules), settings.data_dir, self)
        except BaseException:
            self.close()
            raise

    def start(self) -> None:
        """At server start: send what an earlier run left in the outbox."""
        self.mailer.wake()

    def close(self) -> None:
        self.mailer.close()
        self.store.close()


def build_app(settings: Settings, events: Events | None = None) -> App:
    quire = Quire(settings, events)
    app = App(
        [
            *system_routes.routes, *content_routes.routes, *asset_routes.routes,
            *pages_routes.routes, *l10n_routes.routes, *inbox_routes.routes,
            *search_routes.routes, *openapi.routes, *admin_routes.routes, *sso_routes.routes,
        ],
        cors_origins=list(settings.api.cors_origins),
        cors_headers=list(settings.api.cors_headers),
        cors_methods=list(settings.api.cors_methods),
        access_log_enabled=not settings.server.quiet,
        on_startup=quire.start,
        on_shutdown=quire.close,
    )
    app.state.quire = quire
    return app


def app_from_env() -> App:
    """The factory granian's workers call: settings come from the environment
    that `quire serve` prepared (QUIRE_DATA, QUIRE_CONFIG)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    settings = load_settings(os.environ.get("QUIRE_DATA", "./data"), os.environ.get("QUIRE_CONFIG") or None)
    return build_app(settings)
