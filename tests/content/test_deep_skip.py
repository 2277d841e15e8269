"""Deep `skip` pages: read from the kept position of the nearest
thousandth row (content.reads.SKIP_STRIDE), they equal the slice of the
whole list for any sort, also right after a write moves rows."""

from __future__ import annotations

import json
from typing import Any

import pytest

from quire.app import Quire
from quire.content.reads import SKIP_STRIDE
from tests.conftest import Api, create_item, put_model

COUNT = 2 * SKIP_STRIDE + 150


@pytest.fixture
def posts(admin: Api, quire: Quire) -> Api:
    put_model(admin, "posts", type="collection",
              fields=[{"name": "title", "type": "text"}, {"name": "views", "type": "number"}])
    coll = quire.store.collection("content/posts", quire.models.hints(quire.models.get("posts")))
    with quire.store.transaction():
        for n in range(COUNT):  # duplicates and missing values for the sorts
            doc: dict[str, Any] = {"title": f"t{n % 700:04d}", "_state": 0 if n % 50 == 7 else 1,
                                   "_created": n, "_modified": n}
            if n % 9:
                doc["views"] = n % 13
            coll.insert(doc)
    return admin


def _ids(api: Api, query: str) -> list[str]:
    response = api.get(f"/api/content/items/posts?{query}")
    assert response.status_code == 200, response.text
    body = response.json()
    return [item["_id"] for item in (body["data"] if isinstance(body, dict) else body)]


@pytest.mark.parametrize("sort", [None, {"views": -1}, {"views": 1, "title": -1}, {"title": 1}])
def test_deep_skip_pages_are_slices_of_the_whole_list(posts: Api, sort: dict[str, int] | None) -> None:
    order = f"&sort={json.dumps(sort)}" if sort else ""
    whole = _ids(posts, f"limit=0{order}")
    assert len(whole) > 2 * SKIP_STRIDE
    for skip in (SKIP_STRIDE - 1, SKIP_STRIDE, SKIP_STRIDE + 33, 2 * SKIP_STRIDE + 5, SKIP_STRIDE + 33,
                 len(whole) - 3, len(whole), len(whole) + 5000):
        assert _ids(posts, f"limit=20&skip={skip}{order}") == whole[skip:skip + 20], skip


def test_a_write_moves_the_deep_pages(posts: Api) -> None:
    before = _ids(posts, "limit=5&skip=1500")
    first = _ids(posts, "limit=1")[0]
    assert posts.delete(f"/api/content/item/posts/{first}").status_code == 200
    after = _ids(posts, "limit=5&skip=1500")
    assert after == before[1:] + _ids(posts, "limit=1&skip=1504")
    create_item(posts, "posts", {"title": "new"})  # at the end: the page is unchanged
    assert _ids(posts, "limit=5&skip=1500") == after
