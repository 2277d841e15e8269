"""Drafts beside published items, publishing and unpublishing, publishing
on schedule, and preview links, over the API."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.bundle import import_bundle
from quire.config import load_settings
from quire.content.schedule import PUBLISH_JOB
from quire.jobs import Job
from tests.client import TestClient
from tests.commands import run_quire
from tests.conftest import Api, create_item, put_model, role_key

FIELDS = [{"name": "title", "type": "text", "required": True}, {"name": "slug", "type": "text"},
          {"name": "body", "type": "longtext"}]


@pytest.fixture
def posts(admin: Api) -> Api:
    put_model(admin, "posts", type="collection", fields=FIELDS,
              preview=[{"name": "Site", "uri": "https://site.example/blog/{slug}?preview={token}"}])
    return admin


@pytest.fixture
def site(posts: Api) -> Api:
    """A key that reads published posts, as a site's."""
    return role_key(posts, "site", {"content/posts/read": True})


def draft(api: Api, data: dict[str, Any], model: str = "posts", status: int = 200) -> dict[str, Any]:
    response = api.post(f"/api/content/item/{model}", params={"draft": 1}, json={"data": data})
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


def live(api: Api, item_id: str) -> Any:
    return api.get(f"/api/content/item/posts/{item_id}")


def test_a_draft_of_a_published_item_stays_beside_it_until_published(posts: Api, site: Api) -> None:
    item = create_item(posts, "posts", {"title": "Live", "slug": "live"})
    saved = draft(posts, {"_id": item["_id"], "title": "Next", "_rev": item["_rev"]})
    assert saved["_draft"] is True and saved["title"] == "Next" and saved["_base"] == item["_rev"]
    assert live(posts, item["_id"]).json()["title"] == "Live"  # reads answer the live version
    assert posts.get("/api/content/items/posts").json()[0]["title"] == "Live"
    asked = posts.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()
    assert asked["title"] == "Next" and asked["_draft"] is True
    # a second draft save names the draft's revision; the live one is stale
    stale = posts.post("/api/content/item/posts", params={"draft": 1},
                       json={"data": {"_id": item["_id"], "body": "x", "_rev": item["_rev"]}})
    assert stale.status_code == 409
    again = draft(posts, {**asked, "body": "more"})  # an answer written back as it was read
    assert again["title"] == "Next" and again["body"] == "more"
    published = posts.post(f"/api/content/publish/posts/{item['_id']}", json={"_rev": again["_rev"]})
    assert published.status_code == 200, published.text
    assert published.json()["_rev"] == item["_rev"] + 1
    shown = live(site, item["_id"]).json()
    assert shown["title"] == "Next" and shown["body"] == "more" and shown["_state"] == 1
    assert "_base" not in shown and "_draft" not in shown
    after = posts.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()
    assert after["_draft"] is False  # the draft is gone with its publishing


def test_an_api_post_keeps_writing_the_live_item_and_publishing_keeps_it(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Live", "body": "old body"})
    draft(posts, {"_id": item["_id"], "body": "new body"})
    create_item(posts, "posts", {"_id": item["_id"], "title": "Straight to live"})
    assert live(posts, item["_id"]).json()["title"] == "Straight to live"
    # publishing applies what the draft changed (body) and keeps what was written meanwhile (title)
    published = posts.post(f"/api/content/publish/posts/{item['_id']}").json()
    assert published["title"] == "Straight to live" and published["body"] == "new body"
    # a field changed on both sides takes the draft's value
    draft(posts, {"_id": item["_id"], "title": "Draft title"})
    create_item(posts, "posts", {"_id": item["_id"], "title": "API title"})
    assert posts.post(f"/api/content/publish/posts/{item['_id']}").json()["title"] == "Draft title"


def test_a_new_draft_is_an_unpublished_item_and_publish_checks_required_fields(posts: Api, site: Api) -> None:
    made = draft(posts, {"slug": "soon"})  # a draft may lack required fields
    assert made["_draft"] is False and made["_state"] == 0
    assert live(site, made["_id"]).status_code in (401, 404)
    refused = posts.post(f"/api/content/publish/posts/{made['_id']}")
    assert refused.status_code == 400 and "title" in refused.text
    draft(posts, {"_id": made["_id"], "title": "Ready"})  # unpublished: the item itself is the draft
    assert posts.post(f"/api/content/publish/posts/{made['_id']}").status_code == 200
    assert live(site, made["_id"]).json()["title"] == "Ready"


def test_unpublish_and_discard(posts: Api, site: Api) -> None:
    item = create_item(posts, "posts", {"title": "On"})
    draft(posts, {"_id": item["_id"], "title": "Maybe"})
    assert posts.delete(f"/api/content/draft/posts/{item['_id']}").json() == {"success": True}
    assert posts.delete(f"/api/content/draft/posts/{item['_id']}").status_code == 404
    off = posts.post(f"/api/content/unpublish/posts/{item['_id']}")
    assert off.status_code == 200 and off.json()["_state"] == 0
    assert live(site, item["_id"]).status_code in (401, 404)
    assert posts.get(f"/api/content/item/posts/{item['_id']}").status_code == 404


def test_permissions_of_drafts_publishing_and_draft_reads(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    reader = role_key(posts, "reader", {"content/posts/read": True})
    writer = role_key(posts, "writer", {"content/posts/read": True, "content/posts/update": True,
                                        "content/posts/create": True})
    assert reader.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).status_code == 403
    assert reader.post("/api/content/item/posts", params={"draft": 1},
                       json={"data": {"_id": item["_id"], "title": "x"}}).status_code == 403
    draft(writer, {"_id": item["_id"], "title": "Writer's"})
    assert writer.post(f"/api/content/publish/posts/{item['_id']}").status_code == 403
    assert writer.post(f"/api/content/unpublish/posts/{item['_id']}").status_code == 403
    scheduled = writer.post("/api/content/item/posts", params={"draft": 1},
                            json={"data": {"_id": item["_id"], "_publish_at": int(time.time()) + 60}})
    assert scheduled.status_code == 403  # a schedule publishes: the publish permission
    assert reader.post(f"/api/content/preview/posts/{item['_id']}").status_code == 403


def test_hostile_values(posts: Api) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    base = f"/api/content/item/posts/{item['_id']}"
    for bad in ("2", "yes", "١", "true\x00"):
        assert posts.get(base, params={"draft": bad}).status_code == 400
        assert posts.post("/api/content/item/posts", params={"draft": bad},
                          json={"data": {"title": "x"}}).status_code == 400
    for bad in (-1, 1.5, "1700000000", True, 10**20, [1]):
        response = posts.post("/api/content/item/posts", json={"data": {"title": "x", "_publish_at": bad}})
        assert response.status_code == 400 and "_publish_at" in response.text, bad
    response = posts.post("/api/content/item/posts",
                          json={"data": {"title": "x", "_publish_at": 2000, "_unpublish_at": 1000}})
    assert response.status_code == 400 and "_unpublish_at" in response.text
    for body in ({"_rev": -1}, {"_rev": "1"}, {"force": "yes"}, [1]):
        assert posts.post(f"/api/content/publish/posts/{item['_id']}", json=body).status_code == 400
    assert posts.post("/api/content/publish/posts/nope").status_code == 404
    assert posts.post(f"/api/content/publish/posts/{item['_id']}", content=b"{").status_code == 400
    draft(posts, {"_id": item["_id"], "_state": 0}, status=400)  # a draft has no state of its own
    for seconds in (0, -5, 10**9, "60", 1.5):
        assert posts.post(f"/api/content/preview/posts/{item['_id']}", json={"seconds": seconds}).status_code == 400
    for preview in ([{"uri": "javascript:alert(1)"}], [{"uri": "https://{host}/x"}], "x",
                    [{"uri": "https://a.example/ x"}], [{"uri": "https://u:p@a.example/"}], [{"name": 5, "uri": "https://a.example/"}]):
        assert posts.put("/api/system/models/posts", json={"name": "posts", "fields": FIELDS,
                                                           "preview": preview}).status_code == 400, preview


def test_preview_links_open_one_items_draft_without_a_key(posts: Api, anon: Api) -> None:
    item = create_item(posts, "posts", {"title": "Live", "slug": "a b"})
    other = create_item(posts, "posts", {"title": "Other"})
    draft(posts, {"_id": item["_id"], "title": "Coming"})
    link = posts.post(f"/api/content/preview/posts/{item['_id']}", json={"seconds": 60}).json()
    token = link["token"]
    assert link["links"] == [{"name": "Site", "url": f"https://site.example/blog/a%20b?preview={token}"}]
    seen = anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token})
    assert seen.status_code == 200 and seen.json()["title"] == "Coming" and seen.json()["_draft"] is True
    assert seen.headers["cache-control"] == "no-store"
    assert anon.get(f"/api/content/item/posts/{other['_id']}", params={"preview": token}).status_code == 403
    tampered = token[:-2] + ("A" if token[-2] != "A" else "B") + token[-1]
    for bad in (tampered, "x", "a.b", "", "." * 700, token + "x"):
        assert anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": bad}).status_code == 403


def test_a_preview_link_expires(posts: Api, anon: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    token = posts.post(f"/api/content/preview/posts/{item['_id']}", json={"seconds": 1}).json()["token"]
    quire.content.previews.clock = lambda: time.time() + 5
    answer = anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token})
    assert answer.status_code == 403 and "expired" in answer.json()["error"]


def test_scheduled_publishing_is_done_once_by_its_job(posts: Api, site: Api, quire: Quire) -> None:
    soon = int(time.time()) + 3600
    made = posts.post("/api/content/item/posts", json={"data": {"title": "Later", "_state": 0,
                                                                "_publish_at": soon}}).json()
    jobs = quire.store.collection("system/jobs")
    [job] = jobs.find({"kind": PUBLISH_JOB})
    assert job["run_at"] == soon and job["payload"] == {"model": "posts", "id": made["_id"], "at": soon}
    claimed = Job(job["_id"], PUBLISH_JOB, job["payload"], job["key"], 1, "lease", quire.store)
    quire.content._scheduled(claimed)
    shown = live(site, made["_id"]).json()
    assert shown["_state"] == 1 and "_publish_at" not in shown
    rev = shown["_rev"]
    quire.content._scheduled(claimed)  # a second run (its runner killed after the commit) changes nothing
    assert live(site, made["_id"]).json()["_rev"] == rev
    history = posts.get(f"/api/revisions/content/posts/{made['_id']}").json()["data"]
    assert history[0]["who"]["kind"] == "system" and history[0]["who"]["id"] == "schedule"


def test_a_moved_schedule_leaves_the_old_job_nothing_to_do(posts: Api, quire: Quire) -> None:
    first = int(time.time()) + 100
    made = posts.post("/api/content/item/posts", json={"data": {"title": "T", "_state": 0,
                                                                "_publish_at": first}}).json()
    posts.post("/api/content/item/posts", json={"data": {"_id": made["_id"], "_publish_at": first + 50}})
    old = quire.store.collection("system/jobs").get(f"{PUBLISH_JOB}:posts/{made['_id']}@{first}")
    assert old is not None
    quire.content._scheduled(Job(old["_id"], PUBLISH_JOB, old["payload"], old["key"], 1, "lease", quire.store))
    assert posts.get(f"/api/content/item/posts/{made['_id']}").status_code == 404  # still unpublished


def test_a_draft_schedule_publishes_the_draft_and_unpublish_follows(posts: Api, site: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    now = int(time.time())
    draft(posts, {"_id": item["_id"], "title": "Scheduled", "_publish_at": now - 1, "_unpublish_at": now + 3600})
    deadline = time.time() + 30  # due already: the runner of this process does it
    while time.time() < deadline and live(site, item["_id"]).json()["title"] != "Scheduled":
        time.sleep(0.05)
    shown = live(site, item["_id"]).json()
    assert shown["title"] == "Scheduled" and shown["_unpublish_at"] == now + 3600
    assert posts.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()["_draft"] is False
    job = quire.store.collection("system/jobs").get(f"content.unpublish:posts/{item['_id']}@{now + 3600}")
    assert job is not None
    quire.content._scheduled(Job(job["_id"], job["kind"], job["payload"], job["key"], 1, "lease", quire.store))
    assert live(site, item["_id"]).status_code in (401, 404)


def test_drafts_follow_renamed_fields_and_go_with_their_item_and_model(posts: Api, quire: Quire) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    draft(posts, {"_id": item["_id"], "body": "draft body"})
    fields = [FIELDS[0], FIELDS[1], {"name": "text", "type": "longtext"}]
    changed = posts.put("/api/system/models/posts", json={"name": "posts", "fields": fields,
                                                          "renames": {"body": "text"}})
    assert changed.status_code == 200, changed.text
    asked = posts.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()
    assert asked["text"] == "draft body" and "body" not in asked
    assert posts.delete(f"/api/content/item/posts/{item['_id']}").status_code == 200
    assert quire.store.collection("drafts/posts").count() == 0
    draft(posts, {"_id": create_item(posts, "posts", {"title": "x"})["_id"], "title": "y"})
    assert posts.delete("/api/system/models/posts").status_code == 200
    assert not quire.store.table_exists("drafts/posts")


def test_an_unpublished_item_keeps_its_draft_and_draft_saves_go_to_it(posts: Api, site: Api) -> None:
    item = create_item(posts, "posts", {"title": "A1"})
    draft(posts, {"_id": item["_id"], "title": "D"})
    assert posts.post(f"/api/content/unpublish/posts/{item['_id']}").status_code == 200
    again = draft(posts, {"_id": item["_id"], "title": "E"})
    assert again["_draft"] is True and again["title"] == "E"
    asked = posts.get(f"/api/content/item/posts/{item['_id']}", params={"draft": 1}).json()
    assert asked["title"] == "E" and "_basis" not in asked
    assert posts.post(f"/api/content/publish/posts/{item['_id']}").status_code == 200
    assert live(site, item["_id"]).json()["title"] == "E"


def test_a_preview_token_opens_its_item_only_not_the_items_it_links(admin: Api, anon: Api) -> None:
    put_model(admin, "secret", fields=[{"name": "title", "type": "text"},
                                       {"name": "rel", "type": "contentItemLink", "opts": {"link": "secret"}}])
    other = create_item(admin, "secret", {"title": "B, not for the public"})
    item = create_item(admin, "secret", {"title": "A", "rel": {"_model": "secret", "_id": other["_id"]}})
    token = admin.post(f"/api/content/preview/secret/{item['_id']}").json()["token"]
    seen = anon.get(f"/api/content/item/secret/{item['_id']}", params={"preview": token, "populate": 1})
    assert seen.status_code == 200 and "not for the public" not in seen.text


def test_publish_checks_the_values_against_the_fields_of_now(posts: Api) -> None:
    put_model(posts, "typed", fields=[{"name": "n", "type": "text"}])
    item = create_item(posts, "typed", {})
    draft(posts, {"_id": item["_id"], "n": "abc"}, model="typed")  # drafts are not among the checked items
    put_model(posts, "typed", fields=[{"name": "n", "type": "number"}])
    refused = posts.post(f"/api/content/publish/typed/{item['_id']}")
    assert refused.status_code == 400 and "n" in refused.json()["fields"]


def test_moves_and_renames_do_not_block_publishing_a_draft(posts: Api, quire: Quire) -> None:
    put_model(posts, "nav", type="tree", fields=[{"name": "title", "type": "text"}, {"name": "b", "type": "text"}])
    top = create_item(posts, "nav", {"title": "top"})
    first = create_item(posts, "nav", {"title": "one", "_pid": top["_id"]})
    second = create_item(posts, "nav", {"title": "two", "_pid": top["_id"], "b": "live b"})
    draft(posts, {"_id": first["_id"], "title": "one, edited"}, model="nav")
    draft(posts, {"_id": second["_id"], "title": "two, edited"}, model="nav")
    asyncio.run(quire.content.move("nav", second["_id"], top["_id"], 0, quire.auth.identify(posts.key)))
    fields = [{"name": "title", "type": "text"}, {"name": "c", "type": "text"}]
    assert posts.put("/api/system/models/nav", json={"name": "nav", "type": "tree", "fields": fields,
                                                     "renames": {"b": "c"}}).status_code == 200
    for node in (first, second):
        answer = posts.post(f"/api/content/publish/nav/{node['_id']}")
        assert answer.status_code == 200, answer.text
    published = posts.get(f"/api/content/item/nav/{second['_id']}").json()
    assert published["title"] == "two, edited" and published["c"] == "live b" and published["_o"] == 0


def test_a_singleton_never_saved_has_nothing_to_preview(admin: Api) -> None:
    put_model(admin, "footer", type="singleton", fields=[{"name": "text", "type": "text"}],
              preview=[{"uri": "https://site.example/"}])
    assert admin.post("/api/content/preview/footer").status_code == 404


def test_a_singletons_publish_and_draft_routes_with_another_id_are_404(admin: Api) -> None:
    put_model(admin, "footer", type="singleton", fields=[{"name": "text", "type": "text"}])
    saved = admin.post("/api/content/item/footer", json={"data": {"text": "a", "_state": 0}}).json()
    other = "0" * 24
    for method, path in (("POST", "publish"), ("POST", "unpublish"), ("DELETE", "draft"), ("POST", "preview")):
        answer = admin.request(method, f"/api/content/{path}/footer/{other}")
        assert answer.status_code == 404, (path, answer.text)
    assert admin.get("/api/content/item/footer", params={"draft": 1}).json()["_state"] == 0  # not published
    assert admin.post(f"/api/content/publish/footer/{saved['_id']}").json()["_state"] == 1
    assert admin.post("/api/content/unpublish/footer").json()["_state"] == 0


def test_preview_hosts_are_plain_origins(posts: Api) -> None:
    for uri in ("https://例え.jp/{slug}", "https://bücher.example/", "https://a.example;sandbox/x",
                "https://a.example,script-src/x"):
        response = posts.put("/api/system/models/posts", json={"name": "posts", "fields": FIELDS,
                                                               "preview": [{"uri": uri}]})
        assert response.status_code == 400, uri
    ok = posts.put("/api/system/models/posts", json={"name": "posts", "fields": FIELDS,
                                                     "preview": [{"uri": "https://xn--bcher-kva.example/{slug}"}]})
    assert ok.status_code == 200


def test_an_import_checks_the_schedule_as_a_save_does(posts: Api, quire: Quire) -> None:
    now = int(time.time())
    bad = {"quire": 1, "items": {"posts": [{"_id": "6b0000000000000000000001", "title": "x",
                                              "_publish_at": now + 100, "_unpublish_at": now + 50}]}}
    with pytest.raises(Exception) as refused:
        asyncio.run(import_bundle(quire, bad))
    assert "_unpublish_at" in str(refused.value)


def test_nul_lone_surrogates_huge_numbers_and_thousands_of_keys(posts: Api, anon: Api) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    base = f"/api/content/item/posts/{item['_id']}"
    head = '{"data": {"_id": "' + item["_id"] + '", '
    many = ", ".join(f'"k{i}": 1' for i in range(5000))
    for raw in (head + '"title": "\\ud800"}}', head + '"_publish_at": 1e400}}', head + '"_publish_at": "\\u0000"}}',
                head + many + "}}"):
        answer = posts.post("/api/content/item/posts", params={"draft": 1}, content=raw.encode(),
                            headers={"content-type": "application/json"})
        assert 400 <= answer.status_code < 500 and "error" in answer.json(), raw[:60]
    for body in ({"_rev": 10**30}, {f"k{i}": 1 for i in range(5000)}):
        assert posts.post(f"/api/content/publish/posts/{item['_id']}", json=body).status_code == 400
    for token in ("%00", "%ED%A0%80", "a" * 8000, "%00.%00"):  # NUL, a lone surrogate's bytes
        answer = anon.get(f"{base}?preview={token}")
        assert answer.status_code == 403 and "error" in answer.json()
    for seconds in (10**30, -(10**30)):
        assert posts.post(f"/api/content/preview/posts/{item['_id']}", json={"seconds": seconds}).status_code == 400
    assert live(posts, item["_id"]).json()["title"] == "Live"  # nothing stored half-way
    assert posts.get(base, params={"draft": 1}).json()["_draft"] is False


def test_every_preview_link_can_be_ended_by_a_manager_on_every_instance(
        posts: Api, anon: Api, app: Any, data_dir: Any, app_env: dict[str, str]) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    page = posts.post("/api/pages/page", json={"data": {"type": "layout", "title": "Soon", "_state": 0}}).json()
    token = posts.post(f"/api/content/preview/posts/{item['_id']}").json()["token"]
    page_token = posts.post(f"/api/pages/preview/{page['_id']}").json()["token"]
    other = build_app(load_settings(data_dir, env=app_env))  # a second instance on the same database
    try:
        elsewhere = Api(TestClient(other, raise_server_exceptions=False), None)
        opened = elsewhere.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token})
        assert opened.status_code == 200  # its key is known there too, and kept
        editor = role_key(posts, "editor", {"content/posts/read": True, "content/posts/update": True})
        assert editor.delete("/api/content/preview").status_code == 403  # may make links, not end them all
        assert anon.delete("/api/content/preview").status_code in (401, 403)
        ended = posts.delete("/api/content/preview")
        assert ended.status_code == 200 and ended.json() == {"success": True}
        for api in (anon, elsewhere):
            refused = api.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token})
            assert refused.status_code == 403 and refused.json()["error"] == "The preview token is not valid"
            assert api.get(f"/api/pages/page/{page['_id']}", params={"preview": page_token}).status_code == 403
        fresh = posts.post(f"/api/content/preview/posts/{item['_id']}").json()["token"]
        assert elsewhere.get(f"/api/content/item/posts/{item['_id']}", params={"preview": fresh}).status_code == 200
        [entry] = posts.get("/api/audit", params={"action": "previews.end"}).json()["data"]
        assert entry["who"]["kind"] == "key" and entry["resource"] == "previews"
    finally:
        other.state.quire.close()


def test_quire_previews_end_ends_the_links_a_running_server_checks(posts: Api, anon: Api,
                                                                   data_dir: Any) -> None:
    item = create_item(posts, "posts", {"title": "Live"})
    token = posts.post(f"/api/content/preview/posts/{item['_id']}").json()["token"]
    assert anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token}).status_code == 200
    done = run_quire("previews", "end", "--data", str(data_dir))
    assert "stopped working" in done.stdout
    assert anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token}).status_code == 403
