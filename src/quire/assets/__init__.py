"""Assets: uploaded files, their metadata, and resized images."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire import config
from quire.assets import imported, openapi, presets, routes, screens
from quire.assets.service import AssetService
from quire.catalogue import BEFORE, INSIDE, REMOVE, WRITE, Audit, spec, text
from quire.files import open_files
from quire.modules import FeedKind, Module, NavEntry, Services


def check_settings(settings: config.Settings) -> None:
    """Image presets are checked with the settings, so a typo stops the start."""
    presets.check(settings.assets.presets, settings.assets.max_output_size)


config.add_check("assets.presets", check_settings)


def build(services: Services) -> None:
    settings = services.settings
    files = open_files(settings.assets, settings.data_dir)
    services.on_close(files.close)
    assets = services.add("assets", AssetService(services.store, services.cache, files, services.events,
                                                 settings.assets))
    assets.ensure_indexes()


HERE = Path(__file__).parent

# the events it sends (catalogue.py; docs/hooks.md describes each)
def _created_path(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {} if payload["is_update"] else _path(payload, services)


def _path(payload: dict[str, Any], services: Any) -> dict[str, Any]:
    return {"path": text(payload["asset"].get("path", ""))}


SENT = [
    spec("assets.asset.save", BEFORE, "asset", "is_update", "identity", delivered=True,
         resource="assets", subject="asset", change=WRITE, audit=Audit("asset.*", _created_path)),
    spec("assets.asset.remove", INSIDE, "asset", "identity", delivered=True,
         resource="assets", subject="asset", change=REMOVE, audit=Audit("asset.delete", _path)),
]


def _read_assets(services: Services, ids: list[str], locale: str | None, identity: Any) -> dict[str, Any]:
    identity.require("assets/read")
    return services.get(AssetService).get_many(ids)


# what the change feed carries of assets (docs/delivery.md)
FEED = [FeedKind("@assets", ("assets.asset.save",), ("assets.asset.remove",), "asset", "assets/read", _read_assets)]


module = Module("assets", events=SENT, feed=FEED, build=build, openapi=openapi.paths, find=screens.find,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates", static=HERE / "static",
                nav=[NavEntry("Assets", "/studio/assets", "Content", lambda identity: identity.can("assets/read"),
                              order=20)],
                permissions=("assets/read", "assets/upload", "assets/edit", "assets/delete"),
                bundle=lambda services: imported.bundle_parts(services.get(AssetService)))
