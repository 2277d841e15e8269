"""The management API: models, roles, keys, locales; and the OpenAPI
document, merged from what every module declares."""

from __future__ import annotations

from typing import Any

from quire.catalogue import AFTER, Audit, names, spec, text
from quire.modules import Module
from quire.system import openapi, routes

# the events it sends (catalogue.py; docs/hooks.md describes each)
SENT = [
    # sent by `quire export` and `quire import` (bundle.py)
    spec("bundle.export", AFTER, "parts", "identity", sync=True, resource="bundle",
         audit=Audit("export", lambda payload, services: {"parts": names(payload["parts"])})),
    spec("bundle.import", AFTER, "counts", "identity", sync=True, resource="bundle",
         audit=Audit("import", lambda payload, services: {"counts": _counts(payload["counts"])})),
]


def _counts(counts: dict[str, Any]) -> dict[str, Any]:
    return {text(k): v for k, v in counts.items()}


module = Module("system", events=SENT, routes=routes.routes, openapi=openapi.paths,
                permissions=("system/metrics",))
