"""Environments (quire/forks.py, docs/spaces.md#environments): a space
forked from another is a copy of it at one moment (items, models, files),
changed freely apart from it, and compared with it item by item, with the
items both sides changed since the fork named as conflicts."""

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


def test_a_fork_is_a_copy_changed_apart_and_compared_item_by_item(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    run_quire("spaces", "create", "shop", "--data", data)
    app = serve_sites(build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"})))
    try:
        client = TestClient(app)
        shop = {"api-key": _key(data, "shop")}
        client.put("/shop/api/system/models/posts", headers=shop, json={
            "name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        made = [client.post("/shop/api/content/item/posts", headers=shop,
                            json={"data": {"title": f"post {n}", "_state": 1}}).json() for n in range(5)]
        upload = client.post("/shop/api/assets", headers=shop,
                             files=[("files", ("note.txt", b"kept in the fork", "text/plain"))])
        assert upload.status_code == 200, upload.text

        forked = run_quire("spaces", "fork", "shop", "shop-staging", "--data", data)
        assert "Forked space shop into shop-staging" in forked.stdout
        staging = {"api-key": shop["api-key"]}  # the fork has the origin's keys, as it has everything else
        copied = client.get("/shop-staging/api/content/items/posts", headers=staging)
        assert copied.status_code == 200 and sorted(p["title"] for p in copied.json()) == [f"post {n}" for n in range(5)]
        listed = client.get("/shop-staging/api/assets", headers=staging).json()
        assets = listed["assets"] if isinstance(listed, dict) else listed
        assert len(assets) == 1
        copied_file = client.get(f"/shop-staging/api/assets/{assets[0]['_id']}", headers=staging)
        assert copied_file.status_code == 200

        # changed apart: each side its own way, one item on both
        client.post("/shop-staging/api/content/item/posts", headers=staging,
                    json={"data": {"_id": made[0]["_id"], "title": "staged edit"}})
        client.delete(f"/shop-staging/api/content/item/posts/{made[1]['_id']}", headers=staging)
        new = client.post("/shop-staging/api/content/item/posts", headers=staging,
                          json={"data": {"title": "new in staging"}}).json()
        client.post("/shop/api/content/item/posts", headers=shop,
                    json={"data": {"_id": made[2]["_id"], "title": "live edit"}})
        for side, headers in (("/shop-staging", staging), ("/shop", shop)):
            client.post(f"{side}/api/content/item/posts", headers=headers,
                        json={"data": {"_id": made[3]["_id"], "title": f"both: {side}"}})
        assert client.get(f"/shop/api/content/item/posts/{made[0]['_id']}", headers=shop).json()["title"] == "post 0"
    finally:
        app.state.quire.close()

    shown = run_quire("spaces", "diff", "shop-staging", "--data", data).stdout
    assert "posts: 1 added, 1 changed, 1 removed, 1 changed in shop, 1 changed on both sides" in shown, shown
    found = json.loads(run_quire("spaces", "diff", "shop-staging", "--json", "--data", data).stdout)
    posts = next(m for m in found["models"] if m["model"] == "posts")
    assert found["origin"] == "shop"
    assert (posts["added"], posts["changed"], posts["removed"]) == ([new["_id"]], [made[0]["_id"]], [made[1]["_id"]])
    assert posts["origin_changed"] == [made[2]["_id"]] and posts["conflicts"] == [made[3]["_id"]]
    listed = run_quire("spaces", "list", "--data", data).stdout
    assert "shop-staging" in listed


def test_a_fork_refuses_taken_names_and_spaces_that_are_not_there(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    run_quire("spaces", "create", "one", "--data", data)
    run_quire("spaces", "create", "two", "--data", data)
    for source, name, says in (("one", "two", "taken"), ("nope", "three", "Space not found"),
                               ("one", "studio", "main site serves"), ("one", "Thr\u0435e", "lowercase")):
        refused = run_quire("spaces", "fork", source, name, "--data", data, check=False)
        assert refused.returncode == 1 and says in refused.stderr, (source, name, refused.stderr)
    unforked = run_quire("spaces", "diff", "one", "--data", data, check=False)
    assert unforked.returncode == 1 and "was not forked" in unforked.stderr


def test_a_fork_killed_half_way_leaves_no_space_and_the_next_one_starts_over(
        tmp_path: Path, monkeypatch: Any) -> None:
    from quire import forks

    data = tmp_path / "data"
    run_quire("spaces", "create", "one", "--data", str(data))
    settings = load_settings(data)

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt  # as a Ctrl+C or a kill would stop it half-way

    real = forks._record_base
    monkeypatch.setattr(forks, "_record_base", killed)
    with pytest.raises(KeyboardInterrupt):
        forks.fork(settings, "one", "copy")
    assert "copy" not in run_quire("spaces", "list", "--data", str(data)).stdout  # not registered
    monkeypatch.setattr(forks, "_record_base", real)
    assert forks.fork(settings, "one", "copy")["name"] == "copy"  # over what was left
    assert "copy" in run_quire("spaces", "list", "--data", str(data)).stdout


def test_a_fork_of_a_fork_and_a_space_made_over_a_killed_forks_leftovers(tmp_path: Path, monkeypatch: Any) -> None:
    from quire import forks

    data = tmp_path / "data"
    run_quire("spaces", "create", "one", "--data", str(data))
    key = _key(str(data), "one")
    app = serve_sites(build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"})))
    try:
        client = TestClient(app)
        client.put("/one/api/system/models/notes", headers={"api-key": key}, json={
            "name": "notes", "type": "collection", "fields": [{"name": "text", "type": "text"}]})
        client.post("/one/api/content/item/notes", headers={"api-key": key}, json={"data": {"text": "a"}})
    finally:
        app.state.quire.close()
    run_quire("spaces", "fork", "one", "two", "--data", str(data))
    assert "Forked space two into three" in run_quire("spaces", "fork", "two", "three", "--data", str(data)).stdout
    assert "hold the same items" in run_quire("spaces", "diff", "three", "--data", str(data)).stdout

    def killed(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(forks, "_record_base", killed)
    with pytest.raises(KeyboardInterrupt):
        forks.fork(load_settings(data), "one", "four")  # the copy is in place, not registered
    run_quire("spaces", "create", "four", "--data", str(data))  # a new space: empty, whatever was left
    refused = run_quire("keys", "list", "--space", "four", "--data", str(data)).stdout
    assert refused.strip() == ""  # none of the origin's keys came with what the killed fork left
    models = run_quire("models", "--space", "four", "--data", str(data), check=False)
    assert "notes" not in models.stdout


def test_a_forks_files_are_shared_until_one_side_changes_them(tmp_path: Path) -> None:
    """On local disk a fork links its origin's files instead of copying
    them: the same file until one side deletes or replaces it, which never
    reaches the other (every write is a new file renamed over the name)."""
    data = tmp_path / "data"
    run_quire("spaces", "create", "shop", "--data", str(data))
    key = {"api-key": _key(str(data), "shop")}
    app = serve_sites(build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"})))
    try:
        client = TestClient(app)
        asset = client.post("/shop/api/assets", headers=key,
                            files=[("files", ("note.txt", b"shared at first", "text/plain"))]).json()[0]
    finally:
        app.state.quire.close()
    run_quire("spaces", "fork", "shop", "shop-copy", "--data", str(data))
    origin_file = data / "spaces" / "shop" / "uploads" / asset["path"].lstrip("/")
    fork_file = data / "spaces" / "shop-copy" / "uploads" / asset["path"].lstrip("/")
    assert origin_file.stat().st_ino == fork_file.stat().st_ino  # one file, two names
    assert not list((data / "spaces").glob(".fork-*"))  # nothing left beside the spaces
    app = serve_sites(build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1"})))
    try:
        client = TestClient(app)
        assert client.delete(f"/shop-copy/api/assets/{asset['_id']}", headers=key).status_code == 200
        assert not fork_file.exists()
        kept = client.get(f"/shop/storage/uploads{asset['path']}")
        assert kept.status_code == 200 and kept.content == b"shared at first"
    finally:
        app.state.quire.close()
