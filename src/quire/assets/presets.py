"""Named image presets: `[assets.presets]` in quire.toml.

    [assets.presets]
    thumb = { w = 200, h = 200, m = "thumbnail" }
    hero = { w = 1600, m = "fitToWidth", q = 70, mime = "webp" }

A preset is a set of image-endpoint parameters; `/api/assets/image/{id}/thumb`
or `?preset=thumb` uses them, and parameters given in the request win over
the preset's. Checked when the settings load, so a typo stops the start with
a message naming the preset (this module imports no image library for that).
"""

from __future__ import annotations

import re
from typing import Any

from quire.errors import ConfigError, NotFound

MODES = ("thumbnail", "bestFit", "resize", "fitToWidth", "fitToHeight")
OUTPUT_FORMATS = ("gif", "jpeg", "png", "webp", "bmp", "avif")
KEYS = ("m", "w", "h", "q", "mime")
NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check(presets: dict[str, Any], max_output_size: int) -> dict[str, dict[str, str]]:
    """The presets as query parameters (text, as a request would send
    them); ConfigError naming the first wrong one."""
    out: dict[str, dict[str, str]] = {}
    for name, spec in presets.items():
        where = f"setting 'assets.presets.{name}'"
        if not NAME.fullmatch(name):
            raise ConfigError(f"{where}: a preset name is 1-64 letters, digits, '-' or '_'")
        if not isinstance(spec, dict):
            raise ConfigError(f"{where} must be a table like {{w = 200, h = 200, m = \"thumbnail\"}}")
        unknown = sorted(set(spec) - set(KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown keys {', '.join(unknown)} (use {', '.join(KEYS)})")
        for key in ("w", "h", "q"):
            value = spec.get(key)
            if value is None:
                continue
            high = 100 if key == "q" else max_output_size
            if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= high:
                raise ConfigError(f"{where}: {key} must be an integer from 1 to {high}")
        if "w" not in spec and "h" not in spec:
            raise ConfigError(f"{where} needs w or h")
        if spec.get("m", "thumbnail") not in MODES:
            raise ConfigError(f"{where}: m must be one of {', '.join(MODES)}")
        if spec.get("mime", "auto") not in ("auto", *OUTPUT_FORMATS):
            raise ConfigError(f"{where}: mime must be auto or one of {', '.join(OUTPUT_FORMATS)}")
        out[name] = {key: str(value) for key, value in spec.items()}
    return out


def merged(presets: dict[str, dict[str, str]], name: str, params: dict[str, str]) -> dict[str, str]:
    """The preset's parameters with the request's on top (given ones win;
    an empty value counts as not given)."""
    preset = presets.get(name)
    if preset is None:
        shown = name if NAME.fullmatch(name) else name[:64].encode("unicode_escape").decode("ascii")
        raise NotFound(f"Image preset '{shown}' not found")
    return {**preset, **{key: value for key, value in params.items() if value != ""}}
