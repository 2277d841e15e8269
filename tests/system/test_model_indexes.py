"""`GET /api/system/models/{name}/indexes`: every index of a model's items
with its origin, fields and size; automatic ones appear once built."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, put_model


@pytest.mark.sqlite_only
def test_lists_built_in_declared_and_automatic_indexes(admin: Api, quire: Quire) -> None:
    put_model(admin, "posts", type="collection", indexes=["views"],
              fields=[{"name": "views", "type": "number"}, {"name": "title", "type": "text"}])
    coll = quire.store.collection("content/posts", quire.models.hints(quire.models.get("posts")))
    with quire.store.transaction():
        for i in range(1200):
            coll.insert({"views": i, "title": f"t{i}", "_state": 1})
    for n in range(3):  # three different pages (a page asked again is its kept answer: no read)
        response = admin.get(f'/api/content/items/posts?filter={{"title":{{"$gte":"t{n}"}}}}&limit=5')
        assert response.status_code == 200
    assert quire.store.auto is not None
    quire.store.auto.wait()
    found = admin.get("/api/system/models/posts/indexes").json()
    by_fields: dict[tuple[str, ...], Any] = {tuple(i["fields"]): i for i in found}
    assert by_fields[("_state",)]["origin"] == "built-in"
    assert by_fields[("_state", "views")]["origin"] == "declared"
    assert by_fields[("views",)]["origin"] == "declared"
    auto = by_fields[("_state", "title")]
    assert auto["origin"] == "automatic" and auto["bytes"] > 0 and auto["created"] <= auto["used"]
    # a model change removing the field drops its automatic index
    put_model(admin, "posts", type="collection", fields=[{"name": "views", "type": "number"}])
    after = {tuple(i["fields"]) for i in admin.get("/api/system/models/posts/indexes").json()}
    assert after == {("_state",)}


def test_unknown_model_and_permissions(admin: Api, anon: Api) -> None:
    response = admin.get("/api/system/models/nope/indexes")
    assert response.status_code == 404 and "nope" in response.json()["error"]
    assert anon.get("/api/system/models/nope/indexes").status_code in (401, 403)
