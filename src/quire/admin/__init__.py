"""The admin interface: login, dashboard, API keys, users, the playground.
It builds no services of its own: it uses those of auth and content."""

from quire.admin import routes
from quire.auth.service import Identity
from quire.modules import Module, NavEntry


def _manager(identity: Identity) -> bool:
    return identity.can("system/manage")


module = Module("admin", routes=routes.routes, nav=[
    NavEntry("Dashboard", "/", "", lambda identity: True, order=0),
    NavEntry("API keys", "/admin/keys", "Settings", _manager, order=86),
    NavEntry("Users", "/admin/users", "Settings", _manager, order=88),
    NavEntry("API playground", "/system/api", "Settings", _manager, order=90),
])
