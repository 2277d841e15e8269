"""A Cockpit 2 installation's storage, read as it is on disk.

Cockpit keeps its data in MongoLite: one SQLite file per database under
`storage/data/` (`content.sqlite`, `system.sqlite`, `app.sqlite`, ...),
one table per collection with each document as JSON text in a `document`
column. A collection name `content/collections/posts` is the database
`content` and the table `collections_posts`; a name without a slash
(`assets`) lives in the database `app`. Model definitions are PHP files,
`storage/content/<name>.model.php`; uploaded files are under
`storage/uploads/`. The files are opened read-only and never changed.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from quire.cockpit.documents import BadDocument, NotCockpit
from quire.cockpit.mongoexport import MongoExport
from quire.cockpit.phparray import PhpError, read_php_return

__all__ = ["BadDocument", "CockpitFolder", "NotCockpit"]

BATCH = 500  # documents read per query: memory stays flat on large tables


def _connect(path: Path) -> sqlite3.Connection:
    # read-only, and immutable when the file has no journal next to it:
    # a copied folder may sit on a read-only disk
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=10)  # (a ? in a folder's name too)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise NotCockpit(f"{path.name} is not a readable SQLite database ({exc})") from None
    return conn


class CockpitFolder:
    """The storage of one Cockpit installation (its root or its `storage/`)."""

    def __init__(self, path: str | Path, mongo_export: str | Path | None = None) -> None:
        root = Path(path)
        if not root.exists():
            raise NotCockpit(f"{root} does not exist")
        storage = root / "storage" if (root / "storage" / "content").is_dir() or (root / "storage" / "data").is_dir() \
            else root
        self.storage = storage
        self.data = storage / "data"
        self.uploads = storage / "uploads"
        self._dbs: dict[str, sqlite3.Connection] = {}
        self.databases: list[str] = []
        # a site on MongoDB: its documents from mongoexport files (mongoexport.py)
        self.export: MongoExport | None = None
        if mongo_export is not None:
            if not (storage / "content").is_dir() and not (storage / "uploads").is_dir():
                raise NotCockpit(f"{root} is not a Cockpit folder: it has no storage/content nor storage/uploads")
            self.export = MongoExport(mongo_export)
            return
        if not self.data.is_dir():
            raise NotCockpit(f"{root} is not a Cockpit folder: it has no storage/data (nor data/) folder "
                             "(a site on MongoDB: add --mongo-export)")
        self.databases = sorted(p.stem for p in self.data.glob("*.sqlite") if p.stem != "app.memory")
        if "content" not in self.databases and "system" not in self.databases:
            raise NotCockpit(f"{self.data} holds no content.sqlite or system.sqlite: not a Cockpit 2 storage")
        for name in self.databases:  # fail now, before any plan, on a broken file
            self._db(name)

    def close(self) -> None:
        for conn in self._dbs.values():
            conn.close()
        self._dbs.clear()

    def __enter__(self) -> CockpitFolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _db(self, name: str) -> sqlite3.Connection:
        if name not in self._dbs:
            self._dbs[name] = _connect(self.data / f"{name}.sqlite")
        return self._dbs[name]

    @staticmethod
    def where(collection: str) -> tuple[str, str]:
        """(database, table) of a collection name, as MongoLite places it."""
        db, _, rest = collection.partition("/")
        if not rest:
            return "app", db
        return db, rest.replace("/", "_")

    def collections(self) -> dict[str, int]:
        """Every collection present, as `database/table`, with its count."""
        if self.export is not None:
            return self.export.collections()
        out: dict[str, int] = {}
        for db in self.databases:
            conn = self._db(db)
            for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                         "AND name NOT LIKE 'sqlite_%' ORDER BY name"):
                columns = {row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')}
                if "document" not in columns:
                    continue  # not a MongoLite collection
                (count,) = conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()
                out[f"{db}/{table}"] = count
        return out

    def has(self, collection: str) -> bool:
        if self.export is not None:
            return self.export.has(collection)
        db, table = self.where(collection)
        if db not in self.databases:
            return False
        found = self._db(db).execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        return found.fetchone() is not None

    def count(self, collection: str) -> int:
        if self.export is not None:
            return self.export.count(collection)
        if not self.has(collection):
            return 0
        db, table = self.where(collection)
        return int(self._db(db).execute(f'SELECT count(*) FROM "{table}"').fetchone()[0])

    def documents(self, collection: str, bad: list[BadDocument] | None = None) -> Iterator[dict[str, Any]]:
        """The collection's documents in stored order, read a batch at a
        time. A row that is not a JSON object is left out and, when `bad` is
        given, noted there."""
        if self.export is not None:
            yield from self.export.documents(collection, bad)
            return
        if not self.has(collection):
            return
        db, table = self.where(collection)
        conn = self._db(db)
        last = -1
        while True:
            try:
                rows = conn.execute(f'SELECT id, document FROM "{table}" WHERE id > ? ORDER BY id LIMIT ?',
                                    (last, BATCH)).fetchall()
            except sqlite3.DatabaseError as exc:
                raise NotCockpit(f"{db}.sqlite, table {table}: {exc}") from None
            if not rows:
                return
            for row_id, text in rows:
                last = row_id
                try:
                    doc = orjson.loads(text) if text is not None else None
                except orjson.JSONDecodeError as exc:
                    doc, problem = None, f"not JSON ({exc})"
                else:
                    problem = "not a JSON object"
                if isinstance(doc, dict):
                    yield doc
                elif bad is not None:
                    bad.append(BadDocument(collection, row_id, problem))

    def model_files(self) -> list[Path]:
        folder = self.storage / "content"
        return sorted(folder.glob("*.model.php")) if folder.is_dir() else []

    def read_model(self, path: Path) -> dict[str, Any]:
        """A model definition file; NotCockpit naming the file when it is not
        the PHP literal Cockpit writes."""
        try:
            value = read_php_return(path.read_text(encoding="utf-8"))
        except RecursionError:
            raise NotCockpit(f"{path.relative_to(self.storage)}: nested too deep to be a model definition") from None
        except (PhpError, UnicodeDecodeError, ValueError, OverflowError) as exc:
            raise NotCockpit(f"{path.relative_to(self.storage)}: {exc}") from None
        if not isinstance(value, dict):
            raise NotCockpit(f"{path.relative_to(self.storage)}: the file returns no model definition")
        return value

    def upload(self, path: str) -> Path | None:
        """The file of an asset path (`/2026/01/31/x.png`) under uploads/,
        or None when it is missing or would leave the folder."""
        relative = Path(path.lstrip("/"))
        if relative.is_absolute() or ".." in relative.parts:
            return None
        found = self.uploads / relative
        if found.is_symlink() or not found.is_file():
            return None  # a link could point at any file of the machine, which would then be served
        if not found.resolve().is_relative_to(self.uploads.resolve()):
            return None  # a linked folder on the way
        return found
