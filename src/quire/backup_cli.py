"""`quire backup FILE` and `quire restore FILE`: the command line of
backup.py (docs/moving.md#backups)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quire.backup import BackupError, restore_backup, verify_backup, write_backup
from quire.config import Settings
from quire.processes import lower_priority


class Counter:
    """A line on a terminal that follows the work (nothing elsewhere)."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.shown = 0.0

    def __call__(self, what: str, count: int) -> None:
        if self.tty and time.monotonic() - self.shown > 0.2:
            sys.stderr.write(f"\r{what[:40]:<40} {count:>10,}")
            sys.stderr.flush()
            self.shown = time.monotonic()

    def done(self) -> None:
        if self.tty and self.shown:
            sys.stderr.write("\r" + " " * 52 + "\r")
            sys.stderr.flush()


def cmd_backup(args: argparse.Namespace) -> int:
    settings: Settings = args.load_settings(args)
    lower_priority(settings.server.batch_niceness, whole_process=True)  # bulk work: a server beside it answers first
    path = Path(args.file)
    if not path.parent.is_dir():
        print(f"error: {path.parent} is not a folder", file=sys.stderr)
        return 2
    if path.is_dir():
        print(f"error: {path} is a folder: name the archive to write (like {path / 'site.tar'})", file=sys.stderr)
        return 2
    if not settings.store.url and not settings.db_path.is_file():
        print(f"error: {settings.data_dir} holds no site (no {settings.db_path.name})", file=sys.stderr)
        return 1
    from quire.files import open_files
    from quire.store import open_store

    store = open_store(settings.store.url, settings.db_path, lock_timeout=60.0)
    files = open_files(settings.assets, settings.data_dir)
    counter = Counter()
    started = time.monotonic()
    try:
        summary = write_backup(store, files, settings.data_dir, path,
                               "postgresql" if settings.store.url else "sqlite", counter)
    except (BackupError, OSError) as exc:
        counter.done()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        store.close()
        files.close()
    counter.done()
    print(f"Backed up {summary.describe()} to {path} in {time.monotonic() - started:.1f} s")
    if summary.missing:
        print(f"warning: {len(summary.missing)} files named by the records were not found in the storage",
              file=sys.stderr)
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        print(f"error: {path} does not exist", file=sys.stderr)
        return 2
    counter = Counter()
    started = time.monotonic()
    try:
        if args.verify:
            summary = verify_backup(path)
            counter.done()
            print(f"{path} is whole: {summary.describe()}")
            if summary.missing:
                print(f"warning: {len(summary.missing)} files the records name are not in it", file=sys.stderr)
            return 0
        settings: Settings = args.load_settings(args)
        summary = restore_backup(settings, path, force=args.force, progress=counter)
    except BackupError as exc:
        counter.done()
        print(f"error: {exc}", file=sys.stderr)
        return 1
    counter.done()
    print(f"Restored {summary.describe()} into {settings.store.url and 'the database' or settings.data_dir} "
          f"in {time.monotonic() - started:.1f} s")
    return 0


def add_parsers(sub: Any, common: argparse.ArgumentParser,
                load_settings: Callable[[argparse.Namespace], Settings]) -> None:
    backup = sub.add_parser(
        "backup", parents=[common], help="write the whole site (store and files) to one archive",
        description="Write one archive of the whole site as it is at one moment: every collection of the "
                    "store (SQLite or PostgreSQL) and every upload (the data folder or the bucket). The "
                    "server may serve and write meanwhile. See docs/moving.md#backups.")
    backup.add_argument("file", help="the archive to write (replaced only once the backup is whole)")
    backup.set_defaults(func=cmd_backup, load_settings=load_settings)
    restore = sub.add_parser(
        "restore", parents=[common], help="restore a site from a backup archive",
        description="Restore a backup into the data folder and database the settings name, which must be "
                    "empty (or --force to replace what is there). --verify only checks the archive.")
    restore.add_argument("file", help="the archive written by quire backup")
    restore.add_argument("--force", action="store_true", help="replace the site that is there")
    restore.add_argument("--verify", action="store_true", help="check the archive whole; restore nothing")
    restore.set_defaults(func=cmd_restore, load_settings=load_settings)
