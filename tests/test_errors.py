"""Every route answers bad input with the documented status and one error
shape: a JSON object with a string `error`."""

from __future__ import annotations

from typing import Any

import pytest

from quire.asgi import Route
from tests.conftest import Api, create_item, put_model

BAD_QUERIES = [
    ("filter={bad", {400}),
    ('filter={"$where":"1"}', {400}),
    ('filter={"a":{"$unknown":1}}', {400}),
    ("sort={bad", {400}),
    ('sort={"a":2}', {400}),
    ("fields={bad", {400}),
    ('fields={"a":1,"b":0}', {400}),
    ("limit=abc", {400}),
    ("skip=-1", {400}),
    ("populate=x", {400}),
    ("models={bad", {400}),
]


def _concrete(path: str, item_id: str = "0" * 24, token: str = "no-such-token") -> str:
    return (path.replace("{model}", "posts").replace("{id}", item_id).replace("{name}", "posts")
            .replace("{token}", token))


NO_BODY = {"/api/inbox/forms/{id}/token", "/api/searchmod/indexes/{name}/rebuild",  # POSTs that read no body
           "/api/revisions/content/{model}/{id}/{n}/restore", "/api/revisions/pages/{id}/{n}/restore",
           "/api/revisions/pages/settings/{n}/restore", "/api/content/unpublish/{model}",
           "/api/content/unpublish/{model}/{id}",
           "/api/webhooks/{id}/rotate", "/api/webhooks/{id}/enable",
           "/api/webhooks/{id}/deliveries/{delivery}/redeliver"}


def _routes(app: Any) -> list[tuple[str, str]]:
    """The API's routes (the admin's HTML pages and single sign-on have
    their own tests: tests/admin, tests/sso)."""
    out = []
    for route in app.routes:
        if isinstance(route, Route) and route.path.startswith(("/api/", "/storage/")):
            for method in sorted(route.methods or []):
                if method != "HEAD":
                    out.append((method, route.path))
    return out


@pytest.fixture
def seeded(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    admin.item_id = create_item(admin, "posts", {"title": "x"})["_id"]  # type: ignore[attr-defined]
    form = admin.post("/api/inbox/forms", json={"data": {"name": "errors"}}).json()
    admin.token = form["token"]  # type: ignore[attr-defined]
    return admin


def assert_error_shape(response: Any, statuses: set[int]) -> None:
    assert response.status_code in statuses, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"]


def test_every_route_rejects_an_unknown_key_with_401(seeded: Api, app: Any) -> None:
    bad = seeded.with_key("qk_not-a-key")
    for method, path in _routes(app):
        if path in ("/api/system/healthcheck", "/api/openapi.json") or path.startswith("/storage/"):
            continue  # public by design
        if path == "/api/inbox/submit/{token}":
            continue  # the form's token is the credential; an api-key is not read
        response = bad.request(method, _concrete(path), json={"data": {}})
        assert_error_shape(response, {401})


def test_every_get_route_answers_bad_parameters_with_400(seeded: Api, app: Any) -> None:
    for method, path in _routes(app):
        if method != "GET" or not path.startswith("/api/content") or path == "/api/content/import-progress/{key}" \
                or path.startswith("/api/content/lock/"):
            continue  # (an import's progress and an edit lock take no parameters)
        for query, statuses in BAD_QUERIES:
            if query.startswith("models") != (path == "/api/content/items"):
                continue
            response = seeded.get(f"{_concrete(path, seeded.item_id)}?{query}")  # type: ignore[attr-defined]
            if response.status_code == 200:
                # parameters a route does not take are ignored, never half-used
                assert query.split("=")[0] in ("sort", "limit", "skip", "filter"), (path, query)
                continue
            assert_error_shape(response, statuses)


def test_every_write_route_answers_malformed_json_with_400(seeded: Api, app: Any) -> None:
    for method, path in _routes(app):
        if method not in ("POST", "PUT") or path in NO_BODY:
            continue
        response = seeded.request(
            method, _concrete(path, token=seeded.token),  # type: ignore[attr-defined]
            content=b"{not json", headers={"content-type": "application/json"},
        )
        assert_error_shape(response, {400})


def test_every_write_route_refuses_a_body_over_the_limit_with_413(seeded: Api, app: Any, quire: Any) -> None:
    quire.max_body = 2048
    for method, path in _routes(app):
        if method not in ("POST", "PUT") or path in ("/api/assets", "/api/inbox/submit/{token}",
                                                     "/api/content/import/{model}", *NO_BODY):
            continue  # uploads have their own limits (tests/assets, tests/inbox, tests/content/test_transfer.py)
        big = b'{"data": {"title": "' + b"x" * 4096 + b'"}}'
        response = seeded.request(method, _concrete(path), content=big, headers={"content-type": "application/json"})
        assert_error_shape(response, {413})


def test_json_nested_deeper_than_64_levels_is_400(seeded: Api) -> None:
    deep: Any = "x"
    for _ in range(70):
        deep = {"a": deep}
    response = seeded.post("/api/content/item/posts", json={"data": {"title": "t", "extra": deep}})
    assert_error_shape(response, {400})
    assert "nested" in response.json()["error"]
    assert len(seeded.get("/api/content/items/posts").json()) == 1  # nothing stored


def test_unknown_model_item_and_route_are_404_json(seeded: Api) -> None:
    assert_error_shape(seeded.get("/api/content/items/nope"), {404})
    assert seeded.get("/api/content/items/nope").json()["error"] == "Model <nope> not found"
    assert_error_shape(seeded.get("/api/content/item/posts/" + "f" * 24), {404})
    assert seeded.get("/api/content/item/posts/" + "f" * 24).json()["error"] == "Item not found"
    assert_error_shape(seeded.get("/api/content/item/posts/not-an-id"), {404})
    assert_error_shape(seeded.get("/no/such/route"), {404})


def test_wrong_method_is_405_with_allow_header(seeded: Api) -> None:
    response = seeded.request("PATCH", "/api/content/item/posts")
    assert_error_shape(response, {405})
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD", "POST"}


def test_unexpected_exception_is_500_without_details(seeded: Api, quire: Any, monkeypatch: Any) -> None:
    def boom(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("secret detail")

    monkeypatch.setattr(quire.content, "list_page", boom)
    response = seeded.get("/api/content/items/posts?limit=1")
    assert_error_shape(response, {500})
    assert response.json() == {"error": "Internal server error"}


def test_answers_with_retry_after_come_from_two_classes() -> None:
    """A rate limit is `errors.TooManyRequests` (429), being busy is
    `errors.Unavailable` (503); both set Retry-After the same way."""
    from quire import errors
    from quire.assets import service as assets_service
    from quire.inbox import service as inbox_service

    busy = assets_service.RenderBusy(3)
    assert isinstance(busy, errors.Unavailable)
    assert (busy.status, busy.headers, busy.message) == (
        503, {"Retry-After": "3"}, "Busy generating other images; try again shortly")
    limited = errors.TooManyRequests("Too many", 7)
    assert (limited.status, limited.headers, limited.body()) == (429, {"Retry-After": "7"}, {"error": "Too many"})
    assert not hasattr(assets_service, "TooManyRenders")
    assert not hasattr(inbox_service, "TooManyRequests")


def test_validation_error_names_every_bad_field_in_one_message() -> None:
    from quire.errors import BadRequest, ValidationError

    error = ValidationError("item data", {"title": "is required", "count": "must be a number"})
    assert isinstance(error, BadRequest) and error.status == 400
    assert error.body() == {"error": "Invalid item data: title is required; count must be a number",
                            "fields": ["count", "title"]}
    many = ValidationError("project", {f"k{i}": "is bad" for i in range(4)}, limit=2, keep_order=True)
    assert many.message == "Invalid project: k0 is bad; k1 is bad; and 2 more"
    assert many.body()["fields"] == ["k0", "k1", "k2", "k3"]
