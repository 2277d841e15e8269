"""The management API: models, roles, keys, locales; and the OpenAPI
document, merged from what every module declares."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from quire.catalogue import AFTER, Audit, names, spec, text
from quire.modules import Module, Panel, Services
from quire.system import openapi, routes
from quire.system.activity import Sampler, last_hour
from quire.system.activity_charts import charts

HERE = Path(__file__).parent

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


def build(services: Services) -> None:
    sampler = services.add("activity", Sampler(services))
    services.on_start(sampler.start)
    services.on_close(sampler.stop)


def panels(services: Services, identity: Any) -> list[Panel]:
    """The last hour's activity, for those who may read the metrics."""
    if not identity.can("system/metrics"):
        return []
    hour = last_hour(services, time.time())
    recorded = [m for m in hour if "requests" in m]
    return [Panel("system/activity.html", {
        "recorded": bool(recorded), "hour": hour, "charts": charts(hour),
        "first": int(hour[0]["at"]), "last": int(hour[-1]["at"] + 60)}, order=90)]


module = Module("system", events=SENT, build=build, routes=routes.routes, openapi=openapi.paths,
                permissions=("system/metrics",), panels=panels, templates=HERE / "templates")
