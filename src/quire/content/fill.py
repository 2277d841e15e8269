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

An item stored before revisions were counted has no `_rev`: it is answered
as revision 1 (`,"_rev":1` spliced in the same way) until its next write
stores 2. Writes put `_rev` right after `_id`, so `rev_of` reads it from
fixed bytes without decoding the item (the ETag of an item answer).
"""

from __future__ import annotations

from typing import Any

import orjson

from quire.cache import Memo

KEPT_BYTES = 8 * 1024 * 1024
_HEAD = 40  # `{"_id":"<24 hex>"` and a little more: tells rows apart
_ENTRY = 200  # what an entry costs besides the rows' bytes (key, tuple, dict slot)
LEGACY_REV = 1  # the revision of an item stored before revisions were counted
_REV_KEY = b'"_rev":'
_REV_AT = 34  # after `{"_id":"<24 characters>",`
_REV_FILL = b'"_rev":' + str(LEGACY_REV).encode()


def rev_of(row: bytes) -> int:
    """The revision of a stored (or answered) item's JSON: read from where
    writes put it, right after a 24-character `_id`, else by decoding."""
    if row[_REV_AT:_REV_AT + 7] == _REV_KEY and row[:8] == b'{"_id":"' and row[32:34] == b'",' \
            and row[8:32].isalnum():
        stop = row.find(b",", _REV_AT + 7, _REV_AT + 28)
        digits = row[_REV_AT + 7:stop if stop > 0 else -1]  # the last key: up to the closing brace
        if digits.isdigit():
            return int(digits)
    return doc_rev(orjson.loads(row))


def doc_rev(doc: dict[str, Any]) -> int:
    """The revision of a stored item (LEGACY_REV when it has none)."""
    rev = doc.get("_rev")
    return rev if isinstance(rev, int) and not isinstance(rev, bool) else LEGACY_REV


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
        if not missing and "_rev" in doc:
            return doc
        out = dict(doc)
        for name in missing:
            out[name] = None
        out.setdefault("_rev", LEGACY_REV)
        return out

    def rows(self, rows: list[bytes], keep: bool = True) -> list[bytes]:
        """Stored rows with the missing fields (and a missing `_rev`) spliced in; a row that holds
        every field is the very same object. `keep=False` (long streamed
        lists) looks up kept answers but adds none, so one export does not
        push out the rows of the pages that are read over and over."""
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
        if "_rev" not in doc:
            missing.append(_REV_FILL)
        out = _splice(row, missing) if missing else row
        if keep:
            weight = _ENTRY + len(row) + (len(out) if out is not row else 0)
            self.kept.put(row[:_HEAD], (self, row, out), weight)
        return out


def _splice(row: bytes, keys: list[bytes]) -> bytes:
    if row[-1:] != b"}" or len(row) < 3:  # not as orjson stores an item: encode again
        doc = orjson.loads(row)
        for key in keys:
            if key == _REV_FILL:
                doc.setdefault("_rev", LEGACY_REV)
            else:
                doc.setdefault(key[1:-2].decode(), None)
        return orjson.dumps(doc)
    # two concatenations copy less than a join of the row's slice
    return row[:-1] + b"".join([b"," + (key if key == _REV_FILL else key + b"null") for key in keys]) + b"}"
