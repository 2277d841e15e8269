"""Merging a fork back (quire/forks.py, docs/spaces.md#merging-back): a
plan shown first, named by the revisions it rests on, applied whole or
not at all, refused once either side changed since it was shown."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.served import serve_sites
from tests.client import TestClient
from tests.commands import run_quire


def _key(data: str, space: str) -> str:
    return run_quire("keys", "create", "--space", space, "--name", "k", "--role", "admin", "--data", data
                     ).stdout.split()[-1]


class Site:
    """The server's app over a data folder, opened for a few requests."""

    def __init__(self, data: str) -> None:
        self.app = serve_sites(build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"})))
        self.client = TestClient(self.app)

    def __enter__(self) -> TestClient:
        return self.client

    def __exit__(self, *exc: object) -> None:
        self.app.state.quire.close()


@pytest.fixture()
def forked(tmp_path: Path) -> dict[str, Any]:
    """shop with five posts and a key, forked into shop-staging, then changed
    apart: in staging post 0 edited, post 1 removed, a new post with an
    image; in shop post 2 edited; post 3 edited on both sides."""
    data = str(tmp_path / "data")
    run_quire("spaces", "create", "shop", "--data", data)
    key = {"api-key": _key(data, "shop")}
    with Site(data) as client:
        client.put("/shop/api/system/models/posts", headers=key, json={
            "name": "posts", "type": "collection",
            "fields": [{"name": "title", "type": "text"}, {"name": "image", "type": "asset"}]})
        made = [client.post("/shop/api/content/item/posts", headers=key,
                            json={"data": {"title": f"post {n}", "_state": 1}}).json() for n in range(5)]
    run_quire("spaces", "fork", "shop", "shop-staging", "--data", data)
    with Site(data) as client:
        upload = client.post("/shop-staging/api/assets", headers=key,
                             files=[("files", ("note.txt", b"made in staging", "text/plain"))])
        asset = upload.json()[0]
        client.post("/shop-staging/api/content/item/posts", headers=key,
                    json={"data": {"_id": made[0]["_id"], "title": "staged edit"}})
        client.delete(f"/shop-staging/api/content/item/posts/{made[1]['_id']}", headers=key)
        new = client.post("/shop-staging/api/content/item/posts", headers=key,
                          json={"data": {"title": "new in staging", "image": {"_id": asset["_id"]}, "_state": 1}}).json()
        client.post("/shop/api/content/item/posts", headers=key,
                    json={"data": {"_id": made[2]["_id"], "title": "live edit"}})
        for side in ("/shop-staging", "/shop"):
            client.post(f"{side}/api/content/item/posts", headers=key,
                        json={"data": {"_id": made[3]["_id"], "title": f"both: {side}"}})
    return {"data": data, "key": key, "made": made, "new": new, "asset": asset}


def _plan(data: str, *extra: str) -> dict[str, Any]:
    return json.loads(run_quire("spaces", "merge", "shop-staging", "--json", *extra, "--data", data).stdout)


def test_a_merge_shows_its_plan_then_applies_exactly_it(forked: dict[str, Any]) -> None:
    data, key, made, new = forked["data"], forked["key"], forked["made"], forked["new"]
    shown = run_quire("spaces", "merge", "shop-staging", "--data", data).stdout
    assert "posts: add 1, change 1, remove 1; 1 changed on both sides stay as shop has them" in shown, shown
    assert "copy 1 assets" in shown and "--plan " in shown
    plan = _plan(data)
    posts = plan["models"][0]
    assert (posts["add"], posts["change"], posts["remove"]) == ([new["_id"]], [made[0]["_id"]], [made[1]["_id"]])
    assert posts["conflicts"] == [made[3]["_id"]] and plan["assets"] == [forked["asset"]["_id"]]
    with Site(data) as client:  # shown, not done
        assert client.get(f"/shop/api/content/item/posts/{made[0]['_id']}", headers=key).json()["title"] == "post 0"

    merged = run_quire("spaces", "merge", "shop-staging", "--plan", plan["plan"], "--data", data)
    assert "Merged 3 changes of shop-staging into shop" in merged.stdout
    with Site(data) as client:
        got = {p["_id"]: p["title"] for p in client.get("/shop/api/content/items/posts", headers=key).json()}
        assert got == {made[0]["_id"]: "staged edit", made[2]["_id"]: "live edit", made[3]["_id"]: "both: /shop",
                       made[4]["_id"]: "post 4", new["_id"]: "new in staging"}
        image = client.get(f"/shop/api/content/item/posts/{new['_id']}?populate=1", headers=key).json()["image"]
        assert image["_id"] == forked["asset"]["_id"]
        assert client.get(f"/shop/api/assets/{image['_id']}", headers=key).status_code == 200
        file = client.get(f"/shop/storage/uploads{image['path']}")
        assert file.status_code == 200 and file.content == b"made in staging"
        history = client.get(f"/shop/api/revisions/content/posts/{made[0]['_id']}", headers=key)
        assert history.status_code == 200 and len(history.json()) >= 2  # the merge is a revision of its own
    # the next diff starts from the merge: only the conflict and the origin's own change are left
    after = json.loads(run_quire("spaces", "diff", "shop-staging", "--json", "--data", data).stdout)
    posts = after["models"][0]
    assert posts.get("conflicts") == [made[3]["_id"]] and posts.get("origin_changed") == [made[2]["_id"]]
    assert not posts.get("added") and not posts.get("changed") and not posts.get("removed")
    assert _plan(data)["writes"] == 0


def test_a_plan_is_refused_once_either_side_changed_since_it_was_shown(forked: dict[str, Any]) -> None:
    data, key, made = forked["data"], forked["key"], forked["made"]
    plan = _plan(data)["plan"]
    with Site(data) as client:
        client.post("/shop/api/content/item/posts", headers=key,
                    json={"data": {"_id": made[0]["_id"], "title": "changed live meanwhile"}})
    refused = run_quire("spaces", "merge", "shop-staging", "--plan", plan, "--data", data, check=False)
    assert refused.returncode == 1 and "changed since it was shown" in refused.stderr
    with Site(data) as client:  # nothing of it written
        titles = {p["title"] for p in client.get("/shop/api/content/items/posts", headers=key).json()}
        assert "new in staging" not in titles and "post 1" in titles
    again = _plan(data)
    assert again["plan"] != plan and again["models"][0]["conflicts"] == sorted([made[0]["_id"], made[3]["_id"]])


def test_taking_the_forks_side_settles_the_conflicts_its_way(forked: dict[str, Any]) -> None:
    data, key, made = forked["data"], forked["key"], forked["made"]
    plan = _plan(data, "--take", "fork")
    assert plan["models"][0]["conflicts"] == [] and made[3]["_id"] in plan["models"][0]["change"]
    run_quire("spaces", "merge", "shop-staging", "--take", "fork", "--plan", plan["plan"], "--data", data)
    with Site(data) as client:
        got = client.get(f"/shop/api/content/item/posts/{made[3]['_id']}", headers=key).json()
        assert got["title"] == "both: /shop-staging"


def test_a_merge_killed_half_way_applied_nothing_and_runs_again_whole(forked: dict[str, Any],
                                                                    monkeypatch: Any) -> None:
    from quire import forks
    from quire.content.service import ContentService

    data, key = forked["data"], forked["key"]
    plan = _plan(data)["plan"]
    real = ContentService.delete

    async def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # after the adds and changes were written in the transaction

    monkeypatch.setattr(ContentService, "delete", killed)
    with pytest.raises(KeyboardInterrupt):
        forks.merge(load_settings(data), "shop-staging", plan)
    with Site(data) as client:
        titles = {p["title"] for p in client.get("/shop/api/content/items/posts", headers=key).json()}
        assert "staged edit" not in titles and "new in staging" not in titles and "post 1" in titles
    monkeypatch.setattr(ContentService, "delete", real)
    forks.merge(load_settings(data), "shop-staging", plan)  # the same plan: nothing of it was applied
    with Site(data) as client:
        titles = {p["title"] for p in client.get("/shop/api/content/items/posts", headers=key).json()}
        assert "staged edit" in titles and "new in staging" in titles and "post 1" not in titles


def test_a_model_the_origin_lacks_is_refused_until_the_schema_is_carried(forked: dict[str, Any]) -> None:
    data, key = forked["data"], forked["key"]
    with Site(data) as client:
        client.put("/shop-staging/api/system/models/pages2", headers=key, json={
            "name": "pages2", "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        client.post("/shop-staging/api/content/item/pages2", headers=key, json={"data": {"title": "x"}})
    refused = run_quire("spaces", "merge", "shop-staging", "--data", data, check=False)
    assert refused.returncode == 1 and "has no model pages2" in refused.stderr
    unforked = run_quire("spaces", "merge", "shop", "--data", data, check=False)
    assert unforked.returncode == 1 and "was not forked" in unforked.stderr
