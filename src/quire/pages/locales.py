"""Pages' part of renaming a locale code: the per-locale keys of pages
(title, slug, data, seo and the route `_r_<code>`), menu link titles
(`title_<code>`, at any depth) and the settings' `seo_<code>`."""

from __future__ import annotations

from typing import Any

from quire.content.locales import RenamePart
from quire.pages.menus import MenuService
from quire.pages.service import PAGES, PagesService
from quire.pages.validate import LOCALIZED

UNITS = ("pages", "menus", "settings")


def rename_part(menus: MenuService) -> RenamePart:
    store = menus.store

    def units(old: str) -> list[str]:
        return list(UNITS)

    def rename(unit: str, old: str, new: str) -> None:
        if unit == "pages":
            moves = {f"{name}_{old}": f"{name}_{new}" for name in LOCALIZED}
            store.collection(PAGES).move_keys({**moves, f"_r_{old}": f"_r_{new}"})
        elif unit == "menus":
            for menu in menus.menus.find():
                links = _links(menu.get("links") or [], old, new)
                if links != menu.get("links"):
                    menus.menus.replace({**menu, "links": links})
        elif unit == "settings":
            menus.settings_coll.move_keys({f"seo_{old}": f"seo_{new}"})

    return RenamePart("pages", units, rename)


def _links(links: list[Any], old: str, new: str) -> list[Any]:
    out = []
    for link in links:
        if isinstance(link, dict):
            link = dict(link)
            if f"title_{old}" in link:
                link[f"title_{new}"] = link.pop(f"title_{old}")
            if isinstance(link.get("children"), list):
                link["children"] = _links(link["children"], old, new)
        out.append(link)
    return out


def pages_in_locale(pages: PagesService, code: str) -> int:
    counts, _ = pages.store.collection(PAGES).count_non_empty({"held": [f"{n}_{code}" for n in LOCALIZED]})
    return counts["held"]
