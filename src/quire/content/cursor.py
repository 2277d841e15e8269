"""Cursors of list pages: where a page ended, as an opaque text the client
hands back in `after=` to get the next page.

A cursor holds the store's `Position` (the sort values of the page's last
item and its rowid) and a digest of the query it belongs to (model, filter,
sort, fields, locale, populate, drafts), and ends in a checksum over both.
A cursor of another query, or one altered by hand, is refused with a 400.
It holds no permission and no filter: every page runs the caller's own
query again (published items only, the caller's read rights), so a forged
cursor can at most name another place to start from, never show an item
the caller cannot list. That is why the checksum is a plain hash, not a
keyed one: the cursor is no secret and grants nothing.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import orjson

from quire.errors import BadRequest
from quire.store.sqlite import Position

VERSION = 1
# about 80 characters plus the sort values of the page's last item (a long text sorted on makes
# a long cursor); kept below the HTTP server's 64 KB request target
MAX_LENGTH = 48_000


def query_digest(model: str, parts: dict[str, Any]) -> str:
    """What a cursor is bound to: the query's parameters as given (the page
    size and `skip` excepted), in a canonical form."""
    text = orjson.dumps([model, parts], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(text).hexdigest()[:16]


def encode(position: Position, digest: str) -> str:
    keys = [{"b": base64.b64encode(k).decode()} if isinstance(k, bytes) else k for k in position.keys]
    payload = orjson.dumps([VERSION, digest, keys, position.rowid])
    return _b64(payload) + "." + _b64(_checksum(payload))


def decode(cursor: str, digest: str) -> Position:
    """The position a cursor names; a 400 when it is not one of ours, was
    altered, or belongs to another query."""
    payload = _payload(cursor)
    try:
        version, bound, keys, rowid = orjson.loads(payload)
    except (orjson.JSONDecodeError, TypeError, ValueError):
        raise BadRequest("<after> is not a cursor of this API") from None
    if version != VERSION:
        raise BadRequest("<after> is a cursor of another version; start again from the first page")
    if bound != digest:
        raise BadRequest("<after> is the cursor of another query: the filter, sort, fields, locale and "
                         "populate must stay those of the first page")
    if not isinstance(keys, list):
        raise BadRequest("<after> is not a cursor of this API")
    return Position(tuple(_key(k) for k in keys), rowid)


def _payload(cursor: str) -> bytes:
    body, dot, check = cursor.partition(".")
    if len(cursor) > MAX_LENGTH or not dot:
        raise BadRequest("<after> is not a cursor of this API")
    try:
        payload, given = _unb64(body), _unb64(check)
    except (binascii.Error, ValueError):
        raise BadRequest("<after> is not a cursor of this API") from None
    if given != _checksum(payload):
        raise BadRequest("<after> was altered: pass the cursor exactly as the previous page gave it")
    return payload


def _key(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("b"), str):
        try:
            return base64.b64decode(value["b"], validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest("<after> is not a cursor of this API") from None
    return value  # its type is checked against the sort by the store


def _checksum(payload: bytes) -> bytes:
    return hashlib.sha256(b"quire-cursor:" + payload).digest()[:12]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    if not text.isascii():
        raise ValueError("not base64")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
