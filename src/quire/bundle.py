"""Export and import bundles: models, locales, roles, items, pages, menus,
page settings, translation projects and forms as one JSON document, for
moving a project between instances and for seeding.

Each module contributes its part (`bundleparts.BundlePart`, declared next
to its service): how its share is exported, checked and stored through the
service. This module only puts the parts in order and drives them: every
part is checked before anything is stored, the plain parts are stored in
one transaction, the batched part (items) in transactions of a batch each.

API keys and users are not part of a bundle: they are secrets of one instance.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from quire.auth.service import SYSTEM, Identity
from quire.bundleparts import BatchedPart, BundlePart, Checked
from quire.errors import BadRequest

if TYPE_CHECKING:
    from quire.modules import Services
    from quire.store import Store

FORMAT = 1
IMPORTER = Identity("admin", key_id="import", kind="system")
# Items are committed in batches of `[store] import_batch_items`, and at the
# latest after BATCH_SECONDS, so that other writers wait at most about that
# long; BATCH_GAP is the pause between batches in which they get the lock.
BATCH_SECONDS = 0.25
BATCH_GAP = 0.025


@dataclass
class Progress:
    """How far an import got: items of the bundle, and items committed."""

    items: int = 0
    stored: int = 0


def parts(quire: Services) -> list[BundlePart | BatchedPart]:
    """Every module's parts (`Module.bundle`), in module order: the order of
    the bundle and of the import's counts. Plain parts are stored in this
    order (models before the pages that show them, pages before the menus
    that link them); batched parts follow them."""
    return [part for module in quire.modules if module.bundle is not None for part in module.bundle(quire)]


def export_bundle(quire: Services, identity: Identity = SYSTEM) -> Iterator[bytes]:
    """The bundle as chunks of JSON; batched parts (items) are streamed
    after the others, model by model. Once all is out, `bundle.export`
    tells who exported what (the audit log records it)."""
    every = parts(quire)
    head = {"quire": FORMAT, **{p.key: p.export() for p in every if isinstance(p, BundlePart)}}
    out = orjson.dumps(head)[:-1]
    for part in every:
        if isinstance(part, BatchedPart):
            yield out + b"," + orjson.dumps(part.key) + b":"
            yield from part.export()
            out = b""
    yield out + b"}"
    if quire.events.has("bundle.export"):
        with quire.store.transaction():
            quire.events.notify("bundle.export", parts=[p.key for p in every], identity=identity)


async def import_bundle(
    quire: Services, bundle: Any, batch: int | None = None, progress: Progress | None = None
) -> dict[str, int]:
    """Load a bundle: check all of it first, then store it.

    A bad part anywhere (an item that fails its model's checks included)
    refuses the whole bundle and stores nothing. Models, locales, roles,
    pages, menus, forms and translation projects are stored in one
    transaction; items follow in transactions of `batch` items, so that a
    long import lets other writers in between batches. Items are matched by
    `_id`: running the same import again changes nothing. `progress`, if
    given, follows the committed items, for a caller whose import stops."""
    if not isinstance(bundle, dict) or bundle.get("quire") != FORMAT:
        raise BadRequest('Not a Quire bundle (expected {"quire": 1, ...})')
    every = parts(quire)
    plain = [p for p in every if isinstance(p, BundlePart)]
    batched = [p for p in every if isinstance(p, BatchedPart)]
    checked = Checked(IMPORTER)
    for part in plain:
        checked.values[part.key] = part.check(bundle.get(part.key), checked)
    for batched_part in batched:  # they depend on the others (items on models and locales)
        checked.values[batched_part.key] = batched_part.check(bundle.get(batched_part.key), checked)
    progress = progress or Progress()
    progress.items = sum(len(checked.values[p.key]) for p in batched)
    counts = {p.counted: 0 for p in every if p.counted is not None}
    store = quire.store
    # An import may wait for the write lock as long as a command line may.
    async with store.atomic(timeout=store.blocking_timeout):
        for plain_part in plain:
            stored = await plain_part.load(checked.values[plain_part.key], IMPORTER)
            if plain_part.counted is not None:
                counts[plain_part.counted] += stored
    size = batch or quire.settings.store.import_batch_items
    for batched_part in batched:
        await _load_batched(quire, batched_part, checked.values[batched_part.key], size, counts, progress)
    async with store.atomic(timeout=store.blocking_timeout):
        quire.events.notify("bundle.import", counts=counts, identity=IMPORTER)
    return counts


async def _load_batched(quire: Services, part: BatchedPart, entries: list[Any], size: int,
                        counts: dict[str, int], progress: Progress) -> None:
    """Entries in transactions of `size` (or BATCH_SECONDS of work);
    `progress.stored` follows the commits."""
    before = progress.stored  # entries of earlier batched parts

    async def load(entry: Any) -> None:
        await part.load_one(entry, IMPORTER)
        counts[part.counted] += 1

    def committed() -> None:
        progress.stored = before + counts[part.counted]

    await store_in_batches(quire.store, iter(entries), load, size, committed)


async def store_in_batches(store: Store, entries: Iterator[Any], load: Callable[[Any], Awaitable[None]],
                           size: int, committed: Callable[[], None] | None = None) -> None:
    """`load` each entry inside transactions of `size` entries (or
    BATCH_SECONDS of work), with a short gap between them in which other
    writers get the lock: a long import never locks out the API.
    `committed` runs at each commit (a count read then is the batch's end)."""
    pending = next(entries, _END)
    while pending is not _END:
        # steady: after each gap the import takes its next turn as soon as
        # the writer then holding the lock is done (fair share, not starved)
        async with store.atomic(timeout=store.blocking_timeout, steady=True):
            # First of the batch's after-commit callbacks: it runs right at
            # the commit, before the events' awaits, where a Ctrl-C may land.
            if committed is not None:
                store.after_commit(committed)
            ends = time.monotonic() + BATCH_SECONDS
            for _ in range(size):
                await load(pending)
                pending = next(entries, _END)
                if pending is _END or time.monotonic() > ends:
                    break  # done, or long enough holding the lock: commit here
        # Writers of other processes poll for the lock (see
        # SqliteStore.atomic); a short gap lets them in.
        await asyncio.sleep(BATCH_GAP)


_END = object()
