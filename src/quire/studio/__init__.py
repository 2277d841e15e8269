"""The studio: where editors model and write content in the browser. Pages
are rendered on the server (Jinja2, on the admin's layout) with htmx for
partial updates and a few small custom elements for the stateful widgets;
every change goes through the same services as the API."""

from __future__ import annotations

from typing import Any

from quire.modules import Module, NavEntry, Services
from quire.studio import (
    assets,
    editor,
    find,
    history,
    home,
    inbox,
    l10n,
    lists,
    menus,
    models_page,
    pages,
    settings_audit,
    settings_locales,
    settings_previews,
    settings_roles,
    settings_search,
    settings_webhooks,
)
from quire.studio.prefs import PrefsService


def build(services: Services) -> None:
    services.add("studio_prefs", PrefsService(services.store))
    services.find_path = "/studio/find"


def _manager(identity: Any) -> bool:
    return bool(identity.can("system/manage"))


def _pages_reader(identity: Any) -> bool:
    return bool(identity.can("pages/read") or identity.can("pages/manage"))


def _pages_manager(identity: Any) -> bool:
    return bool(identity.can("pages/manage"))


def _searcher(identity: Any) -> bool:
    return bool(identity.can("searchmod/read") or identity.can("searchmod/manage"))


def subscribe(services: Services) -> None:
    services.events.on("content.model.rename", services.get(PrefsService).model_renamed)


module = Module("studio", build=build, subscribe=subscribe,
                routes=[*home.routes, *models_page.routes, *lists.routes, *editor.routes, *history.routes, *find.routes,
                        *settings_roles.routes, *settings_locales.routes, *settings_search.routes,
                        *settings_webhooks.routes, *settings_previews.routes,
                        *settings_audit.routes,
                        *pages.routes, *menus.routes, *l10n.routes, *inbox.routes,
                        *assets.routes],  # after editor.routes: /studio/assets/pick, thumb, upload first
                nav=[
                    NavEntry("Content", "/studio/content", "Content", lambda identity: True, order=10),
                    NavEntry("Assets", "/studio/assets", "Content", lambda identity: identity.can("assets/read"),
                             order=20),
                    NavEntry("Translations", "/studio/l10n", "Content", l10n.allowed, order=30),
                    NavEntry("Forms", "/studio/forms", "Content", inbox.may_read, badge=inbox.unread_badge, order=40),
                    NavEntry("Pages", "/studio/pages", "Site", _pages_reader, order=50),
                    NavEntry("Menus", "/studio/menus", "Site", _pages_manager, order=55),
                    NavEntry("Page settings", "/studio/pages/settings", "Site", _pages_manager, order=58),
                    NavEntry("Models", "/studio/models", "Settings", _manager, order=80),
                    NavEntry("Search", "/studio/search", "Site", _searcher, order=60),
                    NavEntry("Locales", "/studio/settings/locales", "Settings", _manager, order=82),
                    NavEntry("Roles", "/studio/settings/roles", "Settings", _manager, order=84),
                    NavEntry("Webhooks", "/studio/settings/webhooks", "Settings",
                             lambda identity: identity.can("webhooks/manage"), order=85),
                    NavEntry("Preview links", "/studio/settings/previews", "Settings", _manager, order=88),
                    NavEntry("Audit log", "/studio/settings/audit", "Settings",
                             lambda identity: identity.can("audit/read"), order=92),
                ])
