"""The CDN's side of the read API (quire/cdn, docs/delivery.md#cdn): answers
without a key name what they hold in Surrogate-Key and Cache-Tag, and each
write has exactly the tags it touched sent to the purge address, from the
jobs table, retried while the address is down, never holding up a write."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from quire.app import Quire
from quire.cdn.purge import PURGES
from tests.conftest import Api, put_model
from tests.webhooks.receiver import Receiver

SECRET = "Bearer cdn-s3cret-token"


class PurgeReceiver(Receiver):
    """A purge address: the webhook tests' receiver, answering `status`
    (503 while "down")."""

    def __init__(self) -> None:
        self.status = 200
        super().__init__(lambda _: self.status)
        self.url = f"http://127.0.0.1:{self.port}/purge"

    def tags(self) -> set[str]:
        found: set[str] = set()
        for request in list(self.received):
            if request.body:
                found.update(request.json["tags"])
            if "surrogate-key" in request.headers:
                found.update(request.headers["surrogate-key"].split())
        return found

    def wait_for_tags(self, wanted: set[str], timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while not wanted <= self.tags():
            assert time.monotonic() < deadline, f"not purged: {wanted - self.tags()} (sent {self.tags()})"
            time.sleep(0.05)


@pytest.fixture
def receiver() -> Iterator[PurgeReceiver]:
    made = PurgeReceiver()
    yield made
    made.close()


@pytest.fixture
def app_env(app_env: dict[str, str], receiver: PurgeReceiver) -> dict[str, str]:
    return {**app_env, "QUIRE_CDN_PURGE_URL": receiver.url, "QUIRE_CDN_RETRY_MS": "50",
            "QUIRE_CDN_PURGE_HEADERS": json.dumps({"Authorization": SECRET}),
            "QUIRE_API_CACHE_CONTROL": '{"content": "public, s-maxage=300", "pages": "public, s-maxage=300"}'}


def _site(admin: Api) -> tuple[dict[str, Any], dict[str, Any]]:
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"},
        {"name": "author", "type": "contentItemLink", "opts": {"link": "authors"}}])
    admin.put("/api/system/roles/public", json={"permissions": {
        "content/posts/read": True, "content/authors/read": True, "pages/read": True}})
    ada = admin.post("/api/content/item/authors", json={"data": {"name": "Ada", "_state": 1}}).json()
    post = admin.post("/api/content/item/posts", json={"data": {
        "title": "Hello", "_state": 1, "author": {"_model": "authors", "_id": ada["_id"]}}}).json()
    return ada, post


def _tags(response: Any) -> set[str]:
    keys = set(response.headers["surrogate-key"].split())
    assert keys == set(response.headers["cache-tag"].split(","))  # the same, as each CDN spells them
    return keys


def test_answers_without_a_key_name_every_model_item_and_asset_they_hold(admin: Api, anon: Api) -> None:
    ada, post = _site(admin)
    listed = anon.get("/api/content/items/posts", params={"limit": "10", "populate": "1"})
    assert listed.status_code == 200 and listed.headers["cache-control"] == "public, s-maxage=300"
    assert _tags(listed) == {"model:posts", "list:posts", f"id:{post['_id']}", f"id:{ada['_id']}"}
    one = anon.get(f"/api/content/item/posts/{post['_id']}")  # not populated: the link's id is named all the same
    assert _tags(one) == {"model:posts", f"id:{post['_id']}", f"id:{ada['_id']}"}
    routes = anon.get("/api/pages/routes")
    assert {"list:@pages", "list:@menus"} <= _tags(routes)
    # an answer to a key is private: no shared cache keeps it, so it names nothing
    keyed = admin.get("/api/content/items/posts", params={"limit": "10"})
    assert "surrogate-key" not in keyed.headers and keyed.headers["cache-control"] == "private, no-cache"
    # streamed whole (no limit): no tags to purge it by, so kept by nobody without asking
    streamed = anon.get("/api/content/items/posts")
    assert "surrogate-key" not in streamed.headers and streamed.headers["cache-control"] == "no-cache"


def test_an_answer_holding_too_much_to_name_is_kept_by_no_shared_cache(admin: Api, anon: Api) -> None:
    _site(admin)
    for n in range(320):  # about 290 ids fill the 8,000 bytes the tags may take
        admin.post("/api/content/item/posts", json={"data": {"title": f"P{n}", "_state": 1}})
    big = anon.get("/api/content/items/posts", params={"limit": "400"})
    assert big.status_code == 200 and len(big.json()) == 321
    assert "surrogate-key" not in big.headers and big.headers["cache-control"] == "private, no-cache"
    small = anon.get("/api/content/items/posts", params={"limit": "20"})
    assert {f"id:{item['_id']}" for item in small.json()} | {"model:posts", "list:posts"} <= _tags(small)


def test_each_write_sends_exactly_the_tags_it_touched(admin: Api, receiver: PurgeReceiver) -> None:
    ada, post = _site(admin)
    receiver.wait_for_tags({"list:authors", f"id:{ada['_id']}", "list:posts", f"id:{post['_id']}",
                       "model:authors", "model:posts"})
    sent = receiver.received[-1]
    assert sent.method == "POST" and sent.headers["authorization"] == SECRET
    receiver.received.clear()
    admin.post("/api/content/item/authors", json={"data": {"_id": ada["_id"], "name": "Ada L."}})
    receiver.wait_for_tags({"list:authors", f"id:{ada['_id']}"})
    time.sleep(0.3)
    assert receiver.tags() == {"list:authors", f"id:{ada['_id']}"}  # nothing else
    receiver.received.clear()
    admin.delete(f"/api/content/item/posts/{post['_id']}")
    receiver.wait_for_tags({"list:posts", f"id:{post['_id']}"})
    page = admin.post("/api/pages/page", json={"data": {"title": "About", "type": "layout", "_state": 1}})
    assert page.status_code == 200, page.text
    receiver.wait_for_tags({"list:@pages", f"id:{page.json()['_id']}"})


def test_a_purge_address_that_is_down_holds_up_no_write_and_gets_the_tags_later(
        admin: Api, receiver: PurgeReceiver, quire: Quire, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    _site(admin)
    receiver.wait_for_tags({"list:posts"})
    receiver.status = 503
    started = time.monotonic()
    made = [admin.post("/api/content/item/posts", json={"data": {"title": f"While down {n}"}}).json()
            for n in range(5)]
    assert time.monotonic() - started < 5  # the writes do not wait for the CDN
    before = len(receiver.received)
    receiver.wait_for(before + 2)  # tried, refused, tried again
    assert quire.store.collection(PURGES).count({}) >= 1  # kept until a purge takes them
    receiver.status = 200
    receiver.wait_for_tags({f"id:{item['_id']}" for item in made})
    deadline = time.monotonic() + 10
    while quire.store.collection(PURGES).count({}):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert "cdn-s3cret" not in caplog.text  # the CDN's key is never logged


def test_tags_can_go_in_a_header(app_env: dict[str, str], receiver: PurgeReceiver, tmp_path: Any) -> None:
    from quire.app import build_app
    from quire.config import load_settings
    from tests.client import TestClient

    env = {**app_env, "QUIRE_CDN_PURGE_HEADER": "Surrogate-Key", "QUIRE_CDN_PURGE_METHOD": "PURGE"}
    app = build_app(load_settings(tmp_path / "site", env=env))
    quire = app.state.quire
    try:
        admin = Api(TestClient(app), quire.auth.create_key("a", "admin")["key"])
        put_model(admin, "notes", type="collection", fields=[{"name": "text", "type": "text"}])
        note = admin.post("/api/content/item/notes", json={"data": {"text": "hi"}}).json()
        receiver.wait_for_tags({"list:notes", f"id:{note['_id']}"})
        sent = [r for r in receiver.received if f"id:{note['_id']}" in r.headers.get("surrogate-key", "")]
        assert sent[0].method == "PURGE" and sent[0].body == b""
    finally:
        quire.close()


def test_answers_under_a_space_name_it_and_a_switched_alias_is_purged_whole(
        app_env: dict[str, str], receiver: PurgeReceiver, tmp_path: Any) -> None:
    from quire.app import build_app
    from quire.config import load_settings
    from quire.served import serve_sites
    from tests.client import TestClient
    from tests.commands import run_quire

    data = tmp_path / "site"
    app = serve_sites(build_app(load_settings(data, env=app_env)))
    quire = app.state.quire
    try:
        client = TestClient(app)
        admin = {"api-key": quire.auth.create_key("a", "admin")["key"]}
        for name in ("blue", "green"):
            assert client.post("/api/system/spaces", headers=admin, json={"name": name}).status_code == 200
        key = run_quire("keys", "create", "--space", "blue", "--name", "k", "--role", "admin", "--data", str(data),
                        env=app_env).stdout.split()[-1]
        client.put("/blue/api/system/models/notes", headers={"api-key": key}, json={
            "name": "notes", "type": "collection", "fields": [{"name": "text", "type": "text"}]})
        client.put("/blue/api/system/roles/public", headers={"api-key": key},
                   json={"permissions": {"content/notes/read": True}})
        client.put("/api/system/aliases/live", headers=admin, json={"space": "blue"})
        answer = client.get("/live/api/content/items/notes", params={"limit": "5"})
        assert answer.status_code == 200 and "site:live" in answer.headers["surrogate-key"].split()
        receiver.received.clear()
        client.put("/api/system/aliases/live", headers=admin, json={"space": "green"})
        receiver.wait_for_tags({"site:live"})
    finally:
        quire.close()
