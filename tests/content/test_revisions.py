"""No lost edits: every item carries an integer `_rev` (1 on create, +1 on
every write, imports too), answered as the ETag of item answers; a save that
names the revision it started from (`_rev` in data or If-Match) is refused
with 409 when the item has moved on, and stores nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx2 as httpx
import orjson
import pytest

from quire.app import Quire
from quire.auth.service import Identity
from quire.bundle import import_bundle
from quire.errors import Conflict
from quire.events import Events
from tests.conftest import Api, create_item, etag_rev, put_model
from tests.serving import quire_server


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}, {"name": "body", "type": "text"}])
    return admin


def save(api: Api, data: dict[str, Any], model: str = "posts", **headers: str) -> Any:
    return api.post(f"/api/content/item/{model}", json={"data": data}, headers=headers)


def stored(quire: Quire, item_id: str, model: str = "posts") -> dict[str, Any]:
    raw = quire.store.collection(f"content/{model}").get_raw(item_id)
    assert raw is not None
    return orjson.loads(raw)  # type: ignore[no-any-return]


# -- counting ------------------------------------------------------------------


def test_create_gives_1_and_every_update_adds_one(posts: Api, quire: Quire) -> None:
    response = save(posts, {"title": "a"})
    item = response.json()
    assert item["_rev"] == 1 and etag_rev(response) == 1
    for rev in (2, 3):
        response = save(posts, {"_id": item["_id"], "body": f"b{rev}"})  # partial: no title sent
        assert response.status_code == 200
        assert response.json()["_rev"] == rev and etag_rev(response) == rev
    assert stored(quire, item["_id"])["_rev"] == 3
    assert list(stored(quire, item["_id"]))[:2] == ["_id", "_rev"]  # where the ETag is read from


def test_get_answers_the_revision_as_its_etag(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    save(posts, {"_id": item["_id"], "title": "b"})
    by_id = posts.get(f"/api/content/item/posts/{item['_id']}")
    assert by_id.json()["_rev"] == 2 and etag_rev(by_id) == 2
    first = posts.get("/api/content/item/posts", params={"filter": '{"title": "b"}'})
    assert first.json()["_rev"] == 2 and etag_rev(first) == 2
    # a projection may leave _rev out of the body; the ETag still names the stored revision
    projected = posts.get(f"/api/content/item/posts/{item['_id']}", params={"fields": '{"title": 1}'})
    assert "_rev" not in projected.json() and etag_rev(projected) == 2
    assert posts.get("/api/content/items/posts").json()[0]["_rev"] == 2  # lists carry it too (no ETag)


def test_singleton_counts_from_0_before_its_first_save(admin: Api) -> None:
    put_model(admin, "site", type="singleton", fields=[{"name": "name", "type": "text"}])
    unsaved = admin.get("/api/content/item/site")
    assert unsaved.json()["_rev"] == 0 and etag_rev(unsaved) == 0
    assert save(admin, {"name": "x", "_rev": 3}, "site").json() == {
        "error": "Item was changed by someone else: it is not stored yet, not at revision 3", "rev": 0}
    assert save(admin, {"name": "x"}, "site", **{"If-Match": "*"}).status_code == 409
    first = save(admin, unsaved.json() | {"name": "Q"}, "site")  # written back as read: _rev 0
    assert first.status_code == 200 and first.json()["_rev"] == 1
    again = save(admin, unsaved.json() | {"name": "R"}, "site")  # someone saved it meanwhile
    assert again.status_code == 409 and again.json()["rev"] == 1
    assert save(admin, {"name": "R", "_rev": 1}, "site").json()["_rev"] == 2
    answer = admin.get("/api/content/item/site")
    assert answer.json()["name"] == "R" and etag_rev(answer) == 2


def test_tree_items_count_like_any_other(admin: Api) -> None:
    put_model(admin, "nav", type="tree", fields=[{"name": "label", "type": "text"}])
    root = create_item(admin, "nav", {"label": "Home"})
    child = create_item(admin, "nav", {"label": "Blog", "_pid": root["_id"]})
    assert save(admin, {"_id": child["_id"], "_pid": None, "_rev": 1}, "nav").json()["_rev"] == 2
    node = admin.get("/api/content/tree/nav").json()[1]
    assert node["_rev"] == 2
    assert save(admin, {**node, "_rev": 1}, "nav").status_code == 409
    assert save(admin, node, "nav").json()["_rev"] == 3  # written back as read, _children and all


def test_an_item_stored_before_revisions_reads_as_1_and_is_2_after_its_next_write(
    posts: Api, quire: Quire
) -> None:
    item_id = "0123456789abcdef01234567"
    legacy = {"_id": item_id, "title": "old", "_state": 1, "_created": 1, "_modified": 1}
    quire.store.collection("content/posts").replace(legacy)
    by_id = posts.get(f"/api/content/item/posts/{item_id}")
    assert by_id.json()["_rev"] == 1 and etag_rev(by_id) == 1
    assert posts.get("/api/content/items/posts").json()[0]["_rev"] == 1
    assert save(posts, {"_id": item_id, "title": "x", "_rev": 2}).json()["rev"] == 1
    assert save(posts, {"_id": item_id, "title": "new", "_rev": 1}).json()["_rev"] == 2
    assert stored(quire, item_id)["_rev"] == 2


@pytest.mark.anyio
async def test_imports_count_from_the_stored_item_not_the_bundle(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    save(posts, {"_id": item["_id"], "title": "b"})  # at 2
    new_id = "0123456789abcdef01234567"
    bundle = {"quire": 1, "items": {"posts": [
        {"_id": item["_id"], "title": "imported", "_rev": 40},
        {"_id": new_id, "title": "new", "_rev": 40},
    ]}}
    await import_bundle(quire, orjson.loads(orjson.dumps(bundle)))
    assert stored(quire, item["_id"])["_rev"] == 3
    assert stored(quire, new_id)["_rev"] == 1
    await import_bundle(quire, orjson.loads(orjson.dumps(bundle)))  # the same again: written again
    assert stored(quire, item["_id"])["_rev"] == 4 and stored(quire, new_id)["_rev"] == 2
    answer = posts.get(f"/api/content/item/posts/{new_id}")
    assert answer.json()["_rev"] == 2 and etag_rev(answer) == 2


@pytest.mark.anyio
async def test_writes_through_the_service_count_and_a_hook_cannot_set_the_revision(
    posts: Api, quire: Quire, events: Events
) -> None:
    events.on("content.item.save.before", lambda item, **_: item.update({"_rev": 99}))
    item = create_item(posts, "posts", {"title": "a"})
    assert item["_rev"] == 1 and stored(quire, item["_id"])["_rev"] == 1
    saved = await quire.content.save("posts", {"_id": item["_id"], "title": "b"}, Identity("admin"))
    assert saved["_rev"] == 2 and stored(quire, item["_id"])["_rev"] == 2
    with pytest.raises(Conflict):
        await quire.content.save("posts", {"_id": item["_id"], "title": "c"}, Identity("admin"), if_match=1)


# -- checking ------------------------------------------------------------------


def test_stale_rev_in_data_is_409_naming_the_current_one_and_stores_nothing(
    posts: Api, quire: Quire, events: Events
) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    for _ in range(6):
        save(posts, {"_id": item["_id"], "body": "x"})  # now at 7
    before = stored(quire, item["_id"])
    seen: list[str] = []
    for name in ("content.item.save.before", "content.item.saved", "content.item.save.after"):
        events.on(name, lambda name=name, **_: seen.append(name))
    response = save(posts, {"_id": item["_id"], "title": "lost?", "_rev": 5})
    assert response.status_code == 409
    assert response.json() == {"error": "Item was changed by someone else: it is at revision 7, not at revision 5",
                               "rev": 7}
    assert stored(quire, item["_id"]) == before and seen == []
    hits = posts.get("/api/content/items/posts", params={"filter": '{"title": "lost?"}'}).json()
    assert hits == []


def test_stale_if_match_is_409_and_a_matching_one_saves(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    save(posts, {"_id": item["_id"], "title": "b"})
    stale = save(posts, {"_id": item["_id"], "title": "c"}, **{"If-Match": '"1"'})
    assert stale.status_code == 409 and stale.json()["rev"] == 2
    etag = posts.get(f"/api/content/item/posts/{item['_id']}").headers["etag"]
    fresh = save(posts, {"_id": item["_id"], "title": "c"}, **{"If-Match": etag})
    assert fresh.status_code == 200 and fresh.json()["_rev"] == 3 and etag_rev(fresh) == 3
    for form in ('W/"{}"', "{}", ' "{}" '):  # weak and bare forms name the same revision
        rev = posts.get(f"/api/content/item/posts/{item['_id']}").json()["_rev"]
        assert save(posts, {"_id": item["_id"]}, **{"If-Match": form.format(rev - 1)}).status_code == 409
        response = save(posts, {"_id": item["_id"]}, **{"If-Match": form.format(rev)})
        assert response.status_code == 200 and response.json()["_rev"] == rev + 1, form
    assert save(posts, {"_id": item["_id"]}, **{"If-Match": "*"}).status_code == 200  # * : any stored revision


def test_matching_rev_in_data_saves_and_answers_the_next(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    response = save(posts, {**item, "title": "b"})  # written back as read, with its _rev
    assert response.status_code == 200 and response.json()["_rev"] == 2 and etag_rev(response) == 2
    assert save(posts, {**item, "title": "c"}).status_code == 409  # the same start again: now stale


@pytest.mark.parametrize("bad", ["1", 1.5, -1, True, [1], {"n": 1}])
def test_a_rev_that_is_not_a_revision_number_is_400_naming_it(posts: Api, quire: Quire, bad: Any) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    response = save(posts, {"_id": item["_id"], "title": "b", "_rev": bad})
    assert response.status_code == 400
    assert response.json()["fields"] == ["_rev"] and "_rev" in response.json()["error"]
    assert stored(quire, item["_id"])["title"] == "a"


@pytest.mark.parametrize("bad", ['"x"', '"1", "2"', "-1", 'W/"', '""', "1.5"])
def test_an_if_match_that_names_no_revision_is_400(posts: Api, bad: str) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    response = save(posts, {"_id": item["_id"], "title": "b"}, **{"If-Match": bad})
    assert response.status_code == 400 and "If-Match" in response.json()["error"]


def test_rev_and_if_match_must_agree(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    response = save(posts, {"_id": item["_id"], "_rev": 1}, **{"If-Match": '"2"'})
    assert response.status_code == 400 and response.json()["fields"] == ["_rev"]
    assert save(posts, {"_id": item["_id"], "_rev": 1}, **{"If-Match": '"1"'}).status_code == 200


def test_a_new_item_names_no_revision_but_0(posts: Api, quire: Quire) -> None:
    for data, headers in (({"title": "a", "_rev": 3}, {}), ({"title": "a"}, {"If-Match": "*"}),
                          ({"title": "a"}, {"If-Match": '"2"'})):
        response = save(posts, data, **headers)
        assert response.status_code == 400 and response.json()["fields"] == ["_rev"], data
    assert quire.store.collection("content/posts").count() == 0
    assert save(posts, {"title": "a", "_rev": 0}).json()["_rev"] == 1
    assert save(posts, {"title": "b", "_rev": None}).json()["_rev"] == 1  # null: no check, as if left out


def test_saves_without_a_revision_work_as_before(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "a"})
    save(posts, {"_id": item["_id"], "title": "b"})
    assert save(posts, {"_id": item["_id"], "title": "c"}).json()["_rev"] == 3  # last write wins, as it did


def test_permission_refusals_come_before_the_revision_check(posts: Api, admin: Api) -> None:
    from tests.conftest import role_key

    item = create_item(posts, "posts", {"title": "a"})
    reader = role_key(admin, "reader", {"content/posts/read": True})
    assert save(reader, {"_id": item["_id"], "title": "b", "_rev": 9}).status_code == 403


# -- at the same time, on two worker processes ------------------------------------


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    data: Path = tmp_path_factory.mktemp("revisions") / "data"
    with quire_server(data) as (base, key, _log):
        yield base, key


def test_saves_from_the_same_revision_at_once_exactly_one_wins(server: tuple[str, str]) -> None:
    base, key = server
    headers = {"api-key": key}
    with httpx.Client(base_url=base, timeout=60, headers=headers) as client:
        response = client.put("/api/system/models/notes", json={"name": "notes",
                                                               "fields": [{"name": "text", "type": "text"}]})
        assert response.status_code == 200, response.text
        item = client.post("/api/content/item/notes", json={"data": {"text": "start"}}).json()
    count = 8
    clients = [httpx.Client(base_url=base, timeout=60, headers=headers) for _ in range(count)]
    barrier = threading.Barrier(count)

    def post(n: int) -> tuple[int, Any]:
        barrier.wait(timeout=60)
        r = clients[n].post("/api/content/item/notes",
                            json={"data": {"_id": item["_id"], "text": f"edit {n}", "_rev": item["_rev"]}})
        return r.status_code, r.json()

    try:
        with ThreadPoolExecutor(count) as pool:
            results = list(pool.map(post, range(count)))
    finally:
        for c in clients:
            c.close()
    statuses = sorted(status for status, _ in results)
    assert statuses == [200] + [409] * (count - 1), results
    winner = next(body for status, body in results if status == 200)
    assert winner["_rev"] == 2
    assert all(body["rev"] == 2 for status, body in results if status == 409)
    with httpx.Client(base_url=base, timeout=60, headers=headers) as client:
        final = client.get(f"/api/content/item/notes/{item['_id']}")
    assert final.json()["text"] == winner["text"] and etag_rev(final) == 2
