"""`--verify`: after an import, the same requests to the Cockpit site and to
Quire, answer by answer, with the differences docs/cockpit.md lists on
purpose taken out (`comparable`); every other difference is reported.

The requests are a sample of what sites ask: per model the list (plain,
in the first locale, with links populated), each listed item by id (up to
`sample`), a tree whole and in the first locale, a singleton in every
locale; and each asset by id (up to `sample`), compared by the metadata
Quire keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx2

from quire.cockpit.migrate import Plan
from quire.content import richtext

TIMEOUT = 30.0
# asset metadata both keep in the same form (Cockpit's `_hash`, `thumbhash`
# and `colors` are made differently: docs/cockpit.md)
ASSET_KEYS = ("path", "title", "description", "tags", "altText", "size", "width", "height", "fp")


@dataclass
class Request:
    path: str
    query: dict[str, str]
    populated: bool = False  # links are populated: Cockpit's admin answers fill unpublished ones too
    localized: bool = False

    def __str__(self) -> str:
        query = "&".join(f"{k}={v}" for k, v in self.query.items())
        return f"GET {self.path}" + (f"?{query}" if query else "")


def _is_asset(value: Any) -> bool:
    return isinstance(value, dict) and {"_id", "path", "mime"} <= set(value)


def comparable(value: Any, *, codes: tuple[str, ...], strip_locales: bool = False,
               unpublished_as_null: bool = False, clean_html: bool = False) -> Any:
    """An answer with what differs on purpose taken out (docs/cockpit.md):
    - an asset in an item is Cockpit's stored copy and Quire's live asset:
      compared by id;
    - `_rev` is Quire's, and the envelope's `meta.next` (its cursor);
    - without `locale`, Quire answers the per-locale keys as stored
      (`strip_locales` on Quire's answer);
    - populate fills published items only (Cockpit's admin answers fill
      unpublished ones too: `unpublished_as_null` on Cockpit's);
    - rich text is cleaned on the way in (`clean_html` on Cockpit's)."""
    def walk(node: Any) -> Any:
        if _is_asset(node):
            return {"asset": node["_id"]}
        if isinstance(node, str) and clean_html and node.startswith("<"):
            return richtext.clean(node)
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        if unpublished_as_null and "_model" in node and node.get("_state") == 0 and "_id" in node:
            return None
        out = {}
        for key, inner in node.items():
            if key in ("_rev", "next"):
                continue
            if strip_locales and "_" in key and key.rsplit("_", 1)[-1] in codes:
                continue
            out[key] = walk(inner)
        return out

    return walk(value)


def differences(ours: Any, theirs: Any, path: str = "") -> list[str]:
    """Where two answers differ, one line each (`path: ours != theirs`)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        out = []
        for key in sorted(ours.keys() | theirs.keys()):
            if key not in ours or key not in theirs:
                out.append(f"{path}.{key}: {'only in Quire' if key in ours else 'only in Cockpit'}")
            else:
                out += differences(ours[key], theirs[key], f"{path}.{key}")
        return out
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [d for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if ours == theirs else [f"{path or 'the answer'}: {ours!r:.150} != {theirs!r:.150}"]


def same_asset(ours: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """Differences in the metadata both keep; a folder, a description or an
    alt text Cockpit leaves out or empty is Quire's null or empty text."""
    def kept(asset: dict[str, Any]) -> dict[str, Any]:
        out = {k: asset.get(k) for k in ASSET_KEYS}
        for key in ("folder", "description", "altText"):
            out[key] = asset.get(key) or None
        return out

    return differences(kept(ours), kept(theirs))


class VerifyFailed(Exception):
    """Cockpit could not be asked."""


class Verifier:
    """The two APIs side by side: `cockpit` and `quire` are clients whose
    base URL is each site's, sending the same API key."""

    def __init__(self, cockpit: httpx2.AsyncClient, quire: httpx2.AsyncClient, codes: list[str],
                 sample: int = 20) -> None:
        self.cockpit = cockpit
        self.quire = quire
        self.codes = tuple(codes)
        self.first = codes[0] if codes else None
        self.sample = sample
        self.found: list[str] = []
        self.compared = 0

    @staticmethod
    async def _ask(client: httpx2.AsyncClient, who: str, request: Request) -> tuple[int, Any]:
        try:
            answer = await client.get(request.path, params=request.query)
        except httpx2.HTTPError as exc:
            raise VerifyFailed(f"{request}: {who} did not answer ({exc})") from None
        try:
            return answer.status_code, answer.json()
        except ValueError:
            return answer.status_code, answer.text

    async def _both(self, request: Request) -> tuple[tuple[int, Any], tuple[int, Any]] | None:
        theirs = await self._ask(self.cockpit, "Cockpit", request)
        ours = await self._ask(self.quire, "Quire", request)
        self.compared += 1
        if theirs[0] != ours[0]:
            self.found.append(f"{request}: Quire answered {ours[0]}, Cockpit {theirs[0]}")
            return None
        return (ours, theirs) if theirs[0] == 200 else None

    async def compare(self, request: Request) -> Any:
        """Both answers to `request`; Cockpit's body (None unless both are 200)."""
        both = await self._both(request)
        if both is None:
            return None
        (_, ours), (_, theirs) = both
        found = differences(
            comparable(ours, codes=self.codes, strip_locales=not request.localized),
            comparable(theirs, codes=self.codes, unpublished_as_null=request.populated, clean_html=True))
        self.found += [f"{request}: {line}" for line in found]
        return theirs

    async def model(self, kind: str, name: str) -> None:
        base = f"/api/content/items/{name}"
        if kind == "singleton":
            await self.compare(Request(f"/api/content/item/{name}", {}))
            for code in self.codes:
                await self.compare(Request(f"/api/content/item/{name}", {"locale": code}, localized=True))
            return
        listed = await self.compare(Request(base, {}))
        if self.first:
            await self.compare(Request(base, {"locale": self.first}, localized=True))
        await self.compare(Request(base, {"populate": "1"}, populated=True))
        if kind == "tree":
            await self.compare(Request(f"/api/content/tree/{name}", {}))
            if self.first:
                await self.compare(Request(f"/api/content/tree/{name}", {"locale": self.first}, localized=True))
        for item in (listed if isinstance(listed, list) else [])[: self.sample]:
            if isinstance(item, dict) and isinstance(item.get("_id"), str):
                await self.compare(Request(f"/api/content/item/{name}/{item['_id']}", {}))

    async def asset(self, asset_id: str) -> None:
        both = await self._both(Request(f"/api/assets/{asset_id}", {}))
        if both is not None and isinstance(both[0][1], dict) and isinstance(both[1][1], dict):
            self.found += [f"GET /api/assets/{asset_id}: {line}" for line in same_asset(both[0][1], both[1][1])]


async def verify(plan: Plan, cockpit: httpx2.AsyncClient, quire: httpx2.AsyncClient,
                 sample: int = 20) -> Verifier:
    """Compare a sample of every model the plan took in, and of its assets."""
    verifier = Verifier(cockpit, quire, plan.codes, sample)
    for planned in plan.models:
        if planned.mapped.name != planned.mapped.source:
            verifier.found.append(f"model {planned.mapped.source}: renamed to {planned.mapped.name}, not compared")
            continue
        await verifier.model(planned.mapped.kind, planned.mapped.name)
    for asset_id in plan.asset_ids[:sample]:
        await verifier.asset(asset_id)
    return verifier
