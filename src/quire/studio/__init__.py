"""The studio: where editors model and write content in the browser. Pages
are rendered on the server (Jinja2, on the admin's layout) with htmx for
partial updates and a few small custom elements for the stateful widgets;
every change goes through the same services as the API."""

from __future__ import annotations

from typing import Any

from quire.modules import Module, NavEntry, Services
from quire.studio import assets, editor, find, home, lists, models_page
from quire.studio.prefs import PrefsService


def build(services: Services) -> None:
    services.add("studio_prefs", PrefsService(services.store))
    services.find_path = "/studio/find"


def _manager(identity: Any) -> bool:
    return bool(identity.can("system/manage"))


def subscribe(services: Services) -> None:
    services.events.on("content.model.rename", services.get(PrefsService).model_renamed)


module = Module("studio", build=build, subscribe=subscribe,
                routes=[*home.routes, *models_page.routes, *lists.routes, *editor.routes, *find.routes,
                        *assets.routes],  # after editor.routes: /studio/assets/pick, thumb, upload first
                nav=[
                    NavEntry("Content", "/studio/content", "Content", lambda identity: True, order=10),
                    NavEntry("Assets", "/studio/assets", "Content", lambda identity: identity.can("assets/read"),
                             order=20),
                    NavEntry("Models", "/studio/models", "Settings", _manager, order=80),
                ])
