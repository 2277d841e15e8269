"""Every field of the model in every answer: a field an item holds no value
for is answered as `null`, as Cockpit answers it, also for items stored
before the field was added. This happens at read time only; nothing filled
in is ever written back.

Lists go out as the stored bytes, so rows are filled in on the bytes: the
missing fields are spliced in as `,"<name>":null` before the closing brace
(model order, after the stored keys, whose order is kept). Which top-level
keys a row holds is learnt by decoding it: a search of the bytes for
`"<name>":` cannot tell a top-level key from one inside an object, set or
table field, and with a handful of fields it was slower than orjson anyway.
The answer for a row is then kept, by the row's first bytes (its id) and
checked against its whole bytes, so a page read again costs a lookup and a
comparison per row rather than a decode.
"""

from __future__ import annotations

from typing import Any

import orjson

from quire.cache import Memo

KEPT_BYTES = 8 * 1024 * 1024
_HEAD = 40  # `{"_id":"<24 hex>"` and a little more: tells rows apart
_ENTRY = 200  # what an entry costs besides the rows' bytes (key, tuple, dict slot)


class Filler:
    """The fill-in of one model definition (made once per loaded definition).

    Rows decoded before are kept with their answer (the same bytes object
    when the row held every field) in `kept`, the app's memo of filled rows
    (`Cache.memo`; a Filler made alone keeps its own): an answer depends
    only on the row's bytes and the Filler (a changed model definition
    makes a new one), so no write makes it stale. The memo empties at once
    when the rows take more than KEPT_BYTES (cheaper than tracking age)."""

    def __init__(self, names: list[str], kept: Memo | None = None) -> None:
        self.names = names
        self.keys = [(name, f'"{name}":'.encode()) for name in names]
        self.kept = kept if kept is not None else Memo(KEPT_BYTES)

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

    def rows(self, rows: list[bytes], keep: bool = True) -> list[bytes]:
        """Stored rows with the missing fields spliced in; a row that holds
        every field is the very same object. `keep=False` (long streamed
        lists) looks up kept answers but adds none, so one export does not
        push out the rows of the pages that are read over and over."""
        if not self.names:
            return rows
        kept = self.kept.entries
        out = []
        for row in rows:  # the lookup inline: this loop runs for every row of every list
            found = kept.get(row[:_HEAD])
            if found is not None and found[1] == row and found[0] is self:
                out.append(found[2])
            else:
                out.append(self._decide(row, keep))
        return out

    def row(self, row: bytes, keep: bool = True) -> bytes:
        found = self.kept.entries.get(row[:_HEAD])
        if found is not None and found[1] == row and found[0] is self:
            return found[2]
        return self._decide(row, keep)

    def _decide(self, row: bytes, keep: bool) -> bytes:
        doc = orjson.loads(row)
        missing = [key for name, key in self.keys if name not in doc]
        out = _splice(row, missing) if missing else row
        if keep:
            weight = _ENTRY + len(row) + (len(out) if out is not row else 0)
            self.kept.put(row[:_HEAD], (self, row, out), weight)
        return out


def _splice(row: bytes, keys: list[bytes]) -> bytes:
    if row[-1:] != b"}" or len(row) < 3:  # not as orjson stores an item: encode again
        doc = orjson.loads(row)
        for key in keys:
            doc.setdefault(key[1:-2].decode(), None)
        return orjson.dumps(doc)
    return b"".join([row[:-1], *[b"," + key + b"null" for key in keys], b"}"])
