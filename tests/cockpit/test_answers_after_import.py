"""After `quire import --from-cockpit`, Quire answers every recorded
request of the Cockpit site (with the site's own API keys) as Cockpit did,
but for the differences docs/cockpit.md lists on purpose, which `same`
leaves out of the comparison one by one."""

from __future__ import annotations

from typing import Any

import pytest

from quire.content import richtext
from tests.cockpit.conftest import Imported, answers

CODES = ("de", "fr")
RECORDED = [a for a in answers() if a["request"]["path"].startswith(("/api/content/", "/api/assets/"))]


def _is_asset(value: Any) -> bool:
    return isinstance(value, dict) and {"_id", "path", "mime"} <= set(value)


def comparable(value: Any, *, strip_locales: bool, unpublished_as_null: bool, clean_html: bool = False) -> Any:
    """An answer with what differs on purpose taken out:
    - an asset in an item is Cockpit's stored copy and Quire's live asset
      (with Quire's hash and placeholder forms): compared by id;
    - `_rev` is Quire's; the envelope's `meta.next` is Quire's cursor;
    - without `locale`, Quire answers the per-locale keys as stored;
    - populate resolves only published items (spec), Cockpit also the
      unpublished ones for an admin key."""
    if _is_asset(value):
        return {"asset": value["_id"]}
    if isinstance(value, str) and value.startswith("<") and clean_html:
        return richtext.clean(value)  # rich text is cleaned on the way in (docs/cockpit.md)
    if isinstance(value, list):
        return [comparable(v, strip_locales=strip_locales, unpublished_as_null=unpublished_as_null,
                           clean_html=clean_html) for v in value]
    if not isinstance(value, dict):
        return value
    if unpublished_as_null and "_model" in value and value.get("_state") == 0 and "_id" in value:
        return None
    out = {}
    for key, inner in value.items():
        if key in ("_rev", "next"):
            continue
        if strip_locales and key.rsplit("_", 1)[-1] in CODES and "_" in key:
            continue
        out[key] = comparable(inner, strip_locales=strip_locales, unpublished_as_null=unpublished_as_null,
                           clean_html=clean_html)
    return out


@pytest.mark.parametrize("recorded", RECORDED, ids=[a["file"] for a in RECORDED])
def test_quire_answers_as_cockpit_did(imported: Imported, recorded: dict[str, Any]) -> None:
    request = recorded["request"]
    answer = imported.get(request["path"], request["key"], **request["query"])
    if recorded["status"] != 200:
        # Cockpit's 404s are empty HTML pages, Quire's are JSON (docs/cockpit.md)
        assert answer.status_code == recorded["status"], answer.text
        return
    assert answer.status_code == 200, answer.text
    content_type = recorded["headers"]["content-type"]
    if content_type.startswith("image/"):
        assert answer.headers["content-type"] == content_type
        return
    if not content_type.startswith("application/json"):  # a generated image's address, as text
        assert answer.text.startswith("http://") and answer.text.rsplit(".", 1)[-1] == recorded["body"].rsplit(".", 1)[-1]
        return
    if request["path"] == "/api/content/items/site":
        # Cockpit lists no item of a singleton; Quire lists its one item (docs/cockpit.md)
        assert recorded["body"] == []
        single = imported.get("/api/content/item/site", request["key"])
        assert answer.json() == [single.json()]
        return
    ours = comparable(answer.json(), strip_locales="locale" not in request["query"], unpublished_as_null=False)
    theirs = comparable(recorded["body"], strip_locales=False,
                        unpublished_as_null="populate" in request["query"], clean_html=True)
    assert differences(ours, theirs) == []


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
    return [] if ours == theirs else [f"{path}: {ours!r:.150} != {theirs!r:.150}"]
