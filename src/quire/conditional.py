"""HTTP caching of the read API (docs/delivery.md#http-caching): every
whole JSON answer to a GET under `/api/` carries a strong ETag made from
its bytes, so it changes whenever anything in the answer changes (linked
items and assets it carries included), and `If-None-Match` with that tag
is answered 304 with no body; `Cache-Control` says who may keep it.

An item's answer names its revision (`"7"`, what `If-Match` on a save
sends back); its ETag becomes `"7-<digest>"`, which If-Match still reads as
revision 7. Kept answers (content lists and items, content/routes.py) keep
their tag with them, so a 304 of a kept answer hashes nothing. A list
streamed whole (no `limit`) is sent as it is read and has no tag."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from starlette.responses import Response

REVISION_TAG = re.compile(r'^"\d{1,18}"$')
PRIVATE = "private, no-cache"  # an answer a key was needed for: no shared cache keeps it
PUBLIC_DEFAULT = "no-cache"  # without a key: any cache may keep it, asking each time whether it changed


def answer_etag(body: bytes, current: str | None = None) -> str:
    """The strong tag of `body`; a revision tag (`"7"`) keeps its number."""
    digest = hashlib.blake2b(body, digest_size=12).hexdigest()
    if current is not None and REVISION_TAG.match(current):
        return f'"{current[1:-1]}-{digest}"'
    return f'"{digest}"'


def matches(if_none_match: str, etag: str) -> bool:
    """RFC 9110: weak comparison for If-None-Match, `*` matching any."""
    value = if_none_match.strip()
    if value == "*":
        return True
    bare = etag.removeprefix("W/")
    return any(tag.strip().removeprefix("W/") == bare for tag in value.split(","))


def family(path: str) -> str:
    """The route family of an API path: `/api/content/items/posts` ->
    `content`, the key `[api] cache_control` names."""
    return path[5:].split("/", 1)[0] if path.startswith("/api/") else ""


def finish(response: Response, path: str, if_none_match: str | None, keyed: bool,
           cache_control: Mapping[str, str]) -> Response:
    """A GET answer with its ETag and Cache-Control, or the 304 that
    replaces it when the client has it already."""
    if response.status_code == 304:  # a route's own (a kept answer's): who may keep it, as its 200 says
        if "cache-control" not in response.headers:
            response.headers["cache-control"] = PRIVATE if keyed else cache_control.get(family(path), PUBLIC_DEFAULT)
        return response
    body = getattr(response, "body", None)
    if response.status_code != 200 or not isinstance(body, bytes):
        return response
    headers = response.headers
    tag = headers.get("etag")
    if tag is None or REVISION_TAG.match(tag):
        tag = answer_etag(body, tag)
        headers["etag"] = tag
    if "cache-control" not in headers:
        headers["cache-control"] = PRIVATE if keyed else cache_control.get(family(path), PUBLIC_DEFAULT)
    if if_none_match is not None and matches(if_none_match, tag):
        kept = {k: v for k, v in headers.items() if k in ("etag", "cache-control", "vary", "ratelimit",
                                                          "ratelimit-policy", "link")}
        return Response(status_code=304, headers=kept)
    return response
