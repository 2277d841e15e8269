"""Bundle imports: checked whole first, stored in batches, safe to repeat."""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson
import pytest

from quire.bundle import Progress, export_bundle, import_bundle
from quire.errors import ApiError
from quire.events import Events


def ident(n: int) -> str:
    return f"{n:024x}"


def bundle_of(count: int, bad: int | None = None) -> dict[str, Any]:
    items = [{"_id": ident(i), "n": i, "_state": 1, "_created": 1, "_modified": 2} for i in range(count)]
    if bad is not None:
        items[bad]["n"] = "not a number"
    return {
        "quire": 1,
        "models": [{"name": "posts", "type": "collection",
                    "fields": [{"name": "n", "type": "number"}, {"name": "title", "type": "text", "i18n": True}]}],
        "locales": [{"i18n": "de", "name": "Deutsch"}],
        "roles": [{"name": "editor", "permissions": {"content/posts/read": True}}],
        "items": {"posts": items},
    }


def stored_ids(quire: Any) -> list[str]:
    return quire.store.collection("content/posts").ids() if quire.models.find("posts") else []


@pytest.mark.anyio
async def test_one_bad_item_in_a_late_batch_stores_nothing(quire: Any) -> None:
    with pytest.raises(ApiError) as caught:
        await import_bundle(quire, bundle_of(7, bad=6), batch=2)
    assert caught.value.status == 400
    assert caught.value.message.startswith(f"posts/{ident(6)}: ")
    assert stored_ids(quire) == []
    assert quire.models.find("posts") is None
    assert quire.locales.codes() == []
    assert "editor" not in [r["name"] for r in quire.auth.list_roles()]


@pytest.mark.anyio
async def test_items_are_checked_against_the_locales_the_bundle_brings(quire: Any) -> None:
    bundle = bundle_of(1)
    bundle["items"]["posts"][0]["title_de"] = "Hallo"
    await import_bundle(quire, bundle)
    assert quire.store.collection("content/posts").get(ident(0))["title_de"] == "Hallo"
    bundle["items"]["posts"][0]["title_fr"] = "Salut"
    with pytest.raises(ApiError, match="title_fr"):
        await import_bundle(quire, bundle)


@pytest.mark.anyio
async def test_importing_the_same_bundle_twice_gives_the_same_data(quire: Any) -> None:
    bundle = bundle_of(5)
    first = await import_bundle(quire, bundle, batch=2)
    exported = orjson.loads(b"".join(export_bundle(quire)))
    second = await import_bundle(quire, orjson.loads(orjson.dumps(bundle)), batch=2)
    again = orjson.loads(b"".join(export_bundle(quire)))
    assert first == second and first["items"] == 5
    # the same data; every item was written again, so its revision went up by one
    assert again["items"] == {name: [{**item, "_rev": item["_rev"] + 1} for item in items]
                              for name, items in exported["items"].items()}
    assert len(again["items"]["posts"]) == 5
    assert again["roles"] == exported["roles"] and again["locales"] == exported["locales"]


@pytest.mark.sqlite_only
@pytest.mark.anyio
async def test_items_commit_in_batches_with_their_events(quire: Any, events: Events) -> None:
    db = str(quire.settings.db_path)
    seen: list[tuple[str, str]] = []
    between: list[int] = []

    def before(item: dict[str, Any], **_: Any) -> None:
        seen.append(("before", item["_id"]))

    def after(item: dict[str, Any], **_: Any) -> None:
        seen.append(("after", item["_id"]))
        if item["_id"] == ident(0):
            # The first batch has committed, the rest is not written yet, and
            # another connection (another process) can write now.
            other = sqlite3.connect(db, isolation_level=None, timeout=0)
            try:
                between.append(other.execute('SELECT COUNT(*) FROM "content/posts"').fetchone()[0])
                other.execute("BEGIN IMMEDIATE")
                other.execute("INSERT INTO _quire_meta (key, value) VALUES ('between', 'yes')")
                other.execute("COMMIT")
            finally:
                other.close()

    events.on("content.item.save.before", before)
    events.on("content.item.save.after", after)
    counts = await import_bundle(quire, bundle_of(5), batch=2)
    assert counts["items"] == 5
    assert between == [2]
    assert quire.store.get_meta("between") == "yes"
    ids = [ident(i) for i in range(5)]
    assert seen == [
        ("before", ids[0]), ("before", ids[1]), ("after", ids[0]), ("after", ids[1]),
        ("before", ids[2]), ("before", ids[3]), ("after", ids[2]), ("after", ids[3]),
        ("before", ids[4]), ("after", ids[4]),
    ]
    assert stored_ids(quire) == ids


@pytest.mark.anyio
async def test_a_hook_refusing_mid_way_says_what_is_stored_and_a_rerun_finishes(quire: Any, events: Events) -> None:
    from quire.events import Reject

    def refuse_the_fourth(item: dict[str, Any], **_: Any) -> None:
        if item["_id"] == ident(3):
            raise Reject("not this one")

    events.on("content.item.save.before", refuse_the_fourth)
    progress = Progress()
    with pytest.raises(ApiError) as caught:
        await import_bundle(quire, bundle_of(5), batch=2, progress=progress)
    assert caught.value.status == 412
    assert (progress.stored, progress.items) == (2, 5)  # what `quire import` reports
    assert stored_ids(quire) == [ident(0), ident(1)]  # the refused batch rolled back whole
    events.off("content.item.save.before", refuse_the_fourth)
    assert (await import_bundle(quire, bundle_of(5), batch=2))["items"] == 5
    assert stored_ids(quire) == [ident(i) for i in range(5)]


@pytest.mark.anyio
async def test_a_written_by_hand_bundle_without_system_fields_gives_items_the_api_shows(
    quire: Any, admin: Any
) -> None:
    # A seed bundle written by hand has ids and fields only. Its items must be
    # stored as an API create stores them (published, with times), or reads,
    # which ask for published items, never see them.
    bundle = {
        "quire": 1,
        "models": [
            {"name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]},
            {"name": "nav", "type": "tree", "fields": [{"name": "label", "type": "text"}]},
            {"name": "site", "type": "singleton", "fields": [{"name": "name", "type": "text"}]},
        ],
        "items": {"posts": [{"_id": ident(1), "title": "hello"}, {"_id": ident(2), "title": "draft", "_state": 0}],
                  "nav": [{"_id": ident(3), "label": "home"}, {"_id": ident(4), "label": "blog"}],
                  "site": [{"_id": ident(5), "name": "Example"}]},
    }
    await import_bundle(quire, orjson.loads(orjson.dumps(bundle)))
    post = admin.get(f"/api/content/item/posts/{ident(1)}").json()
    assert post["title"] == "hello" and post["_state"] == 1
    assert isinstance(post["_created"], int) and post["_modified"] == post["_created"]
    assert [p["_id"] for p in admin.get("/api/content/items/posts").json()] == [ident(1)]
    assert admin.get(f"/api/content/item/posts/{ident(2)}").status_code == 404  # a draft, as it says
    tree = admin.get("/api/content/tree/nav").json()
    assert [(n["label"], n["_pid"], n["_o"]) for n in tree] == [("home", None, 0), ("blog", None, 1)]
    assert admin.get("/api/content/item/site").json()["name"] == "Example"

    # Again: the items keep the times of their first import (a write all the same: the next revision).
    await import_bundle(quire, orjson.loads(orjson.dumps(bundle)))
    assert admin.get(f"/api/content/item/posts/{ident(1)}").json() == {**post, "_rev": 2}


@pytest.mark.anyio
async def test_system_fields_of_the_wrong_type_refuse_the_bundle(quire: Any) -> None:
    for bad, named in (({"_state": "yes"}, "_state"), ({"_created": "yesterday"}, "_created"),
                       ({"_modified": True}, "_modified"), ({"_pid": ident(9)}, "_pid"),
                       ({"_cby": 5}, "_cby")):
        bundle = bundle_of(2)
        bundle["items"]["posts"][1].update(bad)
        with pytest.raises(ApiError, match=named) as caught:
            await import_bundle(quire, bundle)
        assert caught.value.status == 400
        assert caught.value.message.startswith(f"posts/{ident(1)}: ")
        assert stored_ids(quire) == []
