"""Spaces (quire/spaces, quire/sites.py, docs/spaces.md): several sites in
one Quire, each at /<name>/api/... with its own database, files, models,
content, roles and keys; created, listed and removed by the main site's
admins (API and command line); isolated: a key of one site reads nothing of
another on any route."""

from __future__ import annotations

import json
import re
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
def site(tmp_path: Path) -> Iterator[tuple[Any, TestClient, str]]:
    """(the served app with its spaces, a client, the main site's admin key)."""
    app = serve_sites(build_app(load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "1"})))
    quire = app.state.quire
    key = quire.auth.create_key("main admin", "admin")["key"]
    try:
        yield app, TestClient(app, raise_server_exceptions=False), key
    finally:
        quire.close()


def _space_key(app: Any, name: str) -> str:
    data = str(app.state.quire.settings.data_dir)
    return run_quire("keys", "create", "--space", name, "--name", "k", "--role", "admin", "--data", data
                     ).stdout.split()[-1]


def _model(client: TestClient, base: str, key: str, name: str = "posts") -> None:
    answer = client.put(f"{base}/api/system/models/{name}", headers={"api-key": key}, json={
        "name": name, "type": "collection", "fields": [{"name": "title", "type": "text"}]})
    assert answer.status_code == 200, answer.text


def test_an_admin_creates_lists_and_removes_spaces(site: tuple[Any, TestClient, str]) -> None:
    app, client, key = site
    admin = {"api-key": key}
    made = client.post("/api/system/spaces", headers=admin, json={"name": "shop", "label": "The shop"})
    assert made.status_code == 200, made.text
    assert made.json() == {"name": "shop", "label": "The shop", "created": made.json()["created"], "api": "/shop/api",
                           "origin": None}
    assert client.post("/api/system/spaces", headers=admin, json={"name": "shop"}).status_code == 409
    assert [s["name"] for s in client.get("/api/system/spaces", headers=admin).json()] == ["shop"]
    assert client.get("/api/system/spaces/shop", headers=admin).json()["label"] == "The shop"
    folder = app.state.quire.settings.data_dir / "spaces" / "shop"
    assert (folder).is_dir()
    space_key = _space_key(app, "shop")
    _model(client, "/shop", space_key)
    assert (folder / "quire.db").is_file()  # a database of its own
    assert client.delete("/api/system/spaces/shop", headers=admin).json() == {"success": True}
    assert not folder.exists()
    assert client.get("/shop/api/content/items/posts", headers={"api-key": space_key}).status_code == 404
    assert client.delete("/api/system/spaces/shop", headers=admin).status_code == 404
    # only the main site's admins
    client.put("/api/system/roles/editor", headers=admin, json={"permissions": {"content/*/read": True}})
    editor = client.post("/api/system/keys", headers=admin, json={"name": "e", "role": "editor"}).json()["key"]
    assert client.get("/api/system/spaces", headers={"api-key": editor}).status_code == 403
    assert client.post("/api/system/spaces", json={"name": "anon"}).status_code == 401


@pytest.mark.parametrize("name", [
    "api", "studio", "auth", "admin", "storage", "metrics", "sso", "demo", "system", "favicon.ico", "spaces",
    "../etc", "a/b", "shop%2f", "Shop", "SHOP", "s", "9lives", "-shop", "shop-", "sh--op", "xn--shop",
    "sh\u043ep",  # a Cyrillic o: a look-alike
    "shöp", "shop\u200b", " shop", "shop.", "x" * 41, "", None, 7, ["shop"]])
def test_names_that_are_routes_reserved_tricks_or_look_alikes_are_refused(
        site: tuple[Any, TestClient, str], name: Any) -> None:
    _app, client, key = site
    answer = client.post("/api/system/spaces", headers={"api-key": key}, json={"name": name})
    assert answer.status_code == 400, (name, answer.text)
    assert "error" in answer.json()
    assert client.get("/api/system/spaces", headers={"api-key": key}).json() == []


def test_a_space_answers_as_the_main_api_does_with_its_own_content(site: tuple[Any, TestClient, str]) -> None:
    app, client, key = site
    client.post("/api/system/spaces", headers={"api-key": key}, json={"name": "shop"})
    space_key = _space_key(app, "shop")
    _model(client, "", key)
    _model(client, "/shop", space_key)
    client.post("/api/content/item/posts", headers={"api-key": key}, json={"data": {"title": "main", "_state": 1}})
    client.post("/shop/api/content/item/posts", headers={"api-key": space_key},
                json={"data": {"title": "shop", "_state": 1}})
    main_list = client.get("/api/content/items/posts", headers={"api-key": key}).json()
    shop_list = client.get("/shop/api/content/items/posts", headers={"api-key": space_key}).json()
    assert [p["title"] for p in main_list] == ["main"] and [p["title"] for p in shop_list] == ["shop"]
    # the Cockpit client's shapes: /:space/api/content/items/{model} with the query as on the main site
    assert client.get("/shop/api/content/items/posts", headers={"api-key": space_key},
                      params={"filter": '{"title": "shop"}', "fields": '{"title": 1}'}).json()[0]["title"] == "shop"
    assert client.get("/shop/api/content/item/posts", headers={"api-key": space_key}).status_code == 200
    gql = client.post("/shop/api/gql", headers={"api-key": space_key},
                      json={"query": "{ content(model: \"posts\") }"})
    assert gql.status_code == 200 and gql.json()["data"]["content"][0]["title"] == "shop"
    # its own roles
    client.put("/shop/api/system/roles/readers", headers={"api-key": space_key},
               json={"permissions": {"content/posts/read": True}})
    assert client.get("/api/system/roles/readers", headers={"api-key": key}).status_code == 404
    assert client.get("/shop/api/system/spaces", headers={"api-key": space_key}).status_code == 404  # none inside


def _get_routes(app: Any) -> list[str]:
    paths = []
    for r in app.main.routes:
        if r.path.startswith("/api/") and "GET" in r.handlers:
            paths.append(re.sub(r"\{[^}]+\}", "x", r.path))
    return paths


def test_a_key_of_one_site_reads_nothing_of_another_on_any_route(site: tuple[Any, TestClient, str]) -> None:
    app, client, key = site
    client.post("/api/system/spaces", headers={"api-key": key}, json={"name": "shop"})
    space_key = _space_key(app, "shop")
    _model(client, "", key, "x")
    _model(client, "/shop", space_key, "x")
    routes = _get_routes(app)
    assert len(routes) > 40
    for path in routes:
        for base, foreign in (("", space_key), ("/shop", key)):
            asked = client.get(base + path, headers={"api-key": foreign})
            if asked.status_code == 200:  # only what the site answers anyone, key or none
                anonymous = client.get(base + path)
                assert anonymous.status_code == 200 and anonymous.content == asked.content, (base + path, asked.text)
            else:
                assert asked.status_code in (400, 401, 403, 404, 405, 410), (base + path, asked.status_code, asked.text)


def test_a_key_of_one_site_writes_nothing_in_another_on_any_route(site: tuple[Any, TestClient, str]) -> None:
    """Every write route (POST, PUT, PATCH, DELETE) of each site, with the
    other site's key: refused, or answered as with no key at all (a form's
    public submit), and nothing of either site changed."""
    app, client, key = site
    client.post("/api/system/spaces", headers={"api-key": key}, json={"name": "shop"})
    space_key = _space_key(app, "shop")
    for base, own in (("", key), ("/shop", space_key)):
        _model(client, base, own, "x")
        assert client.post(f"{base}/api/content/item/x", headers={"api-key": own},
                           json={"data": {"title": "kept"}}).status_code == 200
    before = {base: (client.get(f"{base}/api/content/items/x", headers={"api-key": own}).json(),
                     client.get(f"{base}/api/system/models", headers={"api-key": own}).json())
              for base, own in (("", key), ("/shop", space_key))}
    writes = [(re.sub(r"\{[^}]+\}", "x", r.path), method) for r in app.main.routes if r.path.startswith("/api/")
              for method in r.handlers if method in ("POST", "PUT", "PATCH", "DELETE")]
    assert len(writes) > 40
    for path, method in writes:
        for base, foreign in (("", space_key), ("/shop", key)):
            asked = client.request(method, base + path, headers={"api-key": foreign}, json={"data": {"title": "x"}})
            anonymous = client.request(method, base + path, json={"data": {"title": "x"}})
            if asked.status_code < 300:  # only what the site does for anyone, key or none
                assert anonymous.status_code == asked.status_code, (method, base + path, asked.text, anonymous.text)
            else:  # refused as an unknown key is (or for the body, before any key is looked at)
                assert asked.status_code in (400, 401, 403, 404, 405, 409, 410, 411, 413, 415, 422), \
                    (method, base + path, asked.status_code, asked.text)
    after = {base: (client.get(f"{base}/api/content/items/x", headers={"api-key": own}).json(),
                    client.get(f"{base}/api/system/models", headers={"api-key": own}).json())
             for base, own in (("", key), ("/shop", space_key))}
    assert after == before


def test_the_command_line_creates_lists_and_removes(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    made = run_quire("spaces", "create", "blog", "--label", "The blog", "--data", data)
    assert "Created space blog" in made.stdout
    assert "blog" in run_quire("spaces", "list", "--data", data).stdout
    assert run_quire("spaces", "create", "studio", "--data", data, check=False).returncode == 1
    refused = run_quire("spaces", "remove", "blog", "--data", data, check=False)
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert run_quire("spaces", "remove", "blog", "--yes", "--data", data).returncode == 0
    assert run_quire("spaces", "list", "--data", data).stdout.strip() == ""
    missing = run_quire("keys", "create", "--space", "blog", "--name", "k", "--role", "admin", "--data", data,
                        check=False)
    assert missing.returncode == 1 and "Space not found" in missing.stderr


def test_an_alias_serves_a_space_and_switching_it_back_is_the_rollback(site: tuple[Any, TestClient, str]) -> None:
    app, client, key = site
    admin = {"api-key": key}
    for name in ("blue", "green"):
        client.post("/api/system/spaces", headers=admin, json={"name": name})
    keys = {name: _space_key(app, name) for name in ("blue", "green")}
    for name in ("blue", "green"):
        _model(client, f"/{name}", keys[name])
        client.post(f"/{name}/api/content/item/posts", headers={"api-key": keys[name]},
                    json={"data": {"title": f"from {name}", "_state": 1}})
    client.put("/blue/api/system/roles/public", headers={"api-key": keys["blue"]},
               json={"permissions": {"content/posts/read": True}})
    client.put("/green/api/system/roles/public", headers={"api-key": keys["green"]},
               json={"permissions": {"content/posts/read": True}})

    def through_alias() -> str:
        return str(client.get("/production/api/content/items/posts").json()[0]["title"])

    pointed = client.put("/api/system/aliases/production", headers=admin, json={"space": "blue"})
    assert pointed.status_code == 200 and pointed.json()["space"] == "blue" and pointed.json()["previous"] is None
    assert through_alias() == "from blue"
    switched = client.put("/api/system/aliases/production", headers=admin, json={"space": "green"}).json()
    assert switched["previous"] == "blue" and through_alias() == "from green"  # promoted
    client.put("/api/system/aliases/production", headers=admin, json={"space": switched["previous"]})
    assert through_alias() == "from blue"  # rolled back
    assert [a["name"] for a in client.get("/api/system/aliases", headers=admin).json()] == ["production"]
    # refused: a space's name, a space that is not there, removing the space an alias serves
    assert client.put("/api/system/aliases/green", headers=admin, json={"space": "blue"}).status_code == 409
    assert client.put("/api/system/aliases/prod", headers=admin, json={"space": "nope"}).status_code == 400
    assert client.put("/api/system/aliases/api", headers=admin, json={"space": "blue"}).status_code == 400
    assert client.post("/api/system/spaces", headers=admin, json={"name": "production"}).status_code == 409
    gone = client.delete("/api/system/spaces/blue", headers=admin)
    assert gone.status_code == 409 and "production" in gone.json()["error"]
    assert client.delete("/api/system/aliases/production", headers=admin).status_code == 200
    assert client.get("/production/api/content/items/posts").status_code == 404
    assert client.delete("/api/system/spaces/blue", headers=admin).status_code == 200


def test_the_command_line_points_and_removes_aliases(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    run_quire("spaces", "create", "v1", "--data", data)
    run_quire("spaces", "create", "v2", "--data", data)
    assert "now serves space v1" in run_quire("spaces", "alias", "live", "v1", "--data", data).stdout
    assert "(was v1)" in run_quire("spaces", "alias", "live", "v2", "--data", data).stdout
    assert "alias of v2" in run_quire("spaces", "list", "--data", data).stdout
    assert run_quire("spaces", "unalias", "live", "--data", data).returncode == 0
    assert "alias" not in run_quire("spaces", "list", "--data", data).stdout


def test_a_space_removed_and_made_again_elsewhere_is_served_anew_here(site: tuple[Any, TestClient, str],
                                                                      tmp_path: Path) -> None:
    app, client, key = site
    client.post("/api/system/spaces", headers={"api-key": key}, json={"name": "shop"})
    old_key = _space_key(app, "shop")
    _model(client, "/shop", old_key)
    assert client.get("/shop/api/system/models", headers={"api-key": old_key}).status_code == 200  # built here
    # another worker removes it and makes it again (this worker's app of it is not told)
    data = str(app.state.quire.settings.data_dir)
    run_quire("spaces", "remove", "shop", "--yes", "--data", data)
    run_quire("spaces", "create", "shop", "--data", data)
    assert client.get("/shop/api/system/models", headers={"api-key": old_key}).status_code == 401  # a new site


def test_image_addresses_of_a_space_carry_its_name(site: tuple[Any, TestClient, str]) -> None:
    import io

    from PIL import Image

    app, client, key = site
    client.post("/api/system/spaces", headers={"api-key": key}, json={"name": "shop"})
    space = {"api-key": _space_key(app, "shop")}
    picture = io.BytesIO()
    Image.new("RGB", (40, 30), "red").save(picture, "PNG")
    made = client.post("/shop/api/assets", headers=space, files=[("files", ("red.png", picture.getvalue(), "image/png"))])
    assert made.status_code == 200, made.text
    found = made.json()
    asset = (found["assets"] if isinstance(found, dict) else found)[0]
    answer = client.get(f"/shop/api/assets/image/{asset['_id']}", headers=space,
                        params={"w": "20", "re": "1"}, follow_redirects=False)
    assert answer.status_code in (200, 302, 307), answer.text
    if answer.status_code != 200:
        assert "/shop/storage/" in answer.headers["location"], answer.headers["location"]
    else:
        assert "/shop/" in answer.text or answer.headers["content-type"].startswith("image/")


def test_migrate_refuses_a_space(tmp_path: Path) -> None:
    refused = run_quire("migrate", "--space", "x", "--to", "postgresql://u@127.0.0.1/db", "--data",
                        str(tmp_path / "d"), check=False)
    assert refused.returncode == 2 and "quire migrate moves the main site" in refused.stderr


def test_a_request_under_way_when_its_alias_switches_finishes_on_its_space(
        site: tuple[Any, TestClient, str]) -> None:
    """A long answer read through an alias (an export streamed in pieces)
    that sees the alias switch after its first piece is still all of the
    space it started on; the next request reads the other space."""
    import asyncio

    from quire.forks import open_site
    from quire.spaces.service import SpaceService, space_settings

    app, client, key = site
    admin = {"api-key": key}
    for name in ("one", "two"):
        client.post("/api/system/spaces", headers=admin, json={"name": name})
    space_key = _space_key(app, "one")
    for name in ("one", "two"):
        _model(client, f"/{name}", space_key if name == "one" else _space_key(app, "two"), "x")
        with open_site(space_settings(app.state.quire.settings, name)) as space:
            rows = space.store.collection("content/x")
            with space.store.transaction():
                for n in range(3000):
                    rows.insert({"_id": f"{n:024x}", "_rev": 1, "_state": 1, "title": name,
                                 "_created": 1_790_000_000, "_modified": 1_790_000_000})
    assert client.put("/api/system/aliases/live", headers=admin, json={"space": "one"}).status_code == 200
    spaces = app.state.quire.get(SpaceService)
    pieces: list[bytes] = []

    async def exported() -> None:
        asked = [False]

        async def receive() -> dict[str, Any]:
            if not asked[0]:
                asked[0] = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await asyncio.Event().wait()  # the client stays: no disconnect
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.body":
                pieces.append(message.get("body", b""))
                if len(pieces) == 1:  # the answer is under way: switch the alias now
                    await spaces.point("live", {"space": "two"}, app.state.quire.auth.identify(key))

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                 "scheme": "http", "path": "/live/api/content/export/x", "raw_path": b"/live/api/content/export/x",
                 "root_path": "", "query_string": b"format=ndjson&limit=3000",
                 "headers": [(b"host", b"testserver"), (b"api-key", space_key.encode())],
                 "client": ("127.0.0.1", 1), "server": ("testserver", 80)}
        await app(scope, receive, send)

    asyncio.run(exported())
    assert len(pieces) > 1
    titles = {json.loads(line)["title"] for line in b"".join(pieces).splitlines() if line.strip()}
    assert titles == {"one"}
    assert len(b"".join(pieces).splitlines()) == 3000
    after = client.get("/live/api/content/items/x?limit=1", headers={"api-key": space_key})
    assert after.status_code == 401  # now space two's: one's key is unknown there
