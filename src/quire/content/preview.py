"""Preview links: a signed, expiring token for one item (or page) that lets
a site read that item's draft without an API key (`?preview=<token>`).

A token is `<payload>.<signature>`, both base64url: the payload names what
it opens (`content/<model>` or `pages`, the id) and until when; the
signature is an HMAC-SHA256 of the payload with the site's preview key.
The key is made once, at random, and kept in the store (`system/secrets`),
so every instance of a site checks the others' tokens; replacing it
(`rotate`) ends every token given out, on every instance: the key is
system data of the app's cache, so a rotation's `bump_system` makes every
process read it again before its next check."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from typing import Any
from urllib.parse import quote

import orjson

from quire.cache import Cache
from quire.config import url_origin as origin
from quire.errors import BadRequest, Forbidden
from quire.store import Store

SECRETS = "system/secrets"
KEY_ID = "preview"
MAX_TOKEN = 600  # characters: a payload names a model and an id
# a preview link lives an hour unless asked otherwise, a week at most
DEFAULT_SECONDS = 3600
MAX_SECONDS = 7 * 86_400
MAX_URIS = 10
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class PreviewTokens:
    def __init__(self, store: Store, cache: Cache, clock: Any = time.time) -> None:
        self.store = store
        self.cache = cache
        self.clock = clock
        self._key = cache.system(self._load_key)

    def _load_key(self) -> bytes:
        coll = self.store.collection(SECRETS)
        doc = coll.get(KEY_ID)
        if doc is None:
            with self.store.transaction():  # two instances starting at once keep the first key
                doc = coll.get(KEY_ID)
                if doc is None:
                    doc = coll.insert({"_id": KEY_ID, "key": secrets.token_urlsafe(32)})
        return str(doc["key"]).encode()

    def _secret(self) -> bytes:
        return self._key.get()

    def rotate(self) -> None:
        """A new key: every preview link given out stops working, on every
        instance (inside the caller's transaction, or one of its own)."""
        with self.store.transaction():
            self.store.collection(SECRETS).replace({"_id": KEY_ID, "key": secrets.token_urlsafe(32)})
            self.cache.bump_system()

    def issue(self, resource: str, item_id: str, seconds: int = DEFAULT_SECONDS) -> dict[str, Any]:
        """A token for `resource` (`content/<model>` or `pages`) item
        `item_id`, valid `seconds` (1 to a week)."""
        if isinstance(seconds, bool) or not isinstance(seconds, int) or not 1 <= seconds <= MAX_SECONDS:
            raise BadRequest(f"seconds must be a whole number from 1 to {MAX_SECONDS} (a week)", fields=["seconds"])
        expires = int(self.clock()) + seconds
        payload = _b64(orjson.dumps({"r": resource, "i": item_id, "e": expires}))
        return {"token": f"{payload}.{self._sign(payload)}", "expires": expires}

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._secret(), payload.encode(), hashlib.sha256).digest())

    def check(self, token: str, resource: str, item_id: str) -> None:
        """Refuse (403) a token that is not this site's, was made for
        another item, or has expired."""
        if not isinstance(token, str) or len(token) > MAX_TOKEN or token.count(".") != 1:
            raise Forbidden("The preview token is not valid")
        payload, signature = token.split(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            raise Forbidden("The preview token is not valid")
        try:
            claims = orjson.loads(_unb64(payload))
        except (ValueError, orjson.JSONDecodeError):
            raise Forbidden("The preview token is not valid") from None
        if claims.get("r") != resource or claims.get("i") != item_id:
            raise Forbidden("The preview token is for another item")
        if not isinstance(claims.get("e"), int) or claims["e"] < self.clock():
            raise Forbidden("The preview token has expired: ask for a new preview link")


def check_uris(raw: Any) -> list[dict[str, str]]:
    """A model's `preview`: a list of `{"name", "uri"}`, each URI an
    absolute http(s) address whose `{placeholders}` name the item's fields
    (`{token}`, `{id}`, `{model}`, `{locale}` are given)."""
    if raw is None:
        return []
    if not isinstance(raw, list) or len(raw) > MAX_URIS:
        raise BadRequest(f"preview must be a list of up to {MAX_URIS} {{name, uri}} objects", fields=["preview"])
    out = []
    for entry in raw:
        if not isinstance(entry, dict) or set(entry) - {"name", "uri"}:
            raise BadRequest("each preview entry is an object with name and uri", fields=["preview"])
        name, uri = entry.get("name") or "Preview", entry.get("uri")
        if not isinstance(name, str) or len(name) > 100:
            raise BadRequest("a preview name is a text of up to 100 characters", fields=["preview"])
        if not isinstance(uri, str) or len(uri) > 2000 or origin(uri) is None:
            raise BadRequest("a preview uri is an http(s) address like https://site.example/blog/{slug}?preview={token}",
                             fields=["preview"])
        out.append({"name": name, "uri": uri})
    return out


def fill(uri: str, values: dict[str, Any]) -> str:
    """The URI with each `{name}` replaced by the value, URL-encoded
    ("/" kept; empty for a value the item lacks or that is not text or a
    number)."""
    def value(match: re.Match[str]) -> str:
        found = values.get(match.group(1))
        if isinstance(found, bool) or not isinstance(found, str | int | float):
            return ""
        return quote(str(found), safe="/")  # a route keeps its slashes
    return _PLACEHOLDER.sub(value, uri)
