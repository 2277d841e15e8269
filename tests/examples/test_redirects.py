"""A module from a package, end to end: the redirects example adds an API
(in the OpenAPI document), permissions a role can hold, a studio screen in
the sidebar, a settings section, an export part, an event handler and a
field type that content models can use, with no file of Quire changed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import orjson
import pytest

from quire.app import MODULES, build_app
from quire.bundle import export_bundle, import_bundle
from quire.config import load_settings
from quire.errors import ConfigError
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, page_csrf, post_form


def rule(admin: Api, **fields: Any) -> dict[str, Any]:
    response = admin.post("/api/redirects", json={"from": "/old", "to": "/new", **fields})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_the_package_module_is_found_through_its_entry_point_and_built_after_quires_own(app: Any) -> None:
    names = [m.name for m in app.state.quire.modules]
    assert names[:len(MODULES)] == [m.name for m in MODULES]
    assert names[len(MODULES):] == ["redirects"]
    assert app.state.quire.catalogue["redirects.rule.save"].payload == ("rule", "identity")


def test_rules_are_kept_checked_and_resolved_over_the_api(admin: Api, anon: Api) -> None:
    made = rule(admin, status=308, note="moved")
    assert made["from"] == "/old" and made["status"] == 308 and made["enabled"] is True
    assert admin.get("/api/redirects/resolve?path=/old").json() == {"from": "/old", "to": "/new", "status": 308}
    missing = admin.get("/api/redirects/resolve?path=/nowhere")
    assert missing.status_code == 404 and missing.json() == {"error": "No redirect for /nowhere"}
    taken = admin.post("/api/redirects", json={"from": "/old", "to": "/other"})
    assert taken.status_code == 409 and "exists already" in taken.json()["error"]
    for body, named in [({"from": "old", "to": "/x"}, "from"), ({"from": "/a b", "to": "/x"}, "from"),
                        ({"from": "/x", "to": "javascript:alert(1)"}, "to"), ({"from": "/x", "to": "/y", "status": 200}, "status"),
                        ({"from": "/x", "to": "/x"}, "to"), ({"from": "/x", "to": "/y", "colour": 1}, "colour")]:
        refused = admin.post("/api/redirects", json=body)
        assert refused.status_code == 400 and refused.json()["fields"] == [named], (body, refused.text)
    changed = admin.put(f"/api/redirects/{made['_id']}", json={"enabled": False})
    assert changed.status_code == 200 and changed.json()["enabled"] is False
    assert admin.get("/api/redirects/resolve?path=/old").status_code == 404  # a disabled rule sends nowhere
    assert anon.get("/api/redirects").status_code == 401
    assert admin.delete(f"/api/redirects/{made['_id']}").json() == {"success": True}
    assert admin.get(f"/api/redirects/{made['_id']}").status_code == 404
    assert admin.get("/api/redirects").json() == {"data": []}


def test_a_rules_colour_is_checked_by_quires_color_field_type(admin: Api, client: TestClient) -> None:
    made = rule(admin, color="#3a7")
    assert made["color"] == "#3a7" and rule(admin, **{"from": "/plain"})["color"] == ""
    refused = admin.put(f"/api/redirects/{made['_id']}", json={"color": "red"})
    assert refused.status_code == 400 and refused.json() == {
        "error": "color must be a colour like #aabbcc", "fields": ["color"]}
    # the type's browser code is served for the screens that show its input
    script = client.get("/studio/static/field-types.js")
    assert script.status_code == 200 and script.headers["content-type"].startswith("text/javascript")
    assert "/* color */" in script.text and "data-color-for" in script.text
    again = client.get("/studio/static/field-types.js", headers={"if-none-match": script.headers["etag"]})
    assert again.status_code == 304


def test_the_audit_log_records_its_writes_as_its_event_declarations_say(admin: Api) -> None:
    made = rule(admin)
    admin.delete(f"/api/redirects/{made['_id']}")
    entries = admin.get("/api/audit?resource=redirects").json()["data"]
    assert [(e["action"], e["id"]) for e in entries] == [("redirect.delete", made["_id"]),
                                                          ("redirect.save", made["_id"])]


def test_its_permissions_are_granted_by_a_role(admin: Api, client: TestClient) -> None:
    saved = admin.put("/api/system/roles/site", json={"permissions": {"redirects/read": True}})
    assert saved.status_code == 200, saved.text
    key = admin.post("/api/system/keys", json={"name": "site", "role": "site"}).json()["key"]
    site = Api(client, key)
    rule(admin)
    assert site.get("/api/redirects/resolve?path=/old").json()["to"] == "/new"
    assert site.post("/api/redirects", json={"from": "/a", "to": "/b"}).status_code == 403
    unknown = admin.put("/api/system/roles/other", json={"permissions": {"redirects/fly": True}})
    assert unknown.status_code == 400  # only the permissions modules declare


def test_its_paths_are_in_the_openapi_document(admin: Api) -> None:
    paths = admin.get("/api/openapi.json").json()["paths"]
    assert {"/api/redirects", "/api/redirects/resolve", "/api/redirects/{id}"} <= set(paths)
    assert paths["/api/redirects"]["post"]["tags"] == ["redirects"]


def test_its_field_type_is_offered_to_content_models_and_checked(admin: Api) -> None:
    put_model(admin, "articles", type="collection", fields=[{"name": "title", "type": "text"},
                                                            {"name": "old_path", "type": "urlPath"}])
    item = create_item(admin, "articles", {"title": "A", "old_path": "/blog/a"})
    assert item["old_path"] == "/blog/a"
    bad = admin.post("/api/content/item/articles", json={"data": {"title": "B", "old_path": "https://x.example/a"}})
    assert bad.status_code == 400 and "must be a path of the site" in bad.text
    sorted_ = admin.get('/api/content/items/articles?sort={"old_path":1}')
    assert sorted_.status_code == 200


def test_the_studio_shows_its_screen_and_field_type(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    home = ann.get("/studio/content").text
    assert '<a href="/studio/redirects"' in home  # in the sidebar, under Site
    new = ann.get("/studio/models/new").text
    assert '<option value="urlPath">URL path</option>' in new  # the model builder offers the type
    added = post_form(ann, "/studio/redirects", {"from": "/winter", "to": "/sale", "status": "302", "note": "",
                                                 "enabled": "1"})
    assert added.status_code == 303
    page = ann.get("/studio/redirects").text
    assert "Redirect from /winter added." in page and "<code>/sale</code>" in page
    assert 'placeholder="/blog/old-post"' in page  # the `from` input is the field type's own
    refused = post_form(ann, "/studio/redirects", {"from": "winter", "to": "/x", "status": "301", "enabled": "1"})
    assert refused.status_code == 400
    assert 'id="rule-error" role="alert">from must be a path of the site' in refused.text
    assert 'value="winter"' in refused.text  # what was typed stays
    rule_id = admin.get("/api/redirects").json()["data"][0]["_id"]
    saved = post_form(ann, f"/studio/redirects/{rule_id}", {"from": "/winter", "to": "/spring", "status": "301",
                                                            "note": "", "enabled": "1"})
    assert saved.status_code == 303
    assert admin.get(f"/api/redirects/{rule_id}").json()["to"] == "/spring"
    assert post_form(ann, f"/studio/redirects/{rule_id}/delete", {}).status_code == 303
    assert admin.get("/api/redirects").json()["data"] == []


def test_an_editor_without_its_permissions_does_not_see_it(app: Any, admin: Api) -> None:
    admin.put("/api/system/roles/editor", json={"permissions": {"content/*/read": True}})
    eve = logged_in(app, "eve", "editor")
    assert "/studio/redirects" not in eve.get("/studio/content").text
    assert eve.get("/studio/redirects").status_code == 403
    csrf = page_csrf(eve.get("/studio/content").text)
    posted = eve.post("/studio/redirects", data={"csrf": csrf, "from": "/a", "to": "/b", "status": "301"})
    assert posted.status_code == 403


@pytest.mark.anyio
async def test_its_rules_travel_in_export_bundles(app: Any, admin: Api, tmp_path: Path, app_env: dict[str, str]) -> None:
    rule(admin, status=301)
    bundle = orjson.loads(b"".join(export_bundle(app.state.quire)))
    assert [r["from"] for r in bundle["redirects"]] == ["/old"]
    other = build_app(load_settings(tmp_path / "other", env=app_env))
    try:
        counts = await import_bundle(other.state.quire, bundle)
        assert counts["redirects"] == 1
        assert other.state.quire.redirects.resolve("/old")["to"] == "/new"
    finally:
        other.state.quire.close()


def test_its_settings_section_is_read_and_checked(tmp_path: Path, app_env: dict[str, str]) -> None:
    env = {**app_env, "QUIRE_REDIRECTS_MAX_RULES": "1"}
    small = build_app(load_settings(tmp_path / "small", env=env))
    try:
        client = TestClient(small)
        key = small.state.quire.auth.create_key("k", "admin")["key"]
        api = Api(client, key)
        rule(api)
        over = api.post("/api/redirects", json={"from": "/two", "to": "/b"})
        assert over.status_code == 400 and "At most 1 redirect rules ([redirects] max_rules)" in over.text
    finally:
        small.state.quire.close()
    with pytest.raises(ConfigError, match="redirects.max_rules"):
        load_settings(tmp_path / "bad", env={**app_env, "QUIRE_REDIRECTS_MAX_RULES": "0"})


def test_its_event_handler_hears_a_removed_page(admin: Api, caplog: pytest.LogCaptureFixture) -> None:
    page = admin.post("/api/pages/page", json={"data": {"title": "Sale", "slug": "sale", "type": "layout"}})
    if page.status_code != 200:
        pytest.skip(f"page shape: {page.text}")
    route = page.json().get("_r")
    rule(admin, **{"from": "/winter", "to": route})
    caplog.set_level(logging.WARNING, "quire.redirects")
    assert admin.delete(f"/api/pages/page/{page.json()['_id']}").status_code == 200
    assert f"the removed page {route} is the target of /winter" in caplog.text


def test_packages_off_or_skipped_leave_it_out(tmp_path: Path, app_env: dict[str, str]) -> None:
    for env in ({"QUIRE_MODULES_PACKAGES": "false"}, {"QUIRE_MODULES_SKIP": "redirects"}):
        without = build_app(load_settings(tmp_path / str(len(env)), env={**app_env, **env}))
        try:
            assert "redirects" not in [m.name for m in without.state.quire.modules]
            key = without.state.quire.auth.create_key("k", "admin")["key"]
            assert Api(TestClient(without), key).get("/api/redirects").status_code == 404
        finally:
            without.state.quire.close()


def test_hostile_values_get_a_clear_400_and_store_nothing(admin: Api) -> None:
    for path in ("%00", "%ED%A0%80", "/" + "a" * 2500, "/a%20b", "//evil.example"):
        answer = admin.get(f"/api/redirects/resolve?path={path}")
        assert answer.status_code == 400 and answer.json()["error"].startswith("<path> must be a path"), path
    many = admin.post("/api/redirects", json={f"k{i}": i for i in range(5000)})
    assert many.status_code == 400 and "and 4,995 more" in many.json()["error"] and len(many.text) < 500
    for body in ({"from": "/a\x00b", "to": "/x"}, {"from": "/a", "to": "/x", "status": 1e308},
                 {"from": "/a", "to": "http://[::1"}, {"from": "/a", "to": "/b", "enabled": "yes"}):
        assert admin.post("/api/redirects", json=body).status_code == 400, body
    surrogate = admin.post("/api/redirects", content=b'{"from": "/a\\ud800", "to": "/x"}',
                           headers={"content-type": "application/json"})
    assert surrogate.status_code == 400
    assert admin.get("/api/redirects").json() == {"data": []}
