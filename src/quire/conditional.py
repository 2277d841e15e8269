"""HTTP caching of the read API (docs/delivery.md#http-caching): every
whole JSON answer to a GET under `/api/` carries a strong ETag made from
its bytes, so it changes whenever anything in the answer changes (linked
items and assets it carries included), and `If-None-Match` with that tag
is answered 304 with no body; `Cache-Control` says who may keep it.

An item's answer names its revision (`"7"`, what `If-Match` on a save
sends back); its ETag becomes `"7-<digest>"`, which If-Match still reads as
revision 7. Kept answers (content lists and items, content/routes.py) keep
their tag with them, so a 304 of a kept answer hashes nothing. A list
streamed whole (no `limit`) is sent as it is read and has no tag.

With `[cdn]` tagging on, an answer without a key also names what it holds
in `Surrogate-Key` (space-separated, Fastly's and Varnish setups') and
`Cache-Tag` (comma-separated, Cloudflare's): see quire/cdn."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

from starlette.datastructures import MutableHeaders
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


PERSONALIZED = ("content", "pages", "gql")  # families whose answers persona headers change
PERSONA_HEADERS = "X-Persona-Audience, X-Persona-Tz-Offset, X-Persona-Vars"
ID_FIELD = re.compile(rb'"_id":"([A-Za-z0-9_.:@-]{1,128})"')
MAX_TAG_BYTES = 8000  # under the 16 KB CDNs take in one header, with room for the other headers
LISTS = ("items", "tree")  # /api/content/<LISTS>/<model>: answers that any write of the model changes


class Tagger:
    """The tags of an answer without a key (quire/cdn names them)."""

    def __init__(self, kinds_by_family: Mapping[str, list[str]]) -> None:
        # a module's answers (pages, menus, ...) hold its feed kinds' documents
        self.family_tags = {family: [f"list:{kind}" for kind in kinds] for family, kinds in kinds_by_family.items()}

    def tags(self, path: str, body: bytes, site: str = "") -> list[str] | None:
        """The answer's tags, or None when they would not fit one header
        (the answer must then not be kept by a shared cache). `site`: the
        space or alias the answer was served under (quire.sites), whose
        switch or removal purges `site:<name>`."""
        parts = path.split("/")  # "", "api", family, ...
        found: list[str] = [f"site:{site}"] if site else []
        if parts[2] == "content":
            if len(parts) >= 5 and parts[4]:
                found.append(f"model:{parts[4]}")
                if parts[3] in LISTS:
                    found.append(f"list:{parts[4]}")
        else:
            found += self.family_tags.get(parts[2], ())
        size = sum(len(tag) + 1 for tag in found)
        seen = set()
        for match in ID_FIELD.finditer(body):
            ident = match.group(1)
            if ident in seen:
                continue
            seen.add(ident)
            size += len(ident) + 4
            if size > MAX_TAG_BYTES:
                return None
            found.append("id:" + ident.decode())
        return found


def _vary_by_persona(headers: MutableHeaders, path: str) -> None:
    """One URL, an answer per persona: a shared cache keeps them apart."""
    if family(path) in PERSONALIZED:
        vary = headers.get("vary")
        headers["vary"] = f"{vary}, {PERSONA_HEADERS}" if vary else PERSONA_HEADERS


def _tagged(headers: MutableHeaders, path: str, body: bytes, tagger: Tagger, site: str) -> None:
    tags = tagger.tags(path, body, site)
    if tags is None:  # too many to name: no shared cache may keep what it cannot purge
        headers["cache-control"] = PRIVATE
    elif tags:
        headers["surrogate-key"] = " ".join(tags)
        headers["cache-tag"] = ",".join(tags)


def finish(response: Response, path: str, if_none_match: str | None, keyed: bool,
           cache_control: Mapping[str, str], tagger: Tagger | None = None, site: str = "") -> Response:
    """A GET answer with its ETag and Cache-Control, or the 304 that
    replaces it when the client has it already."""
    if response.status_code == 304:  # a route's own (a kept answer's): who may keep it, as its 200 says
        if "cache-control" not in response.headers:
            response.headers["cache-control"] = PRIVATE if keyed else cache_control.get(family(path), PUBLIC_DEFAULT)
        if not keyed:
            _vary_by_persona(response.headers, path)
        return response
    body = getattr(response, "body", None)
    if response.status_code != 200:
        # an error names nothing to purge it by (a 404 of an item not yet
        # published, a 429): no cache keeps it
        if response.status_code >= 400 and "cache-control" not in response.headers:
            response.headers["cache-control"] = "no-store"
        return response
    if not isinstance(body, bytes):  # streamed: no tag, no tags, so kept by nobody without asking again
        if "cache-control" not in response.headers:
            response.headers["cache-control"] = PRIVATE if keyed else (
                PUBLIC_DEFAULT if tagger is not None else cache_control.get(family(path), PUBLIC_DEFAULT))
        return response
    headers = response.headers
    tag = headers.get("etag")
    if tag is None or REVISION_TAG.match(tag):
        tag = answer_etag(body, tag)
        headers["etag"] = tag
    if "cache-control" not in headers:
        headers["cache-control"] = PRIVATE if keyed else cache_control.get(family(path), PUBLIC_DEFAULT)
    if not keyed:
        _vary_by_persona(headers, path)
    if tagger is not None and not keyed and "surrogate-key" not in headers and headers["cache-control"] != "no-store":
        _tagged(headers, path, body, tagger, site)
    if if_none_match is not None and matches(if_none_match, tag):
        kept = {k: v for k, v in headers.items() if k in ("etag", "cache-control", "vary", "ratelimit",
                                                          "ratelimit-policy", "link")}
        return Response(status_code=304, headers=kept)
    return response
