"""Translations' part of renaming a locale code: every project holding the
code (in its locales and its keys' values), one project a unit."""

from __future__ import annotations

from typing import Any

from quire.content.locales import RenamePart
from quire.l10n.service import L10nService, canonical_locale


def rename_part(l10n: L10nService) -> RenamePart:
    def units(old: str) -> list[str]:
        code = canonical_locale(old)
        return sorted(p["name"] for p in l10n.projects.find() if code in p["locales"])

    def rename(unit: str, old: str, new: str) -> None:
        was, now = canonical_locale(old), canonical_locale(new)
        project = l10n.find(unit)
        if project is None or now is None or was not in project["locales"]:
            return
        locales = [now if loc == was else loc for loc in project["locales"] if loc != now]
        keys = {key: _renamed(values, was, now) for key, values in project["keys"].items()}
        l10n.projects.replace({**project, "locales": locales, "keys": keys})

    return RenamePart("l10n", units, rename)


def _renamed(values: dict[str, Any], was: str | None, now: str) -> dict[str, Any]:
    out = {}
    for loc, text in values.items():
        if loc == was:
            out[now] = text
        elif loc != now:
            out[loc] = text
    return out
