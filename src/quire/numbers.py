"""The one reading of integers a client sends (query parameters, image
sizes, Content-Length): plain ASCII digits, within the 64 bits SQLite holds.
Python's int() would also take `+5`, ` 5`, `5_000` and other scripts'
digits. No web code here, so services use it too."""

from __future__ import annotations

import re

from quire.errors import BadRequest
from quire.store.values import INT64_MAX

_INTEGER = re.compile(r"-?[0-9]{1,19}")


def parse_int(text: str, name: str, minimum: int = -1 - INT64_MAX, maximum: int = INT64_MAX) -> int:
    """`text` as an integer from `minimum` to `maximum` (at most 2^63-1);
    400 naming `<name>` otherwise."""
    if not _INTEGER.fullmatch(text):
        if not re.fullmatch(r"-?[0-9]+", text):
            raise BadRequest(f"<{name}> must be an integer")
        value = -1 - INT64_MAX if text.startswith("-") else INT64_MAX + 1  # too many digits
    else:
        value = int(text)
    if value < minimum:
        raise BadRequest(f"<{name}> must be at least {minimum}")
    if value > maximum:
        raise BadRequest(f"<{name}> must be at most {maximum}")
    return value


def content_length(declared: str | None) -> int | None:
    """The Content-Length header's value (None when not sent): ASCII digits
    only, 400 otherwise. A value too long to be real reads as 2^63."""
    if declared is None:
        return None
    if not re.fullmatch(r"[0-9]+", declared):
        raise BadRequest("Invalid Content-Length")
    return int(declared) if len(declared) <= 19 else INT64_MAX + 1
