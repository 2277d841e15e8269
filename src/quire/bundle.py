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

import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import orjson

from quire.auth.service import SYSTEM, Identity
from quire.batches import store_in_batches
from quire.bundleparts import BatchedPart, BundlePart, Checked
from quire.errors import BadRequest
from quire.files import PiecesReader

if TYPE_CHECKING:
    from quire.modules import Services

FORMAT = 1
IMPORTER = Identity("admin", key_id="import", kind="system")


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


@dataclass(frozen=True)
class Selection:
    """One model's items (those matching `spec`, a MongoDB filter), with
    the model, the locales and, with files, the assets they hold."""

    model: str
    spec: dict[str, Any] | None = None


def export_bundle(quire: Services, identity: Identity = SYSTEM, only: Selection | None = None,
                  with_files: bool = False, files: list[str] | None = None) -> Iterator[bytes]:
    """The bundle as chunks of JSON; batched parts (items) are streamed
    after the others, model by model. Parts of records whose files travel
    with them (assets) only `with_files`. Once all is out, `bundle.export`
    tells who exported what (the audit log records it)."""
    every = [p for p in parts(quire) if with_files or not p.with_files]
    if only is not None:
        yield from _export_selection(quire, only, every, with_files, files)
    else:
        head = {"quire": FORMAT, **{p.key: p.export() for p in every if isinstance(p, BundlePart)}}
        _files_of(head, files)
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


def _files_of(head: dict[str, Any], files: list[str] | None) -> None:
    """The upload keys of the assets in the bundle's head, into `files`."""
    if files is not None:
        files.extend(f"uploads/{a['path'].lstrip('/')}" for a in head.get("assets") or [])


def _export_selection(quire: Services, only: Selection, every: list[BundlePart | BatchedPart],
                      with_files: bool, files: list[str] | None) -> Iterator[bytes]:
    model = quire.models.get(only.model)  # 404 naming the model
    coll = quire.store.collection(model.collection)
    wanted: set[str] | None = None
    if with_files:  # the assets the selected items hold, found in a first pass
        wanted = set()
        for rows in coll.stream_raw(only.spec):
            for raw in rows:
                wanted.update(quire.asset_refs.asset_ids(model, orjson.loads(raw)))
    head: dict[str, Any] = {"quire": FORMAT, "models": [model.to_json()]}
    for part in every:
        if isinstance(part, BundlePart) and (part.key == "locales" or part.with_files):
            head[part.key] = part.export(wanted) if part.with_files else part.export()
    _files_of(head, files)
    yield orjson.dumps(head)[:-1] + b',"items":{' + orjson.dumps(model.name) + b":["
    first = True
    for rows in coll.stream_raw(only.spec):
        if rows:
            yield (b"" if first else b",") + b",".join(rows)
            first = False
    yield b"]}}"


async def import_bundle(
    quire: Services, bundle: Any, batch: int | None = None, progress: Progress | None = None,
    files: Callable[[str], bytes | None] | None = None,
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
    every = [p for p in parts(quire) if files is not None or not p.with_files]
    if files is None and any(bundle.get(p.key) for p in parts(quire) if p.with_files):
        raise BadRequest("This bundle holds assets: import the archive `quire export --with-files` wrote, "
                         "which carries their files")
    plain = [p for p in every if isinstance(p, BundlePart)]
    batched = [p for p in every if isinstance(p, BatchedPart)]
    checked = Checked(IMPORTER, files=files)
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




# -- bundles with files: a tar of bundle.json and files/uploads/... ---------------

BUNDLE_MEMBER = "bundle.json"


def write_archive(quire: Services, out: IO[bytes], only: Selection | None = None,
                  identity: Identity = SYSTEM) -> int:
    """A bundle with the files of its assets, as a tar stream to `out`:
    `bundle.json`, then `files/uploads/<path>` per asset. Answers the
    number of files."""
    keys: list[str] = []
    with tempfile.TemporaryFile() as bundle:
        for chunk in export_bundle(quire, identity, only, with_files=True, files=keys):
            bundle.write(chunk)
        size = bundle.tell()
        bundle.seek(0)
        with tarfile.open(fileobj=out, mode="w|", format=tarfile.PAX_FORMAT) as tar:
            info = tarfile.TarInfo(BUNDLE_MEMBER)
            info.size, info.mtime = size, int(time.time())
            tar.addfile(info, bundle)
            uploads = quire.assets.files
            for key in keys:
                opened = uploads.open(key)
                if opened is None:
                    raise BadRequest(f"the file of {key} is missing from the storage")
                found, pieces = opened
                member = tarfile.TarInfo(f"files/{key}")
                member.size, member.mtime = found.size, int(found.modified)
                try:
                    tar.addfile(member, PiecesReader(iter(pieces)))
                finally:
                    pieces.close()
    return len(keys)


def read_archive(path: Any) -> tuple[Any, Callable[[str], bytes | None], Callable[[], None]]:
    """(the bundle, a reader of its files by key, close) of an archive
    `write_archive` wrote."""
    try:
        tar = tarfile.open(path, "r:")  # noqa: SIM115 - the caller closes it (the third of the answer)
    except (OSError, tarfile.TarError) as exc:
        raise BadRequest(f"not a bundle archive: {exc}") from None
    try:
        member = tar.extractfile(BUNDLE_MEMBER)
    except KeyError:
        tar.close()
        raise BadRequest("not a bundle archive: it holds no bundle.json") from None
    try:
        bundle = orjson.loads(member.read()) if member is not None else None
    except orjson.JSONDecodeError as exc:
        tar.close()
        raise BadRequest(f"the archive's bundle.json is not valid JSON: {exc}") from None
    names = {m.name for m in tar.getmembers() if m.isfile()}

    def read(key: str) -> bytes | None:
        name = f"files/{key}"
        if name not in names:
            return None
        found = tar.extractfile(name)
        return found.read() if found is not None else None

    return bundle, read, tar.close

