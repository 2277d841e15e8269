"""Search's part of renaming a locale code: every index listing the code
gets the new one in its place and is rebuilt (its documents of that locale
are written under the new code), one index a unit."""

from __future__ import annotations

from quire.content.locales import RenamePart
from quire.searchmod.service import SearchService


def rename_part(search: SearchService) -> RenamePart:
    def units(old: str) -> list[str]:
        return sorted(d["name"] for d in search.indexes.find() if old in d.get("locales", []))

    def rename(unit: str, old: str, new: str) -> None:
        index = search.indexes.get(unit)
        if index is None or old not in index.get("locales", []):
            return
        locales = [new if loc == old else loc for loc in index["locales"] if loc != new]
        search.indexes.update(unit, {"locales": locales, "build": index["build"] + 1})

    async def after(unit: str, old: str, new: str) -> None:
        if search.indexes.get(unit) is not None:
            await search.build(unit)

    return RenamePart("searchmod", units, rename, after)
