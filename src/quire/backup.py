"""Full backups: `quire backup FILE`, `quire restore FILE` (docs/moving.md).

A backup is one tar archive of the whole site at one moment, written while
the server serves and writes:

    quire-backup/format.json    format, the moment (`at`), the backend
    store/meta.json             the store's data metadata
    store/<name>.jsonl.gz       a collection's documents as stored, one a
                                line, in insertion order (`name` quoted)
    files/uploads/<key>         every upload: asset files, form attachments
    secrets/webhooks.key        the data folder's webhook key, when it has one
    quire-backup/manifest.json  what the archive holds, with counts

Every member carries its SHA-256 (and a collection its document count) in
its tar header, so a restore checks each one as it streams past and a
verification needs no second pass.

The moment is the store's snapshot (`store.snapshot()`: one read
transaction; writers go on and are not seen). Files are copied after it,
under a hold (`files.FileHold`): an upload deleted meanwhile is moved
aside, not removed, so every file the moment's records name is found.
A file written after the moment may come along; nothing names it.

Search indexes, automatic indexes and generated images are not in the
archive: a restore builds them again. The archive holds what the database
holds (password and key hashes, sealed webhook secrets) and the key that
opens those secrets: keep it as safe as the database.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import secrets
import shutil
import tarfile
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import quote, unquote

import orjson

from quire import __version__
from quire.config import Settings
from quire.files import BadKey, FileHold, Files, PiecesReader, check_key, open_files
from quire.migrate import is_copied, is_data_meta
from quire.processes import pid_alive
from quire.store import open_store
from quire.webhooks.sealing import KEY_FILE

FORMAT = 1
FORMAT_MEMBER = "quire-backup/format.json"
MANIFEST_MEMBER = "quire-backup/manifest.json"
META_MEMBER = "store/meta.json"
KEY_MEMBER = f"secrets/{KEY_FILE}"
UPLOADS = "uploads"
HOLD_SECONDS = 15 * 60  # the hold's lease, renewed while files are copied
# tar (pax) header fields of each member, as extended attributes: `tar`
# extracts the archive without a word about them
SHA = "SCHILY.xattr.user.quire.sha256"
COUNT = "SCHILY.xattr.user.quire.documents"
BATCH = 500
# collections whose documents name files: the assets' `path`, the submissions' attachments
ASSETS, SUBMISSIONS = "assets/assets", "inbox/submissions"

Progress = Callable[[str, int], None]  # (what, how many so far)


class BackupError(Exception):
    """The archive cannot be written, read or restored; the message says why."""


@dataclass
class Summary:
    """What an archive holds (written, verified or restored)."""

    at: float = 0.0
    backend: str = ""
    collections: dict[str, int] = field(default_factory=dict)  # name -> documents
    files: int = 0
    file_bytes: int = 0
    missing: list[str] = field(default_factory=list)  # files the records name that are not in the archive
    linked: int = 0  # files linked beside the archive instead (a fork's, write_backup's link_uploads_to)

    @property
    def documents(self) -> int:
        return sum(self.collections.values())

    def describe(self) -> str:
        moment = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.at))
        text = (f"{self.documents} documents in {len(self.collections)} collections, {self.files} files "
                f"({self.file_bytes / 1e6:.1f} MB), as of {moment}")
        if self.missing:
            text += f"; {len(self.missing)} files the records name are missing (first: {self.missing[0]})"
        return text


def _member_name(collection: str) -> str:
    return f"store/{quote(collection, safe='')}.jsonl.gz"


def _collection_of(member: str) -> str:
    return unquote(member.removeprefix("store/").removesuffix(".jsonl.gz"))


def _referenced(name: str, row: bytes, into: set[str]) -> None:
    """The upload keys a document of `name` names."""
    if name == ASSETS:
        path = orjson.loads(row).get("path")
        if isinstance(path, str):
            into.add(path.lstrip("/"))
    elif name == SUBMISSIONS:
        for items in (orjson.loads(row).get("attachments") or {}).values():
            for item in items if isinstance(items, list) else []:
                if isinstance(item, dict) and isinstance(item.get("file"), str):
                    into.add(item["file"])


# -- writing ------------------------------------------------------------------


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, **headers: str) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.pax_headers = {SHA: hashlib.sha256(data).hexdigest(), **headers}
    tar.addfile(info, io.BytesIO(data))


def write_backup(store: Any, files: Files, data_dir: Path, path: Path, backend: str,
                 progress: Progress | None = None, link_uploads_to: Path | None = None) -> Summary:
    """The archive of the site at one moment, written to `path` (replaced
    only once whole: a failed or killed backup leaves the old one).
    `link_uploads_to` (a fork, quire.forks): the uploads are not copied into
    the archive but hard-linked under that folder, as of the same moment; a
    file is never changed in place (every write is a new file renamed over
    the name: LocalFiles.put), so the two sites share each file until one
    of them writes or deletes it. Copied where a link cannot be made (another
    file system)."""
    summary = Summary(backend=backend)
    _remove_leftovers(path)
    work = Path(tempfile.mkdtemp(prefix=f".quire-backup-{os.getpid()}-", dir=path.parent))
    partial = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.part")
    hold = FileHold(files)
    hold.place(HOLD_SECONDS)
    try:
        with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
            referenced = _write_store(store, tar, work, summary, progress)
            key = data_dir / KEY_FILE
            if key.is_file():
                _add_bytes(tar, KEY_MEMBER, key.read_bytes())
            added = _write_files(files, hold, tar, summary, progress, link_uploads_to)
            summary.missing = sorted(referenced - added)
            manifest = {"format": FORMAT, "at": summary.at, "backend": backend, "collections": summary.collections,
                        "files": summary.files, "file_bytes": summary.file_bytes, "missing": summary.missing}
            _add_bytes(tar, MANIFEST_MEMBER, orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
        os.replace(partial, path)
    finally:
        hold.release()
        partial.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    return summary


def _remove_leftovers(path: Path) -> None:
    """What a killed backup of `path` left beside it (its partial archive
    and work folder), named by the process that wrote them: removed when
    that process is gone."""
    for leftover in [*path.parent.glob(f".{path.name}.*.part"), *path.parent.glob(".quire-backup-*")]:
        marks = leftover.name.removeprefix(f".{path.name}.").removeprefix(".quire-backup-")
        pid = marks.split("-", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


def _write_store(store: Any, tar: tarfile.TarFile, work: Path, summary: Summary,
                 progress: Progress | None) -> set[str]:
    referenced: set[str] = set()
    with store.snapshot() as snapshot:
        summary.at = time.time()
        head = {"format": FORMAT, "at": summary.at, "backend": summary.backend, "quire": __version__,
                "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(summary.at))}
        _add_bytes(tar, FORMAT_MEMBER, orjson.dumps(head))
        meta = {k: v for k, v in snapshot.meta().items() if is_data_meta(k)}
        _add_bytes(tar, META_MEMBER, orjson.dumps(meta))
        for name in (n for n in snapshot.names() if is_copied(n)):
            temp = work / "collection.jsonl.gz"
            sha, count = hashlib.sha256(), 0
            with gzip.open(temp, "wb", compresslevel=5) as out:
                for rows in snapshot.rows(name, BATCH):
                    for row in rows:
                        line = row + b"\n"
                        out.write(line)
                        sha.update(line)
                        if name in (ASSETS, SUBMISSIONS):
                            _referenced(name, row, referenced)
                    count += len(rows)
                    if progress is not None:
                        progress(name, count)
            info = tar.gettarinfo(str(temp), _member_name(name))
            info.pax_headers = {SHA: sha.hexdigest(), COUNT: str(count)}
            with open(temp, "rb") as source:
                tar.addfile(info, source)
            summary.collections[name] = count
    return referenced


def _write_files(files: Files, hold: FileHold, tar: tarfile.TarFile, summary: Summary,
                 progress: Progress | None, link_to: Path | None = None) -> set[str]:
    """Every upload present now, then every one deleted since the moment
    (held aside); the keys added (or, `link_to`, linked there)."""
    uploads = files.under(UPLOADS)
    added: set[str] = set()
    renewed = time.monotonic()

    def add(source: Files, key: str, as_key: str) -> None:
        nonlocal renewed
        if link_to is not None and _linked(source, key, link_to / as_key):
            added.add(as_key)
            summary.linked += 1  # not in the archive: its manifest counts what it holds
            if time.monotonic() - renewed > HOLD_SECONDS / 3:
                hold.place(HOLD_SECONDS)
                renewed = time.monotonic()
            return
        opened = source.open(key)
        if opened is None:  # deleted (held) since the listing: found in the held folder next
            return
        info, pieces = opened
        sha = hashlib.sha256()
        reader = PiecesReader(iter(pieces), sha.update)
        member = tarfile.TarInfo(f"files/{UPLOADS}/{as_key}")
        member.size = info.size
        member.mtime = int(info.modified)
        try:
            # the hash is known once read: a placeholder of the same size is replaced after
            member.pax_headers = {SHA: "0" * 64}
            start = tar.offset
            tar.addfile(member, io.BufferedReader(reader))
        finally:
            pieces.close()
        _rewrite_sha(tar, start, member, sha.hexdigest())
        added.add(as_key)
        summary.files += 1
        summary.file_bytes += info.size
        if progress is not None:
            progress("files", summary.files)
        if time.monotonic() - renewed > HOLD_SECONDS / 3:
            hold.place(HOLD_SECONDS)
            renewed = time.monotonic()

    for found in list(uploads.list()):
        add(uploads, found.key, found.key)
    for held_key, key in hold.held_keys():
        if key not in added:
            add(files, held_key, key)
    return added


def _linked(source: Files, key: str, target: Path) -> bool:
    """`key` of a local storage hard-linked (or else copied) at `target`;
    False when the storage is not local or the file is gone (held aside
    since: the caller looks there)."""
    found = source.local_path(key)
    if found is None:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(found, target)
    except FileNotFoundError:
        return False
    except FileExistsError:
        return True
    except OSError:  # another file system, or one without links
        try:
            shutil.copy2(found, target)
        except FileNotFoundError:
            return False
    return True


def _rewrite_sha(tar: tarfile.TarFile, start: int, member: tarfile.TarInfo, sha: str) -> None:
    """Put a file's hash into its header, written before the file was read:
    the header's length is the same, so it is written again in place."""
    member.pax_headers = {SHA: sha}
    header = member.tobuf(tarfile.PAX_FORMAT, tarfile.ENCODING, "surrogateescape")
    fileobj = tar.fileobj
    assert fileobj is not None
    end = fileobj.tell()
    fileobj.seek(start)
    fileobj.write(header)
    fileobj.seek(end)


# -- reading ------------------------------------------------------------------


def _members(path: Path) -> Iterator[tuple[tarfile.TarInfo, IO[bytes] | None]]:
    try:
        tar = tarfile.open(path, "r|")  # noqa: SIM115 - closed by the `with` below, once read
    except (OSError, tarfile.TarError) as exc:
        raise BackupError(f"{path} is not a Quire backup: {exc}") from None
    with tar:
        try:
            for member in tar:
                yield member, tar.extractfile(member) if member.isfile() else None
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise BackupError(f"{path} is cut short or damaged: {exc}") from None


class _Checked:
    """A member's bytes, hashed as they are read; `done` compares the hash."""

    def __init__(self, member: tarfile.TarInfo, source: IO[bytes]) -> None:
        self.member = member
        self.source = source
        self.sha = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self.source.read(n)
        self.sha.update(data)
        return data

    def done(self, sha: Any = None) -> None:
        expected = self.member.pax_headers.get(SHA)
        got = (sha or self.sha).hexdigest()
        if expected != got:
            raise BackupError(f"{self.member.name} is damaged: its checksum does not match")


def _lines(member: tarfile.TarInfo, source: IO[bytes]) -> Iterator[list[bytes]]:
    """A collection member's documents in batches, checked against its
    checksum and count once read."""
    sha, count = hashlib.sha256(), 0
    try:
        with gzip.open(source, "rb") as lines:
            batch: list[bytes] = []
            for line in lines:
                sha.update(line)
                batch.append(line.rstrip(b"\n"))
                if len(batch) == BATCH:
                    count += len(batch)
                    yield batch
                    batch = []
            count += len(batch)
            if batch:
                yield batch
    except (OSError, EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise BackupError(f"{member.name} is damaged: {exc}") from None
    if member.pax_headers.get(SHA) != sha.hexdigest() or member.pax_headers.get(COUNT) != str(count):
        raise BackupError(f"{member.name} is damaged: its checksum or count does not match")


def _head(member: tarfile.TarInfo, source: IO[bytes] | None) -> dict[str, Any]:
    if member.name != FORMAT_MEMBER or source is None:
        raise BackupError("not a Quire backup: it does not start with quire-backup/format.json")
    try:
        head = orjson.loads(source.read())
    except orjson.JSONDecodeError:
        raise BackupError("not a Quire backup: its format.json is not JSON") from None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        raise BackupError(f"a backup of format {head.get('format') if isinstance(head, dict) else '?'}: "
                          f"this Quire reads format {FORMAT}")
    return head


def verify_backup(path: Path) -> Summary:
    """Read the whole archive and check every member (checksums, counts,
    documents are JSON objects with an id, the files the records name are
    there); BackupError naming the first problem."""
    summary = Summary()
    referenced: set[str] = set()
    files: set[str] = set()
    manifest: dict[str, Any] | None = None
    members = _members(path)
    first = next(members, None)
    if first is None:
        raise BackupError(f"{path} is empty")
    head = _head(*first)
    summary.at, summary.backend = float(head.get("at", 0)), str(head.get("backend", ""))
    for member, source in members:
        if source is None:
            continue
        if member.name.startswith("store/") and member.name.endswith(".jsonl.gz"):
            name = _store_name(member)
            count = 0
            for batch in _lines(member, source):
                for row in batch:
                    _document(row, name)
                    if name in (ASSETS, SUBMISSIONS):
                        _referenced(name, row, referenced)
                count += len(batch)
            summary.collections[name] = count
        elif member.name.startswith(f"files/{UPLOADS}/"):
            _upload_key(member)
            checked = _Checked(member, source)
            while checked.read(1 << 20):
                pass
            checked.done()
            files.add(member.name.removeprefix(f"files/{UPLOADS}/"))
            summary.files += 1
            summary.file_bytes += member.size
        elif member.name == MANIFEST_MEMBER:
            manifest = _json_member(member, source.read(), dict)
        else:
            checked = _Checked(member, source)
            checked.read()
            checked.done()
    if manifest is None:
        raise BackupError(f"{path} is cut short: it has no manifest (the backup did not finish)")
    _matches(path, manifest, summary)
    summary.missing = sorted(referenced - files)
    return summary


def _matches(path: Path, manifest: dict[str, Any], summary: Summary) -> None:
    """The archive holds what its manifest lists (BackupError naming what not)."""
    listed = manifest.get("collections") or {}
    for name in sorted(set(listed) | set(summary.collections)):
        if listed.get(name) != summary.collections.get(name):
            raise BackupError(f"{path} does not hold what its manifest lists: collection {name} has "
                              f"{summary.collections.get(name, 0)} documents, the manifest says {listed.get(name, 0)}")
    if manifest.get("files") != summary.files:
        raise BackupError(f"{path} does not hold what its manifest lists: {summary.files} files, the manifest "
                          f"says {manifest.get('files')}")


def _store_name(member: tarfile.TarInfo) -> str:
    """The collection a store member holds (BackupError for a name Quire
    never writes, such as its own meta table)."""
    name = _collection_of(member.name)
    if not name or not is_copied(name):
        raise BackupError(f"{member.name}: not a collection of a site (a name Quire never writes)")
    return name


def _json_member(member: tarfile.TarInfo, data: bytes, kind: type) -> Any:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise BackupError(f"{member.name} is damaged: not JSON") from None
    if not isinstance(value, kind):
        raise BackupError(f"{member.name} is damaged: not a JSON object")
    return value


def _upload_key(member: tarfile.TarInfo) -> str:
    """The upload key of a file member (BackupError for a name that would
    leave the uploads: a name Quire never writes)."""
    key = member.name.removeprefix(f"files/{UPLOADS}/")
    try:
        return check_key(key)
    except BadKey:
        raise BackupError(f"{member.name} is not a file of the uploads (a name Quire never writes)") from None


def _document(row: bytes, name: str) -> dict[str, Any]:
    try:
        doc = orjson.loads(row)
    except orjson.JSONDecodeError:
        raise BackupError(f"a document of {name} is not JSON") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("_id"), str):
        raise BackupError(f"a document of {name} is not an object with an _id")
    return doc


# -- restoring ------------------------------------------------------------------


def is_empty(store: Any, files: Files) -> bool:
    """No documents in any collection and no uploads."""
    return all(store.collection(n).count() == 0 for n in store.collection_names() if is_copied(n)) \
        and next(iter(files.under(UPLOADS).list()), None) is None


def wipe(store: Any, files: Files) -> None:
    """Every collection, the data metadata and the uploads removed."""
    for name in store.collection_names():
        if is_copied(name):
            with store.transaction():
                store.drop_collection(name)
    with store.transaction():
        stale = [k for k in store.meta_items() if is_data_meta(k)]
        if stale:
            store.delete_meta(*stale)
    files.delete_prefix(UPLOADS)


def restore_backup(settings: Settings, path: Path, force: bool = False,
                   progress: Progress | None = None) -> Summary:
    """The archive into the data folder and database `settings` name, which
    must be empty (`force`: emptied first). A failure half-way empties the
    target again; nothing of the archive is left half-restored."""
    store = open_store(settings.store.url, settings.db_path, lock_timeout=60.0)
    files = open_files(settings.assets, settings.data_dir)
    try:
        if not is_empty(store, files):
            if not force:
                raise BackupError("the target already holds a site (documents or uploads): restore into an empty "
                                  "data folder and database, or add --force to replace what is there")
            wipe(store, files)
        try:
            summary = _restore(store, files, settings.data_dir, path, force, progress)
        except BaseException:
            wipe(store, files)
            raise
    finally:
        store.close()
        files.close()
    _finish(settings)
    return summary


def _restore(store: Any, files: Files, data_dir: Path, path: Path, force: bool,
             progress: Progress | None) -> Summary:
    summary = Summary()
    members = _members(path)
    first = next(members, None)
    if first is None:
        raise BackupError(f"{path} is empty")
    head = _head(*first)
    summary.at, summary.backend = float(head.get("at", 0)), str(head.get("backend", ""))
    uploads = files.under(UPLOADS)
    manifest: dict[str, Any] | None = None
    for member, source in members:
        if source is None:
            continue
        if member.name == META_MEMBER:
            checked = _Checked(member, source)
            meta = _json_member(member, checked.read(), dict)
            checked.done()
            with store.transaction():
                for key, value in meta.items():
                    if is_data_meta(key) and isinstance(value, str):
                        store.set_meta(key, value)
        elif member.name.startswith("store/") and member.name.endswith(".jsonl.gz"):
            name = _store_name(member)
            summary.collections[name] = _restore_collection(store, name, member, source, progress)
        elif member.name.startswith(f"files/{UPLOADS}/"):
            key = _upload_key(member)
            checked = _Checked(member, source)
            uploads.put_stream(key, cast(IO[bytes], checked))
            checked.done()
            summary.files += 1
            summary.file_bytes += member.size
            if progress is not None:
                progress("files", summary.files)
        elif member.name == KEY_MEMBER:
            checked = _Checked(member, source)
            _restore_key(data_dir, checked.read(), force)
            checked.done()
        elif member.name == MANIFEST_MEMBER:
            manifest = _json_member(member, source.read(), dict)
    if manifest is None:
        raise BackupError(f"{path} is cut short: it has no manifest (the backup did not finish)")
    _matches(path, manifest, summary)
    summary.missing = list(manifest.get("missing") or [])
    return summary


def _restore_collection(store: Any, name: str, member: tarfile.TarInfo, source: IO[bytes],
                        progress: Progress | None) -> int:
    into = store.collection(name)
    store.ensure_table(name)
    count = 0
    for batch in _lines(member, source):
        docs = [_document(row, name) for row in batch]
        with store.transaction():
            for doc in docs:
                if into.get(doc["_id"]) is not None:
                    raise BackupError(f"{member.name}: the id {doc['_id']} is there twice")
                into.insert(doc)
        count += len(docs)
        if progress is not None:
            progress(name, count)
    return count


def _restore_key(data_dir: Path, key: bytes, force: bool) -> None:
    """The webhook key file, replacing one the folder has: the target is
    empty (or was emptied), so no stored secret is sealed with its key,
    and the restored secrets are sealed with this one."""
    target = data_dir / KEY_FILE
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(target.with_suffix(".restore"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(key)
    os.replace(target.with_suffix(".restore"), target)


def _finish(settings: Settings) -> None:
    """On the restored site's services: the system version moved (running
    instances load definitions again), declared indexes made, every search
    index built again."""
    from quire.app import Quire
    from quire.migrate import finish

    quire = Quire(settings)
    try:
        finish(quire, [])
    finally:
        quire.close()
