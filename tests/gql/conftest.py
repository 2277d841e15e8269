"""The data of the recorded Cockpit answers (tests/gql/cockpit/, made by a
real Cockpit 2.13.2: see its README), made again in Quire through the REST
API, and the way to compare an answer of Quire's with Cockpit's: the ids
Cockpit gave mapped to Quire's, and what every answer of the two differs
in by design left out (docs/cockpit.md: `_rev`, who and when, assets)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Api, put_model

RECORDED = Path(__file__).parent / "cockpit"
DATA = json.loads((RECORDED / "00-data.json").read_text())
# keys every answer of the two differs in by design
UNCOMPARED = {"_rev", "_created", "_modified", "_cby", "_mby", "image"}

POSTS = [
    {"name": "title", "type": "text", "required": True}, {"name": "body", "type": "wysiwyg"},
    {"name": "tags", "type": "tags"}, {"name": "rating", "type": "number"}, {"name": "published", "type": "boolean"},
    {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}, {"name": "image", "type": "asset"},
    {"name": "seo", "type": "set", "opts": {"fields": [{"name": "title", "type": "text"},
                                                      {"name": "description", "type": "longtext"}]}},
    {"name": "color", "type": "color"}, {"name": "date", "type": "date"},
    {"name": "category", "type": "select", "opts": {"options": ["news", "guides"]}},
    {"name": "summary", "type": "text", "i18n": True},
]


def recorded(name: str) -> dict[str, Any]:
    """A recorded fixture by its number (`"26"`) or file name."""
    found = sorted(RECORDED.glob(f"{name}*.json"))
    assert found, name
    return json.loads(found[0].read_text())  # type: ignore[no-any-return]


class Site:
    """Quire with the recorded site's data: `ids` maps Cockpit's ids to
    Quire's."""

    def __init__(self, admin: Api) -> None:
        self.admin = admin
        self.ids: dict[str, str] = {}

    def to_quire(self, value: Any) -> Any:
        """A request's value with Cockpit's ids put as Quire's."""
        text = json.dumps(value)
        for theirs, ours in self.ids.items():
            text = text.replace(theirs, ours)
        return json.loads(text)

    def comparable(self, value: Any, also: frozenset[str] = frozenset()) -> Any:
        """An answer (Cockpit's with its ids mapped) without what differs by
        design, and without the keys `also` names."""
        if isinstance(value, dict):
            return {k: self.comparable(v, also) for k, v in value.items() if k not in UNCOMPARED and k not in also}
        if isinstance(value, list):
            return [self.comparable(v, also) for v in value]
        return value


@pytest.fixture
def site(admin: Api) -> Site:
    made = Site(admin)
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=POSTS)
    put_model(admin, "settings", type="singleton", fields=[{"name": "sitename", "type": "text"}])
    put_model(admin, "menu", type="tree", fields=[{"name": "label", "type": "text"}])
    for model in ("authors", "posts", "settings", "menu"):
        for entry in DATA["items_created"][model]:
            data = dict(entry["request"].get("data") or entry["request"].get("item"))
            data.pop("image", None)  # Quire's assets are its own (uploaded, then linked by id)
            if data.get("_pid") is None:
                data.pop("_pid", None)
            if model == "menu" and "_o" not in data:
                data["_o"] = 9  # Cockpit's REST left it without `_pid` and `_o`: a root item, last
            answer = admin.post(f"/api/content/item/{model}", json={"data": made.to_quire(data)})
            assert answer.status_code == 200, answer.text
            made.ids[entry["response"]["_id"]] = answer.json()["_id"]
    return made
