"""Every field of the model in every answer: a field an item holds no value
for is answered as `null`, as Cockpit answers it, also for items stored
before the field was added. This happens at read time only; nothing filled
in is ever written back.

Lists go out as the stored bytes, so the common case is decided on the bytes:

- A field name is `[A-Za-z][A-Za-z0-9_]*`, so `"title":` cannot occur inside
  a JSON string (a quote there is escaped, and the byte before the closing
  quote would be a backslash, not `e`): where the bytes hold it, some object
  of the item has the key `title`. Where they do not, the item certainly
  lacks the field.
- The key is at the top level unless the item holds nested objects. An item
  whose only nested objects are stored asset references `{"_id":"<id>"}` and
  content links `{"_model":"<m>","_id":"<id>"}` (counted with a pattern and
  compared with the number of `{`; a `{` inside a string only makes the
  count differ, never agree wrongly) holds field names at the top level only.
- Anything else (sets, objects, tables, variants) is decoded to be sure, and
  the answer for that row is kept by its whole bytes, so a page read again
  does not decode it again.

Missing fields are spliced in as `,"<name>":null` before the closing brace,
in the model's field order; the stored key order is kept.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# Stored asset references and content links (see fields.check_value): the
# only nested objects that cannot hold a field name as a key.
_CLOSED = re.compile(rb'\{"_id":"[0-9a-f]{24}"\}|\{"_model":"[A-Za-z][A-Za-z0-9_]*","_id":"[0-9a-f]{24}"\}')
KEPT_BYTES = 4 * 1024 * 1024


class _Decided:
    """Rows that had to be decoded, with their answer, by the row's bytes:
    the answer depends on nothing else (a changed definition is another
    Filler). Emptied at once when they take more than KEPT_BYTES."""

    def __init__(self) -> None:
        self.size = 0
        self.rows: dict[bytes, tuple[Filler, bytes]] = {}

    def get(self, row: bytes, filler: Filler) -> bytes | None:
        found = self.rows.get(row)
        return found[1] if found is not None and found[0] is filler else None

    def put(self, row: bytes, filler: Filler, out: bytes) -> None:
        self.size += len(row) + (len(out) if out is not row else 0)
        if self.size > KEPT_BYTES:
            self.rows.clear()
            self.size = len(row) + (len(out) if out is not row else 0)
        self.rows[row] = (filler, out)


_decided = _Decided()


class Filler:
    """The fill-in of one model definition (made once per loaded definition)."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.keys = [(name, f'"{name}":'.encode()) for name in names]

    def doc(self, doc: dict[str, Any]) -> dict[str, Any]:
        """`doc` itself when it holds every field, else a copy with the
        missing ones set to None."""
        missing = [name for name in self.names if name not in doc]
        if not missing:
            return doc
        out = dict(doc)
        for name in missing:
            out[name] = None
        return out

    def rows(self, rows: list[bytes]) -> list[bytes]:
        """Stored rows with the missing fields spliced in; rows that hold
        every field are the very same objects."""
        if not self.names:
            return rows
        return [self.row(row) for row in rows]

    def row(self, row: bytes) -> bytes:
        missing = [key for name, key in self.keys if key not in row]
        if len(missing) == len(self.keys) or _flat(row):
            # no key at all cannot be nested; a flat row holds keys at the top level only
            return _splice(row, missing) if missing else row
        known = _decided.get(row, self)
        if known is not None:
            return known
        doc = orjson.loads(row)
        absent = [key for name, key in self.keys if name not in doc]
        out = _splice(row, absent) if absent else row
        _decided.put(row, self, out)
        return out


def _flat(row: bytes) -> bool:
    nested = row.count(b"{") - 1
    return nested == 0 or nested == len(_CLOSED.findall(row))


def _splice(row: bytes, keys: list[bytes]) -> bytes:
    if row[-1:] != b"}" or len(row) < 3:  # not as orjson stores an item: decode
        doc = orjson.loads(row)
        for key in keys:
            doc.setdefault(key[1:-2].decode(), None)
        return orjson.dumps(doc)
    return b"".join([row[:-1], *[b"," + key + b"null" for key in keys], b"}"])
