"""The audit log over the API: each recorded action (keys, roles, models,
items through the API and the studio, logins, exports), who and from where,
no secret anywhere in the stored entries, the audit/read permission,
filters, hostile parameters, the daily prune, and a refused write that
records nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from quire.app import Quire
from quire.audit.service import AUDIT, PRUNE, AuditService
from quire.events import Events, Reject
from quire.jobs import Job
from tests.admin.conftest import PASSWORD, csrf_of, logged_in, login, make_user, new_browser
from tests.commands import run_quire
from tests.conftest import Api, create_item, put_model, role_key
from tests.studio.conftest import page_csrf
from tests.studio.editorform import EditorForm, post


def entries(api: Api, **params: Any) -> dict[str, Any]:
    response = api.get("/api/audit", params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def actions(api: Api, **params: Any) -> list[str]:
    return [e["action"] for e in entries(api, **params)["data"]]


def stored_text(quire: Quire) -> str:
    """Every stored audit entry as one JSON text (to look for secrets in)."""
    return json.dumps(quire.store.collection(AUDIT).find())


def test_keys_and_roles_are_recorded_with_who_and_the_client_address(admin: Api, admin_key: str,
                                                                     quire: Quire) -> None:
    assert admin.put("/api/system/roles/editor", json={"permissions": {"content/*/read": True}}).status_code == 200
    assert admin.put("/api/system/roles/editor", json={"permissions": {"content/*/update": True}}).status_code == 200
    made = admin.post("/api/system/keys", json={"name": "site build", "role": "editor"},
                      headers={"x-forwarded-for": "203.0.113.9"})
    assert made.status_code == 200
    key = made.json()
    assert admin.delete(f"/api/system/keys/{key['_id']}").status_code == 200
    assert admin.delete("/api/system/roles/editor").status_code == 200

    me = quire.auth.identify(admin_key)
    listed = entries(admin, who=me.key_id)  # not the fixture's key, made by the system
    assert [e["action"] for e in listed["data"]] == ["role.delete", "key.delete", "key.create", "role.save",
                                                     "role.save"]
    assert listed["total"] == 5
    for entry in listed["data"]:
        assert entry["who"] == {"kind": "key", "id": me.key_id, "name": "test admin", "role": "admin"}
        assert entry["ip"] == "testclient"  # the peer: no proxy is trusted by default
        assert set(entry) == {"_id", "at", "who", "action", "resource", "id", "detail", "ip", "request"}
        assert len(entry["request"]) == 16  # the id its answer carried in X-Request-Id
    created = listed["data"][2]
    assert (created["resource"], created["id"]) == ("keys", key["_id"])
    assert created["detail"] == {"name": "site build", "role": "editor"}
    changed = listed["data"][3]
    assert (changed["resource"], changed["id"]) == ("roles", "editor")
    assert changed["detail"] == {"created": False, "granted": ["content/*/update"], "revoked": ["content/*/read"]}
    assert listed["data"][4]["detail"]["created"] is True
    # one entry by its id
    one = admin.get(f"/api/audit/{created['_id']}")
    assert one.status_code == 200 and one.json() == created
    # the key's text is nowhere in what was stored
    assert key["key"] not in stored_text(quire)
    assert key["key"][3:20] not in stored_text(quire)


def test_a_trusted_proxy_names_the_client(app_with: Any) -> None:
    from tests.client import TestClient

    app = app_with(server={"proxy_hops": 1})
    quire = app.state.quire
    api = Api(TestClient(app, raise_server_exceptions=False), quire.auth.create_key("k", "admin")["key"])
    api.put("/api/system/roles/writer", json={"permissions": {}}, headers={"x-forwarded-for": "198.51.100.7"})
    assert entries(api)["data"][0]["ip"] == "198.51.100.7"


def test_models_and_items_over_the_api(admin: Api, admin_key: str, quire: Quire) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    put_model(admin, "posts", type="collection",
              fields=[{"name": "title", "type": "text"}, {"name": "body", "type": "longtext"}])
    item = create_item(admin, "posts", {"title": "One"})
    create_item(admin, "posts", {"_id": item["_id"], "body": "Text"})
    assert admin.delete(f"/api/content/item/posts/{item['_id']}").status_code == 200
    renamed = admin.put("/api/system/models/posts", json={
        "name": "posts", "type": "collection", "renames": {"body": "text"},
        "fields": [{"name": "title", "type": "text"}, {"name": "text", "type": "longtext"}]})
    assert renamed.status_code == 200, renamed.text
    assert admin.delete("/api/system/models/posts").status_code == 200

    listed = entries(admin, who=quire.auth.identify(admin_key).key_id)["data"]
    assert [e["action"] for e in listed] == ["model.delete", "model.save", "model.rename", "item.delete",
                                             "item.update", "item.create", "model.save", "model.save"]
    by_action = {e["action"]: e for e in reversed(listed)}  # the newest of each
    assert by_action["item.create"]["resource"] == "content/posts"
    assert by_action["item.create"]["id"] == item["_id"]
    assert by_action["item.update"]["detail"] == {"fields": ["body"]}
    assert by_action["model.rename"]["detail"] == {"renamed": {"body": "text"}}
    assert listed[-1]["detail"] == {"created": True}
    assert listed[-2]["detail"] == {"created": False, "fields": ["body"]}
    assert (listed[0]["resource"], listed[0]["id"]) == ("models", "posts")


def test_items_written_in_the_studio_name_the_user(app: Any, admin: Api, quire: Quire) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    ann = logged_in(app)
    form = EditorForm(ann.get("/studio/content/posts/item").text)
    form.set("f.title", "From the studio")
    created = post(ann, form)
    assert created.status_code == 303, created.text
    item_id = created.headers["location"].rstrip("/").split("/")[-1]
    form = EditorForm(ann.get(f"/studio/content/posts/item/{item_id}").text)
    form.set("f.title", "Changed")
    assert post(ann, form, intent="publish").status_code == 303  # a published item: saved as a draft, published
    page = ann.get(f"/studio/content/posts/item/{item_id}")
    done = ann.post(f"/studio/content/posts/item/{item_id}/delete", content=urlencode({"csrf": page_csrf(page.text)}),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert done.status_code == 303

    listed = entries(admin, resource="content/posts")["data"]
    assert [e["action"] for e in listed] == ["item.delete", "item.publish", "item.update", "item.draft", "item.create"]
    user = quire.users.by_name("ann") or {}
    for entry in listed:
        assert entry["who"] == {"kind": "user", "id": user["_id"], "name": "ann", "role": "admin"}
        assert entry["id"] == item_id
    assert listed[2]["detail"] == {"fields": ["title"]}


def test_logins_failed_logins_and_logouts(app: Any, admin: Api, quire: Quire) -> None:
    user = make_user(quire, "ann")
    browser = new_browser(app)
    assert login(browser, "ann", "not the password at all").status_code == 401
    assert login(browser, "nobody-such", "guessed secret 123").status_code == 401
    assert login(browser, "ann", PASSWORD).status_code == 303
    page = browser.get("/auth/logout")
    assert browser.post("/auth/logout", data={"csrf": csrf_of(page.text)}).status_code == 303

    listed = entries(admin, resource="sessions")["data"]
    assert [e["action"] for e in listed] == ["logout", "login", "login.failed", "login.failed"]
    logout, ok, failed_other, failed_ann = listed
    ann_who = {"kind": "user", "id": user["_id"], "name": "ann", "role": "admin"}
    assert ok["who"] == ann_who and ok["detail"] == {"method": "password"} and ok["id"] == user["_id"]
    assert logout["who"] == ann_who and logout["detail"] == {"reason": "logout"}
    assert failed_ann["who"]["kind"] == "public" and failed_ann["who"]["id"] is None
    assert failed_ann["detail"] == {"user": "ann", "method": "password", "reason": "wrong user name or password"}
    # an unknown name may be a password typed into the wrong field: masked
    assert failed_other["detail"]["user"] == "n… (11 characters)"
    assert all(e["ip"] == "testclient" for e in listed)
    assert actions(admin, action="login.*") == ["login.failed", "login.failed"]  # not `login` itself
    text = stored_text(quire)
    assert "not the password at all" not in text and "guessed secret" not in text and PASSWORD not in text
    assert "$argon2" not in text  # no password hash either


def test_users_are_recorded_without_their_passwords(app: Any, admin: Api, quire: Quire) -> None:

    boss = logged_in(app, "boss")
    page = boss.get("/admin/users")
    created = boss.post("/admin/users", data={"csrf": csrf_of(page.text), "action": "create", "user": "carl",
                                             "email": "carl@example.org", "role": "admin",
                                             "password": "carl's own secret"})
    assert created.status_code in (200, 303), created.text
    carl = quire.users.by_name("carl") or {}
    assert carl
    quire.users.update(carl["_id"], {"password": "another secret 42"})  # the command line
    listed = entries(admin, resource="users")["data"]
    assert [e["action"] for e in listed[:2]] == ["user.update", "user.create"]
    assert listed[0]["who"]["kind"] == "system" and listed[0]["detail"]["fields"] == ["password"]
    assert listed[1]["who"]["name"] == "boss" and listed[1]["detail"]["user"] == "carl"
    text = stored_text(quire)
    assert "carl's own secret" not in text and "another secret 42" not in text and "$argon2" not in text


def test_an_export_on_the_command_line_is_recorded_as_the_system(data_dir: Path, quire: Quire,
                                                                admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "Exported"})
    exported = run_quire("export", "--data", str(data_dir))
    assert exported.stdout.startswith("{")
    bundle = data_dir / "bundle.json"
    bundle.write_text(exported.stdout)
    run_quire("import", str(bundle), "--data", str(data_dir))
    listed = entries(admin, resource="bundle")["data"]
    assert [e["action"] for e in listed] == ["import", "export"]
    assert listed[1]["who"]["kind"] == "system" and listed[1]["ip"] is None
    assert "models" in listed[1]["detail"]["parts"]
    assert listed[0]["detail"]["counts"]["models"] == 1 and listed[0]["detail"]["counts"]["items"] == 1
    # the import's model write is recorded as the system's too; its items are not one by one
    assert entries(admin, action="model.save")["data"][0]["who"]["kind"] == "system"
    assert actions(admin, resource="content/*") == ["item.create"]  # the API's, before the export


def test_a_write_a_hook_refuses_records_nothing(data_dir: Path, app_env: dict[str, str]) -> None:
    from quire.app import build_app
    from quire.config import load_settings
    from tests.client import TestClient

    events = Events()

    def refuse(model: str, item: dict[str, Any], **_: Any) -> None:
        if item.get("title") == "refused":
            raise Reject("no such titles")

    app = build_app(load_settings(data_dir, env=app_env), events)
    try:
        # after the app's own handlers (audit's included): the refusal comes last
        events.on("content.item.saved", refuse)
        quire = app.state.quire
        api = Api(TestClient(app, raise_server_exceptions=False), quire.auth.create_key("k", "admin")["key"])
        put_model(api, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
        answer = api.post("/api/content/item/posts", json={"data": {"title": "refused"}})
        assert answer.status_code == 412
        assert actions(api, resource="content/posts") == []
        create_item(api, "posts", {"title": "fine"})
        assert actions(api, resource="content/posts") == ["item.create"]
        # a refused key: no key, and no entry
        def no_more_keys(**_: Any) -> None:
            raise Reject("no more keys")

        events.on("auth.key.save", no_more_keys)
        refused = api.post("/api/system/keys", json={"name": "refused", "role": "admin"})
        assert refused.status_code == 412 and refused.json()["error"] == "no more keys"
        assert [k["name"] for k in api.get("/api/system/keys").json()] == ["k"]
        assert actions(api, resource="keys") == ["key.create"]  # the first key's, before the hook
    finally:
        app.state.quire.close()


def test_audit_read_is_needed(admin: Api, anon: Api) -> None:
    reader = role_key(admin, "auditor", {"audit/read": True})
    other = role_key(admin, "writer", {"content/*/read": True})
    entry = entries(admin)["data"][0]
    assert reader.get("/api/audit").status_code == 200
    assert reader.get(f"/api/audit/{entry['_id']}").status_code == 200
    assert other.get("/api/audit").status_code == 403
    assert other.get(f"/api/audit/{entry['_id']}").status_code == 403
    assert anon.get("/api/audit").status_code == 401
    assert "audit/read" in {p for r in admin.get("/api/system/roles").json() for p in r["permissions"]}


def test_filters_and_pages(admin: Api, quire: Quire, admin_key: str) -> None:
    audit = quire.get(AuditService)
    me = quire.auth.identify(admin_key)
    clock = iter(range(1_000, 1_100))
    audit.clock = lambda: float(next(clock))
    for n in range(6):
        with quire.store.transaction():
            audit.record("item.create" if n % 2 else "key.create", f"content/m{n % 3}", f"id{n}", me)
    assert actions(admin, action="key.create", to="2000") == ["key.create"] * 3
    assert actions(admin, action="item.*") == ["item.create"] * 3
    assert [e["id"] for e in entries(admin, resource="content/m1")["data"]] == ["id4", "id1"]
    assert entries(admin, resource="content/m*")["total"] == 6  # not at a "/": a range of texts
    assert entries(admin, action="key.cr*", to="2000")["total"] == 3
    assert [e["id"] for e in entries(admin, **{"from": "1002", "to": "1003.5"})["data"]] == ["id3", "id2"]
    assert entries(admin, who=me.key_id, id="id5")["total"] == 1
    assert entries(admin, who="someone-else")["total"] == 0
    page = entries(admin, resource="content/*", limit=2, skip=1)  # the fixture's key is in `keys`
    assert [e["id"] for e in page["data"]] == ["id4", "id3"] and page["total"] == 6


HOSTILE_PARAMETERS = [
    ({"limit": "0"}, "limit"), ({"limit": "201"}, "limit"), ({"limit": "x"}, "limit"),
    ({"skip": "-1"}, "skip"), ({"skip": "100001"}, "skip"), ({"from": "yesterday"}, "from"),
    ({"to": "1e9"}, "to"), ({"from": "NaN"}, "from"), ({"from": "20", "to": "10"}, "from"),
    ({"action": "a" * 201}, "action"), ({"resource": "x\x00y"}, "resource"), ({"who": "\n"}, "who"),
    ({"id": "x" * 300}, "id"), ({"sort": "{}"}, "sort"), ({"filter": "{}"}, "filter"),
]


def test_hostile_parameters_answer_400_naming_them(admin: Api) -> None:
    for params, named in HOSTILE_PARAMETERS:  # one site for every value
        response = admin.get("/api/audit", params=params)
        assert response.status_code == 400, (params, response.text)
        assert named in response.json()["error"], params


def test_an_entry_that_is_not_there_is_404(admin: Api) -> None:
    assert admin.get("/api/audit/" + "0" * 24).status_code == 404
    assert admin.get("/api/audit/not-an-id").status_code == 404


def test_entries_older_than_keep_days_are_pruned_by_a_daily_job(quire: Quire, admin_key: str) -> None:
    audit = quire.get(AuditService)
    me = quire.auth.identify(admin_key)
    now = time.time()
    for age_days in (400, 366, 10):
        audit.clock = lambda age=age_days: now - age * 86_400
        with quire.store.transaction():
            audit.record("key.create", "keys", f"aged{age_days}", me)
    audit.clock = time.time
    audit.schedule()
    day = int(now // 86_400)
    job = quire.store.collection("system/jobs").get(f"{PRUNE}:{day}")
    assert job is not None
    audit._prune_job(Job(job["_id"], PRUNE, job["payload"], job["key"], 1, "test", quire.store))
    left = {e["id"] for e in quire.store.collection(AUDIT).find({"action": "key.create"})}
    assert "aged10" in left and "aged400" not in left and "aged366" not in left
    assert quire.store.collection("system/jobs").get(f"{PRUNE}:{day + 1}") is not None


def test_nothing_is_recorded_when_the_audit_log_is_off(app_with: Any) -> None:
    from tests.client import TestClient

    app = app_with(audit={"enabled": False})
    quire = app.state.quire
    api = Api(TestClient(app, raise_server_exceptions=False), quire.auth.create_key("k", "admin")["key"])
    put_model(api, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    assert entries(api)["total"] == 0


def test_pages_settings_and_assets_are_recorded(admin: Api, admin_key: str, quire: Quire) -> None:
    from tests.assets.helpers import solid, upload_one
    from tests.pages.conftest import make_page, update_page

    page = make_page(admin, title="About", slug="about")
    update_page(admin, page["_id"], title="About us")
    assert admin.delete(f"/api/pages/page/{page['_id']}").status_code == 200
    assert admin.post("/api/pages/settings", json={"data": {"seo": {"title": "Site"}}}).status_code == 200
    asset = upload_one(admin, "red.png", solid(8, 8), "image/png")
    assert admin.delete(f"/api/assets/{asset['_id']}").status_code == 200

    listed = entries(admin, who=quire.auth.identify(admin_key).key_id)["data"]
    assert [(e["action"], e["resource"]) for e in listed] == [
        ("asset.delete", "assets"), ("asset.create", "assets"), ("page.settings", "pages/settings"),
        ("page.delete", "pages"), ("page.update", "pages"), ("page.create", "pages")]
    assert listed[4]["detail"] == {"fields": ["title"]} and listed[4]["id"] == page["_id"]
    assert listed[1]["id"] == asset["_id"] and listed[1]["detail"]["path"] == asset["path"]
    assert entries(admin, resource="pages/*")["total"] == 1  # pages/settings, not pages
    assert actions(admin, resource="pages*", who=quire.auth.identify(admin_key).key_id) == [
        "page.settings", "page.delete", "page.update", "page.create"]


def test_drafts_and_publishing_are_recorded(admin: Api) -> None:
    put_model(admin, "posts", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "Live"})
    admin.post("/api/content/item/posts", params={"draft": 1}, json={"data": {"_id": item["_id"], "title": "Next"}})
    admin.post(f"/api/content/publish/posts/{item['_id']}")
    admin.post(f"/api/content/unpublish/posts/{item['_id']}")
    assert actions(admin, resource="content/posts")[:5] == [
        "item.unpublish", "item.update", "item.publish", "item.update", "item.draft"]


def test_a_password_typed_as_the_login_name_is_not_kept(app: Any, admin: Api, quire: Quire) -> None:
    make_user(quire, "ann")
    browser = new_browser(app)
    assert login(browser, "Tr0ub4dor&3-horse", "").status_code == 401
    failed = entries(admin, action="login.failed")["data"]
    assert [e["detail"]["user"] for e in failed] == ["T… (17 characters)"]
    assert "Tr0ub4dor" not in stored_text(quire)


def test_webhooks_created_changed_rotated_enabled_and_deleted_are_recorded(admin: Api, admin_key: str,
                                                                           quire: Quire) -> None:
    made = admin.post("/api/webhooks", json={"name": "build", "url": "https://build.example/hook?token=s3cret",
                                             "events": ["content.*"], "headers": {"X-Token": "hdr-s3cret"}})
    assert made.status_code == 200, made.text
    hook = made.json()
    assert admin.put(f"/api/webhooks/{hook['_id']}", json={"events": ["*"], "enabled": False}).status_code == 200
    rotated = admin.post(f"/api/webhooks/{hook['_id']}/rotate")
    assert rotated.status_code == 200
    assert admin.post(f"/api/webhooks/{hook['_id']}/enable").status_code == 200
    assert admin.put(f"/api/webhooks/{hook['_id']}", json={"events": "bad"}).status_code == 400  # nothing recorded
    assert admin.delete(f"/api/webhooks/{hook['_id']}").status_code == 200

    listed = entries(admin, resource="webhooks")["data"]
    assert [e["action"] for e in listed] == ["webhook.delete", "webhook.update", "webhook.rotate",
                                             "webhook.update", "webhook.create"]
    me = quire.auth.identify(admin_key)
    for entry in listed:
        assert entry["id"] == hook["_id"] and entry["who"]["id"] == me.key_id
        assert entry["detail"]["name"] == "build"
    assert listed[3]["detail"]["fields"] == ["enabled", "events"]
    assert listed[1]["detail"]["fields"] == ["enabled"]
    text = stored_text(quire)
    for secret in (hook["secret"], rotated.json()["secret"], "s3cret", "hdr-s3cret", "whsec_"):
        assert secret not in text


def test_a_hook_refusing_a_webhook_change_answers_412_and_nothing_changes(admin: Api, events: Events) -> None:
    def refuse(**_: Any) -> None:
        raise Reject("No webhooks on Fridays")

    events.on("webhooks.webhook.save", refuse)
    refused = admin.post("/api/webhooks", json={"name": "b", "url": "https://build.example/", "events": ["*"]})
    assert refused.status_code == 412 and refused.json()["error"] == "No webhooks on Fridays"
    assert admin.get("/api/webhooks").json() == [] and actions(admin, resource="webhooks") == []
