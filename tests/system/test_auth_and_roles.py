"""API keys, roles, the system API's validation, and HTTP conventions
(behaviour.md section 1)."""

from __future__ import annotations

from typing import Any

import pytest

from quire.app import Quire
from tests.conftest import Api, create_item, put_model

AUTH_FAILED = {"error": "Authentication failed"}
DENIED = {"error": "Permission denied"}


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "Hello"})
    return admin


def put_role(admin: Api, role: str, permissions: dict[str, bool]) -> Any:
    return admin.put(f"/api/system/roles/{role}", json={"permissions": permissions})


def new_key(admin: Api, role: str, name: str = "k") -> dict[str, Any]:
    response = admin.post("/api/system/keys", json={"name": name, "role": role})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def role_key(admin: Api, role: str, permissions: dict[str, bool]) -> Api:
    assert put_role(admin, role, permissions).status_code == 200
    return admin.with_key(new_key(admin, role)["key"])


# -- health check -------------------------------------------------------------


def test_healthcheck_answers_without_key(anon: Api) -> None:
    response = anon.get("/api/system/healthcheck")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    # a proxy must not answer for a dead server; the checks made, as Cockpit says them
    assert response.headers["cache-control"] == "no-store, no-cache, must-revalidate"
    assert response.headers["pragma"] == "no-cache" and response.headers["expires"] == "0"
    assert response.headers["x-health-checks"] == "db, memory, fs, redis, smtp, custom"


def test_healthcheck_checks_the_parts_it_is_asked_for(anon: Api, quire: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(key: str) -> None:
        raise OSError("the bucket is gone")

    monkeypatch.setattr(quire.health.files, "stat", broken)
    response = anon.get("/api/system/healthcheck")
    assert response.status_code == 503 and response.headers["retry-after"] == "1"
    assert response.json() == {"error": "The file storage cannot be reached; try again shortly"}
    only_db = anon.get("/api/system/healthcheck", params={"checks": " db , nothing-such "})
    assert only_db.status_code == 200 and only_db.headers["x-health-checks"] == "db, nothing-such"
    for bad in ("x" * 201, "db\nfs", "db\x00"):
        refused = anon.get("/api/system/healthcheck", params={"checks": bad})
        assert refused.status_code == 400 and "checks" in refused.json()["error"], bad


# -- key transport ------------------------------------------------------------


def test_unknown_key_in_header_is_401(posts: Api) -> None:
    response = posts.with_key("qk_nope").get("/api/content/items/posts")
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_unknown_key_as_bearer_is_401(anon: Api, posts: Api) -> None:
    response = anon.get("/api/content/items/posts", headers={"Authorization": "Bearer qk_nope"})
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_unknown_key_in_query_is_401(anon: Api, posts: Api) -> None:
    response = anon.get("/api/content/items/posts", params={"api_key": "qk_nope"})
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_unknown_key_is_401_even_on_public_readable_model(anon: Api, posts: Api) -> None:
    assert put_role(posts, "public", {"content/posts/read": True}).status_code == 200
    response = anon.get("/api/content/items/posts", headers={"api-key": "qk_nope"})
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_valid_key_as_bearer_is_accepted(anon: Api, posts: Api, admin_key: str) -> None:
    response = anon.get(
        "/api/content/items/posts", headers={"Authorization": f"Bearer {admin_key}"}
    )
    assert response.status_code == 200
    assert [d["title"] for d in response.json()] == ["Hello"]


def test_valid_key_in_query_is_accepted(anon: Api, posts: Api, admin_key: str) -> None:
    response = anon.get("/api/content/items/posts", params={"api_key": admin_key})
    assert response.status_code == 200
    assert [d["title"] for d in response.json()] == ["Hello"]


def test_query_key_wins_over_bad_header_key(anon: Api, posts: Api, admin_key: str) -> None:
    response = anon.get(
        "/api/content/items/posts", params={"api_key": admin_key}, headers={"api-key": "qk_nope"}
    )
    assert response.status_code == 200
    assert [d["title"] for d in response.json()] == ["Hello"]


def test_bad_query_key_wins_over_good_header_key(anon: Api, posts: Api, admin_key: str) -> None:
    response = anon.get(
        "/api/content/items/posts", params={"api_key": "qk_nope"}, headers={"api-key": admin_key}
    )
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_header_key_wins_over_bearer(anon: Api, posts: Api, admin_key: str) -> None:
    response = anon.get(
        "/api/content/items/posts",
        headers={"api-key": admin_key, "Authorization": "Bearer qk_nope"},
    )
    assert response.status_code == 200


# -- permissions --------------------------------------------------------------


def test_no_key_and_no_public_permission_is_401(anon: Api, posts: Api) -> None:
    response = anon.get("/api/content/items/posts")
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_no_key_create_is_401(anon: Api, posts: Api) -> None:
    response = anon.post("/api/content/item/posts", json={"data": {"title": "x"}})
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_key_whose_role_lacks_permission_is_403(posts: Api) -> None:
    other = role_key(posts, "nothing", {})
    response = other.get("/api/content/items/posts")
    assert response.status_code == 403
    assert response.json() == DENIED


def test_custom_role_with_read_can_read(posts: Api) -> None:
    reader = role_key(posts, "reader", {"content/posts/read": True})
    response = reader.get("/api/content/items/posts")
    assert response.status_code == 200
    assert [d["title"] for d in response.json()] == ["Hello"]


def test_custom_role_with_read_cannot_create(posts: Api) -> None:
    reader = role_key(posts, "reader", {"content/posts/read": True})
    response = reader.post("/api/content/item/posts", json={"data": {"title": "x"}})
    assert response.status_code == 403
    assert response.json() == DENIED
    assert len(posts.get("/api/content/items/posts").json()) == 1


def test_custom_role_with_read_cannot_delete(posts: Api) -> None:
    reader = role_key(posts, "reader", {"content/posts/read": True})
    item = posts.get("/api/content/items/posts").json()[0]
    response = reader.delete(f"/api/content/item/posts/{item['_id']}")
    assert response.status_code == 403
    assert response.json() == DENIED
    assert posts.get(f"/api/content/item/posts/{item['_id']}").status_code == 200


def test_read_permission_is_per_model(posts: Api) -> None:
    put_model(posts, "secrets", type="collection", fields=[{"name": "title", "type": "text"}])
    reader = role_key(posts, "reader", {"content/posts/read": True})
    response = reader.get("/api/content/items/secrets")
    assert response.status_code == 403
    assert response.json() == DENIED


def test_permission_set_false_grants_nothing(posts: Api) -> None:
    reader = role_key(posts, "reader", {"content/posts/read": False})
    response = reader.get("/api/content/items/posts")
    assert response.status_code == 403
    assert response.json() == DENIED


def test_custom_role_cannot_use_system_api(posts: Api) -> None:
    reader = role_key(posts, "reader", {"content/posts/read": True})
    response = reader.get("/api/system/keys")
    assert response.status_code == 403
    assert response.json() == DENIED


def test_no_key_system_api_is_401(anon: Api) -> None:
    response = anon.get("/api/system/models")
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_public_role_granted_read_works_without_key(anon: Api, posts: Api) -> None:
    assert put_role(posts, "public", {"content/posts/read": True}).status_code == 200
    response = anon.get("/api/content/items/posts")
    assert response.status_code == 200
    assert [d["title"] for d in response.json()] == ["Hello"]


def test_public_role_read_does_not_allow_create(anon: Api, posts: Api) -> None:
    assert put_role(posts, "public", {"content/posts/read": True}).status_code == 200
    response = anon.post("/api/content/item/posts", json={"data": {"title": "x"}})
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


def test_revoking_public_read_takes_effect_immediately(anon: Api, posts: Api) -> None:
    put_role(posts, "public", {"content/posts/read": True})
    assert anon.get("/api/content/items/posts").status_code == 200
    put_role(posts, "public", {"content/posts/read": False})
    response = anon.get("/api/content/items/posts")
    assert response.status_code == 401
    assert response.json() == AUTH_FAILED


# -- keys ---------------------------------------------------------------------


def test_key_is_shown_once_at_creation(admin: Api) -> None:
    created = new_key(admin, "admin", "deploy")
    assert created["name"] == "deploy"
    assert created["role"] == "admin"
    assert isinstance(created["key"], str) and len(created["key"]) >= 32
    listing = admin.get("/api/system/keys")
    assert listing.status_code == 200
    entry = next(k for k in listing.json() if k["_id"] == created["_id"])
    assert "key" not in entry
    assert entry["name"] == "deploy"


def test_keys_list_never_shows_key_or_its_hash(admin: Api, admin_key: str, quire: Quire) -> None:
    created = new_key(admin, "admin", "deploy")
    text = admin.get("/api/system/keys").text
    for key in (admin_key, created["key"]):
        assert key not in text
    for doc in quire.store.collection("system/keys").find():
        assert doc["hash"] not in text
    for entry in admin.get("/api/system/keys").json():
        assert "hash" not in entry and "key" not in entry


def test_key_is_stored_hashed(admin: Api, quire: Quire) -> None:
    created = new_key(admin, "admin", "deploy")
    raw = quire.store.collection("system/keys").get_raw(created["_id"])
    assert raw is not None
    assert created["key"] not in raw.decode()


def test_new_key_works_immediately(admin: Api, posts: Api) -> None:
    key = new_key(admin, "admin")["key"]
    response = admin.with_key(key).get("/api/content/items/posts")
    assert response.status_code == 200


def test_deleted_key_is_401_immediately(admin: Api, posts: Api) -> None:
    created = new_key(admin, "admin")
    other = admin.with_key(created["key"])
    assert other.get("/api/content/items/posts").status_code == 200
    response = admin.delete(f"/api/system/keys/{created['_id']}")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    gone = other.get("/api/content/items/posts")
    assert gone.status_code == 401
    assert gone.json() == AUTH_FAILED


def test_deleting_unknown_key_is_404(admin: Api) -> None:
    response = admin.delete(f"/api/system/keys/{'0' * 24}")
    assert response.status_code == 404
    assert "error" in response.json()


def test_key_with_unknown_role_is_400(admin: Api) -> None:
    response = admin.post("/api/system/keys", json={"name": "x", "role": "ghost"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["role"]


def test_key_without_name_is_400(admin: Api) -> None:
    response = admin.post("/api/system/keys", json={"role": "admin"})
    assert response.status_code == 400
    assert response.json()["fields"] == ["name"]


# -- roles --------------------------------------------------------------------


def test_role_put_then_get(admin: Api) -> None:
    response = put_role(admin, "reader", {"content/posts/read": True})
    assert response.status_code == 200
    assert response.json()["permissions"] == {"content/posts/read": True}
    got = admin.get("/api/system/roles/reader")
    assert got.status_code == 200
    assert got.json()["name"] == "reader"
    assert got.json()["permissions"] == {"content/posts/read": True}


def test_role_put_with_unknown_permission_is_400_naming_it(admin: Api) -> None:
    response = put_role(admin, "reader", {"content/posts/read": True, "posts/fly": True})
    assert response.status_code == 400
    body = response.json()
    assert "posts/fly" in body["error"]
    assert body["fields"] == ["posts/fly"]
    assert admin.get("/api/system/roles/reader").status_code == 404


def test_role_put_with_unknown_content_action_is_400(admin: Api) -> None:
    response = put_role(admin, "reader", {"content/posts/fly": True})
    assert response.status_code == 400
    assert "content/posts/fly" in response.json()["error"]


def test_role_put_with_non_boolean_value_is_400(admin: Api) -> None:
    response = put_role(admin, "reader", {"content/posts/read": "yes"})
    assert response.status_code == 400
    assert "error" in response.json()


def test_role_put_without_permissions_object_is_400(admin: Api) -> None:
    response = admin.put("/api/system/roles/reader", json={"perms": {}})
    assert response.status_code == 400
    assert "error" in response.json()


def test_role_put_admin_is_refused(admin: Api) -> None:
    response = put_role(admin, "admin", {"content/posts/read": True})
    assert response.status_code == 400
    assert "error" in response.json()


def test_unknown_role_is_404(admin: Api) -> None:
    response = admin.get("/api/system/roles/ghost")
    assert response.status_code == 404
    assert "error" in response.json()


def test_role_with_wildcard_model_read_can_read_any_model(posts: Api) -> None:
    reader = role_key(posts, "everything", {"content/*/read": True})
    response = reader.get("/api/content/items/posts")
    assert response.status_code == 200
    assert len(response.json()) == 1


# -- models -------------------------------------------------------------------


def test_model_put_returns_definition_and_get_reads_it(admin: Api) -> None:
    body = put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    assert body["name"] == "posts"
    assert body["type"] == "collection"
    assert [f["name"] for f in body["fields"]] == ["title"]
    got = admin.get("/api/system/models/posts")
    assert got.status_code == 200
    assert got.json()["fields"] == body["fields"]


@pytest.mark.parametrize(
    "definition",
    [
        {"type": "collection", "fields": [{"name": "title", "type": "nonsense"}]},
        {"type": "collection", "fields": [{"name": "1title", "type": "text"}]},
        {"type": "collection", "fields": [{"name": "my-title", "type": "text"}]},
        {
            "type": "collection",
            "fields": [{"name": "a", "type": "text"}, {"name": "a", "type": "number"}],
        },
        {"type": "bucket", "fields": []},
        {"type": "collection", "fields": "title"},
        {"type": "collection", "fields": [{"name": "who", "type": "contentItemLink"}]},
    ],
    ids=[
        "bad-field-type",
        "name-digit",
        "name-dash",
        "duplicate",
        "bad-kind",
        "fields-not-list",
        "link-without-target",
    ],
)
def test_model_put_with_invalid_definition_is_400(admin: Api, definition: dict[str, Any]) -> None:
    response = admin.put("/api/system/models/posts", json={"name": "posts", **definition})
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)
    assert admin.get("/api/system/models/posts").status_code == 404


def test_model_put_duplicate_field_error_names_it(admin: Api) -> None:
    response = admin.put(
        "/api/system/models/posts",
        json={
            "name": "posts",
            "fields": [{"name": "a", "type": "text"}, {"name": "a", "type": "text"}],
        },
    )
    assert response.status_code == 400
    assert "a" in response.json()["error"]
    assert response.json()["fields"] == ["fields"]


def test_model_put_with_name_mismatch_is_400(admin: Api) -> None:
    response = admin.put("/api/system/models/posts", json={"name": "other", "fields": []})
    assert response.status_code == 400
    assert response.json()["fields"] == ["name"]


def test_model_get_unknown_is_404(admin: Api) -> None:
    response = admin.get("/api/system/models/nothing")
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nothing> not found"}


def test_model_delete_removes_model_and_its_items(posts: Api) -> None:
    response = posts.delete("/api/system/models/posts")
    assert response.status_code == 200
    assert response.json() == {"success": True}
    gone = posts.get("/api/content/items/posts")
    assert gone.status_code == 404
    assert gone.json() == {"error": "Model <posts> not found"}
    put_model(posts, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    assert posts.get("/api/content/items/posts").json() == []


def test_model_delete_unknown_is_404(admin: Api) -> None:
    response = admin.delete("/api/system/models/nothing")
    assert response.status_code == 404
    assert response.json() == {"error": "Model <nothing> not found"}


def test_model_put_needs_manage_permission(posts: Api) -> None:
    reader = role_key(posts, "reader", {"content/posts/read": True})
    response = reader.put("/api/system/models/other", json={"name": "other", "fields": []})
    assert response.status_code == 403
    assert response.json() == DENIED


# -- HTTP conventions ---------------------------------------------------------


def test_wrong_method_is_405_with_allow_and_json_body(admin: Api) -> None:
    response = admin.request("PATCH", "/api/content/items/posts")
    assert response.status_code == 405
    assert "GET" in response.headers["allow"]
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"error": "Method not allowed"}


def test_wrong_method_on_item_lists_all_allowed_methods(admin: Api) -> None:
    response = admin.request("PUT", "/api/content/item/posts/" + "0" * 24)
    assert response.status_code == 405
    allowed = {m.strip() for m in response.headers["allow"].split(",")}
    assert {"GET", "DELETE"} <= allowed
    assert "PUT" not in allowed
    assert "error" in response.json()


def test_wrong_method_on_system_path_is_405(admin: Api) -> None:
    response = admin.post("/api/system/healthcheck")
    assert response.status_code == 405
    assert "GET" in response.headers["allow"]
    assert response.json() == {"error": "Method not allowed"}


def test_unknown_path_is_404_json(admin: Api) -> None:
    response = admin.get("/api/nothing/here")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("application/json")
    assert response.json() == {"error": "Not found"}


def test_unknown_path_without_key_is_404_json(anon: Api) -> None:
    response = anon.get("/no/such/page")
    assert response.status_code == 404
    assert "error" in response.json()


def test_invalid_json_body_is_400_json(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    response = admin.post(
        "/api/content/item/posts",
        content=b"{not json",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400
    assert "error" in response.json()


def test_json_responses_declare_utf8_and_keep_non_ascii(admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "Grüße / 東京"})
    response = admin.get("/api/content/items/posts")
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert "Grüße / 東京".encode() in response.content
    assert b"\\/" not in response.content


def test_cors_preflight_is_answered_without_key(anon: Api) -> None:
    response = anon.request(
        "OPTIONS",
        "/api/content/items/posts",
        headers={
            "Origin": "https://example.org",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "api-key",
        },
    )
    assert response.status_code in (200, 204)
    assert response.headers["access-control-allow-origin"] in ("*", "https://example.org")
    assert "api-key" in response.headers["access-control-allow-headers"].lower()


def test_cors_header_on_api_response(admin: Api) -> None:
    response = admin.get("/api/system/healthcheck", headers={"Origin": "https://example.org"})
    assert response.status_code == 200
    assert response.headers["access-control-allow-origin"] in ("*", "https://example.org")


def test_body_larger_than_limit_is_413_json(admin: Api, quire: Quire) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    big = "x" * (quire.max_body + 1)
    response = admin.post("/api/content/item/posts", json={"data": {"title": big}})
    assert response.status_code == 413
    assert "error" in response.json()
    assert admin.get("/api/content/items/posts").json() == []


def test_json_body_nested_too_deep_is_400(admin: Api, quire: Quire) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "meta", "type": "object"}])
    deep: Any = 1
    for _ in range(quire.max_depth + 5):
        deep = {"a": deep}
    response = admin.post("/api/content/item/posts", json={"data": {"meta": deep}})
    assert response.status_code == 400
    assert "error" in response.json()


def test_cors_preflight_from_a_disallowed_origin_is_refused(quire: Quire, anon: Api) -> None:
    anon.client.app._any_origin = False  # as with cors_origins = ["https://good.example"]
    anon.client.app._origins = {"https://good.example"}
    bad = anon.request("OPTIONS", "/api/content/items/posts", headers={
        "Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
    assert bad.status_code == 400 and bad.json() == {"error": "Disallowed CORS origin"}
    good = anon.request("OPTIONS", "/api/content/items/posts", headers={
        "Origin": "https://good.example", "Access-Control-Request-Method": "GET"})
    assert good.headers["access-control-allow-origin"] == "https://good.example"
    plain = anon.get("/api/system/healthcheck", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in plain.headers
