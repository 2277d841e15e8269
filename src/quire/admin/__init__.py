"""The admin interface: login, dashboard, API keys, users, the playground.
It builds no services of its own: it uses those of auth and content."""

from quire.admin import routes
from quire.modules import Module

module = Module("admin", routes=routes.routes)
