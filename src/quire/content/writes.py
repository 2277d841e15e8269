"""The write side of content items: checking sent fields, saving (create,
update, a singleton's one item) and deleting, with their events, each in
its own transaction."""

from __future__ import annotations

import time
from typing import Any, Literal

from quire.auth.permissions import content as perm
from quire.auth.service import Identity
from quire.bundleparts import naming
from quire.content import conditions
from quire.content.fields import FieldError, check_value, is_empty
from quire.content.fill import doc_rev
from quire.content.locales import LocaleService
from quire.content.models import Model, ModelService, drafts_name
from quire.content.schedule import (
    PUBLISH_JOB,
    SCHEDULE,
    UNPUBLISH_JOB,
    check_schedule,
    check_time,
    drop_cleared,
    enqueue_schedule,
)
from quire.errors import (
    BadRequest,
    Conflict,
    MethodNotAllowed,
    NotFound,
    PreconditionFailed,
    ValidationError,
)
from quire.events import Events, refusals_as_412
from quire.ids import is_id, new_id
from quire.jobs import Jobs
from quire.store import Collection, Store
from quire.trees import MISSING, parent_problem

# Keys answers carry that a save ignores, so an item can be written back as
# it was read (a tree item with its `_children` too). `_rev` is the one that
# is not ignored but checked: `save` compares it with the stored revision.
# `_draft` and `_base` come with a draft's answer (drafts.py), `_basis` never.
MACHINE = "_mt"  # the localized values a machine translated and nobody reviewed yet
READ_ONLY = {"_created", "_modified", "_cby", "_mby", "_model", "_children", "_rev", "_draft", "_base", "_basis"}
# What a save may name as the revision it started from: a number (0: the
# item is not stored yet), "*" (If-Match: * - the item must be stored) or
# nothing (no check, as before revisions were counted).
Expected = int | Literal["*"] | None
REV_RULE = "must be a revision number: a whole number, 0 for an item not stored yet"
STATES = (-1, 0, 1)
# System fields an imported item keeps from its bundle (checked, not set anew)
KEPT_SYSTEM = ("_id", "_created", "_modified", "_cby", "_mby", "_state", "_pid", "_o", "_model")
# system fields a write may send, checked by `check_data`
SENT_SYSTEM = ("_state", "_pid", "_o", *SCHEDULE)


class ContentWriter:
    """Changes content: field checks (400 naming every bad field), required
    fields, tree parents, the create/update/publish/delete permissions and
    the save and remove events. Answers a saved item with every field but
    reads nothing else; `ContentReader` owns reading."""

    def __init__(self, store: Store, models: ModelService, locales: LocaleService, events: Events,
                 jobs: Jobs | None = None) -> None:
        self.store = store
        self.models = models
        self.locales = locales
        self.events = events
        self.jobs = jobs  # publishes on schedule (`register_jobs`); None: times are kept, not acted on

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
            if key == "_rev":  # checked against the stored item by save, never stored as sent
                if value is not None and not is_rev(value):
                    errors[key] = REV_RULE
                continue
            if key == "_id" or key in READ_ONLY:
                continue
            if key == "_state":  # the publish permission is checked by save, against the stored state
                if value not in STATES or isinstance(value, bool):
                    errors[key] = "must be 1 (published), 0 (draft) or -1 (archived)"
                else:
                    clean[key] = value
                continue
            if key in SCHEDULE:  # the publish permission is checked by save, against the stored times
                problem = check_time(value)
                if problem:
                    errors[key] = problem
                else:
                    clean[key] = value
                continue
            if key == MACHINE:  # localized values machine-translated, not reviewed yet (quire.translate)
                if value is None or value == []:
                    clean[key] = None
                elif isinstance(value, list) and len(value) <= 1000 and all(
                        isinstance(v, str) and 0 < len(v) <= 200 for v in value):
                    clean[key] = sorted(set(value))
                else:
                    errors[key] = "must be a list of localized fields' names (title_de), or null"
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
                # a localized value `<field>_<code>`; codes may hold `_` themselves (pt_BR)
                for code in codes:
                    base = key[:-len(code) - 1]
                    if key.endswith("_" + code) and base in fields and fields[base]["i18n"]:
                        definition = fields[base]
                        break
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

    async def save(self, name: str, data: Any, identity: Identity, if_match: Expected = None,
                   draft: bool = False) -> dict[str, Any]:
        """Create or update an item. The revision the save started from,
        `_rev` in `data` or `if_match` (the If-Match header), must be the
        stored item's, checked in the write's transaction: else 409 naming
        the current one, and nothing is stored. `draft`: a new item is
        created unpublished (`save_draft` for an item that is not
        published)."""
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
        expected = _expected(data.get("_rev"), if_match)
        if model.type != "singleton" and item_id is None and expected not in (None, 0):
            # nothing stored to compare with: a client that lost the _id would otherwise make a copy
            raise BadRequest("A new item has no revision yet: send _rev 0 or none, and no If-Match",
                             fields=["_rev"])
        now = int(time.time())
        async with self.store.atomic():
            model, clean = self.recheck(model, data, clean, identity)
            coll = self.models.collection(model)
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
            if any(key in clean and (current or {}).get(key) != clean[key] for key in SCHEDULE):
                identity.require(perm(name, "publish"))  # a schedule publishes, as a state does
            stored_rev = 0 if current is None else doc_rev(current)
            if expected is not None:  # after the permissions: a refused save is refused either way
                _check_rev(expected, stored_rev)
            if current is not None:
                item = {**current, **clean, "_modified": now, "_mby": identity.actor}
            else:
                if draft:
                    clean.setdefault("_state", 0)
                item = self._new_item(model, clean, now, identity, coll)
            drop_cleared(item)
            check_schedule(item)
            place_rev(item, stored_rev + 1)
            if not draft or item.get("_state") == 1:  # a draft may lack what publishing will need
                self._check_required(model, item)
            if model.type == "tree":
                self._check_parent(coll, item)
            await self._write(name, coll, item, current, identity)
        await self.events.emit_after(
            "content.item.save.after", model=name, item=item, is_update=is_update, identity=identity
        )
        return model.filler.doc(item)  # answered with every field; stored as sent

    def recheck(self, model: Model, data: dict[str, Any], clean: dict[str, Any],
                identity: Identity) -> tuple[Model, dict[str, Any]]:
        """The model as it is now and `data` checked against it, inside the
        write's transaction: the fields were checked before waiting for the
        write lock, and a model change committed meanwhile (a number field
        made text) must not let values in that its fields no longer take."""
        self.store.mark_stale()  # another process may have committed while we waited
        now = self.models.get(model.name)
        if now is model:
            return model, clean
        return now, self.check_data(now, data, identity)

    def _wake_schedule(self) -> None:
        """After a commit that enqueued a publish or unpublish: the
        publishing lane looks now (no other lane is woken)."""
        if self.jobs is not None:
            self.jobs.wake(PUBLISH_JOB, UNPUBLISH_JOB)

    async def _write(self, name: str, coll: Collection, item: dict[str, Any], previous: dict[str, Any] | None,
                     identity: Identity, refused: str = "") -> None:
        """Store a checked item with the events of a write, inside the
        caller's transaction; `previous` is the stored item it replaces
        (None: a new item); `refused` goes before a handler's refusal."""
        rev = item["_rev"]
        is_update = previous is not None
        with refusals_as_412(refused):
            await self.events.emit(
                "content.item.save.before", model=name, item=item, is_update=is_update, identity=identity
            )
        place_rev(item, rev)  # the revision is the writer's, whatever a handler did to the item
        coll.replace(item)
        if enqueue_schedule(self.jobs, name, item, previous):
            self.store.after_commit(self._wake_schedule)
        await self.stored(name, item, previous, identity)

    # -- imports ----------------------------------------------------------

    def check_imported(
        self, model: Model, doc: dict[str, Any], identity: Identity, codes: list[str] | None = None
    ) -> dict[str, Any]:
        """An item of a bundle, checked as an API write checks it (the sent
        fields, `_state`, `_pid` and `_o`, required fields), plus its time
        and author stamps: the item ready for `store_imported`, with the
        bundle's system fields kept. `codes` as for `check_data`."""
        fields = {k: v for k, v in doc.items() if not k.startswith("_") or k in SENT_SYSTEM}
        item = self.check_data(model, fields, identity, codes=codes)
        _check_stamps(doc)
        item.update({k: doc[k] for k in KEPT_SYSTEM if k in doc})
        drop_cleared(item)
        check_schedule(item)
        self._check_required(model, item)
        return item

    def check_imported_tree(self, model: Model, items: list[dict[str, Any]]) -> None:
        """The parents of a tree model's imported items, checked as an API
        write checks them: each is an item of the bundle or a stored one,
        and no item becomes its own ancestor."""
        coll = self.store.collection(model.collection)
        parents = {d["_id"]: d.get("_pid") for d in coll.pick(["_pid"])} if coll.exists() else {}
        parents.update((item["_id"], item.get("_pid")) for item in items)
        for item in items:
            with naming(f"{model.name}/{item['_id']}: "):
                _refuse_parent(parent_problem(item["_id"], item.get("_pid"),
                                              lambda node_id: parents.get(node_id, MISSING)))

    async def store_imported(self, model: Model, coll: Collection, item: dict[str, Any],
                             identity: Identity) -> None:
        """Store one item of `check_imported`, matched by `_id` (running the
        same import again changes no field), with the events of an API write,
        inside the caller's transaction; `content.item.save.after` follows
        that transaction's commit. Every import of an item is a write: its
        revision is the stored one + 1 (1 for a new item), whatever `_rev`
        the bundle holds."""
        current = coll.get(item["_id"])
        is_update = current is not None
        _fill_system(model, coll, item, current, identity)
        place_rev(item, 1 if current is None else doc_rev(current) + 1)
        await self._write(model.name, coll, item, current, identity, f"{model.name}/{item['_id']}: ")
        self.store.after_commit(lambda: self.events.emit_after(
            "content.item.save.after", model=model.name, item=item, is_update=is_update, identity=identity))

    async def stored(self, name: str, item: dict[str, Any], previous: dict[str, Any] | None,
                     identity: Identity) -> None:
        """`content.item.saved`: the item as stored, and the one it replaced
        (`previous`, None for a new item), inside the write's transaction,
        for data that must change with it (search indexes, revisions)."""
        with refusals_as_412():
            await self.events.emit("content.item.saved", model=name, item=item, is_update=previous is not None,
                                   previous=previous, identity=identity)

    def _new_item(
        self, model: Model, clean: dict[str, Any], now: int, identity: Identity, coll: Collection
    ) -> dict[str, Any]:
        item: dict[str, Any] = {"_id": new_id()}
        for f in model.fields:
            if "default" in f and f["name"] not in clean:
                item[f["name"]] = f["default"]
        item.update(clean)
        item.setdefault("_state", 1)
        _place(model, coll, item)
        item.update({"_created": now, "_modified": now, "_cby": identity.actor, "_mby": identity.actor})
        return item

    def drafts(self, model: Model) -> Collection:
        """The drafts kept beside the model's published items (`drafts.py`)."""
        return self.store.collection(drafts_name(model.name))

    def _check_required(self, model: Model, item: dict[str, Any]) -> None:
        # a field shown or required only when a condition holds (conditions.py) is checked by its rule
        missing = {f["name"]: "is required" for f in model.fields
                   if (f["required"] or "showWhen" in f or "requiredWhen" in f) and is_empty(item.get(f["name"]))
                   and conditions.required(f, item)}
        if missing:
            raise ValidationError("item data", missing)

    def _check_parent(self, coll: Collection, item: dict[str, Any]) -> None:
        def parent_of(node_id: str) -> object:
            found = coll.get(node_id)
            return MISSING if found is None else found.get("_pid")

        _refuse_parent(parent_problem(item["_id"], item.get("_pid"), parent_of))

    async def move(self, name: str, item_id: str, parent: str | None, position: int,
                   identity: Identity) -> list[dict[str, Any]]:
        """Move a tree item under `parent` (None: the top) as its
        `position`-th child (0 first; past the end: last), in one
        transaction. The moved item and every sibling whose order changes
        (at the new place, and at the old one when the parent changes) are
        written as a save writes them (`_o` renumbered 0, 1, ... as
        the API stores it, `_rev` + 1, the save events, search indexes);
        answers the items written."""
        model = self.models.get(name)
        identity.require(perm(name, "update"))
        if model.type != "tree":
            raise BadRequest(f"Model {name} is not a tree")
        if parent is not None and not is_id(parent):
            raise ValidationError("item data", {"_pid": "must be an item id or null"})
        coll = self.models.collection(model)
        now = int(time.time())
        written: list[dict[str, Any]] = []
        async with self.store.atomic():
            current = coll.get(item_id) if is_id(item_id) else None
            if current is None:
                raise NotFound("Item not found")
            moved = {**current, "_pid": parent}
            self._check_parent(coll, moved)
            by_order: list[tuple[tuple[str, ...], int]] = [(("_o",), 1)]
            siblings = [d for d in coll.find({"_pid": parent}, by_order) if d["_id"] != item_id]
            siblings.insert(max(0, min(position, len(siblings))), moved)
            groups = [siblings]
            if current.get("_pid") != parent:  # the siblings it leaves close the gap
                groups.append([d for d in coll.find({"_pid": current.get("_pid")}, by_order) if d["_id"] != item_id])
            for group in groups:
                for order, doc in enumerate(group):
                    if doc is not moved and doc.get("_o") == order:
                        continue
                    item = {**doc, "_o": order, "_modified": now, "_mby": identity.actor}
                    place_rev(item, doc_rev(doc) + 1)
                    await self._write(name, coll, item, current if doc is moved else doc, identity)
                    written.append(item)
        for item in written:
            await self.events.emit_after("content.item.save.after", model=name, item=item, is_update=True,
                                         identity=identity)
        return written

    async def restore(self, name: str, state: dict[str, Any], identity: Identity, last_rev: int = 0) -> dict[str, Any]:
        """Write `state` (the item as a revision left it) back as the item,
        whole: fields the state lacks are removed, fields the model no
        longer has are left out, the rest is checked as a save checks it.
        The item may have been deleted since (it is created again with its
        `_id`; `_rev` goes on from `last_rev`). Needs the update
        permission (create for a deleted item), and publish to change the
        item's state. Answers the item as a save does."""
        model = self.models.get(name)
        item_id = state.get("_id")
        if not isinstance(item_id, str):
            raise BadRequest("The revision holds no item id")
        sent = {k: v for k, v in state.items() if not k.startswith("_") or k in SENT_SYSTEM}
        if model.type != "tree":
            sent = {k: v for k, v in sent.items() if k not in ("_pid", "_o")}
        clean = self._restorable(model, sent, identity)
        now = int(time.time())
        async with self.store.atomic():
            self.store.mark_stale()  # as `recheck`: the model may have changed while we waited
            if self.models.get(name) is not model:
                model = self.models.get(name)
                clean = self._restorable(model, sent, identity)
            coll = self.models.collection(model)
            current = coll.get(item_id) if is_id(item_id) else None
            if model.type == "singleton" and current is None and coll.find_one({}) is not None:
                raise BadRequest("Another item is this singleton's item now")
            identity.require(perm(name, "update" if current is not None else "create"))
            # a deleted item counts as a draft: bringing it back published
            # (or archived) needs the publish permission, as a draft does
            was = current.get("_state", 1) if current is not None else 0
            if clean.get("_state", 1) != was or any(
                    clean.get(key) != (current or {}).get(key) for key in SCHEDULE):
                identity.require(perm(name, "publish"))
            kept = current if current is not None else state
            item: dict[str, Any] = {"_id": item_id}
            item.update({k: kept[k] for k in ("_created", "_cby") if k in kept})
            item.setdefault("_created", now)
            item.update(clean)
            item.update({"_modified": now, "_mby": identity.actor})
            drop_cleared(item)
            check_schedule(item)
            _place(model, coll, item)
            place_rev(item, max(doc_rev(current) if current is not None else 0, last_rev) + 1)
            self._check_required(model, item)
            if model.type == "tree":
                self._check_parent(coll, item)
            await self._write(name, coll, item, current, identity)
        await self.events.emit_after("content.item.save.after", model=name, item=item,
                                     is_update=current is not None, identity=identity)
        return model.filler.doc(item)

    def _restorable(self, model: Model, sent: dict[str, Any], identity: Identity) -> dict[str, Any]:
        """A revision's values checked as a save checks them; fields the
        model has lost since are left out, other faults stand."""
        try:
            return self.check_data(model, sent, identity)
        except ValidationError as exc:
            gone = {k for k, why in exc.errors.items() if why == "is not a field of this model"}
            if not gone or len(gone) < len(exc.errors):
                raise
            return self.check_data(model, {k: v for k, v in sent.items() if k not in gone}, identity)

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
            drafts = self.drafts(model)
            for doc in removed:
                coll.delete(doc["_id"])
                drafts.delete(doc["_id"])
                with refusals_as_412():
                    await self.events.emit("content.item.remove", model=name, item=doc, identity=identity)


def _place(model: Model, coll: Collection, item: dict[str, Any]) -> None:
    """A singleton's item names its model; a tree item without a place goes
    at the top level, after its siblings."""
    if model.type == "singleton":
        item["_model"] = model.name
    if model.type == "tree":
        item.setdefault("_pid", None)
        if "_o" not in item:
            item["_o"] = coll.count({"_pid": item["_pid"]})


def is_rev(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def place_rev(item: dict[str, Any], rev: int) -> None:
    """Set the item's revision as its second key, right after `_id`, where
    `fill.rev_of` reads it without decoding the item."""
    if list(item)[:2] == ["_id", "_rev"]:
        item["_rev"] = rev
        return
    rest = {k: v for k, v in item.items() if k not in ("_id", "_rev")}
    item_id = item["_id"]
    item.clear()
    item.update({"_id": item_id, "_rev": rev, **rest})


def _expected(sent: Any, if_match: Expected) -> Expected:
    """The revision a save started from, from `_rev` in its data (checked
    by check_data) and its If-Match header: both must name the same one."""
    if sent is None:
        return if_match
    if if_match is not None and if_match != sent:
        raise BadRequest(f"_rev {sent} and If-Match {if_match} name different revisions", fields=["_rev"])
    return int(sent)


def _check_rev(expected: int | Literal["*"], stored: int) -> None:
    if expected == "*":
        if stored == 0:
            raise Conflict("Item is not stored yet (If-Match: * asks for a stored item)", rev=0)
        return
    if expected != stored:
        where = f"at revision {stored}" if stored else "not stored yet"
        raise Conflict(f"Item was changed by someone else: it is {where}, not at revision {expected}", rev=stored)


def _refuse_parent(problem: str | None) -> None:
    if problem == "cycle":
        raise ValidationError("item data", {"_pid": "would make the item its own ancestor"})
    if problem == "missing":
        raise ValidationError("item data", {"_pid": "is not an item of this model"})


def _check_stamps(doc: dict[str, Any]) -> None:
    """Times are whole seconds, authors are key or user ids (or null)."""
    errors: dict[str, str] = {}
    for key in ("_created", "_modified"):
        if key in doc and (isinstance(doc[key], bool) or not isinstance(doc[key], int)):
            errors[key] = "must be a time in whole seconds since 1970"
    for key in ("_cby", "_mby"):
        if key in doc and doc[key] is not None and not isinstance(doc[key], str):
            errors[key] = "must be a string or null"
    if errors:
        raise ValidationError("item data", errors)


def _fill_system(model: Model, coll: Collection, item: dict[str, Any], current: dict[str, Any] | None,
                 identity: Identity) -> None:
    """System fields a bundle leaves out (one written by hand, for seeding)
    are kept from the stored item or set as an API create sets them: reads
    ask for `_state` 1 and sort by `_created`, so an item without them would
    be stored but never shown. Running the import again changes nothing."""
    now = int(time.time())
    defaults: dict[str, Any] = {"_state": 1, "_created": now, "_modified": now,
                                "_cby": identity.actor, "_mby": identity.actor}
    if model.type == "singleton":
        defaults["_model"] = model.name
    if model.type == "tree":
        defaults["_pid"] = None
    for key, value in defaults.items():
        if key not in item:
            item[key] = current[key] if current is not None and key in current else value
    if model.type == "tree" and "_o" not in item:
        # after its siblings, as a new node of the API
        item["_o"] = current["_o"] if current is not None and "_o" in current else coll.count({"_pid": item["_pid"]})
