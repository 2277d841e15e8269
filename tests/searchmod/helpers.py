"""Small helpers shared by the search tests: define indexes, run searches,
and read hits."""

from __future__ import annotations

from typing import Any

from quire.auth.service import Identity
from tests.conftest import Api, create_item, put_model

ADMIN = Identity("admin", key_id="searchmod-tests")

POSTS_FIELDS = [
    {"name": "title", "type": "text"},
    {"name": "body", "type": "wysiwyg"},
    {"name": "slug", "type": "text"},
    {"name": "tags", "type": "tags"},
    {"name": "category", "type": "text"},
    {"name": "n", "type": "number"},
    {"name": "meta", "type": "object"},
]


def posts_model(admin: Api, name: str = "posts", **extra: Any) -> dict[str, Any]:
    return put_model(admin, name, type="collection", fields=POSTS_FIELDS, **extra)


def put_index(admin: Api, name: str, **definition: Any) -> dict[str, Any]:
    response = admin.put(f"/api/searchmod/indexes/{name}", json=definition)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def get_index(admin: Api, name: str) -> dict[str, Any]:
    response = admin.get(f"/api/searchmod/indexes/{name}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def search_response(api: Api, index: str, q: str | None = None, **params: Any) -> Any:
    query = {k: v for k, v in params.items() if v is not None}
    if q is not None:
        query["q"] = q
    return api.get(f"/api/searchmod/search/{index}", params=query)


def search(api: Api, index: str, q: str, **params: Any) -> dict[str, Any]:
    response = search_response(api, index, q, **params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"hits", "total", "query", "limit", "offset"}, body
    for hit in body["hits"]:
        score = hit["_score"]
        assert isinstance(hit["_id"], str)
        assert isinstance(score, int | float) and not isinstance(score, bool), hit
    return body  # type: ignore[no-any-return]


def ids(result: dict[str, Any]) -> list[str]:
    return [h["_id"] for h in result["hits"]]


def titles(result: dict[str, Any]) -> list[Any]:
    return [h.get("title") for h in result["hits"]]


def publish(admin: Api, model: str, data: dict[str, Any]) -> dict[str, Any]:
    return create_item(admin, model, data)


def update(admin: Api, model: str, item_id: str, data: dict[str, Any]) -> dict[str, Any]:
    response = admin.post(f"/api/content/item/{model}", json={"data": {"_id": item_id, **data}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def error_of(response: Any, status: int) -> str:
    """The message of an error response, after checking its status and shape."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str), body
    return body["error"]  # type: ignore[no-any-return]


FILLER = [
    "the quick brown fox", "lorem ipsum dolor", "green fields of wheat", "a quiet village square",
    "coffee and biscuits", "rivers flow to the sea",
]


def filler(admin: Api, model: str = "posts", count: int = 6) -> list[str]:
    """Unrelated documents, so that the terms under test are rare (BM25's IDF
    is only meaningful when a term is in fewer than half the documents)."""
    return [create_item(admin, model, {"title": FILLER[i % len(FILLER)], "body": f"<p>{FILLER[-1 - i % len(FILLER)]}</p>"})["_id"]
            for i in range(count)]
