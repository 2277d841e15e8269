"""Assets: uploaded files, their metadata, and resized images."""

from __future__ import annotations

from quire import config
from quire.assets import openapi, presets, routes
from quire.assets.service import AssetService
from quire.files import open_files
from quire.modules import Module, Services


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


module = Module("assets", build=build, routes=routes.routes, openapi=openapi.paths,
                permissions=("assets/read", "assets/upload", "assets/edit", "assets/delete"))
