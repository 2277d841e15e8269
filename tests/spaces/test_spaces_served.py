"""Spaces on a real server of two workers (a space created through one
worker is served by the other at once, and a removed one goes from both),
and on PostgreSQL (a schema of the space's own, dropped with it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2 as httpx

from quire.app import build_app
from quire.config import load_settings
from quire.served import serve_sites
from quire.spaces.service import space_schema
from tests.client import TestClient
from tests.commands import run_quire
from tests.serving import quire_server


def test_a_space_made_through_one_worker_is_served_by_every_worker(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        admin = {"api-key": key}
        assert httpx.post(f"{base}/api/system/spaces", headers=admin, json={"name": "blog"}).status_code == 200
        space_key = run_quire("keys", "create", "--space", "blog", "--name", "k", "--role", "admin",
                              "--data", str(data)).stdout.split()[-1]
        for n in range(12):  # new connections: the kernel spreads them over both workers
            answer = httpx.get(f"{base}/blog/api/system/models", headers={"api-key": space_key, "connection": "close"})
            assert answer.status_code == 200, (n, answer.text)
        assert httpx.delete(f"{base}/api/system/spaces/blog", headers=admin).status_code == 200
        for n in range(12):
            answer = httpx.get(f"{base}/blog/api/system/models", headers={"api-key": space_key, "connection": "close"})
            assert answer.status_code == 404, (n, answer.text)


def test_on_postgresql_a_space_has_a_schema_of_its_own(tmp_path: Path, pg_url: str, pg_server: Any) -> None:
    app = serve_sites(build_app(load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "1",
                                                                      "QUIRE_STORE_URL": pg_url})))
    quire = app.state.quire
    try:
        client = TestClient(app)
        key = quire.auth.create_key("a", "admin")["key"]
        assert client.post("/api/system/spaces", headers={"api-key": key}, json={"name": "pg-shop"}).status_code == 200
        schemas = {r[0] for r in quire.store.execute_read(
            "SELECT schema_name FROM information_schema.schemata").fetchall()}
        assert space_schema("pg-shop") in schemas
        space_key = run_quire("keys", "create", "--space", "pg-shop", "--name", "k", "--role", "admin",
                              "--data", str(tmp_path / "data"), env={"QUIRE_STORE_URL": pg_url}).stdout.split()[-1]
        put = client.put("/pg-shop/api/system/models/notes", headers={"api-key": space_key}, json={
            "name": "notes", "type": "collection", "fields": [{"name": "text", "type": "text"}]})
        assert put.status_code == 200, put.text
        assert client.get("/api/system/models/notes", headers={"api-key": key}).status_code == 404
        assert client.delete("/api/system/spaces/pg-shop", headers={"api-key": key}).status_code == 200
        schemas = {r[0] for r in quire.store.execute_read(
            "SELECT schema_name FROM information_schema.schemata").fetchall()}
        assert space_schema("pg-shop") not in schemas
    finally:
        quire.close()
