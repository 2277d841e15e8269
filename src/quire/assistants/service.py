"""What AI assistants may do through the Model Context Protocol
(docs/ai.md): read models, items, pages, assets and translations as the
key's role may, and write items as drafts only.

Safe by construction: every call runs as the key's identity with the
publish action withheld (`Identity.withheld`), unless an admin allowed
publishing with that key (`mcp_publish`), so no role, not even admin,
makes an assistant's write live; writes go through `save_draft` (a new
item is created unpublished, a published item gets a draft beside it),
each answered with its revision and a preview link. Writes are bounded:
items per call and write calls per minute per key. Item content handed
to the assistant is data written by people, never instructions to it
(the tools' descriptions say so)."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, replace
from typing import Any

import orjson

from quire.assets.service import AssetService, Upload
from quire.auth.permissions import content as perm
from quire.auth.service import AuthService, Identity
from quire.config import AssistantsSettings
from quire.content.models import ModelService
from quire.content.preview import DEFAULT_SECONDS
from quire.content.reads import ReadOptions
from quire.content.service import ContentService
from quire.errors import BadRequest, Forbidden, NotFound, TooManyRequests
from quire.l10n.service import L10nService
from quire.modules import Services
from quire.pages.service import PageOptions, PagesService
from quire.ratelimit import RateLimiter

RATES = "assistants/rates"
MAX_LIST = 50  # items, pages or assets one read answers
WITHHELD = frozenset({"publish"})
# a draft never carries these: they make an item live (or change when it does)
LIVE_KEYS = ("_state", "_publish_at", "_unpublish_at")


@dataclass(frozen=True)
class Caller:
    """Who is calling (the key's identity, as an assistant), and the site."""

    identity: Identity
    services: Services
    client: str  # the assistant's name, as it says it (or its User-Agent)


def assistant_identity(identity: Identity, auth: AuthService, client: str) -> Identity:
    """The key's identity as an assistant's: named so in revisions and the
    audit log, and without the publish action unless the key allows it."""
    name = f"{identity.key_name or identity.key_id} via MCP ({client})"
    withheld = frozenset() if auth.assistants_publish(identity.key_id) else WITHHELD
    return replace(identity, key_name=name[:200], withheld=withheld)


class Assistants:
    """The tools' work, on one site's services (no protocol here)."""

    def __init__(self, services: Services, settings: AssistantsSettings) -> None:
        self.services = services
        self.settings = settings
        self.limiter = RateLimiter(services.store, settings.writes_per_minute, 60, RATES)

    @property
    def content(self) -> ContentService:
        return self.services.get(ContentService)

    @property
    def models(self) -> ModelService:
        return self.services.get(ModelService)

    # -- reading ------------------------------------------------------------

    def list_models(self, identity: Identity) -> list[dict[str, Any]]:
        return [_model_shown(m.to_json()) for m in self.models.all() if identity.can(perm(m.name, "read"))]

    def model(self, name: str, identity: Identity) -> dict[str, Any]:
        model = self.content.readable(_text(name, "model"), identity)
        return _model_shown(model.to_json())

    def find_items(self, identity: Identity, model: str, filter: Any = None, sort: Any = None, limit: int = 20,
                   skip: int = 0, locale: str | None = None, search: str | None = None,
                   drafts: bool = False) -> dict[str, Any]:
        """A page of a model's items (published ones; every state with
        `drafts`, for keys that may update the model)."""
        name = self.content.readable(_text(model, "model"), identity).name
        limit = _bounded(limit, "limit", 1, MAX_LIST)
        skip = _bounded(skip, "skip", 0, 10_000_000)
        if search:
            found = self.services.item_search
            if found is None or not found.covers(name):
                raise BadRequest(f"No search index covers {name}: use filter instead", fields=["search"])
            ids, _ = found.matching(name, _text(search, "search")[:200], MAX_LIST)
            filter = {"$and": [filter, {"_id": {"$in": ids}}]} if filter else {"_id": {"$in": ids}}
        opts = ReadOptions(filter=filter, sort=sort, limit=limit, skip=skip, locale=locale, drafts=bool(drafts))
        page = self.content.list_page(name, opts, identity)
        return {"items": [orjson.loads(row) for row in page.rows], "total": page.total, "skip": skip, "limit": limit}

    def item(self, identity: Identity, model: str, item_id: str | None = None, draft: bool = True,
             locale: str | None = None) -> dict[str, Any]:
        """An item: its draft (or the item in any state) for keys that may
        update the model, else the published item."""
        name = _text(model, "model")
        if item_id is not None:
            _text(item_id, "id")
        opts = ReadOptions(locale=locale)
        if draft and identity.can(perm(name, "update")):
            item, rev, is_draft = self.content.item_or_draft(name, item_id, opts, identity)
            return {"item": item, "rev": rev, "draft": is_draft}
        return {"item": self.content.item(name, item_id, opts, identity), "draft": False}

    def pages(self, identity: Identity, locale: str | None = None, limit: int = 20, skip: int = 0) -> dict[str, Any]:
        pages = self.services.get(PagesService)
        found, total = pages.find(PageOptions(locale=locale, limit=_bounded(limit, "limit", 1, MAX_LIST),
                                              skip=_bounded(skip, "skip", 0, 10_000_000)), identity)
        return {"pages": found, "total": total}

    def page(self, identity: Identity, page_id: str | None = None, route: str | None = None,
             locale: str | None = None) -> dict[str, Any]:
        pages = self.services.get(PagesService)
        if page_id:
            return pages.by_id(_text(page_id, "id"), PageOptions(locale=locale), identity)
        if route:
            return pages.by_route(_text(route, "route"), PageOptions(locale=locale), identity)
        raise BadRequest("Name a page by id or by route", fields=["id", "route"])

    def assets(self, identity: Identity, search: str | None = None, limit: int = 20, skip: int = 0
               ) -> dict[str, Any]:
        identity.require("assets/read")
        assets = self.services.get(AssetService)
        limit, skip = _bounded(limit, "limit", 1, MAX_LIST), _bounded(skip, "skip", 0, 10_000_000)
        if search:
            found, total = assets.titled(_text(search, "search")[:200], None, limit, skip)
        else:
            found, found_total = assets.find(None, {"_created": -1}, limit, skip, None)
            total = found_total or 0
        return {"assets": found, "total": total}

    def asset(self, identity: Identity, asset_id: str) -> dict[str, Any]:
        identity.require("assets/read")
        return self.services.get(AssetService).get(_text(asset_id, "id"))

    def translations(self, identity: Identity, project: str | None = None, locale: str | None = None
                     ) -> dict[str, Any] | list[dict[str, Any]]:
        l10n = self.services.get(L10nService)
        if not project:
            return l10n.list_projects(identity)
        if locale:
            return l10n.one_locale(_text(project, "project"), _text(locale, "locale"), identity)
        return l10n.full(_text(project, "project"), identity)

    def preview_link(self, identity: Identity, model: str, item_id: str | None = None) -> dict[str, Any]:
        return self.content.preview_link(_text(model, "model"), item_id, identity, DEFAULT_SECONDS)

    # -- writing: drafts only -------------------------------------------------

    async def save_drafts(self, caller: Caller, model: str, items: Any) -> dict[str, Any]:
        """Each of `items` (at most `max_items_per_call`) saved as a draft:
        new ones (no `_id`) created unpublished, existing ones changed in
        their draft; each answered with its revision and preview links.
        Saved one by one: a refused item is reported with its reason and
        the others are kept."""
        identity = caller.identity
        name = self.content.readable(_text(model, "model"), identity).name
        if not isinstance(items, list) or not items:
            raise BadRequest("items is a list of the items' data (objects)", fields=["items"])
        if len(items) > self.settings.max_items_per_call:
            raise BadRequest(f"At most {self.settings.max_items_per_call} items per call", fields=["items"])
        for n, data in enumerate(items):
            if not isinstance(data, dict):
                raise BadRequest(f"items[{n}] is not an object", fields=["items"])
            if len(orjson.dumps(data)) > self.services.max_body:
                raise BadRequest(f"items[{n}] is larger than the API takes ({self.services.max_body:,} bytes)",
                                 fields=["items"])
            live = sorted(k for k in LIVE_KEYS if k in data)
            if live and not identity.can(perm(name, "publish")):
                raise Forbidden(f"items[{n}]: {', '.join(live)} would make it live; an assistant's writes are "
                                "drafts (publishing is for people, or a key an admin allowed)")
        await self.count_write(identity)
        saved: list[dict[str, Any]] = []
        for data in items:
            try:
                draft = await self.content.save_draft(name, data, identity)
            except (BadRequest, Forbidden, NotFound) as exc:
                if len(items) == 1:  # one item asked for: its refusal is the call's
                    raise
                saved.append(exc.body())  # its reason, as the API says it (the fields named)
                continue
            saved.append(self._answered(identity, name, draft))
        return {"model": name, "saved": saved}

    def _answered(self, identity: Identity, model: str, draft: dict[str, Any]) -> dict[str, Any]:
        item_id = draft.get("_id")
        try:
            links = self.content.preview_link(model, item_id, identity, DEFAULT_SECONDS)
            preview = {"links": links["links"], "expires": links.get("expires")}
        except (NotFound, BadRequest):
            preview = {"links": []}
        base = self.services.space_name
        studio = f"/{base}" if base else ""
        return {"_id": item_id, "rev": draft.get("_rev"), "state": "draft", "item": draft, "preview": preview,
                "studio": f"{studio}/studio/content/{model}/item/{item_id}"}

    async def upload_asset(self, caller: Caller, filename: str, content_base64: str, title: str = "",
                           alt: str = "") -> dict[str, Any]:
        identity = caller.identity
        identity.require("assets/upload")
        name = _text(filename, "filename")
        try:
            data = base64.b64decode(_text(content_base64, "content_base64"), validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest("content_base64 is not base64", fields=["content_base64"]) from None
        if len(data) > self.settings.max_upload_bytes:
            raise BadRequest(f"The file is larger than {self.settings.max_upload_bytes:,} bytes",
                             fields=["content_base64"])
        await self.count_write(identity)
        meta: dict[str, Any] = {"tags": ["assistant"]}
        if title:
            meta["title"] = _text(title, "title")[:200]
        if alt:
            meta["altText"] = _text(alt, "alt")[:500]
        stored = await self.services.get(AssetService).upload([Upload(name, data)], meta, identity)
        return stored[0]

    async def publish(self, caller: Caller, model: str, item_id: str | None = None) -> dict[str, Any]:
        """Publish an item's draft: only with a key an admin allowed."""
        identity = caller.identity
        name = _text(model, "model")
        if not identity.can(perm(name, "publish")):
            raise Forbidden("Assistants may not publish with this key: an admin can allow it in the key's "
                            "settings (mcp_publish)")
        await self.count_write(identity)
        return await self.content.publish(name, item_id, identity)

    async def count_write(self, identity: Identity) -> None:
        wait = await self.limiter.hit("mcp-writes", identity.key_id or "")
        if wait is not None:
            raise TooManyRequests(f"Too many writes from assistants with this key: try again in {wait} s",
                                  retry_after=wait)


def _model_shown(model: dict[str, Any]) -> dict[str, Any]:
    """A model as an assistant needs it: its fields' names, types, labels,
    whether required or per locale, and their options."""
    fields = [{k: f[k] for k in ("name", "type", "label", "info", "required", "i18n", "opts") if f.get(k)}
              for f in model.get("fields", [])]
    return {"name": model["name"], "type": model.get("type"), "label": model.get("label"),
            "info": (model.get("meta") or {}).get("info") or model.get("info"), "fields": fields}


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadRequest(f"{name} is a non-empty text", fields=[name])
    if "\x00" in value:
        raise BadRequest(f"{name} holds a NUL character", fields=[name])
    return value


def _bounded(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"{name} is a whole number from {low} to {high}", fields=[name])
    return value
