"""Suggested alt text and tags for uploaded images from a vision model
(docs/ai.md#alt-text-and-tags); off unless `[vision] url` is set."""

from __future__ import annotations

from typing import Any

from quire.assets.service import AssetService
from quire.modules import Module, Services
from quire.openapi import op, param
from quire.vision import routes
from quire.vision.service import JOB, LANE, VisionService


def build(services: Services) -> None:
    vision = services.add("vision", VisionService(services.store, services.settings.vision,
                                                  services.get(AssetService), services.jobs))
    services.jobs.lane(LANE, 1)  # a slow model never holds the lanes of webhooks or publishing
    services.jobs.handle(JOB, vision.run, max_attempts=2, retry_seconds=60, lane=LANE,
                         attempt_seconds=services.settings.vision.timeout_seconds + 60)


def subscribe(services: Services) -> None:
    services.events.on("assets.asset.save", services.get(VisionService).uploaded)


def paths() -> dict[str, Any]:
    asset = param("id", "path", "string", "The asset's id", required=True)
    return {"/api/assets/suggestion/{id}": {"post": op(
        "Accept ({accept: true}: its alt text where the asset has none, its tags added) or dismiss ({accept: "
        "false}) an asset's suggested alt text and tags", [asset], (400, 403, 404), body=True, tag="assets")}}


module = Module("vision", build=build, subscribe=subscribe, routes=routes.routes, openapi=paths)
