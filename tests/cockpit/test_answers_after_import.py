"""After `quire import --from-cockpit`, Quire answers every recorded
request of the Cockpit site (with the site's own API keys) as Cockpit did,
but for the differences docs/cockpit.md lists on purpose, which
`quire.cockpit.verify.comparable` leaves out of the comparison one by one
(the same comparison `quire import --verify` makes)."""

from __future__ import annotations

from typing import Any

import pytest

from quire.cockpit.verify import comparable, differences, same_asset
from tests.cockpit.conftest import Imported, answers

CODES = ("de", "fr")
RECORDED = [a for a in answers() if a["request"]["path"].startswith(("/api/content/", "/api/assets/"))]


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
    if request["path"].startswith("/api/assets/"):
        assert same_asset(answer.json(), recorded["body"]) == []
        return
    # what differs on purpose is left out of both (quire.cockpit.verify, docs/cockpit.md)
    ours = comparable(answer.json(), codes=CODES, strip_locales="locale" not in request["query"])
    theirs = comparable(recorded["body"], codes=CODES, unpublished_as_null="populate" in request["query"],
                        clean_html=True)
    assert differences(ours, theirs) == []


def test_locale_default_answers_as_cockpit_does_without_a_locale(imported: Imported) -> None:
    """Quire answers the per-locale keys as stored when no locale is asked
    for; `locale=default` gives Cockpit's answer, without them."""
    recorded = next(a for a in RECORDED if a["file"] == "admin-posts-items.json")
    answer = imported.get("/api/content/items/posts", "admin", locale="default").json()
    assert not any(key.endswith(("_de", "_fr")) for item in answer for key in item)
    assert differences(comparable(answer, codes=CODES),
                       comparable(recorded["body"], codes=CODES, clean_html=True)) == []
