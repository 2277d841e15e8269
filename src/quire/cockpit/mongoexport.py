"""The data of a Cockpit site on MongoDB, as `mongoexport` writes it: one
file per collection, `<collection>.json`, one document a line (or one
JSON array, `--jsonArray`). Cockpit names a collection `content/collections/posts`
`content_collections_posts` there. MongoDB's extended JSON (`{"$oid": ...}`,
`{"$numberLong": ...}`) is read as the plain values Cockpit means."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from quire.cockpit.documents import BadDocument, NotCockpit

SCALARS = {"$oid": str, "$numberLong": int, "$numberInt": int, "$numberDouble": float, "$numberDecimal": float}


def plain(value: Any) -> Any:
    """Extended JSON as plain values (an id as its hex text, a number as a number)."""
    if isinstance(value, dict):
        if len(value) == 1:
            (key, inner), = value.items()
            if key in SCALARS and isinstance(inner, str | int | float):
                try:
                    return SCALARS[key](inner)
                except ValueError:
                    return inner
            if key == "$date":
                return inner.get("$numberLong", inner) if isinstance(inner, dict) else inner
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


class MongoExport:
    def __init__(self, path: str | Path) -> None:
        self.folder = Path(path)
        if not self.folder.is_dir():
            raise NotCockpit(f"{self.folder} is not a folder of mongoexport files")
        self.files = {p.stem: p for p in self.folder.glob("*.json")}
        if not any(name.startswith(("content_", "system_")) for name in self.files):
            raise NotCockpit(f"{self.folder} holds no content_*.json or system_*.json: not an export of a "
                             "Cockpit database (see docs/moving.md)")

    @staticmethod
    def file_name(collection: str) -> str:
        return collection.replace("/", "_")

    def collections(self) -> dict[str, int]:
        out = {}
        for name in sorted(self.files):
            db, _, rest = name.partition("_")
            key = f"{db}/{rest}" if rest else f"app/{db}"
            out[key] = sum(1 for _ in self.documents_of(name, None))
        return out

    def has(self, collection: str) -> bool:
        return self.file_name(collection) in self.files

    def count(self, collection: str) -> int:
        return sum(1 for _ in self.documents(collection)) if self.has(collection) else 0

    def documents(self, collection: str, bad: list[BadDocument] | None = None) -> Iterator[dict[str, Any]]:
        if self.has(collection):
            yield from self.documents_of(self.file_name(collection), bad, collection)

    def documents_of(self, name: str, bad: list[BadDocument] | None,
                     collection: str | None = None) -> Iterator[dict[str, Any]]:
        path = self.files[name]
        with path.open("rb") as handle:
            first = handle.read(1)
            while first.isspace():
                first = handle.read(1)
            handle.seek(0)
            if first == b"[":  # --jsonArray: the whole file at once
                try:
                    rows = orjson.loads(handle.read())
                except orjson.JSONDecodeError as exc:
                    raise NotCockpit(f"{path.name}: not JSON ({exc})") from None
                lines: Iterator[tuple[int, Any]] = enumerate(rows, 1)
            else:
                lines = enumerate(handle, 1)
            for number, line in lines:
                if isinstance(line, bytes):
                    if not line.strip():
                        continue
                    try:
                        doc = orjson.loads(line)
                    except orjson.JSONDecodeError as exc:
                        if bad is not None:
                            bad.append(BadDocument(collection or name, number, f"not JSON ({exc})"))
                        continue
                else:
                    doc = line
                if isinstance(doc, dict):
                    yield plain(doc)
                elif bad is not None:
                    bad.append(BadDocument(collection or name, number, "not a JSON object"))

    def close(self) -> None:
        pass
