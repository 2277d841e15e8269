"""The management API: models, roles, keys, locales; and the OpenAPI
document, merged from what every module declares."""

from __future__ import annotations

from quire.catalogue import AFTER, spec
from quire.modules import Module
from quire.system import openapi, routes

# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    # sent by `quire export` and `quire import` (bundle.py)
    spec("bundle.export", AFTER, "parts", "identity", sync=True),
    spec("bundle.import", AFTER, "counts", "identity", sync=True),
]


module = Module("system", events=SENT, routes=routes.routes, openapi=openapi.paths)
