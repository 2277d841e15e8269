"""Schema between environments: `quire schema snapshot | diff | apply` and
`/api/system/schema`: stable JSON, plans that say what they touch and what
they lose, refusal on drift and on data loss, one transaction."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from quire import schema
from quire.app import build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.commands import run_quire
from tests.conftest import Api, create_item, put_model

POSTS = {"type": "collection", "fields": [{"name": "title", "type": "text", "i18n": True},
                                         {"name": "body", "type": "longtext"},
                                         {"name": "rating", "type": "number"}]}


def _shape(admin: Api) -> None:
    """A site with something in every part."""
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}]).status_code == 200
    put_model(admin, "posts", **POSTS)
    assert admin.put("/api/system/roles/editor", json={"permissions": {"content/posts/read": True}}).status_code == 200
    assert admin.put("/api/searchmod/indexes/posts", json={"model": "posts", "fields": ["title", "body"]}).status_code == 200
    assert admin.post("/api/inbox/forms", json={"data": {"name": "Contact", "fields": ["email"]}}).status_code == 200
    assert admin.post("/api/webhooks", json={"name": "site", "url": "https://example.com/hook",
                                             "events": ["content.*"]}).status_code == 200
    assert admin.post("/api/pages/settings", json={"data": {"seo": {"title": "Site"}}}).status_code == 200


@pytest.fixture
def other(tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    """A second, empty site (another schema on PostgreSQL)."""
    from tests.conftest import backend

    env = {"QUIRE_SERVER_QUIET": "1", "QUIRE_MODULES_PACKAGES": "false"}
    url = None
    if backend(request.config) == "postgresql":
        server = request.getfixturevalue("pg_server")
        url = server.reused_url()
        env["QUIRE_STORE_URL"] = url
    app = build_app(load_settings(tmp_path / "other", env=env))
    app.state.env = env
    yield app
    app.state.quire.close()
    if url:
        request.getfixturevalue("pg_server").recycle(url)


def _admin(app: Any) -> Api:
    return Api(TestClient(app), app.state.quire.auth.create_key("k", "admin")["key"])


def test_a_snapshot_is_stable_and_holds_no_ids_times_or_secrets(admin: Api, quire: Any) -> None:
    _shape(admin)
    first = schema.canonical(schema.snapshot(quire))
    assert first == schema.canonical(schema.snapshot(quire))
    text = first.decode()
    for word in ('"_id"', '"_created"', '"_modified"', '"token"', '"secret"', "whsec_"):
        assert word not in text
    snap = json.loads(text)
    assert [m["name"] for m in snap["models"]] == ["posts"] and snap["locales"] == [{"i18n": "de", "name": "Deutsch"}]
    assert {r["name"] for r in snap["roles"]} == {"editor", "public"}
    assert snap["searchIndexes"][0]["fields"] == ["title", "body"] and snap["forms"][0]["name"] == "Contact"
    assert snap["webhooks"] == [{"name": "site", "url": "https://example.com/hook", "events": ["content.*"],
                                 "models": [], "enabled": True}]


def test_a_site_gets_another_sites_schema(admin: Api, quire: Any, other: Any) -> None:
    _shape(admin)
    wanted = schema.snapshot(quire)
    them = _admin(other)
    plan = them.post("/api/system/schema/diff", json=wanted)
    assert plan.status_code == 200, plan.text
    steps = {(s["part"], s["name"], s["action"]) for s in plan.json()["steps"]}
    assert ("models", "posts", "add") in steps and ("webhooks", "site", "add") in steps
    applied = them.post("/api/system/schema/apply", json=plan.json())
    assert applied.status_code == 200, applied.text
    assert schema.canonical(schema.snapshot(other.state.quire)) == schema.canonical(wanted)
    assert them.get("/api/system/schema").json() == json.loads(schema.canonical(wanted))
    # nothing left to do
    again = them.post("/api/system/schema/diff", json=wanted).json()
    assert again["steps"] == [] and again["summary"] == ["No changes: the site has this schema."]


def test_a_plan_is_refused_once_the_site_changed(admin: Api, quire: Any, other: Any) -> None:
    _shape(admin)
    them = _admin(other)
    plan = them.post("/api/system/schema/diff", json=schema.snapshot(quire)).json()
    assert them.put("/api/system/roles/sneaky", json={"permissions": {}}).status_code == 200
    refused = them.post("/api/system/schema/apply", json=plan)
    assert refused.status_code == 412
    assert "changed since the plan was made" in refused.json()["error"]
    assert "posts" not in {m.name for m in other.state.quire.models.all()}


def test_a_change_that_loses_data_needs_to_be_allowed(admin: Api, quire: Any) -> None:
    put_model(admin, "posts", **POSTS)
    for n in range(3):
        create_item(admin, "posts", {"title": f"t{n}", "body": "words", "rating": n})
    wanted = schema.snapshot(quire)
    posts = next(m for m in wanted["models"] if m["name"] == "posts")
    posts["fields"] = [f for f in posts["fields"] if f["name"] != "body"]
    plan = admin.post("/api/system/schema/diff", json=wanted).json()
    (step,) = plan["steps"]
    assert step["action"] == "change" and step["changes"] == ["fields"]
    assert step["loses"] == "the values of body (3 items)" and step["items"] == 3
    refused = admin.post("/api/system/schema/apply", json=plan)
    assert refused.status_code == 400 and "lose data" in refused.json()["error"]
    assert admin.get("/api/content/items/posts").json()[0]["body"] == "words"
    done = admin.post("/api/system/schema/apply", params={"allowDataLoss": "1"}, json=plan)
    assert done.status_code == 200, done.text
    assert all("body" not in item for item in quire.store.collection("content/posts").find())


def test_a_change_stored_values_do_not_fit_cannot_be_made(admin: Api, quire: Any) -> None:
    put_model(admin, "posts", **POSTS)
    create_item(admin, "posts", {"title": "t", "rating": 4})
    wanted = schema.snapshot(quire)
    posts = next(m for m in wanted["models"] if m["name"] == "posts")
    next(f for f in posts["fields"] if f["name"] == "rating")["type"] = "boolean"
    plan = admin.post("/api/system/schema/diff", json=wanted).json()
    assert plan["steps"][0]["blocked"] and "rating" in plan["steps"][0]["blocked"]
    refused = admin.post("/api/system/schema/apply", params={"allowDataLoss": "1"}, json=plan)
    assert refused.status_code == 400 and "rating" in refused.json()["error"]


def test_removals_count_what_they_take(admin: Api, quire: Any) -> None:
    _shape(admin)
    create_item(admin, "posts", {"title": "t"})
    assert admin.post("/api/system/keys", json={"name": "ed", "role": "editor"}).status_code == 200
    plan = admin.post("/api/system/schema/diff", json={"quireSchema": 1, "models": [], "roles": [
        {"name": "public", "permissions": {}}], "forms": []}).json()
    by = {(s["part"], s["name"]): s for s in plan["steps"]}
    assert by[("models", "posts")]["loses"] == "the model and its 1 items"
    assert by[("roles", "editor")]["blocked"] == "1 keys or users have this role"
    assert ("forms", "Contact") in by and ("webhooks", "site") not in by  # a part left out stays


@pytest.mark.parametrize(("body", "message"), [
    ([], "Not a Quire schema snapshot"),
    ({"quireSchema": 2}, "Not a Quire schema snapshot"),
    ({"quireSchema": 1, "gadgets": []}, "Unknown parts in the snapshot: gadgets"),
    ({"quireSchema": 1, "models": [{"name": "a"}, {"name": "a"}]}, "models names a twice"),
    ({"quireSchema": 1, "models": [{"name": "bad name"}]}, "models bad name: Model name must match"),
    ({"quireSchema": 1, "roles": [{"permissions": {}}]}, "every entry of roles needs its name"),
    ({"quireSchema": 1, "roles": [{"name": "ed", "permisions": {}}]}, "roles ed: unknown keys permisions"),
    ({"quireSchema": 1, "roles": [{"name": "ed", "permissions": {"bogus/perm": True}}]},
     "roles ed: Unknown permissions: bogus/perm"),
    ({"quireSchema": 1, "locales": [{"i18n": "de", "lable": "x"}]}, "locales de: unknown keys lable"),
    ({"quireSchema": 1, "webhooks": [{"name": "w", "url": "https://e.com/h", "events": ["*"], "secret": "x"}]},
     "webhooks w: unknown keys secret"),
    ({"quireSchema": 1, "searchIndexes": [{"name": "i", "modle": "posts"}]}, "searchIndexes i: unknown keys modle"),
])
def test_a_bad_snapshot_is_a_400_naming_the_problem(admin: Api, body: Any, message: str) -> None:
    answer = admin.post("/api/system/schema/diff", json=body)
    assert answer.status_code == 400 and message in answer.json()["error"], answer.text


def test_a_plan_that_is_not_one_is_refused(admin: Api) -> None:
    answer = admin.post("/api/system/schema/apply", json={"quireSchema": 1})
    assert answer.status_code == 400 and "Not a Quire schema plan" in answer.json()["error"]


def test_the_schema_api_needs_system_manage(client: TestClient) -> None:
    assert client.get("/api/system/schema").status_code == 401


def test_the_command_line_snapshots_diffs_and_applies(admin: Api, data_dir: Path, other: Any,
                                                      tmp_path: Path) -> None:
    _shape(admin)
    snap = tmp_path / "schema.json"
    run_quire("schema", "snapshot", "--data", str(data_dir), "--out", str(snap))
    target = str(tmp_path / "other")
    env = other.state.env
    diff = run_quire("schema", "diff", "--data", target, str(snap), "--out", str(tmp_path / "plan.json"), env=env)
    assert "+ models posts" in diff.stdout and "base: " in diff.stdout
    base = diff.stdout.strip().splitlines()[-1].removeprefix("base: ")
    refused = run_quire("schema", "apply", "--data", target, str(snap), env=env, check=False)
    assert refused.returncode == 2 and "--base" in refused.stderr
    done = run_quire("schema", "apply", "--data", target, str(snap), "--base", base[:12], env=env)  # as printed
    assert "Applied" in done.stdout
    again = run_quire("schema", "apply", "--data", target, str(tmp_path / "plan.json"), env=env)
    assert "No changes: the site has this schema." in again.stdout  # applied already: nothing to refuse
    other.state.quire.store.refresh()
    assert schema.canonical(schema.snapshot(other.state.quire)) == snap.read_bytes()
