"""The write side of content items: checking sent fields, saving (create,
update, a singleton's one item) and deleting, with their events, each in
its own transaction."""

from __future__ import annotations

import time
from typing import Any

from quire.auth.permissions import content as perm
from quire.auth.service import Identity
from quire.content.fields import FieldError, check_value, is_empty
from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService
from quire.errors import BadRequest, MethodNotAllowed, NotFound, PreconditionFailed, ValidationError
from quire.events import Events, refusals_as_412
from quire.ids import is_id, new_id
from quire.store import SqliteStore
from quire.store.sqlite import Collection

# Keys answers carry that a save ignores, so an item can be written back as
# it was read (a tree item with its `_children` too).
READ_ONLY = {"_created", "_modified", "_cby", "_mby", "_model", "_children"}
STATES = (-1, 0, 1)


class ContentWriter:
    """Changes content: field checks (400 naming every bad field), required
    fields, tree parents, the create/update/publish/delete permissions and
    the save and remove events. Answers a saved item with every field but
    reads nothing else; `ContentReader` owns reading."""

    def __init__(self, store: SqliteStore, models: ModelService, locales: LocaleService, events: Events) -> None:
        self.store = store
        self.models = models
        self.locales = locales
        self.events = events

    def check_data(
        self, model: Model, data: Any, identity: Identity, codes: list[str] | None = None
    ) -> dict[str, Any]:
        """Validate the fields sent; 400 naming every bad or unknown field.
        `codes`: the locales to allow instead of the stored ones (an import
        checks items against the locales it is about to store)."""
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        fields = model.by_name
        if codes is None:
            codes = self.locales.codes()
        clean: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for key, value in data.items():
            if key == "_id" or key in READ_ONLY:
                continue
            if key == "_state":  # the publish permission is checked by save, against the stored state
                if value not in STATES or isinstance(value, bool):
                    errors[key] = "must be 1 (published), 0 (draft) or -1 (archived)"
                else:
                    clean[key] = value
                continue
            if key in ("_pid", "_o"):
                if model.type != "tree":
                    errors[key] = "is only for tree models"
                elif key == "_pid" and value is not None and not is_id(value):
                    errors[key] = "must be an item id or null"
                elif key == "_o" and (isinstance(value, bool) or not isinstance(value, int | float)):
                    errors[key] = "must be a number"
                else:
                    clean[key] = value
                continue
            definition = fields.get(key)
            if definition is None:
                base, _, code = key.rpartition("_")
                if base in fields and fields[base]["i18n"] and code in codes:
                    definition = fields[base]
            if definition is None:
                errors[key] = "is not a field of this model"
                continue
            if value is None:
                clean[key] = None
                continue
            try:
                clean[key] = check_value(definition, value)
            except FieldError as exc:
                errors[key] = str(exc)
        if errors:
            raise ValidationError("item data", errors)
        return clean

    async def save(self, name: str, data: Any, identity: Identity) -> dict[str, Any]:
        model = self.models.get(name)
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        item_id = data.get("_id")
        if item_id is not None and not isinstance(item_id, str):
            raise BadRequest("_id must be a string", fields=["_id"])
        is_update = item_id is not None or model.type == "singleton"
        if model.type != "singleton":  # a singleton's need is known once it is looked up
            identity.require(perm(name, "update" if item_id is not None else "create"))
        clean = self.check_data(model, data, identity)
        coll = self.models.collection(model)
        now = int(time.time())
        async with self.store.atomic():
            if model.type == "singleton":
                current = coll.find_one({})
                is_update = current is not None
                identity.require(perm(name, "update" if is_update else "create"))
            elif item_id is not None:
                current = coll.get(item_id) if is_id(item_id) else None
                if current is None:
                    raise NotFound("Item not found")
            else:
                current = None
            if "_state" in clean and (current is None or current.get("_state") != clean["_state"]):
                # an update that sends the stored state back changes nothing that needs it
                identity.require(perm(name, "publish"))
            if current is not None:
                item = {**current, **clean, "_modified": now, "_mby": identity.actor}
            else:
                item = self._new_item(model, clean, now, identity, coll)
            self._check_required(model, item)
            if model.type == "tree":
                self._check_parent(coll, item)
            with refusals_as_412():
                await self.events.emit(
                    "content.item.save.before", model=name, item=item, is_update=is_update, identity=identity
                )
            coll.replace(item)
            await self.stored(name, item, is_update, identity)
        await self.events.emit_after(
            "content.item.save.after", model=name, item=item, is_update=is_update, identity=identity
        )
        return model.filler.doc(item)  # answered with every field; stored as sent

    async def stored(self, name: str, item: dict[str, Any], is_update: bool, identity: Identity) -> None:
        """`content.item.saved`: the item as stored, inside the write's
        transaction, for data that must change with it (search indexes)."""
        with refusals_as_412():
            await self.events.emit("content.item.saved", model=name, item=item, is_update=is_update,
                                   identity=identity)

    def _new_item(
        self, model: Model, clean: dict[str, Any], now: int, identity: Identity, coll: Collection
    ) -> dict[str, Any]:
        item: dict[str, Any] = {"_id": new_id()}
        for f in model.fields:
            if "default" in f and f["name"] not in clean:
                item[f["name"]] = f["default"]
        item.update(clean)
        item.setdefault("_state", 1)
        if model.type == "singleton":
            item["_model"] = model.name
        if model.type == "tree":
            item.setdefault("_pid", None)
            if "_o" not in item:
                item["_o"] = coll.count({"_pid": item["_pid"]})
        item.update({"_created": now, "_modified": now, "_cby": identity.actor, "_mby": identity.actor})
        return item

    def _check_required(self, model: Model, item: dict[str, Any]) -> None:
        missing = {f["name"]: "is required" for f in model.fields if f["required"] and is_empty(item.get(f["name"]))}
        if missing:
            raise ValidationError("item data", missing)

    def _check_parent(self, coll: Collection, item: dict[str, Any]) -> None:
        pid = item.get("_pid")
        seen = {item["_id"]}
        while pid is not None:
            if pid in seen:
                raise ValidationError("item data", {"_pid": "would make the item its own ancestor"})
            seen.add(pid)
            parent = coll.get(pid)
            if parent is None:
                raise ValidationError("item data", {"_pid": "is not an item of this model"})
            pid = parent.get("_pid")

    async def delete(self, name: str, item_id: str, identity: Identity) -> None:
        model = self.models.get(name)
        identity.require(perm(name, "delete"))
        if model.type == "singleton":
            raise MethodNotAllowed(["GET", "POST"], "A singleton item cannot be deleted")
        coll = self.models.collection(model)
        async with self.store.atomic():
            item = coll.get(item_id) if is_id(item_id) else None
            if item is None:
                raise NotFound("Item not found")
            removed = coll.subtree(item) if model.type == "tree" else [item]
            for doc in removed:
                coll.delete(doc["_id"])
                with refusals_as_412():
                    await self.events.emit("content.item.remove", model=name, item=doc, identity=identity)
