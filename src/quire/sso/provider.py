"""The provider's discovery document and signing keys, fetched over HTTP
and kept per process: discovery for an hour, keys until a token names a
key id they lack (the provider rotated its keys), then fetched again."""

from __future__ import annotations

import time
from typing import Any

import httpx2
from joserfc.jwk import KeySet

from quire.sso.settings import SsoSettings

DISCOVERY_TTL = 3600
KEYS_REFRESH_MIN = 30  # seconds between two fetches of the keys for unknown key ids


class ProviderError(Exception):
    """The provider could not be reached or answered something unusable."""


class Provider:
    def __init__(self, settings: SsoSettings) -> None:
        self.settings = settings
        self._meta: dict[str, Any] | None = None
        self._meta_at = 0.0
        self._keys: KeySet | None = None
        self._keys_at = 0.0

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(timeout=self.settings.timeout_seconds, follow_redirects=False)

    async def metadata(self) -> dict[str, Any]:
        if self._meta is not None and time.monotonic() - self._meta_at < DISCOVERY_TTL:
            return self._meta
        url = self.settings.provider_base + "/.well-known/openid-configuration"
        meta = await self._get_json(url)
        expected = (self.settings.issuer or self.settings.provider_url).rstrip("/")
        if not isinstance(meta.get("issuer"), str) or meta["issuer"].rstrip("/") != expected:
            raise ProviderError(f"Discovery issuer {meta.get('issuer')!r} is not {expected!r}")
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(meta.get(key), str):
                raise ProviderError(f"Discovery document lacks {key}")
        self._meta, self._meta_at = meta, time.monotonic()
        return meta

    async def keys(self, *, refresh: bool = False) -> KeySet:
        stale = refresh and time.monotonic() - self._keys_at >= KEYS_REFRESH_MIN
        if self._keys is None or stale:
            meta = await self.metadata()
            try:
                self._keys = KeySet.import_key_set(await self._get_json(meta["jwks_uri"]))  # type: ignore[arg-type]
            except (ValueError, TypeError, KeyError) as exc:
                raise ProviderError(f"The provider's keys could not be read: {exc}") from None
            self._keys_at = time.monotonic()
        return self._keys

    async def _get_json(self, url: str) -> dict[str, Any]:
        try:
            async with self.client() as http:
                response = await http.get(url, headers={"accept": "application/json"})
        except httpx2.HTTPError as exc:
            raise ProviderError(f"{url}: {exc.__class__.__name__}: {exc}") from None
        if response.status_code != 200:
            raise ProviderError(f"{url} answered {response.status_code}")
        try:
            body = response.json()
        except ValueError:
            raise ProviderError(f"{url} did not answer JSON") from None
        if not isinstance(body, dict):
            raise ProviderError(f"{url} did not answer a JSON object")
        return body
