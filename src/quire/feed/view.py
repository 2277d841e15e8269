"""What one reader sees of the change log: the models its key may read,
an optional MongoDB filter with the REST semantics, and the item as the
REST API answers it now (published items only, as to every reader of
the delivery API).

A record turns into a change as the reader should act on it: `save`
with the item when the item is in the view now; `remove` when it is not
but was published before the change (deleted, unpublished, or no longer
matching the filter); nothing when the item was never in a reader's view
(a draft's save tells no reader anything). Several records of one item
in a batch become one change, at the place of the last: the item is read
once, as it is now."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.content.reads import ReadOptions
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest, Forbidden, NotFound, Unauthorized
from quire.feed.log import ChangeLog
from quire.modules import FeedKind, Services


@dataclass(frozen=True)
class View:
    """A reader's view of the feed: the models it follows and how it
    reads them (`key` is the same for readers that see the same)."""

    identity: Identity
    models: tuple[str, ...]
    filter: Any = None
    locale: str | None = None
    populate: int = 0
    fields: Any = None

    @property
    def key(self) -> bytes:
        return orjson.dumps([self.identity.role, sorted(self.identity.permissions), self.models, self.filter,
                             self.locale, self.populate, self.fields], option=orjson.OPT_SORT_KEYS)


class TooOld(Exception):
    """The reader's position is before what the log still holds."""


@dataclass(frozen=True)
class Readers:
    """How the feed reads what changed: content items through the content
    service, the other kinds through what their modules declare."""

    content: ContentService
    services: Services
    kinds: dict[str, FeedKind]


def make_view(readers: Readers, identity: Identity, models: list[str] | None, spec: Any,
              locale: str | None, populate: int, fields: Any = None) -> View:
    """The view of a request: every model and kind (`@pages`) the key may
    read when `models` is None, else those named (each readable, as on
    REST: 404, 401 or 403)."""
    content = readers.content
    if models is None:
        names = [m.name for m in content.models.all() if identity.can(f"content/{m.name}/read")]
        names += [k.name for k in readers.kinds.values() if identity.can(k.permission)]
    else:
        if not models or len(models) > 100:
            raise BadRequest("models must name 1 to 100 models")
        for name in models:
            if name.startswith("@"):
                kind = readers.kinds.get(name)
                if kind is None:
                    raise NotFound(f"The feed has no {name[:64]}; it has {', '.join(sorted(readers.kinds))}")
                identity.require(kind.permission)
            else:
                content.readable(name, identity)
        names = sorted(set(models))
    if spec is not None and not isinstance(spec, dict):
        raise BadRequest("filter must be an object")
    if isinstance(fields, dict) and "_id" in fields and not fields["_id"]:
        fields = {k: v for k, v in fields.items() if k != "_id"}  # a change names its item: `_id` stays
    view = View(identity, tuple(names), spec, locale, populate, fields)
    for name in (n for n in names if not n.startswith("@")):  # a bad filter fails now, not on a change
        content.list_page(name, ReadOptions(filter={"$and": [spec, {"_id": None}]} if spec else {"_id": None},
                                            fields=fields, limit=0), identity)
    return view


def changes(readers: Readers, log: ChangeLog, view: View, since: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """The reader's changes after `since`: (changes, the number to go on
    from). At most `limit` records are read. TooOld when records after
    `since` were dropped by age."""
    if since < log.pruned():
        raise TooOld
    top = log.latest()  # read first: every record up to it has committed, so the query below sees it
    if not view.models:
        return [], max(since, top)
    records = [r for r in log.after(since, limit, list(view.models)) if r["seq"] <= top]
    if len(records) < limit:  # every record of these models up to `top` was read
        return (shown(readers, view, records) if records else []), max(since, top)
    return shown(readers, view, records), records[-1]["seq"]


def shown(readers: Readers, view: View, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records as the reader's changes, in order (see the module's text)."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    was: dict[tuple[str, str], bool] = {}
    for record in records:
        key = (record["model"], record["id"])
        was[key] = was.get(key, False) or bool(record.get("was")) or bool(record.get("now"))
        last.pop(key, None)
        last[key] = record  # insertion order: the place of the item's last record
    by_model: dict[str, list[str]] = {}
    for model, item_id in last:
        by_model.setdefault(model, []).append(item_id)
    items: dict[tuple[str, str], dict[str, Any]] = {}
    for model, ids in by_model.items():
        kind = readers.kinds.get(model)
        if kind is not None:
            try:
                found = kind.read(readers.services, ids, view.locale, view.identity)
            except ApiError:  # the key lost the permission since the stream began, or the locale is not one of it
                found = {}
            items.update(((model, key), doc) for key, doc in found.items())
        else:
            for item in _read(readers.content, view, model, ids):
                items[(model, item["_id"])] = item
    out = []
    for key, record in last.items():
        change = {"seq": record["seq"], "event": record["event"], "model": record["model"], "id": record["id"],
                  "who": record["who"], "at": record["at"]}
        if key in items:
            out.append({**change, "change": "save", "item": items[key]})
        elif was[key]:
            out.append({**change, "change": "remove"})
    return out


def _read(content: ContentService, view: View, model: str, ids: list[str]) -> list[dict[str, Any]]:
    """The items of `ids` in the view, as the REST list answers them."""
    spec: dict[str, Any] = {"_id": {"$in": ids}}
    if view.filter:
        spec = {"$and": [view.filter, spec]}
    opts = ReadOptions(filter=spec, limit=0, locale=view.locale, populate=view.populate, fields=view.fields)
    try:
        page = content.list_page(model, opts, view.identity)
    except (Forbidden, Unauthorized, NotFound):
        return []  # the key lost the permission, or the model went, since the stream began
    return [orjson.loads(row) for row in page.rows]
