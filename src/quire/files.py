"""Where files live: uploaded assets, generated images and form attachments.

`Files` is a small key -> bytes interface with two implementations:
`LocalFiles`, a folder (by default the data folder, keys being the same
relative paths Quire always used: `uploads/2026/01/31/x_1a2b3c4d.png`,
`thumbs/<asset>/<name>.webp`), and `S3Files`, a bucket and key prefix
(`[assets] storage = "s3://bucket/prefix"`) spoken to with boto3.

Keys are `/`-separated relative names; a key with an empty, `.` or `..`
part is refused (`BadKey`), so no key names anything outside its root.
Every method blocks (disk or network): callers on the event loop run them
in a worker thread when `remote` is true (local disk calls stay inline, as
they always were).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import io
import logging
import mimetypes
import os
import secrets
import shutil
import stat
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from quire.config import AssetSettings, s3_location
from quire.errors import Unavailable

log = logging.getLogger("quire.files")
CHUNK = 64 * 1024
MULTIPART_FROM = 16 * 1024 * 1024  # larger puts go up in parts (S3 takes at most 5 GB in one PUT)
DELETE_BATCH = 1000  # S3 DeleteObjects takes at most this many keys


class BadKey(ValueError):
    """A key that would leave its root (or is no key at all)."""


class StorageUnavailable(Unavailable):
    """503: the bucket did not answer, or refused (the log says why)."""

    def __init__(self) -> None:
        super().__init__("The file storage is not available; try again shortly", 5)


@dataclass(frozen=True)
class FileInfo:
    key: str  # relative to the Files object it came from
    size: int
    modified_ns: int  # when it was written (S3: Last-Modified, whole seconds)
    used_ns: int  # when it was last served (local: the access time; S3: as modified_ns)

    @property
    def modified(self) -> float:
        return self.modified_ns / 1e9


def check_key(key: str) -> str:
    parts = key.split("/")
    if not key or any(part in ("", ".", "..") for part in parts) or "\\" in key or "\0" in key:
        raise BadKey(f"not a file key: {key!r}")
    return key


class Files(ABC):
    """Bytes by key under one root."""

    remote = False  # whether calls go over the network (run them off the event loop)
    # Set by `under`: the storage's top (where a backup's hold is placed,
    # `FileHold`) and this one's folder in it.
    top: Files | None = None
    folder: str = ""

    def _made_under(self, made: Files, prefix: str) -> Files:
        made.top = self.top or self
        made.folder = f"{self.folder}/{prefix}" if self.folder else prefix
        return made

    def delete(self, key: str) -> None:
        """Remove the file at `key`; nothing when there is none. While a
        backup holds the site's uploads (`FileHold`), the file is moved
        aside instead, so the backup still finds it."""
        if not self._held([key]):
            self._remove(key)

    def delete_many(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if not self._held(keys):
            self._remove_many(keys)

    def _held(self, keys: list[str]) -> bool:
        """Move `keys` aside when a backup holds this folder: True when it did."""
        if self.folder.split("/", 1)[0] != HELD_FOLDER or not keys:
            return False
        top = self.top or self
        if not FileHold(top).active():
            return False
        for key in keys:
            full = f"{self.folder}/{check_key(key)}"
            top.move(full, f"{HELD}/{full}")
        return True

    @abstractmethod
    def _remove(self, key: str) -> None:
        """Remove the file at `key` (no hold)."""

    def _remove_many(self, keys: list[str]) -> None:
        for key in keys:
            self._remove(key)

    @abstractmethod
    def move(self, key: str, to: str) -> None:
        """Move the file at `key` to `to` (replacing it); nothing when there is none."""

    @abstractmethod
    def under(self, prefix: str) -> Files:
        """The same storage, rooted at `prefix` (a folder of this one)."""

    @abstractmethod
    def put(self, key: str, data: bytes) -> None:
        """Write `data` at `key`, replacing what was there; readers see the
        old file or the new one, never a part."""

    @abstractmethod
    def put_stream(self, key: str, source: IO[bytes]) -> int:
        """Write what `source` holds (read to its end, in pieces) at `key`;
        answers the bytes written."""

    @abstractmethod
    def put_new(self, key: str, data: bytes) -> bool:
        """Write `data` at `key` only if nothing is there: False (and the
        existing file kept) when something was, even when another process
        or instance wrote it a moment ago."""

    @abstractmethod
    def read(self, key: str) -> bytes:
        """The bytes at `key`; FileNotFoundError when there are none."""

    @abstractmethod
    def chunks(self, key: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        """The bytes at `key` from `start` to `end` (exclusive; None: to the
        end), in pieces; FileNotFoundError before the first when missing."""

    @abstractmethod
    def stat(self, key: str) -> FileInfo | None:
        """Size and times of the file at `key`; None when there is none
        (or the key is not a file key)."""

    @abstractmethod
    def open(self, key: str) -> tuple[FileInfo, Pieces] | None:
        """The file at `key`, its size and times and its bytes, in one
        request to a bucket; None when there is none. Close the pieces
        when they are not read to the end."""

    def exists(self, key: str) -> bool:
        return self.stat(key) is not None

    @abstractmethod
    def delete_prefix(self, prefix: str) -> int:
        """Remove every file in the folder `prefix`; answers their bytes."""

    @abstractmethod
    def list(self, prefix: str = "") -> Iterator[FileInfo]:
        """Every file in the folder `prefix` ("" for all), at any depth."""

    @abstractmethod
    def lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Held while one writer makes `key`: other threads of this process
        wait; on local disk other processes do too. Across S3 instances,
        `put_new` is what keeps the first file."""

    def local_path(self, key: str) -> Path | None:
        """The file on local disk (for a sendfile answer); None when remote."""
        return None

    def close(self) -> None:  # noqa: B027 - local disk holds nothing open
        """Release connections (nothing for local disk)."""


class LocalFiles(Files):
    """A folder. Writes go to a hidden `.<name>.<random>.part` beside the
    target and are renamed into place, so readers never see half a file."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._real_root: Path | None = None  # resolved once it exists (it may be made after us)

    def under(self, prefix: str) -> LocalFiles:
        made = LocalFiles(self.root / check_key(prefix))
        self._made_under(made, prefix)
        return made

    def path(self, key: str) -> Path:
        """The file of `key`; never outside the root (symbolic links too)."""
        target = (self.root / check_key(key)).resolve()
        real_root = self._real_root
        if real_root is None:
            real_root = self.root.resolve()
            if self.root.exists():
                self._real_root = real_root
        if not target.is_relative_to(real_root):
            raise BadKey(f"not a file key: {key!r}")
        return target

    def local_path(self, key: str) -> Path | None:
        return self.path(key)

    def _temp(self, key: str) -> Path:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        return target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")

    def put(self, key: str, data: bytes) -> None:
        temp = self._temp(key)
        try:
            with open(temp, "xb") as handle:
                handle.write(data)
            os.replace(temp, self.path(key))
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    def put_stream(self, key: str, source: IO[bytes]) -> int:
        temp = self._temp(key)
        try:
            with open(temp, "xb") as handle:
                shutil.copyfileobj(source, handle, CHUNK)
                size = handle.tell()
            os.replace(temp, self.path(key))
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return size

    def put_new(self, key: str, data: bytes) -> bool:
        temp = self._temp(key)
        try:
            with open(temp, "xb") as handle:
                handle.write(data)
            target = self.path(key)
            try:
                os.link(temp, target)  # a hard link fails if the name exists: create-only, atomically
            except FileExistsError:
                return False
            except OSError:  # a file system without hard links: look, then rename (callers hold lock(key))
                if target.exists():
                    return False
                os.replace(temp, target)
            return True
        finally:
            temp.unlink(missing_ok=True)

    def read(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except (IsADirectoryError, BadKey):
            raise FileNotFoundError(key) from None

    def chunks(self, key: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        handle = open(self.path(key), "rb")  # noqa: SIM115 - the pieces close it
        handle.seek(start)
        return Pieces(handle, None if end is None else end - start)

    def open(self, key: str) -> tuple[FileInfo, Pieces] | None:
        info = self.stat(key)
        if info is None:
            return None
        try:
            handle = open(self.path(key), "rb")  # noqa: SIM115 - the pieces close it
        except OSError:  # removed since the stat
            return None
        return info, Pieces(handle, info.size)

    def stat(self, key: str) -> FileInfo | None:
        try:
            found = self.path(key).stat()
        except (OSError, BadKey):  # missing, or a name too long for the file system
            return None
        if not stat.S_ISREG(found.st_mode):
            return None
        return FileInfo(key, found.st_size, found.st_mtime_ns, found.st_atime_ns)

    def _remove(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError, BadKey):
            self.path(key).unlink()

    def move(self, key: str, to: str) -> None:
        target = self.path(to)
        target.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.replace(self.path(key), target)

    def delete_prefix(self, prefix: str) -> int:
        size = sum(info.size for info in self.list(prefix))
        shutil.rmtree(self.root / check_key(prefix), ignore_errors=True)
        return size

    def list(self, prefix: str = "") -> Iterator[FileInfo]:
        """Hidden names (files being written, lock files) are not files."""
        start = self.root / check_key(prefix) if prefix else self.root
        for folder, dirs, names in os.walk(start):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                if name.startswith("."):
                    continue
                path = Path(folder) / name
                with contextlib.suppress(FileNotFoundError):
                    found = path.stat(follow_symlinks=False)
                    key = path.relative_to(self.root).as_posix()
                    yield FileInfo(key, found.st_size, found.st_mtime_ns, found.st_atime_ns)

    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        # the lock file is opened anew by each waiting thread, so flock
        # serialises threads of this process and other processes alike
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        lock_file = target.with_name(f".{target.name}.lock")
        while True:
            handle = open(lock_file, "a+b")  # noqa: SIM115 - closed below, after the unlink
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                # the holder before us may have removed the file after we opened it:
                # a lock on that old file excludes no one who opens the name now
                if os.fstat(handle.fileno()).st_ino == os.stat(lock_file).st_ino:
                    break
            except FileNotFoundError:
                pass
            handle.close()
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                lock_file.unlink()  # while still held, so no one locks the removed file unknowingly
            handle.close()


class S3Files(Files):
    """A bucket and a key prefix, through boto3 (any S3 API; see
    docs/assets.md for the services and what is relied on)."""

    remote = True

    def __init__(self, client: Any, bucket: str, prefix: str, locks: _KeyLocks | None = None) -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix  # "" or ends with "/"
        self._locks = locks or _KeyLocks()
        # False once the service answered that it has no conditional writes (Backblaze B2)
        self.conditional = [True]  # a list: shared with the objects `under` makes

    def under(self, prefix: str) -> S3Files:
        made = S3Files(self.client, self.bucket, f"{self.prefix}{check_key(prefix)}/", self._locks)
        made.conditional = self.conditional
        self._made_under(made, prefix)
        return made

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    @contextlib.contextmanager
    def _answering(self, action: str, key: str) -> Iterator[None]:
        """Errors of the bucket (after botocore's retries) as a 503; the
        log names the action, the key and S3's error code, never settings."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            yield
        except ClientError as exc:
            log.error("files: %s %s in bucket %s failed: %s", action, key, self.bucket, _code(exc))
            raise StorageUnavailable() from None
        except BotoCoreError as exc:
            log.error("files: %s %s in bucket %s failed: %s", action, key, self.bucket, type(exc).__name__)
            raise StorageUnavailable() from None

    def put(self, key: str, data: bytes) -> None:
        if len(data) >= MULTIPART_FROM:
            self.put_stream(key, io.BytesIO(data))
            return
        with self._answering("write", key):
            self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, ContentType=_mime(key))

    def put_stream(self, key: str, source: IO[bytes]) -> int:
        counted = _Counting(source)
        # upload_fileobj sends large sources as a multipart upload and aborts it on failure
        with self._answering("write", key):
            self.client.upload_fileobj(counted, self.bucket, self._key(key), ExtraArgs={"ContentType": _mime(key)})
        return counted.size

    def put_new(self, key: str, data: bytes) -> bool:
        from botocore.exceptions import ClientError

        name = self._key(key)
        if not self.conditional[0]:
            return self._put_if_absent(key, data)
        with self._answering("write", key):
            for attempt in range(5):
                try:
                    self.client.put_object(Bucket=self.bucket, Key=name, Body=data, ContentType=_mime(key),
                                           IfNoneMatch="*")
                    return True
                except ClientError as exc:
                    code = _code(exc)
                    if code in ("PreconditionFailed", "412"):
                        return False
                    if code in ("NotImplemented", "501"):
                        log.warning("files: bucket %s has no conditional writes (If-None-Match); generated images "
                                    "are looked for before they are written instead", self.bucket)
                        self.conditional[0] = False
                        return self._put_if_absent(key, data)
                    # 409: another conditional write of the key is in flight; once it ends, ours fails or wins
                    if code not in ("ConditionalRequestConflict", "409") or attempt == 4:
                        raise
                    time.sleep(0.05 * 2**attempt)
        return False  # not reached: the last attempt returns or raises

    def _put_if_absent(self, key: str, data: bytes) -> bool:
        """put_new without the service's help: another instance may write
        between the look and the write (the later write then wins)."""
        if self.exists(key):
            return False
        self.put(key, data)
        return True

    def read(self, key: str) -> bytes:
        return b"".join(self.chunks(key))

    def chunks(self, key: str, start: int = 0, end: int | None = None) -> Iterator[bytes]:
        from botocore.exceptions import ClientError

        args: dict[str, Any] = {"Bucket": self.bucket, "Key": self._key(key)}
        if start or end is not None:
            args["Range"] = f"bytes={start}-{'' if end is None else end - 1}"
        with self._answering("read", key):
            try:
                body = self.client.get_object(**args)["Body"]
            except ClientError as exc:
                if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                    raise FileNotFoundError(key) from None
                raise
        return Pieces(body, None)

    def open(self, key: str) -> tuple[FileInfo, Pieces] | None:
        from botocore.exceptions import ClientError

        try:
            name = self._key(key)
        except BadKey:
            return None
        with self._answering("read", key):
            try:
                got = self.client.get_object(Bucket=self.bucket, Key=name)
            except ClientError as exc:
                if _code(exc) in ("NoSuchKey", "404", "NotFound"):
                    return None
                raise
        written = int(got["LastModified"].timestamp()) * 1_000_000_000
        size = int(got["ContentLength"])
        return FileInfo(key, size, written, written), Pieces(got["Body"], size)

    def stat(self, key: str) -> FileInfo | None:
        from botocore.exceptions import ClientError

        try:
            name = self._key(key)
        except BadKey:
            return None
        with self._answering("stat", key):
            try:
                head = self.client.head_object(Bucket=self.bucket, Key=name)
            except ClientError as exc:
                if _code(exc) in ("404", "NoSuchKey", "NotFound"):
                    return None
                raise
        written = int(head["LastModified"].timestamp()) * 1_000_000_000
        return FileInfo(key, int(head["ContentLength"]), written, written)

    def _remove(self, key: str) -> None:
        with contextlib.suppress(BadKey), self._answering("delete", key):
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))  # a missing key is no error in S3

    def move(self, key: str, to: str) -> None:
        from botocore.exceptions import ClientError

        with self._answering("move", key):
            try:
                self.client.copy_object(Bucket=self.bucket, Key=self._key(to),
                                        CopySource={"Bucket": self.bucket, "Key": self._key(key)})
            except ClientError as exc:
                if _code(exc) in ("NoSuchKey", "404"):
                    return
                raise
            self.client.delete_object(Bucket=self.bucket, Key=self._key(key))

    def _remove_many(self, keys: list[str]) -> None:
        names = [self._key(key) for key in keys]
        for start in range(0, len(names), DELETE_BATCH):
            batch = [{"Key": name} for name in names[start:start + DELETE_BATCH]]
            with self._answering("delete", batch[0]["Key"]):
                answer = self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": batch, "Quiet": True})
            for error in answer.get("Errors", []):
                log.warning("files: could not delete %s: %s", error.get("Key"), error.get("Code"))

    def delete_prefix(self, prefix: str) -> int:
        found = list(self.list(prefix))
        self.delete_many(info.key for info in found)
        return sum(info.size for info in found)

    def list(self, prefix: str = "") -> Iterator[FileInfo]:
        start = self.prefix + (check_key(prefix) + "/" if prefix else "")
        pages = iter(self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start))
        while True:
            with self._answering("list", prefix or "/"):
                page = next(pages, None)
            if page is None:
                return
            for item in page.get("Contents", []):
                written = int(item["LastModified"].timestamp()) * 1_000_000_000
                yield FileInfo(item["Key"][len(self.prefix):], int(item["Size"]), written, written)

    def lock(self, key: str) -> contextlib.AbstractContextManager[None]:
        return self._locks.held(self._key(key))

    def close(self) -> None:
        self.client.close()


class Pieces:
    """The bytes of an open file or object, CHUNK at a time, up to `left`
    bytes (None: to its end); closed at the end, or by `close()`."""

    def __init__(self, source: Any, left: int | None) -> None:
        self._source = source
        self._left = left

    def __iter__(self) -> Pieces:
        return self

    def __next__(self) -> bytes:
        want = CHUNK if self._left is None else min(CHUNK, self._left)
        piece = self._source.read(want) if want else b""
        if not piece:
            self.close()
            raise StopIteration
        if self._left is not None:
            self._left -= len(piece)
        return piece

    def close(self) -> None:
        self._source.close()


class PiecesReader(io.RawIOBase):
    """A file-like reader over pieces of bytes (a file's `Pieces`, as
    `tarfile` and other readers want them); `seen` gets every piece read."""

    def __init__(self, pieces: Iterator[bytes], seen: Callable[[bytes], Any] | None = None) -> None:
        self.pieces = pieces
        self.left = b""
        self.seen = seen

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.left:
            piece = next(self.pieces, None)
            if piece is None:
                return 0
            self.left = piece
        n = min(len(buffer), len(self.left))
        buffer[:n] = self.left[:n]
        if self.seen is not None:
            self.seen(self.left[:n])
        self.left = self.left[n:]
        return n


class _KeyLocks:
    """One lock per key being written, for the threads of this process;
    a lock goes when nobody holds or waits for it."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, int]] = {}

    @contextlib.contextmanager
    def held(self, key: str) -> Iterator[None]:
        with self._guard:
            lock, users = self._locks.get(key, (threading.Lock(), 0))
            self._locks[key] = (lock, users + 1)
        try:
            with lock:
                yield
        finally:
            with self._guard:
                lock, users = self._locks[key]
                if users == 1:
                    del self._locks[key]
                else:
                    self._locks[key] = (lock, users - 1)


class _Counting:
    """A readable that counts what was read from it (for put_stream's answer)."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.size = 0

    def read(self, n: int = -1) -> bytes:
        piece = self.source.read(n)
        self.size += len(piece)
        return piece


_SESSION_LOCK = threading.Lock()


@functools.cache
def _shared_session() -> Any:
    import boto3

    return boto3.session.Session()


# A backup's hold on the uploads: while the marker at the top of the
# storage says so, a deleted upload is moved under HELD (its key kept
# after the prefix) instead of removed, so a backup copying files after
# its database moment finds every file that moment's records name.
HOLD_MARKER = ".backup-hold"
HELD = "held"
HELD_FOLDER = "uploads"  # the folder a hold covers (generated images are made again)


class FileHold:
    """The hold of one storage (its top `Files`): placed with a lease, so
    a backup that dies lets go by itself."""

    def __init__(self, top: Files) -> None:
        self.top = top

    def active(self) -> bool:
        try:
            until = float(self.top.read(HOLD_MARKER).decode().strip() or 0)
        except (FileNotFoundError, ValueError, UnicodeDecodeError):
            return False
        return until > time.time()

    def place(self, seconds: float) -> None:
        self.top.put(HOLD_MARKER, f"{time.time() + seconds:.3f}".encode())

    def release(self) -> None:
        """Let go, then remove what was held (when no other backup holds)."""
        self.top._remove(HOLD_MARKER)
        if not self.active():
            self.top.delete_prefix(HELD)

    def held_keys(self) -> Iterator[tuple[str, str]]:
        """(key under the held folder, key it had) of every file held."""
        for info in self.top.list(f"{HELD}/{HELD_FOLDER}"):
            yield info.key, info.key[len(HELD) + len(HELD_FOLDER) + 2:]


def discard(files: Files, keys: Iterable[str]) -> None:
    """Delete `keys` as a cleanup (after a commit, or after another error):
    a storage that fails now leaves the files behind and says so in the
    log, instead of turning a finished request into an error."""
    keys = list(keys)
    if not keys:
        return
    try:
        files.delete_many(keys)
    except (StorageUnavailable, OSError) as exc:
        log.warning("files: %d file(s) could not be removed and are left behind (%s), first %s",
                    len(keys), type(exc).__name__, keys[0])


def _mime(key: str) -> str:
    return mimetypes.guess_type(key)[0] or "application/octet-stream"


def _code(exc: Any) -> str:
    error = exc.response.get("Error", {})
    return str(error.get("Code") or exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def open_files(settings: AssetSettings, data_dir: Path) -> Files:
    """The storage `[assets] storage` names: the data folder when empty,
    else a bucket. Credentials, region and endpoint come from the settings,
    or else from boto3's usual places (AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_REGION / AWS_DEFAULT_REGION,
    AWS_ENDPOINT_URL_S3, profiles, instance roles). Nothing here logs them."""
    if not settings.storage:
        return LocalFiles(data_dir)
    import boto3
    from botocore.config import Config

    bucket, prefix = s3_location(settings.storage)
    addressing = settings.s3_addressing
    if addressing == "auto":  # S3-compatible servers behind one host name want the bucket in the path
        addressing = "path" if settings.s3_endpoint else "auto"
    region = settings.s3_region or os.environ.get("AWS_REGION") or None
    config = Config(s3={"addressing_style": addressing}, retries={"mode": "standard", "max_attempts": 4},
                    connect_timeout=10, read_timeout=60, max_pool_connections=32,
                    request_checksum_calculation="when_required", response_checksum_validation="when_required")
    credentials: dict[str, str] = {}
    if settings.s3_access_key:
        credentials = {"aws_access_key_id": settings.s3_access_key,
                       "aws_secret_access_key": settings.s3_secret_key}
    # a session loads the API's models (half a second); one with keys of its own can be shared.
    # Without keys, a new session finds the current environment's (or role's) credentials.
    with _SESSION_LOCK:  # sessions are not safe to share between threads while making clients
        session = _shared_session() if credentials else boto3.session.Session()
        client = session.client("s3", endpoint_url=settings.s3_endpoint or None, region_name=region, config=config,
                                **credentials)
    log.info("files: in bucket %s%s", bucket, f" under {prefix}" if prefix else "")
    return S3Files(client, bucket, prefix)
