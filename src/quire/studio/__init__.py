"""The studio's shell: where editors model and write content in the
browser. Pages are rendered on the server (Jinja2, on the layout of
`quire.ui`) with htmx for partial updates and a few small custom elements
for the stateful widgets; every change goes through the same services as
the API.

The shell holds login and logout, the dashboard, the search box, the
session's event stream, the shipped files and the API playground; every
other screen belongs to its module (`<module>/screens.py`), which
declares its routes, sidebar links, templates and files in its `Module`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.auth.sessions import SessionService
from quire.modules import Module, NavEntry, Services
from quire.studio import find, me, shell
from quire.ui.prefs import PrefsService
from quire.ui.presence import PresenceService
from quire.ui.views import ViewService


def build(services: Services) -> None:
    services.add("studio_prefs", PrefsService(services.store))
    services.add("studio_views", ViewService(services.store))
    services.add("studio_presence", PresenceService(services.store, services.get(SessionService)))
    services.find_path = "/studio/find"


def _manager(identity: Any) -> bool:
    return bool(identity.can("system/manage"))


def subscribe(services: Services) -> None:
    services.events.on("content.model.rename", services.get(PrefsService).model_renamed)
    services.events.on("content.model.rename", services.get(ViewService).model_renamed)
    services.events.on("content.model.remove", services.get(ViewService).model_removed)


module = Module("studio", build=build, subscribe=subscribe, routes=[*shell.routes, *find.routes, *me.routes],
                templates=Path(__file__).parent / "templates",
                nav=[
                    NavEntry("Dashboard", "/", "", lambda identity: True, order=0),
                    NavEntry("API playground", "/system/api", "Settings", _manager, order=90),
                ])
