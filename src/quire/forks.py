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
conflict where both sides changed the same item."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from quire.app import MODULES, Quire
from quire.auth.service import SYSTEM
from quire.backup import restore_backup, write_backup
from quire.config import Settings
from quire.content.models import ModelService
from quire.files import open_files
from quire.spaces.service import SpaceService, check_name, space_settings
from quire.store import Store, open_store

BASE = "system/fork_base"  # in a fork: "<model>|<id>" -> the item's revision when it was forked
BATCH = 1000


@contextlib.contextmanager
def _site(settings: Settings, space: bool = True) -> Iterator[Quire]:
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
    with _site(main, space=False) as site:
        spaces = site.get(SpaceService)
        spaces.get(source)  # 404 when there is none
        check_name(name, spaces.reserved)
        if name in spaces.served():
            raise ValueError(f"'{name}' is taken (a space or an alias)")
    origin, target = space_settings(main, source), space_settings(main, name)
    archive = main.data_dir / "spaces" / f".fork-{name}.tar"
    try:
        say(f"copying {source}")
        store = open_store(origin.store.url, origin.db_path, lock_timeout=60.0)
        files = open_files(origin.assets, origin.data_dir)
        try:
            write_backup(store, files, origin.data_dir, archive, "postgresql" if origin.store.url else "sqlite")
        finally:
            store.close()
            files.close()
        with _site(main, space=False) as site:
            spaces = site.get(SpaceService)
            if name in spaces.served():  # made meanwhile (through the API, say): not overwritten
                raise ValueError(f"'{name}' is taken (a space or an alias)")
            spaces.empty(name)  # what a killed fork to this name left
            spaces.prepare(name)  # its folder, and on PostgreSQL its schema, before anything is written
        say(f"restoring into {name}")
        restore_backup(target, archive, force=True)  # force: what a killed fork to this name left
    finally:
        archive.unlink(missing_ok=True)
    say("recording the revisions it starts from")
    with _site(target) as copy:
        _record_base(copy.store, _revisions(copy))
    with _site(main, space=False) as site:
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


def diff(main: Settings, name: str) -> tuple[str, list[ModelDiff]]:
    """Fork `name` against its origin: (the origin's name, per model)."""
    with _site(main, space=False) as site:
        forked = site.get(SpaceService).spaces.get(name)
        if forked is None:
            raise ValueError(f"there is no space '{name}'")
        origin = forked.get("origin")
        if not origin:
            raise ValueError(f"space '{name}' was not forked from another (quire spaces fork)")
        site.get(SpaceService).get(origin)
    with _site(space_settings(main, name)) as copy:
        ours = _revisions(copy)
        base_rows = copy.store.collection(BASE)
        base: dict[str, dict[str, int]] = {}
        for row in (base_rows.find() if base_rows.exists() else []):
            model, _, item = row["_id"].partition("|")
            base.setdefault(model, {})[item] = int(row["rev"])
    with _site(space_settings(main, origin)) as source:
        theirs = _revisions(source)
    found = []
    for model in sorted(set(ours) | set(theirs) | set(base)):
        mine, other, was = ours.get(model, {}), theirs.get(model, {}), base.get(model, {})
        d = ModelDiff(model)
        for item in sorted(set(mine) | set(other) | set(was)):
            at_fork, here, there = was.get(item), mine.get(item), other.get(item)
            we = here != at_fork  # changed, made or removed in the fork since
            they = there != at_fork
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
    return origin, found
