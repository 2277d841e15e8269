"""Moving a site from its SQLite database to PostgreSQL (`quire migrate`).

Every collection of the SQLite database is copied document by document
through the stores' own collection API, in batches of one transaction
each, in the source's insertion order (so lists without a sort keep their
order of ties). Documents are replaced by id, so running the same
migration again converges: documents added or changed in the source since
are written again, documents the source no longer has are removed from
the target, and collections it no longer has are dropped.

What is not copied is what belongs to the embedded engines: the SQLite
store's registry of automatic indexes, the search queue, and the marks the
embedded search engine keeps in the metadata. The PostgreSQL store
searches with its own engine, so `finish` builds every search index again
there, and re-creates the declared indexes of the content models (the
modules' own indexes are made by building the services on the target).

With `--files`, the uploads of the data folder go into the bucket the
settings name (`copy_files`); generated images are made again there.

`verify` compares source and target per collection: the number of
documents and a SHA-256 over (id, document) in id order, documents taken
as parsed JSON (written again compactly, keys in their order), and a
second checksum over the stored text byte for byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

import orjson

from quire.content.models import ModelService
from quire.files import Files
from quire.searchmod.service import SearchService
from quire.store import PostgresStore, SqliteStore

if TYPE_CHECKING:
    from quire.modules import Services

ID_ORDER: list[tuple[tuple[str, ...], int]] = [(("_id",), 1)]
# Metadata of the embedded engines: the PostgreSQL store and search engine
# keep their own (search marks are made again by the rebuild; the system
# version is moved on the target so that every instance reloads).
SQLITE_ONLY_META = ("searchmod/",)
# the target's own: the system version, and the mark of a migration
MARK = "migrate/source"
TARGET_OWN_META = ("system_version", MARK)
DEFAULT_BATCH = 500
DELETE_BATCH = 1000
SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(url: str) -> bool:
    return url.startswith(SCHEMES)


def redacted(url: str) -> str:
    """`url` without its password (in the user part or as a `password`
    parameter), for every message that names the target."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            name, colon, _ = user.partition(":")
            netloc = f"{name}{':***' if colon else ''}@{host}"
        pairs = parse_qsl(parts.query, keep_blank_values=True)
        query = parts.query  # kept as written unless it holds a password
        if any(k.lower() == "password" for k, _ in pairs):
            query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in pairs])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # not even a URL: name none of it
        return "(the target address)"


def scrubbed(message: str, url: str) -> str:
    """An error text that cannot carry the URL's password (a driver's
    message may quote the address it was given)."""
    for secret in _passwords(url):
        for spelling in {secret, quote(secret, safe=""), unquote(secret)}:
            message = message.replace(spelling, "***")
    return message


def _passwords(url: str) -> set[str]:
    try:
        parts = urlsplit(url)
        found = {parts.password or ""} | {v for k, v in parse_qsl(parts.query) if k.lower() == "password"}
    except ValueError:
        return set()
    return found - {""}


def is_copied(name: str) -> bool:
    """Whether a collection of the source is site data (the store's own
    tables and the search queue are not collections, but the shape check
    of `collection_names` is backed by their names here)."""
    return not name.startswith(("_quire", "sx:"))


def is_data_meta(key: str) -> bool:
    return not key.startswith(SQLITE_ONLY_META) and key not in TARGET_OWN_META


# -- progress -----------------------------------------------------------------


class Progress:
    """A progress bar on a terminal (redrawn in place on stderr), plain
    lines elsewhere: one per collection either way."""

    WIDTH = 30

    def __init__(self, total: int, out: TextIO | None = None) -> None:
        self.out = out if out is not None else sys.stderr
        self.tty = self.out.isatty()
        self.total = total
        self.done = 0
        self.current = ""

    def start(self, name: str) -> None:
        self.current = name
        self._draw()

    def advance(self, n: int) -> None:
        self.done += n
        self._draw()

    def line(self, text: str) -> None:
        if self.tty:
            self.out.write("\r\x1b[2K")
        self.out.write(text + "\n")
        self._draw()
        self.out.flush()

    def close(self) -> None:
        if self.tty:
            self.out.write("\r\x1b[2K")
            self.out.flush()

    def _draw(self) -> None:
        if not self.tty:
            return
        share = self.done / self.total if self.total else 1.0
        filled = int(share * self.WIDTH)
        bar = "#" * filled + "-" * (self.WIDTH - filled)
        self.out.write(f"\r\x1b[2K[{bar}] {self.done}/{self.total} documents  {self.current}")
        self.out.flush()


# -- copying ------------------------------------------------------------------


@dataclass
class Copied:
    name: str
    copied: int = 0
    removed: int = 0


@dataclass
class Totals:
    collections: list[Copied] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    meta: int = 0

    @property
    def documents(self) -> int:
        return sum(c.copied for c in self.collections)

    @property
    def removed(self) -> int:
        return sum(c.removed for c in self.collections)


def source_collections(source: SqliteStore) -> list[str]:
    return [name for name in source.collection_names() if is_copied(name)]


def foreign_documents(target: PostgresStore) -> int:
    """How many documents the target holds when no migration wrote it (an
    existing site there, whose data a migration would overwrite and prune):
    0 for an empty database, or one a migration made."""
    if target.get_meta(MARK) is not None:
        return 0
    return sum(target.collection(name).count() for name in target.collection_names() if is_copied(name))


def copy_site(source: SqliteStore, target: PostgresStore, batch: int = DEFAULT_BATCH,
              out: TextIO | None = None) -> Totals:
    """Every collection and the data metadata of `source` into `target`,
    batch by batch; what the target holds beyond the source goes. The
    target is marked as made by a migration first (`foreign_documents`)."""
    target.set_meta(MARK, source.path)
    names = source_collections(source)
    progress = Progress(sum(source.collection(n).count() for n in names), out)
    totals = Totals()
    try:
        for name in names:
            progress.start(name)
            copied = copy_collection(source, target, name, batch, progress.advance)
            totals.collections.append(copied)
            removed = f", {copied.removed} removed from the target" if copied.removed else ""
            progress.line(f"{name}: {copied.copied} documents{removed}")
        for name in sorted(set(target.collection_names()) - set(names)):
            if is_copied(name):
                target.drop_collection(name)
                totals.dropped.append(name)
                progress.line(f"{name}: dropped (the source has no such collection)")
        totals.meta = copy_meta(source, target)
    finally:
        progress.close()
    return totals


def copy_collection(source: SqliteStore, target: PostgresStore, name: str, batch: int,
                    advance: Callable[[int], None]) -> Copied:
    """One collection in insertion order, a transaction per batch; then the
    ids the target has and the source lacks (deleted since an earlier run)
    are removed. The source's ids are kept in memory meanwhile (about 100
    bytes each)."""
    result = Copied(name)
    into = target.collection(name)
    target.ensure_table(name)  # an empty collection is copied too
    seen: set[str] = set()
    for chunk in source.collection(name).stream_raw(chunk=batch):
        docs = [orjson.loads(raw) for raw in chunk]
        with target.transaction():
            for doc in docs:
                into.replace(doc)
        seen.update(doc["_id"] for doc in docs)
        result.copied += len(docs)
        advance(len(docs))
    extra = [i for i in into.ids() if i not in seen]
    step = min(batch, DELETE_BATCH)  # ids go as bound parameters, of which a statement takes 65,535
    for start in range(0, len(extra), step):
        with target.transaction():
            result.removed += into.delete_many({"_id": {"$in": extra[start:start + step]}})
    return result


def copy_meta(source: SqliteStore, target: PostgresStore) -> int:
    """The metadata keys that are data, in one transaction; keys of that
    kind the source no longer has go."""
    wanted = {k: v for k, v in source.meta_items().items() if is_data_meta(k)}
    with target.transaction():
        for key, value in wanted.items():
            target.set_meta(key, value)
        stale = [k for k in target.meta_items() if is_data_meta(k) and k not in wanted]
        if stale:
            target.delete_meta(*stale)
    return len(wanted)


def search_index_names(store: PostgresStore) -> list[str]:
    """The search indexes defined on the target before the copy (their
    engine data is dropped when the source no longer defines them)."""
    return store.collection("searchmod/indexes").ids()


@dataclass
class Finished:
    models: int
    searched: dict[str, int]


def finish(quire: Services, before: list[str]) -> Finished:
    """On the target's services (built after the copy, so each module made
    its own indexes for the data as it is): the system version moved, so
    running instances load definitions again; the declared indexes of every
    content model; every search index built in PostgreSQL's engine."""
    store = quire.store
    models = quire.get(ModelService)
    with store.transaction():
        quire.cache.bump_system()
    for model in models.all():
        store.ensure_indexes(model.collection, models.index_paths(model), models.hints(model))
    searched = asyncio.run(quire.get(SearchService).rebuild_moved(before))
    return Finished(len(models.all()), searched)


# -- files ------------------------------------------------------------------------

# Uploads (form attachments under them too) are the site's files; generated
# images (`thumbs/`) are made again from them on demand, so they stay behind.
FILE_FOLDER = "uploads"


@dataclass
class FilesCopied:
    copied: int = 0
    present: int = 0
    removed: int = 0
    bytes: int = 0


def copy_files(source: Files, target: Files, out: TextIO | None = None) -> FilesCopied:
    """The uploads of the data folder into the storage the settings name (a
    bucket). A file already there with the same size is left (an upload's
    name is new for every upload, so its bytes never change); files the
    target has under `uploads/` and the source lacks (deleted since an
    earlier run) go, as documents do."""
    result = FilesCopied()
    there = {info.key: info.size for info in target.list(FILE_FOLDER)}
    mine: set[str] = set()
    for info in source.list(FILE_FOLDER):
        mine.add(info.key)
        if there.get(info.key) == info.size:
            result.present += 1
            continue
        path = source.local_path(info.key)
        assert path is not None  # the source is the data folder
        with open(path, "rb") as handle:
            result.bytes += target.put_stream(info.key, handle)
        result.copied += 1
    extra = sorted(set(there) - mine)
    target.delete_many(extra)
    result.removed = len(extra)
    removed = f", {result.removed} removed from the target" if result.removed else ""
    (out if out is not None else sys.stderr).write(
        f"files: {result.copied} copied ({result.bytes} bytes), {result.present} already there{removed}\n")
    return result


def files_check(source: Files, target: Files) -> Check:
    """The uploads on both sides: how many, and a checksum over (key, size)
    (sizes, not contents: comparing the bytes would download every file)."""
    def side(files: Files) -> Side:
        digest = hashlib.sha256()
        count = 0
        for info in sorted(files.list(FILE_FOLDER), key=lambda i: i.key):
            digest.update(f"{info.key}\x00{info.size}\n".encode())
            count += 1
        return Side(count, digest.hexdigest(), digest.hexdigest())

    return Check("(files) uploads", side(source), side(target))


# -- verifying ----------------------------------------------------------------


@dataclass
class Side:
    count: int = 0
    parsed: str = ""
    text: str = ""


@dataclass
class Check:
    name: str
    source: Side
    target: Side

    @property
    def same(self) -> bool:
        return self.source.count == self.target.count and self.source.parsed == self.target.parsed

    @property
    def same_text(self) -> bool:
        return self.source.text == self.target.text


def _digest(rows: Iterator[list[bytes]]) -> Side:
    parsed, text = hashlib.sha256(), hashlib.sha256()
    count = 0
    for chunk in rows:
        for raw in chunk:
            doc = orjson.loads(raw)
            head = str(doc.get("_id")).encode() + b"\x00"
            parsed.update(head + orjson.dumps(doc) + b"\n")
            text.update(head + bytes(raw) + b"\n")
            count += 1
    return Side(count, parsed.hexdigest(), text.hexdigest())


def side_of(store: SqliteStore | PostgresStore, name: str, present: set[str]) -> Side:
    """Count and checksums of one collection (a missing one is empty)."""
    if name not in present:
        return _digest(iter(()))
    return _digest(store.collection(name).stream_raw(None, ID_ORDER))


def verify(source: SqliteStore, target: PostgresStore) -> list[Check]:
    """Per collection of either side, source against target."""
    mine, theirs = set(source_collections(source)), {n for n in target.collection_names() if is_copied(n)}
    return [Check(name, side_of(source, name, mine), side_of(target, name, theirs))
            for name in sorted(mine | theirs)]


def verify_table(checks: list[Check]) -> str:
    width = max([len("collection"), *(len(c.name) for c in checks)])
    lines = [f"{'collection':<{width}}  {'source':>8}  {'target':>8}  result"]
    for check in checks:
        if not check.same:
            result = "DIFFERS"
        elif not check.same_text:
            result = "same (stored text differs)"
        else:
            result = "same"
        lines.append(f"{check.name:<{width}}  {check.source.count:>8}  {check.target.count:>8}  {result}")
    return "\n".join(lines)


def elapsed(started: float) -> str:
    return f"{time.perf_counter() - started:.1f} s"
