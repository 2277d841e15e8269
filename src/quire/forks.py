"""Environments (docs/spaces.md#environments): a space forked from another
(`quire spaces fork SOURCE NAME`), changed freely, and compared with its
origin (`quire spaces diff`).

A fork is the source's backup restored into the new space (quire.backup:
one moment of the source, read while it serves and writes; its files
copied), then the revision of every item at that moment recorded in the
fork (`system/fork_base`), and only then the space registered: a fork
killed half-way leaves no space, and the next fork to that name starts
over. The diff reads both sides' items by id and revision against that
base: added, removed and changed on each side since the fork, and a
conflict where both sides changed the same item.

A merge carries a fork's changes into its origin by a plan shown first
(`merge_plan`): the items made, changed and removed in the fork since the
fork (and, with `take="fork"`, the fork's side of each conflict), with the
assets they use that the origin lacks. The plan is named by a hash of
every revision it rests on, and `merge` applies only the plan of that
name: a change on either side since it was shown refuses it (show it
again). The files are copied first, then every item is written in one
transaction of the origin (each a new revision there, with the events of
an import: feed, webhooks, search); a merge killed half-way applied
nothing, and running it again does all of it. Then the fork's base moves
to the merged revisions, so the next diff starts from there."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from quire.app import MODULES, Quire
from quire.assets.service import ASSETS, AssetService
from quire.auth.service import SYSTEM, Identity
from quire.backup import UPLOADS, restore_backup, write_backup
from quire.config import Settings
from quire.content.asset_refs import AssetRefs
from quire.content.models import ModelService
from quire.files import open_files
from quire.spaces.service import SpaceService, check_name, space_settings
from quire.store import Store, open_store

BASE = "system/fork_base"  # in a fork: "<model>|<id>" -> the item's revision when it was forked
BATCH = 1000


@contextlib.contextmanager
def open_site(settings: Settings, space: bool = True) -> Iterator[Quire]:
    """The services of a space (or, `space=False`, of the main site)."""
    quire = Quire(settings, modules=[m for m in MODULES if m.name != "spaces"] if space else None)
    try:
        yield quire
    finally:
        quire.close()


def _revisions(quire: Quire) -> dict[str, dict[str, int]]:
    """Every item's revision, by model and id."""
    found: dict[str, dict[str, int]] = {}
    for model in quire.get(ModelService).all():
        items = quire.store.collection(model.collection)
        found[model.name] = {d["_id"]: int(d.get("_rev") or 0) for d in items.find()} if items.exists() else {}
    return found


def fork(main: Settings, source: str, name: str, label: str | None = None,
         progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Make space `name` a copy of space `source` as it is now."""
    say = progress or (lambda _: None)
    with open_site(main, space=False) as site:
        spaces = site.get(SpaceService)
        spaces.get(source)  # 404 when there is none
        check_name(name, spaces.reserved)
        if name in spaces.served():
            raise ValueError(f"'{name}' is taken (a space or an alias)")
    origin, target = space_settings(main, source), space_settings(main, name)
    archive = main.data_dir / "spaces" / f".fork-{name}.tar"
    # On local disk the files are shared, not copied: hard-linked as of the
    # backup's moment into this folder, moved into the new space once its
    # database is restored (quire.backup.write_backup, link_uploads_to).
    shared = main.data_dir / "spaces" / f".fork-{name}-uploads" if not origin.assets.storage else None
    try:
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)  # what a killed fork to this name left
        say(f"copying {source}")
        store = open_store(origin.store.url, origin.db_path, lock_timeout=60.0)
        files = open_files(origin.assets, origin.data_dir)
        try:
            write_backup(store, files, origin.data_dir, archive, "postgresql" if origin.store.url else "sqlite",
                         link_uploads_to=shared)
        finally:
            store.close()
            files.close()
        with open_site(main, space=False) as site:
            spaces = site.get(SpaceService)
            if name in spaces.served():  # made meanwhile (through the API, say): not overwritten
                raise ValueError(f"'{name}' is taken (a space or an alias)")
            spaces.empty(name)  # what a killed fork to this name left
            spaces.prepare(name)  # its folder, and on PostgreSQL its schema, before anything is written
        say(f"restoring into {name}")
        restore_backup(target, archive, force=True)  # force: what a killed fork to this name left
        if shared is not None and shared.exists():
            uploads = target.data_dir / UPLOADS
            with contextlib.suppress(FileNotFoundError, OSError):
                uploads.rmdir()  # (made empty by the restore; a folder with files stays and refuses the move)
            os.replace(shared, uploads)
    finally:
        archive.unlink(missing_ok=True)
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)
    say("recording the revisions it starts from")
    with open_site(target) as copy:
        _record_base(copy.store, _revisions(copy))
    with open_site(main, space=False) as site:
        return asyncio.run(site.get(SpaceService).create({"name": name, "label": label or name}, SYSTEM,
                                                         origin=source))


def _record_base(store: Store, revisions: dict[str, dict[str, int]]) -> None:
    base = store.collection(BASE)
    if base.exists():  # a fork of a fork: the copy brought its origin's base along
        with store.transaction():
            base.delete_many({})
    rows = [{"_id": f"{model}|{item}", "rev": rev} for model, items in revisions.items() for item, rev in items.items()]
    for start in range(0, len(rows), BATCH):
        with store.transaction():
            for row in rows[start:start + BATCH]:
                base.insert(row)


@dataclass
class ModelDiff:
    model: str
    added: list[str] = field(default_factory=list)  # in the fork only: made there since
    removed: list[str] = field(default_factory=list)  # gone from the fork since
    changed: list[str] = field(default_factory=list)  # changed in the fork since, not in the origin
    origin_added: list[str] = field(default_factory=list)
    origin_removed: list[str] = field(default_factory=list)
    origin_changed: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)  # changed (or removed) on both sides since

    def empty(self) -> bool:
        return not any((self.added, self.removed, self.changed, self.origin_added, self.origin_removed,
                        self.origin_changed, self.conflicts))

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k == "model" or v}


@dataclass
class Sides:
    """A fork and its origin, item revisions by model and id: now on each
    side, and at the fork (or the last merge) on each side."""

    origin: str
    ours: dict[str, dict[str, int]]
    theirs: dict[str, dict[str, int]]
    base: dict[str, dict[str, int]]
    origin_base: dict[str, dict[str, int]]

    def diff(self) -> list[ModelDiff]:
        return _compare(self.ours, self.theirs, self.base, self.origin_base)


def origin_of(main: Settings, name: str) -> str:
    """The space fork `name` was forked from; ValueError when it is no fork."""
    with open_site(main, space=False) as site:
        forked = site.get(SpaceService).spaces.get(name)
        if forked is None:
            raise ValueError(f"there is no space '{name}'")
        origin = forked.get("origin")
        if not origin:
            raise ValueError(f"space '{name}' was not forked from another (quire spaces fork)")
        site.get(SpaceService).get(origin)
    return str(origin)


def _sides(main: Settings, name: str) -> Sides:
    origin = origin_of(main, name)
    with open_site(space_settings(main, name)) as copy:
        ours = _revisions(copy)
        base_rows = copy.store.collection(BASE)
        base: dict[str, dict[str, int]] = {}
        origin_base: dict[str, dict[str, int]] = {}
        for row in (base_rows.find() if base_rows.exists() else []):
            model, _, item = row["_id"].partition("|")
            base.setdefault(model, {})[item] = int(row["rev"])
            # after a merge the two sides hold the item at different revisions
            origin_base.setdefault(model, {})[item] = int(row.get("origin", row["rev"]))
    with open_site(space_settings(main, origin)) as source:
        theirs = _revisions(source)
    return Sides(origin, ours, theirs, base, origin_base)


def diff(main: Settings, name: str) -> tuple[str, list[ModelDiff]]:
    """Fork `name` against its origin: (the origin's name, per model)."""
    sides = _sides(main, name)
    return sides.origin, sides.diff()


def _compare(ours: dict[str, dict[str, int]], theirs: dict[str, dict[str, int]], base: dict[str, dict[str, int]],
             origin_base: dict[str, dict[str, int]]) -> list[ModelDiff]:
    found = []
    for model in sorted(set(ours) | set(theirs) | set(base)):
        mine, other, was = ours.get(model, {}), theirs.get(model, {}), base.get(model, {})
        was_there = origin_base.get(model, {})
        d = ModelDiff(model)
        for item in sorted(set(mine) | set(other) | set(was)):
            at_fork, here, there = was.get(item), mine.get(item), other.get(item)
            we = here != at_fork  # changed, made or removed in the fork since
            they = there != was_there.get(item)
            if we and they:
                if here is not None or there is not None:  # (both removing it is no conflict)
                    d.conflicts.append(item)  # by revision: each side moved on from the fork's
            elif we:
                (d.added if at_fork is None else d.removed if here is None else d.changed).append(item)
            elif they:
                (d.origin_added if at_fork is None else d.origin_removed if there is None
                 else d.origin_changed).append(item)
        if not d.empty():
            found.append(d)
    return found


# -- merging back ---------------------------------------------------------

TAKES = ("origin", "fork")  # whose side of a conflict a merge keeps


@dataclass
class MergePlan:
    fork: str
    origin: str
    take: str
    models: list[dict[str, Any]]  # per model: its `add`, `change`, `remove` (ids) and `conflicts` left
    assets: list[str]  # assets the merged items use that the origin lacks: copied with their files
    missing_models: list[str]  # models of the fork's changes the origin does not have: refused
    plan: str  # the hash of every revision the plan rests on

    @property
    def writes(self) -> int:
        return sum(len(m["add"]) + len(m["change"]) + len(m["remove"]) for m in self.models)

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__, "writes": self.writes}


def merge_plan(main: Settings, name: str, take: str = "origin") -> MergePlan:
    """What merging fork `name` into its origin would do, and the name of
    this plan (`merge` applies it and no other)."""
    if take not in TAKES:
        raise ValueError(f"take must be one of {', '.join(TAKES)}, not {take!r}")
    sides = _sides(main, name)
    models: list[dict[str, Any]] = []
    digest = hashlib.sha256(f"{name}>{sides.origin}:{take}".encode())
    for d in sides.diff():
        won = d.conflicts if take == "fork" else []
        add = d.added + [i for i in won if i not in sides.theirs.get(d.model, {})]
        remove = d.removed + [i for i in won if i not in sides.ours.get(d.model, {})]
        change = d.changed + [i for i in won if i in sides.theirs.get(d.model, {}) and i in sides.ours.get(d.model, {})]
        left = [] if take == "fork" else d.conflicts
        if add or change or remove or left:
            models.append({"model": d.model, "add": add, "change": change, "remove": remove, "conflicts": left})
        for item in sorted(set(add) | set(change) | set(remove) | set(left)):
            digest.update(f"|{d.model}/{item}:{sides.ours.get(d.model, {}).get(item)}:"
                          f"{sides.theirs.get(d.model, {}).get(item)}".encode())
    with open_site(space_settings(main, sides.origin)) as source:
        known = {m.name for m in source.get(ModelService).all()}
        origin_assets = source.store.collection(ASSETS)
        have = {d["_id"] for d in origin_assets.pick(["_id"])} if origin_assets.exists() else set()
    missing = sorted(m["model"] for m in models if m["model"] not in known and (m["add"] or m["change"]))
    with open_site(space_settings(main, name)) as copy:
        used: set[str] = set()
        for m in models:
            if m["model"] in missing or not (m["add"] or m["change"]):
                continue
            model = copy.get(ModelService).get(m["model"])
            items = copy.store.collection(model.collection)
            for item_id in m["add"] + m["change"]:
                doc = items.get(item_id)
                if doc is not None:
                    used.update(copy.get(AssetRefs).asset_ids(model, doc))
    assets = sorted(used - have)
    digest.update(("assets:" + ",".join(assets)).encode())
    return MergePlan(name, sides.origin, take, models, assets, missing, digest.hexdigest()[:32])


def merge(main: Settings, name: str, plan: str, take: str = "origin", actor: str = "merge",
          progress: Callable[[str], None] | None = None) -> MergePlan:
    """Apply the merge plan named `plan` (from `merge_plan`), only if it is
    still the plan: ValueError otherwise, nothing written."""
    say = progress or (lambda _: None)
    shown = merge_plan(main, name, take)
    if shown.plan != plan:
        raise PlanChanged(f"the merge plan of '{name}' changed since it was shown (it is now {shown.plan}): "
                          "look at it again")
    if shown.missing_models:
        raise ValueError(f"the origin '{shown.origin}' has no model {', '.join(shown.missing_models)}: carry the "
                         f"fork's schema over first (quire schema snapshot --space {name}; quire schema apply "
                         f"--space {shown.origin})")
    who = Identity("admin", key_id=f"merge:{name}", key_name=f"merge of {name} ({actor})", kind="system")
    with open_site(space_settings(main, name)) as copy, open_site(space_settings(main, shown.origin)) as target:
        if shown.assets:
            say(f"copying {len(shown.assets)} assets")
            _copy_files(copy, target, shown.assets)
        say(f"writing {shown.writes} items into {shown.origin}")
        written = asyncio.run(_apply(copy, target, shown, who))
    say("recording what was merged")
    with open_site(space_settings(main, name)) as copy:
        _record_merged(copy.store, written)
    return shown


class PlanChanged(ValueError):
    """The plan asked for is no longer the plan (409 through the API)."""


def _copy_files(copy: Quire, target: Quire, asset_ids: list[str]) -> None:
    """The files of `asset_ids` from the fork's storage to the origin's,
    under the same names (again for a merge run again)."""
    mine, theirs = copy.get(AssetService), target.get(AssetService)
    for asset_id in asset_ids:
        doc = mine.assets.get(asset_id)
        if doc is None:
            continue
        key = mine.key_of(doc["path"])
        if not theirs.uploads.exists(key):
            with contextlib.suppress(FileNotFoundError):  # a file lost in the fork: the document still goes
                theirs.uploads.put(key, mine.uploads.read(key))


async def _apply(copy: Quire, target: Quire, plan: MergePlan, who: Identity) -> dict[str, dict[str, int | None]]:
    """Every write of the plan in one transaction of the origin; the
    revisions each merged item has on each side after it (None: gone)."""
    touched: list[tuple[str, str]] = []
    content = target.content
    models, fork_models = target.get(ModelService), copy.get(ModelService)
    async with target.store.atomic():
        if plan.assets:
            mine_assets, their_assets = copy.store.collection(ASSETS), target.store.collection(ASSETS)
            target.store.ensure_table(ASSETS)
            for asset_id in plan.assets:
                found = mine_assets.get(asset_id)
                if found is not None and their_assets.get(asset_id) is None:
                    their_assets.insert(found)
        for m in plan.models:
            if not (m["add"] or m["change"] or m["remove"]):
                continue
            model = models.get(m["model"])
            theirs = models.collection(model)
            if m["add"] or m["change"]:
                ours = fork_models.collection(fork_models.get(m["model"]))
                docs = [ours.get(item_id) for item_id in m["add"] + m["change"]]
                ready = [content.check_imported(model, doc, who) for doc in docs if doc is not None]
                if model.type == "tree":
                    content.check_imported_tree(model, ready)
                for item in ready:
                    await content.store_imported(model, theirs, item, who)
            for item_id in m["remove"]:
                if theirs.get(item_id) is not None:
                    await content.delete(m["model"], item_id, who)
            touched += [(m["model"], i) for i in m["add"] + m["change"] + m["remove"]]
    known = {x.name for x in fork_models.all()}
    merged: dict[str, dict[str, int | None]] = {}
    for name, item_id in touched:
        mine = fork_models.collection(fork_models.get(name)).get(item_id) if name in known else None
        there = models.collection(models.get(name)).get(item_id)
        merged[f"{name}|{item_id}"] = {"rev": int(mine["_rev"]) if mine else None,
                                       "origin": int(there["_rev"]) if there else None}
    return merged


def _record_merged(store: Store, merged: dict[str, Any]) -> None:
    base = store.collection(BASE)
    keys = list(merged)
    for start in range(0, len(keys), BATCH):
        with store.transaction():
            for key in keys[start:start + BATCH]:
                revs = merged[key]
                if revs["rev"] is None and revs["origin"] is None:
                    base.delete(key)
                else:
                    base.replace({"_id": key, "rev": revs["rev"] or 0, "origin": revs["origin"] or 0})
