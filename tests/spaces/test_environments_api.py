"""Forks, diffs and merges through the API (docs/spaces.md#through-the-api):
a fork and a merge are jobs with a task record any worker answers from;
the diff and the merge plan are answered at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.served import serve_sites
from tests.client import TestClient
from tests.commands import run_quire


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[TestClient, dict[str, str], dict[str, str]]]:
    """A client, the main site's admin key and space shop's, shop holding three posts."""
    data = tmp_path / "data"
    run_quire("spaces", "create", "shop", "--data", str(data))
    shop_key = run_quire("keys", "create", "--space", "shop", "--name", "k", "--role", "admin", "--data", str(data)
                         ).stdout.split()[-1]
    app = serve_sites(build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"})))
    quire = app.state.quire
    admin = {"api-key": quire.auth.create_key("main admin", "admin")["key"]}
    shop = {"api-key": shop_key}
    client = TestClient(app, raise_server_exceptions=False)
    try:
        client.put("/shop/api/system/models/posts", headers=shop, json={
            "name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        for n in range(3):
            client.post("/shop/api/content/item/posts", headers=shop, json={"data": {"title": f"post {n}"}})
        yield client, admin, shop
    finally:
        quire.close()


def _finished(client: TestClient, admin: dict[str, str], task: dict[str, Any]) -> dict[str, Any]:
    deadline = time.monotonic() + 60
    while True:
        found = client.get(f"/api/system/spaces/tasks/{task['id']}", headers=admin)
        assert found.status_code == 200, found.text
        if found.json()["state"] in ("done", "failed"):
            return found.json()
        assert time.monotonic() < deadline, found.json()
        time.sleep(0.1)


def test_a_fork_and_a_merge_through_the_api(site: tuple[TestClient, dict[str, str], dict[str, str]]) -> None:
    client, admin, shop = site
    asked = client.post("/api/system/spaces", headers=admin, json={"name": "stage", "from": "shop", "label": "Staging"})
    assert asked.status_code == 202, asked.text
    task = asked.json()
    assert task["kind"] == "spaces.fork" and task["state"] == "pending" and task["asked"]["from"] == "shop"
    done = _finished(client, admin, task)
    assert done["state"] == "done" and done["result"]["name"] == "stage" and done["ended"], done
    assert client.get("/api/system/spaces/stage", headers=admin).json()["origin"] == "shop"
    assert any(t["id"] == task["id"] for t in client.get("/api/system/spaces/tasks", headers=admin).json())

    items = client.get("/stage/api/content/items/posts", headers=shop).json()
    assert sorted(p["title"] for p in items) == ["post 0", "post 1", "post 2"]
    client.post("/stage/api/content/item/posts", headers=shop, json={"data": {"_id": items[0]["_id"], "title": "edited"}})
    client.post("/stage/api/content/item/posts", headers=shop, json={"data": {"title": "new"}})

    diff = client.get("/api/system/spaces/stage/diff", headers=admin)
    assert diff.status_code == 200, diff.text
    posts = diff.json()["models"][0]
    assert diff.json()["origin"] == "shop" and posts["changed"] == [items[0]["_id"]] and len(posts["added"]) == 1

    plan = client.get("/api/system/spaces/stage/merge", headers=admin)
    assert plan.status_code == 200 and plan.json()["writes"] == 2, plan.text
    merged = client.post("/api/system/spaces/stage/merge", headers=admin, json={"plan": plan.json()["plan"]})
    assert merged.status_code == 202, merged.text
    done = _finished(client, admin, merged.json())
    assert done["state"] == "done" and "merged 2 changes into shop" in done["step"], done
    titles = sorted(p["title"] for p in client.get("/shop/api/content/items/posts", headers=shop).json())
    assert titles == ["edited", "new", "post 1", "post 2"]


def test_a_plan_that_changed_fails_its_task_and_writes_nothing(
        site: tuple[TestClient, dict[str, str], dict[str, str]]) -> None:
    client, admin, shop = site
    _finished(client, admin, client.post("/api/system/spaces", headers=admin,
                                         json={"name": "stage", "from": "shop"}).json())
    client.post("/stage/api/content/item/posts", headers=shop, json={"data": {"title": "new"}})
    plan = client.get("/api/system/spaces/stage/merge", headers=admin).json()["plan"]
    client.post("/stage/api/content/item/posts", headers=shop, json={"data": {"title": "newer"}})
    task = client.post("/api/system/spaces/stage/merge", headers=admin, json={"plan": plan}).json()
    failed = _finished(client, admin, task)
    assert failed["state"] == "failed" and "changed since it was shown" in failed["error"], failed
    titles = [p["title"] for p in client.get("/shop/api/content/items/posts", headers=shop).json()]
    assert "new" not in titles and "newer" not in titles


def test_bad_asks_are_refused_at_once(site: tuple[TestClient, dict[str, str], dict[str, str]]) -> None:
    client, admin, shop = site
    for body, status, says in (({"name": "stage", "from": "nope"}, 404, "Space not found"),
                               ({"name": "shop", "from": "shop"}, 409, "already"),
                               ({"name": "Stage", "from": "shop"}, 400, "lowercase"),
                               ({"name": "tasks", "from": "shop"}, 400, "main site serves"),
                               ({"name": "stage", "from": ["shop"]}, 400, "which space to fork")):
        refused = client.post("/api/system/spaces", headers=admin, json=body)
        assert refused.status_code == status and says in refused.json()["error"], (body, refused.text)
    unforked = client.get("/api/system/spaces/shop/diff", headers=admin)
    assert unforked.status_code == 400 and "was not forked" in unforked.json()["error"]
    assert client.get("/api/system/spaces/nope/merge", headers=admin).status_code == 404
    assert client.get("/api/system/spaces/shop/merge?take=both", headers=admin).status_code == 400
    for body in ({}, {"plan": "x"}, {"plan": "0" * 32, "take": "mine"}, []):
        refused = client.post("/api/system/spaces/shop/merge", headers=admin, json=body)
        assert refused.status_code == 400, (body, refused.text)
    assert client.get("/api/system/spaces/tasks/nope", headers=admin).status_code == 404
    # a space's own key is no admin of the main site
    assert client.get("/api/system/spaces/tasks", headers=shop).status_code == 401
    assert client.post("/api/system/spaces", headers=shop, json={"name": "x1", "from": "shop"}).status_code == 401


def test_a_spaces_keys_are_listed_and_made_from_the_main_site(
        site: tuple[TestClient, dict[str, str], dict[str, str]]) -> None:
    client, admin, shop = site
    listed = client.get("/api/system/spaces/shop/keys", headers=admin)
    assert listed.status_code == 200 and [k["name"] for k in listed.json()["keys"]] == ["k"]
    assert "admin" in listed.json()["roles"] and all("key" not in k and "hash" not in k for k in listed.json()["keys"])
    made = client.post("/api/system/spaces/shop/keys", headers=admin, json={"name": "site build", "role": "admin"})
    assert made.status_code == 200, made.text
    new = {"api-key": made.json()["key"]}
    assert client.get("/shop/api/content/items/posts", headers=new).status_code == 200
    assert client.get("/api/system/spaces", headers=new).status_code == 401  # shop's key, not the main site's
    for body in ({"name": "x"}, {"name": "", "role": "admin"}, {"name": "x", "role": "nope"}, ["x"]):
        refused = client.post("/api/system/spaces/shop/keys", headers=admin, json=body)
        assert refused.status_code == 400, (body, refused.text)
    assert client.post("/api/system/spaces/nope/keys", headers=admin, json={"name": "x", "role": "admin"}
                       ).status_code == 404
    assert client.get("/api/system/spaces/shop/keys", headers=shop).status_code == 401
