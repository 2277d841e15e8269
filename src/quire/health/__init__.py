"""The health check, `GET /api/system/healthcheck`: a load balancer's probe,
answered without a key. The smallest module, and the example in
docs/architecture.md of how to add one."""

from __future__ import annotations

from quire.assets.service import AssetService
from quire.health import openapi, routes
from quire.health.service import HealthService
from quire.modules import Module, Services


def build(services: Services) -> None:
    services.add("health", HealthService(services.store, services.get(AssetService).uploads))


module = Module("health", build=build, routes=routes.routes, openapi=openapi.paths)
