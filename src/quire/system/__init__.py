"""The management API: models, roles, keys, locales; and the OpenAPI
document, merged from what every module declares."""

from __future__ import annotations

from quire.modules import Module
from quire.system import openapi, routes

module = Module("system", routes=routes.routes, openapi=openapi.paths)
