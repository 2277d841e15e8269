"""Machine translation providers (docs/ai.md#machine-translation): DeepL's
and LibreTranslate's HTTP APIs behind one interface, `Translator.translate`
(texts of one source locale into one target locale, plain text or HTML).

A provider that does not answer within the timeout, answers an error, or
answers anything but one translation per text is a `TranslateError` that
says so: the caller writes nothing of that batch."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import httpx2

DEEPL_BATCH = 50  # texts per request: DeepL's documented maximum
LIBRE_BATCH = 50
DEEPL_URL = "https://api-free.deepl.com"  # a key ending in ":fx"; paid keys use https://api.deepl.com


class TranslateError(Exception):
    """The provider refused, failed, hung or answered garbage."""


class Translator(Protocol):
    name: str

    async def translate(self, texts: Sequence[str], source: str, target: str, html: bool) -> list[str]:
        """`texts` from `source` ("": detected) into `target`, in order."""


class _Http:
    def __init__(self, url: str, api_key: str, timeout: float) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    async def post(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Any:
        try:
            async with httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
                answer = await client.post(self.url + path, json=body, headers=headers)
        except httpx2.TimeoutException:
            raise TranslateError(f"The translation provider did not answer within {self.timeout:g} s") from None
        except httpx2.HTTPError as exc:
            raise TranslateError(f"The translation provider could not be reached: {type(exc).__name__}") from None
        if answer.status_code in (401, 403):
            raise TranslateError("The translation provider refused the API key")
        if answer.status_code == 429 or answer.status_code == 456:
            raise TranslateError("The translation provider's quota or rate limit is used up: try again later")
        if answer.status_code != 200:
            raise TranslateError(f"The translation provider answered {answer.status_code}")
        try:
            return answer.json()
        except ValueError:
            raise TranslateError("The translation provider answered something that is not JSON") from None


def _texts(found: Any, count: int) -> list[str]:
    if not isinstance(found, list) or len(found) != count or not all(isinstance(t, str) for t in found):
        raise TranslateError(f"The translation provider answered {len(found) if isinstance(found, list) else 'no'} "
                             f"translations for {count} texts")
    return found


class DeepL:
    """DeepL's API v2: `POST /v2/translate` with `Authorization: DeepL-Auth-Key`."""

    name = "deepl"

    def __init__(self, url: str, api_key: str, timeout: float) -> None:
        self.http = _Http(url or DEEPL_URL, api_key, timeout)

    async def translate(self, texts: Sequence[str], source: str, target: str, html: bool) -> list[str]:
        out: list[str] = []
        for start in range(0, len(texts), DEEPL_BATCH):
            batch = list(texts[start:start + DEEPL_BATCH])
            body: dict[str, Any] = {"text": batch, "target_lang": deepl_target(target)}
            if source:  # else DeepL detects it
                body["source_lang"] = deepl_source(source)
            if html:
                body["tag_handling"] = "html"
            found = await self.http.post("/v2/translate", body,
                                         {"Authorization": f"DeepL-Auth-Key {self.http.api_key}"})
            translations = found.get("translations") if isinstance(found, dict) else None
            if not isinstance(translations, list):
                raise TranslateError("The translation provider's answer holds no translations")
            out += _texts([t.get("text") if isinstance(t, dict) else None for t in translations], len(batch))
        return out


class LibreTranslate:
    """LibreTranslate: `POST /translate` with `q` a list of texts."""

    name = "libretranslate"

    def __init__(self, url: str, api_key: str, timeout: float) -> None:
        if not url:
            raise TranslateError("LibreTranslate needs [translate] url: the address of its server")
        self.http = _Http(url, api_key, timeout)

    async def translate(self, texts: Sequence[str], source: str, target: str, html: bool) -> list[str]:
        out: list[str] = []
        for start in range(0, len(texts), LIBRE_BATCH):
            batch = list(texts[start:start + LIBRE_BATCH])
            body: dict[str, Any] = {"q": batch, "source": libre_code(source) if source else "auto",
                                    "target": libre_code(target),
                                    "format": "html" if html else "text"}
            if self.http.api_key:
                body["api_key"] = self.http.api_key
            found = await self.http.post("/translate", body, {})
            out += _texts(found.get("translatedText") if isinstance(found, dict) else None, len(batch))
        return out


def deepl_source(code: str) -> str:
    """DeepL names a source language without its region: `EN`, `PT`."""
    return code.replace("_", "-").split("-")[0].upper()


def deepl_target(code: str) -> str:
    """DeepL's target codes: `DE`, and the regional ones it has (`EN-GB`,
    `PT-BR`); English and Portuguese without a region are EN-US and PT-PT."""
    parts = code.replace("_", "-").split("-")
    language = parts[0].upper()
    region = next((p.upper() for p in parts[1:] if len(p) == 2), None)
    if language in ("EN", "PT"):
        return f"{language}-{region or ('US' if language == 'EN' else 'PT')}"
    if language == "ZH":
        return "ZH-HANT" if any(p.lower() == "hant" for p in parts[1:]) else "ZH-HANS"
    return language


def libre_code(code: str) -> str:
    """LibreTranslate's codes are languages (`en`, `de`, `pt`), Chinese as `zh`."""
    return code.replace("_", "-").split("-")[0].lower()


def make_translator(provider: str, url: str, api_key: str, timeout: float) -> Translator:
    if provider == "deepl":
        if not api_key:
            raise TranslateError("DeepL needs [translate] api_key")
        return DeepL(url, api_key, timeout)
    if provider == "libretranslate":
        return LibreTranslate(url, api_key, timeout)
    raise TranslateError("No translation provider is set up: [translate] provider = \"deepl\" or \"libretranslate\"")
