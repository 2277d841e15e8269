"""Revisions of content items over the API: every write path records one
(API create, update, delete, a tree move, an import, a restore), with who,
when, what changed and the item before; a revision can be shown, two
compared, and one restored (a new revision); retention by count and age."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.bundle import import_bundle
from quire.config import load_settings
from quire.events import Events
from quire.jobs import Job
from quire.revisions.diff import apply, diff
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model, role_key

FIELDS = [{"name": "title", "type": "text"}, {"name": "body", "type": "longtext"},
          {"name": "tags", "type": "tags"}, {"name": "meta", "type": "object"}]


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=FIELDS)
    return admin


def history(api: Api, item_id: str, model: str = "posts", **params: Any) -> dict[str, Any]:
    response = api.get(f"/api/revisions/content/{model}/{item_id}", params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def save(api: Api, data: dict[str, Any], model: str = "posts") -> dict[str, Any]:
    return create_item(api, model, data)


def test_every_write_records_who_when_what_and_the_item_before(posts: Api, admin_key: str, quire: Quire) -> None:
    item = save(posts, {"title": "First", "tags": ["a"]})
    save(posts, {"_id": item["_id"], "title": "Second", "meta": {"x": 1}})
    save(posts, {"_id": item["_id"], "meta": {"x": 2, "y": 3}})
    listed = history(posts, item["_id"])
    assert listed["total"] == 3
    assert [r["n"] for r in listed["data"]] == [3, 2, 1]
    assert [r["action"] for r in listed["data"]] == ["update", "update", "create"]
    key_id = quire.auth.identify(admin_key).key_id
    assert {json.dumps(r["who"], sort_keys=True) for r in listed["data"]} == {
        json.dumps({"kind": "key", "id": key_id, "name": "test admin", "role": "admin"}, sort_keys=True)}
    assert "title" in listed["data"][1]["fields"] and "meta" in listed["data"][1]["fields"]
    assert listed["data"][0]["at"] >= listed["data"][2]["at"]

    second = posts.get(f"/api/revisions/content/posts/{item['_id']}/2").json()
    assert second["previous"]["title"] == "First" and "meta" not in second["previous"]
    assert second["doc"]["title"] == "Second" and second["doc"]["meta"] == {"x": 1}
    changes = {c["path"]: c for c in second["diff"]}
    assert changes["/title"] == {"op": "replace", "path": "/title", "old": "First", "new": "Second"}
    assert changes["/meta"] == {"op": "add", "path": "/meta", "new": {"x": 1}}
    third = posts.get(f"/api/revisions/content/posts/{item['_id']}/3").json()
    assert {c["path"] for c in third["diff"] if not c["path"].startswith("/_")} == {"/meta/x", "/meta/y"}
    first = posts.get(f"/api/revisions/content/posts/{item['_id']}/1").json()
    assert first["previous"] is None and first["doc"]["title"] == "First"


def test_two_revisions_compared(posts: Api) -> None:
    item = save(posts, {"title": "a", "body": "one"})
    save(posts, {"_id": item["_id"], "title": "b"})
    save(posts, {"_id": item["_id"], "body": "two"})
    answer = posts.get(f"/api/revisions/content/posts/{item['_id']}/diff", params={"from": 1, "to": 3}).json()
    content = {c["path"]: (c.get("old"), c.get("new")) for c in answer["changes"] if not c["path"].startswith("/_")}
    assert content == {"/title": ("a", "b"), "/body": ("one", "two")}
    newest = posts.get(f"/api/revisions/content/posts/{item['_id']}/diff").json()
    assert (newest["from"], newest["to"]) == (2, 3)
    from_nothing = posts.get(f"/api/revisions/content/posts/{item['_id']}/diff", params={"from": 0, "to": 1}).json()
    assert {c["op"] for c in from_nothing["changes"]} == {"add"}


def test_restore_writes_the_old_version_whole_as_a_new_revision(posts: Api) -> None:
    item = save(posts, {"title": "Kept", "tags": ["x"]})
    save(posts, {"_id": item["_id"], "title": "Changed", "body": "added later", "tags": ["y", "z"]})
    response = posts.post(f"/api/revisions/content/posts/{item['_id']}/1/restore")
    assert response.status_code == 200, response.text
    restored = response.json()
    assert restored["title"] == "Kept" and restored["tags"] == ["x"]
    assert restored.get("body") is None  # a field the old version lacked is gone again
    assert restored["_rev"] == 3 and restored["_created"] == item["_created"]
    stored = posts.get(f"/api/content/item/posts/{item['_id']}").json()
    assert stored["title"] == "Kept" and stored.get("body") is None
    listed = history(posts, item["_id"])
    assert listed["data"][0]["action"] == "restore" and listed["data"][0]["n"] == 3


def test_a_deleted_item_keeps_its_history_and_comes_back_with_its_id(posts: Api) -> None:
    item = save(posts, {"title": "Gone soon"})
    assert posts.delete(f"/api/content/item/posts/{item['_id']}").status_code == 200
    listed = history(posts, item["_id"])
    assert [r["action"] for r in listed["data"]] == ["delete", "create"]
    deletion = posts.get(f"/api/revisions/content/posts/{item['_id']}/2").json()
    assert deletion["doc"] is None and deletion["previous"]["title"] == "Gone soon"
    refused = posts.post(f"/api/revisions/content/posts/{item['_id']}/2/restore")
    assert refused.status_code == 400 and "deletion" in refused.json()["error"]
    back = posts.post(f"/api/revisions/content/posts/{item['_id']}/1/restore")
    assert back.status_code == 200, back.text
    assert back.json()["_id"] == item["_id"] and back.json()["_rev"] == 2
    assert posts.get(f"/api/content/item/posts/{item['_id']}").json()["title"] == "Gone soon"


def test_a_field_the_model_lost_is_left_out_of_a_restore(posts: Api) -> None:
    item = save(posts, {"title": "t", "body": "old body"})
    put_model(posts, "posts", type="collection", fields=[f for f in FIELDS if f["name"] != "body"])
    save(posts, {"_id": item["_id"], "title": "u"})
    restored = posts.post(f"/api/revisions/content/posts/{item['_id']}/1/restore")
    assert restored.status_code == 200, restored.text
    assert restored.json()["title"] == "t" and "body" not in restored.json()


def test_tree_moves_and_imports_record_revisions(admin: Api, quire: Quire, admin_key: str) -> None:
    put_model(admin, "nav", type="tree", fields=[{"name": "title", "type": "text"}])
    a = create_item(admin, "nav", {"title": "a"})
    b = create_item(admin, "nav", {"title": "b"})
    identity = quire.auth.identify(admin_key)
    asyncio.run(quire.content.move("nav", b["_id"], a["_id"], 0, identity))
    moved = history(admin, b["_id"], "nav")["data"][0]
    assert moved["action"] == "update" and "_pid" in moved["fields"]
    bundle = {"quire": 1, "items": {"nav": [{**b, "title": "imported"}]}}
    asyncio.run(import_bundle(quire, bundle))
    imported = history(admin, b["_id"], "nav")["data"][0]
    assert imported["who"] == {"kind": "system", "id": "import", "name": None, "role": "admin"}
    assert imported["action"] == "update"
    assert "title" in imported["fields"]


def test_history_needs_the_update_permission_and_checks_its_input(posts: Api) -> None:
    item = save(posts, {"title": "x"})
    reader = role_key(posts, "reader", {"content/posts/read": True})
    assert reader.get(f"/api/revisions/content/posts/{item['_id']}").status_code == 403
    assert posts.with_key(None).get(f"/api/revisions/content/posts/{item['_id']}").status_code == 401
    editor = role_key(posts, "editor", {"content/posts/read": True, "content/posts/update": True})
    assert editor.get(f"/api/revisions/content/posts/{item['_id']}").status_code == 200
    for path, status in [("/api/revisions/content/nope/" + item["_id"], 404),
                         ("/api/revisions/content/posts/not-an-id", 404),
                         (f"/api/revisions/content/posts/{item['_id']}/abc", 400),
                         (f"/api/revisions/content/posts/{item['_id']}/99", 404),
                         (f"/api/revisions/content/posts/{item['_id']}/-1", 400),
                         (f"/api/revisions/content/posts/{item['_id']}?limit=0", 400),
                         (f"/api/revisions/content/posts/{item['_id']}?limit=abc", 400),
                         (f"/api/revisions/content/posts/{item['_id']}/diff?from=x", 400),
                         (f"/api/revisions/content/posts/{item['_id']}/diff?to=7", 404)]:
        response = posts.get(path)
        assert response.status_code == status, (path, response.text)
        assert isinstance(response.json()["error"], str)


@contextlib.contextmanager
def site(data_dir: Path, app_env: dict[str, str], **env: str) -> Iterator[tuple[Quire, Api]]:
    """An app of the run's store with revision settings of its own, the
    model `posts` and an admin client."""
    app = build_app(load_settings(data_dir, env={**app_env, **env}), Events())
    try:
        quire = app.state.quire
        admin = Api(TestClient(app), str(quire.auth.create_key("k", "admin")["key"]))
        put_model(admin, "posts", type="collection", fields=FIELDS)
        yield quire, admin
    finally:
        app.state.quire.close()


def test_keep_drops_the_oldest_revisions_and_a_job_the_old_ones(data_dir: Path, app_env: dict[str, str]) -> None:
    with site(data_dir, app_env, QUIRE_REVISIONS_KEEP="3") as (quire, admin):
        item = save(admin, {"title": "v0"})
        for i in range(1, 6):
            save(admin, {"_id": item["_id"], "title": f"v{i}"})
        listed = history(admin, item["_id"])
        assert listed["total"] == 3 and [r["n"] for r in listed["data"]] == [6, 5, 4]
        oldest = admin.get(f"/api/revisions/content/posts/{item['_id']}/diff", params={"from": 0, "to": 6}).json()
        assert [c for c in oldest["changes"] if c["path"] == "/title"][0]["old"] == "v2"  # before revision 4
        assert quire.revisions.prune() == 0  # all younger than a year
        assert quire.revisions.prune(now=time.time() + 366 * 86_400) == 3
        assert history(admin, item["_id"])["total"] == 0


def test_revisions_off_records_none(data_dir: Path, app_env: dict[str, str]) -> None:
    with site(data_dir, app_env, QUIRE_REVISIONS_ENABLED="false") as (_, admin):
        item = save(admin, {"title": "v0"})
        save(admin, {"_id": item["_id"], "title": "v1"})
        assert history(admin, item["_id"])["total"] == 0


def test_diff_and_apply_round_trip() -> None:
    old = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "e/f": True, "g~": None}
    new = {"a": 1.0, "b": {"c": [1, 2, 3], "h": {}}, "e/f": False, "i": 5}
    changes = diff(old, new)
    assert apply(old, changes) == new
    assert [c for c in changes if c["path"] == "/a"][0]["op"] == "replace"  # 1 and 1.0 differ in a document
    assert apply(new, diff(new, old)) == old
    assert diff(old, old) == []


def test_the_daily_prune_is_one_job_a_day_and_enqueues_the_next(posts: Api, quire: Quire) -> None:
    item = save(posts, {"title": "old"})
    jobs = quire.store.collection("system/jobs")
    quire.revisions.schedule()
    quire.revisions.schedule()  # a second instance starting the same day adds none
    today = int(time.time() // 86_400)
    # The server's runner may already have run today's prune (which enqueues
    # tomorrow's), so only the days are counted, not the jobs' states.
    days = sorted(job["payload"]["day"] for job in jobs.find({"kind": "revisions.prune"}))
    assert days in ([today], [today, today + 1]), days
    job = jobs.get(f"revisions.prune:{today}")
    assert job is not None and job["payload"] == {"day": today}
    quire.revisions.clock = lambda: time.time() + 400 * 86_400  # a year and more later
    claimed = Job(job["_id"], "revisions.prune", job["payload"], job["key"], 1, "lease", quire.store)
    quire.revisions._prune_job(claimed)
    assert history(posts, item["_id"])["total"] == 0
    following = jobs.get(f"revisions.prune:{today + 1}")
    assert following is not None and following["run_at"] == (today + 1) * 86_400


def test_a_deleted_model_takes_its_items_histories_with_it(posts: Api) -> None:
    item = save(posts, {"title": "x"})
    assert posts.delete("/api/system/models/posts").status_code == 200
    put_model(posts, "posts", type="collection", fields=FIELDS)
    assert history(posts, item["_id"])["total"] == 0


def test_revision_numbers_are_ascii_digits_and_restores_start_at_one(posts: Api) -> None:
    item = save(posts, {"title": "x"})
    base = f"/api/revisions/content/posts/{item['_id']}"
    for bad in ("²", "١", "①"):
        for response in (posts.get(f"{base}/{bad}"), posts.post(f"{base}/{bad}/restore"),
                         posts.get(f"{base}/diff", params={"from": bad})):
            assert response.status_code == 400, (bad, response.text)
    refused = posts.post(f"{base}/0/restore")
    assert refused.status_code == 400 and "numbered from 1" in refused.json()["error"]
    assert posts.post("/api/revisions/pages/settings/0/restore").status_code == 400


def test_a_renamed_field_keeps_its_value_in_a_restore(posts: Api) -> None:
    item = save(posts, {"title": "keep me"})
    save(posts, {"_id": item["_id"], "title": "changed"})
    renamed = [{**f, "name": "headline"} if f["name"] == "title" else f for f in FIELDS]
    response = posts.put("/api/system/models/posts",
                         json={"name": "posts", "type": "collection", "fields": renamed, "renames": {"title": "headline"}})
    assert response.status_code == 200, response.text
    restored = posts.post(f"/api/revisions/content/posts/{item['_id']}/1/restore")
    assert restored.status_code == 200, restored.text
    assert restored.json()["headline"] == "keep me" and "title" not in restored.json()
    second = posts.get(f"/api/revisions/content/posts/{item['_id']}/2").json()
    assert {c["path"] for c in second["diff"] if not c["path"].startswith("/_")} == {"/headline"}


def test_bringing_a_deleted_item_back_published_needs_publish(posts: Api) -> None:
    draft = save(posts, {"title": "draft", "_state": 0})
    live = save(posts, {"title": "live"})
    for item in (draft, live):
        assert posts.delete(f"/api/content/item/posts/{item['_id']}").status_code == 200
    editor = role_key(posts, "editor", {f"content/posts/{p}": True for p in ("read", "create", "update")})
    assert editor.post(f"/api/revisions/content/posts/{draft['_id']}/1/restore").status_code == 200
    assert editor.post(f"/api/revisions/content/posts/{live['_id']}/1/restore").status_code == 403
    assert posts.get(f"/api/content/item/posts/{live['_id']}").status_code == 404
