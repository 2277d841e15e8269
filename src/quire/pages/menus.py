"""Menus (collection `pages/menus`) and the one settings document
(`pages/settings`, id `settings`).

A menu link to a page is stored as `pages://<id>` and answered with that
page's route in the request's locale (`route`); a link to anything else
answers its `url` as `route`. Inactive links, and links to pages that are
gone or not published, are left out with their children. A link without a
title takes the page's title.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.bundleparts import BundlePart, Checked, check_list
from quire.content.fields import is_empty
from quire.errors import NotFound, PreconditionFailed, ValidationError
from quire.events import Events, refusals_as_412
from quire.ids import new_id
from quire.pages import routing
from quire.pages.service import MANAGE, READ, PagesService, localize_page
from quire.pages.validate import (
    PAGE_LINK,
    SETTINGS_KEYS,
    check_menu,
    check_settings,
    page_ids,
)
from quire.schemaparts import Effect, SchemaPart, without
from quire.store import Store

MENUS = "pages/menus"
SETTINGS = "pages/settings"


class MenuService:
    def __init__(self, store: Store, pages: PagesService, events: Events) -> None:
        self.store = store
        self.pages = pages
        self.events = events
        self.menus = store.collection(MENUS)
        self.settings_coll = store.collection(SETTINGS)

    # -- menus ------------------------------------------------------------

    def all(self, locale: str | None, identity: Identity) -> list[dict[str, Any]]:
        return orjson.loads(self.all_json(locale, identity))

    def all_json(self, locale: str | None, identity: Identity) -> bytes:
        identity.require(READ)
        return self.pages.answers.fetch(("menus", locale), lambda: orjson.dumps(self._resolve(
            self.menus.find(None, [(("name",), 1)]), locale)))

    def get(self, name: str, locale: str | None, identity: Identity) -> dict[str, Any]:
        return orjson.loads(self.get_json(name, locale, identity))

    def get_json(self, name: str, locale: str | None, identity: Identity) -> bytes:
        identity.require(READ)
        return self.pages.answers.fetch(("menu", name, locale), lambda: orjson.dumps(self._menu(name, locale)))

    def _menu(self, name: str, locale: str | None) -> dict[str, Any]:
        menu = self.menus.find_one({"name": name})
        if menu is None:
            raise NotFound("Menu not found")
        return self._resolve([menu], locale)[0]

    def _resolve(self, menus: list[dict[str, Any]], locale: str | None) -> list[dict[str, Any]]:
        ids = [i for menu in menus for i in page_ids(menu.get("links") or [])]
        codes = self.pages.codes()
        pages = {i: localize_page(p, codes, locale or routing.DEFAULT)
                 for i, p in self.pages.published_links(ids).items()}
        return [{**m, "links": self._links(m.get("links") or [], pages, codes, locale)} for m in menus]

    def _links(
        self, links: list[dict[str, Any]], pages: dict[str, Any], codes: list[str], locale: str | None
    ) -> list[dict[str, Any]]:
        out = []
        for link in links:
            if link.get("active", True) is False:
                continue
            url = link.get("url", "")
            match = PAGE_LINK.match(url)
            page = pages.get(match.group(1)) if match else None
            if match and page is None:
                continue
            answer = {k: v for k, v in link.items() if not k.startswith("title_")}
            if locale in codes and not is_empty(link.get(f"title_{locale}")):
                answer["title"] = link[f"title_{locale}"]
            if page is not None:
                answer["route"] = page.get("_r") or "/"
                if is_empty(answer.get("title")):
                    answer["title"] = page.get("title")
            else:
                answer["route"] = url
            answer.setdefault("active", True)
            answer["children"] = self._links(link.get("children") or [], pages, codes, locale)
            out.append(answer)
        return out

    def stored_all(self, identity: Identity) -> list[dict[str, Any]]:
        """Every menu as stored (inactive links too), by name: the studio."""
        identity.require(MANAGE)
        return self.menus.find(None, [(("name",), 1)])

    def stored(self, name: str, identity: Identity) -> dict[str, Any]:
        """One menu as stored: what the studio's editor changes."""
        identity.require(MANAGE)
        menu = self.menus.find_one({"name": name}) if isinstance(name, str) else None
        if menu is None:
            raise NotFound("Menu not found")
        return menu

    async def save(self, data: Any, identity: Identity) -> dict[str, Any]:
        """Create or replace the menu named `data.name`; with `data._id`,
        change that menu (a rename, for example)."""
        identity.require(MANAGE)
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        clean = check_menu(data, self.pages.codes(), self.pages.exists)
        now = int(time.time())
        async with self.store.atomic():
            menu_id = data.get("_id")
            if menu_id is not None:
                current = self.menus.get(menu_id) if isinstance(menu_id, str) else None
                if current is None:
                    raise NotFound("Menu not found")
            else:
                if "name" not in clean:
                    raise ValidationError("menu", {"name": "is required"})
                current = self.menus.find_one({"name": clean["name"]})
            menu = {**(current or {"_id": new_id(), "label": clean.get("name"), "links": [], "_created": now}),
                    **clean, "_modified": now}
            other = self.menus.find_one({"name": menu["name"]})
            if other is not None and other["_id"] != menu["_id"]:
                raise ValidationError("menu", {"name": f"{menu['name']} is the name of another menu"})
            with refusals_as_412():
                await self.events.emit("pages.menu.save", menu=menu, identity=identity)
            self.menus.replace(menu)
        return menu

    async def delete(self, name: str, identity: Identity) -> None:
        identity.require(MANAGE)
        async with self.store.atomic():
            menu = self.menus.find_one({"name": name})
            if menu is None:
                raise NotFound("Menu not found")
            with refusals_as_412():
                await self.events.emit("pages.menu.remove", menu=menu, identity=identity)
            self.menus.delete(menu["_id"])

    # -- settings ---------------------------------------------------------

    def settings(self, locale: str | None, identity: Identity) -> dict[str, Any]:
        identity.require(READ)
        return self._settings(locale)

    def stored_settings(self, identity: Identity) -> dict[str, Any]:
        """The settings with every locale's keys, for who may change them
        (the studio's form), as `settings` answers them without a locale."""
        identity.require(MANAGE)
        return self._settings(None)

    def _settings(self, locale: str | None) -> dict[str, Any]:
        doc = self.settings_coll.get("settings") or {}
        codes = self.pages.codes()
        out: dict[str, Any] = {key: doc.get(key) or {} for key in SETTINGS_KEYS}
        for code in codes:
            if f"seo_{code}" in doc:
                out[f"seo_{code}"] = doc[f"seo_{code}"]
        if locale:
            seo = doc.get(f"seo_{locale}") if locale in codes else None
            if isinstance(seo, dict):
                out["seo"] = {**out["seo"], **{k: v for k, v in seo.items() if not is_empty(v)}}
            for code in codes:
                out.pop(f"seo_{code}", None)
        out["locales"] = self.pages.content.locales.list()
        out["_modified"] = doc.get("_modified")
        return out

    def settings_schema_part(self) -> SchemaPart:
        """The page settings in schema snapshots: one entry, `settings`,
        holding the stored keys (every locale's)."""
        def entries() -> list[dict[str, Any]]:
            doc = self.settings_coll.get("settings")
            if doc is None:
                return []
            return [{"name": "settings", **without(doc, "_id", "_modified")}]

        async def apply(current: dict[str, Any] | None, wanted: dict[str, Any] | None, identity: Any) -> None:
            keys = set(without(current or {}, "name")) | set(without(wanted or {}, "name"))
            # every key the wanted entry lacks is emptied (sent as null)
            await self.save_settings({k: (wanted or {}).get(k) for k in keys}, identity)

        return SchemaPart("pageSettings", entries, lambda current, wanted: Effect(), apply)

    async def save_settings(self, data: Any, identity: Identity) -> dict[str, Any]:
        """Change the keys sent (a key sent as null is emptied)."""
        identity.require(MANAGE)
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        clean = check_settings(data, self.pages.codes())
        async with self.store.atomic():
            previous = self.settings_coll.get("settings")
            doc = {**(previous or {"_id": "settings"}), **clean}
            doc = {k: v for k, v in doc.items() if v is not None}
            doc["_modified"] = int(time.time())
            with refusals_as_412():
                await self.events.emit("pages.settings.save", settings=doc, identity=identity)
            self.settings_coll.replace(doc)
            with refusals_as_412():  # inside the transaction, as stored (revisions)
                await self.events.emit("pages.settings.saved", settings=doc, previous=previous, identity=identity)
        return self._settings(None)

    # -- bundles ----------------------------------------------------------

    def bundle_parts(self) -> list[BundlePart]:
        """Menus and the settings document in export/import bundles, stored
        as `save` and `save_settings` store them."""
        return [
            BundlePart("menus", "menus", lambda: self.menus.find(), _check_bundle_menus, self._load_menus),
            BundlePart("pageSettings", None, lambda: self.settings_coll.get("settings"),
                       lambda value, checked: value, self._load_settings),
        ]

    async def _load_menus(self, menus: list[dict[str, Any]], identity: Identity) -> int:
        for menu in menus:
            # by name: ids of menus are not referenced anywhere
            await self.save({k: v for k, v in menu.items() if k != "_id"}, identity)
        return len(menus)

    async def _load_settings(self, settings: Any, identity: Identity) -> int:
        if settings:
            await self.save_settings(settings, identity)
        return 0


def _check_bundle_menus(value: Any, checked: Checked) -> list[dict[str, Any]]:
    return check_list(value, "menus", "menu")
