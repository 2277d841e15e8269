"""The size cap of the generated images (`thumbs_max_bytes`).

On local disk (`ThumbCache`, the folder `<data>/thumbs`):

Every worker adds the size of what it renders to a running total kept in
`thumbs/.usage` (under a file lock, so all processes share it). Only when
the total passes the cap is the folder walked once: the least recently used
files go until it is down to 90% of the cap, and the total is set to what is
really there. A request costs no walk; a walk frees a tenth of the cap.

"Used" is the file's access time, which Quire sets itself when it serves a
file (at most every few minutes per file, whatever the mount's atime
options); the modification time stays as written, so ETags built from it do
not change.

In a bucket (`BucketThumbCap`) objects have no access time, and a shared
running total would cost a request per render: each instance counts what it
wrote itself, and after a tenth of the cap it lists the generated images
once and removes the oldest written until they are down to 90%.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from quire.files import Files

log = logging.getLogger("quire.assets")
TOUCH_EVERY = 300  # seconds: a file served again within this keeps its atime
LOW_WATER = 0.9


class ThumbCache:
    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = root
        self.max_bytes = max_bytes

    def touch(self, key: str) -> None:
        """Mark the image `key` (`<asset>/<name>`) as used now (cheap: a
        stat, and a utime now and then)."""
        path = self.root / key
        try:
            stat = path.stat()
            now = time.time()
            if now - stat.st_atime > TOUCH_EVERY:
                os.utime(path, ns=(time.time_ns(), stat.st_mtime_ns))
        except OSError:  # evicted meanwhile: nothing to mark
            pass

    def added(self, size: int) -> None:
        """Count `size` bytes written (negative: removed); evict when over
        the cap. Runs in a worker thread: it may walk the folder."""
        self.root.mkdir(parents=True, exist_ok=True)
        # the usage file is its own lock: every process opens it and locks it
        with open(self.root / ".usage", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                try:
                    total = max(0, int(handle.read() or b"x") + size)
                except ValueError:  # first use, an older data dir, or a torn write: count once
                    total = self._walk_total()
                if total > self.max_bytes:
                    total = self.evict()
                handle.truncate(0)
                handle.write(str(total).encode())
                handle.flush()
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def evict(self) -> int:
        """Remove the least recently used files until the folder is at
        most 90% of the cap; answers the bytes left."""
        files = list(self._files())
        total = sum(size for _, size, _ in files)
        goal = int(self.max_bytes * LOW_WATER)
        if total <= self.max_bytes:
            return total
        files.sort()  # oldest access first
        removed = 0
        for _, size, path in files:
            if total <= goal:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                total -= size
                removed += 1
        log.info("generated images over %d bytes: removed %d least recently used files", self.max_bytes, removed)
        return total

    def _walk_total(self) -> int:
        return sum(size for _, size, _ in self._files())

    def _files(self) -> Iterator[tuple[float, int, Path]]:
        """(atime, size, path) of every generated image; lock files, files
        being written (`.part`) and the usage file are not images."""
        with os.scandir(self.root) as folders:
            for folder in folders:
                if folder.name.startswith(".") or not folder.is_dir(follow_symlinks=False):
                    continue
                with os.scandir(folder.path) as entries:
                    for entry in entries:
                        if entry.name.startswith(".") or entry.name.endswith(".lock"):
                            continue
                        with contextlib.suppress(FileNotFoundError):
                            stat = entry.stat(follow_symlinks=False)
                            yield stat.st_atime, stat.st_size, Path(entry.path)


class BucketThumbCap:
    """The cap of generated images kept in a bucket (see the module's
    docstring): oldest written go first, since S3 keeps no use times."""

    def __init__(self, files: Files, max_bytes: int) -> None:
        self.files = files
        self.max_bytes = max_bytes
        self._written = 0  # bytes this instance wrote since it last listed them
        self._lock = threading.Lock()

    def touch(self, key: str) -> None:
        """Nothing to mark: an object's only time is when it was written."""

    def added(self, size: int) -> None:
        """Count `size` bytes written; list and evict after a tenth of the
        cap. Runs in a worker thread: it may list the whole prefix."""
        with self._lock:
            self._written += max(size, 0)
            if self._written < self.max_bytes * (1 - LOW_WATER):
                return
            self._written = 0
        self.evict()

    def evict(self) -> int:
        """Remove the oldest written images until they are at most 90% of
        the cap; answers the bytes left."""
        found = sorted(self.files.list(), key=lambda info: (info.modified_ns, info.key))
        total = sum(info.size for info in found)
        if total <= self.max_bytes:
            return total
        goal = int(self.max_bytes * LOW_WATER)
        doomed = []
        for info in found:
            if total <= goal:
                break
            doomed.append(info.key)
            total -= info.size
        self.files.delete_many(doomed)
        log.info("generated images over %d bytes: removed %d oldest files", self.max_bytes, len(doomed))
        return total
