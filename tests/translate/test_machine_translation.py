"""Machine translation against local fakes of DeepL and LibreTranslate
(tests/translate/fakes.py): what is missing is filled in, into the draft
of a published item, marked unreviewed; a provider that hangs, refuses or
answers garbage fails the task with a clear error and writes nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.translate.service import JOB
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model
from tests.translate.fakes import FakeProvider, fake_provider


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    with fake_provider() as server:
        yield server


def _site(data: Path, app_env: dict[str, str], provider: FakeProvider, kind: str, **env: str) -> Any:
    return build_app(load_settings(data, env={
        **app_env, "QUIRE_TRANSLATE_PROVIDER": kind, "QUIRE_TRANSLATE_URL": provider.url,
        "QUIRE_TRANSLATE_API_KEY": provider.key, "QUIRE_TRANSLATE_TIMEOUT_SECONDS": "2",
        "QUIRE_TRANSLATE_SOURCE_LANGUAGE": "en", **env}))


@pytest.fixture
def site(tmp_path: Path, app_env: dict[str, str], provider: FakeProvider) -> Iterator[tuple[Any, Api]]:
    app = _site(tmp_path / "data", app_env, provider, "deepl")
    admin = Api(TestClient(app), app.state.quire.auth.create_key("admin", "admin")["key"])
    admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}, {"i18n": "fr", "name": "Français"}])
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text", "i18n": True}, {"name": "body", "type": "wysiwyg", "i18n": True},
        {"name": "slug", "type": "text"}])
    yield app, admin
    app.state.quire.close()


def _run(app: Any, task: dict[str, Any], admin: Api) -> dict[str, Any]:
    """The task once ended: its job run here, or by the app's own runner
    if it took it first."""
    app.state.quire.jobs.run_due(app.state.quire.store, [JOB])
    deadline = time.monotonic() + 20
    while True:
        found: dict[str, Any] = admin.get(f"/api/translate/tasks/{task['id']}").json()
        if found["state"] in ("done", "failed") or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_deepl_fills_in_what_is_missing_into_a_published_items_draft(site: tuple[Any, Api],
                                                                     provider: FakeProvider) -> None:
    app, admin = site
    post = create_item(admin, "posts", {"title": "Hello", "body": "<p>Good <b>day</b></p>", "slug": "hello",
                                        "title_fr": "Bonjour"})
    asked = admin.post(f"/api/translate/item/posts/{post['_id']}", json={})
    assert asked.status_code == 202, asked.text
    task = _run(app, asked.json(), admin)
    assert task["state"] == "done" and task["translated"] == 3, task
    # the live item is as it was; the draft holds the translations, marked
    live = admin.get(f"/api/content/item/posts/{post['_id']}").json()
    assert "title_de" not in live or live["title_de"] is None
    draft = admin.get(f"/api/content/item/posts/{post['_id']}", params={"draft": 1}).json()
    assert draft["title_de"] == "[DE] Hello" and draft["body_de"] == "[DE] <p>Good <b>day</b></p>"
    assert draft["body_fr"] == "[FR] <p>Good <b>day</b></p>" and draft["title_fr"] == "Bonjour"
    assert draft["_mt"] == ["body_de", "body_fr", "title_de"]
    html = [r["body"] for r in provider.requests if r["body"].get("tag_handling") == "html"]
    assert html and all(r["source_lang"] == "EN" for r in html)
    assert all(r["auth"] == "DeepL-Auth-Key test-key" for r in provider.requests)


def test_a_models_items_and_their_unreviewed_filter(tmp_path: Path, app_env: dict[str, str],
                                                    provider: FakeProvider) -> None:
    app = _site(tmp_path / "data", app_env, provider, "libretranslate", QUIRE_TRANSLATE_HIDE_UNREVIEWED="false")
    try:
        admin = Api(TestClient(app), app.state.quire.auth.create_key("admin", "admin")["key"])
        admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}])
        put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text", "i18n": True}])
        for n in range(130):  # more than a page of the task's reading
            create_item(admin, "posts", {"title": f"Post {n}", **({"title_de": f"Beitrag {n}"} if n % 2 else {})})
        task = _run(app, admin.post("/api/translate/model/posts", json={"locales": ["de"]}).json(), admin)
        assert task["state"] == "done" and task["done"] == 130 and task["translated"] == 65, task
        marked = admin.get("/api/content/items/posts", params={"filter": '{"_mt": "title_de"}', "limit": 0}).json()
        assert len(marked) == 65 and all(p["title_de"] == f"[DE] {p['title']}" for p in marked)
        assert all(r["body"]["source"] == "en" and r["body"]["format"] == "text" for r in provider.requests)
        # an editor reviews one: its mark goes
        first = marked[0]
        assert admin.post("/api/content/item/posts", json={"data": {"_id": first["_id"], "_mt": []}}).status_code == 200
        still = admin.get("/api/content/items/posts", params={"filter": '{"_mt": "title_de"}', "limit": 0}).json()
        assert len(still) == 64
    finally:
        app.state.quire.close()


@pytest.mark.parametrize("mode", ["hang", "garbage", "short", "refuse"])
def test_a_provider_that_fails_writes_nothing_and_says_why(site: tuple[Any, Api], provider: FakeProvider,
                                                           mode: str) -> None:
    app, admin = site
    post = create_item(admin, "posts", {"title": "Hello", "body": "<p>Hi</p>"})
    provider.mode = mode
    task = _run(app, admin.post(f"/api/translate/item/posts/{post['_id']}").json(), admin)
    assert task["state"] == "failed", task
    expected = {"hang": "did not answer within 2 s", "garbage": "not JSON", "short": "translations for",
                "refuse": "refused the API key"}[mode]
    assert expected in task["error"], task
    draft = admin.get(f"/api/content/item/posts/{post['_id']}", params={"draft": 1}).json()
    assert "title_de" not in draft and "_mt" not in draft


def test_a_translation_project(tmp_path: Path, app_env: dict[str, str], provider: FakeProvider) -> None:
    app = _site(tmp_path / "data", app_env, provider, "deepl")
    try:
        admin = Api(TestClient(app), app.state.quire.auth.create_key("admin", "admin")["key"])
        admin.put("/api/l10n/project/site", json={"locales": ["en", "de", "pt-BR"], "keys": {
            "hi": {"en": "Hi", "de": "Hallo"}, "bye": {"en": "Bye"}, "empty": {}}})
        task = _run(app, admin.post("/api/translate/project/site").json(), admin)
        assert task["state"] == "done" and task["translated"] == 3, task
        values = admin.get("/api/l10n/project/site").json()
        assert values["bye"] == {"en": "Bye", "de": "[DE] Bye", "pt-BR": "[PT-BR] Bye"}
        assert values["hi"]["de"] == "Hallo"
        marks = admin.get("/api/translate/project/site/unreviewed").json()
        assert marks == {"bye": ["de", "pt-BR"], "hi": ["pt-BR"]}
        left = admin.post("/api/translate/project/site/unreviewed", json={"keys": {"bye": ["de"]}}).json()
        assert left == {"bye": ["pt-BR"], "hi": ["pt-BR"]}
    finally:
        app.state.quire.close()


def test_asking_is_checked_at_once(site: tuple[Any, Api], tmp_path: Path, app_env: dict[str, str]) -> None:
    app, admin = site
    post = create_item(admin, "posts", {"title": "Hello"})
    assert admin.post(f"/api/translate/item/posts/{post['_id']}", json={"locales": ["xx"]}).status_code == 400
    assert admin.post(f"/api/translate/item/posts/{post['_id']}", json={"locales": "de"}).status_code == 400
    assert admin.post("/api/translate/item/posts/nope").status_code == 404
    assert admin.post("/api/translate/model/nope").status_code == 404
    reader = admin.with_key(None)
    assert reader.post(f"/api/translate/item/posts/{post['_id']}").status_code in (401, 403)
    assert reader.get("/api/translate/tasks/whatever").status_code == 401
    off = build_app(load_settings(tmp_path / "other", env=app_env))
    try:
        key = off.state.quire.auth.create_key("admin", "admin")["key"]
        put_model(Api(TestClient(off), key), "notes", type="collection", fields=[{"name": "t", "type": "text"}])
        refused = TestClient(off).post("/api/translate/model/notes", headers={"api-key": key})
        assert refused.status_code == 404 and "No translation provider" in refused.json()["error"]
    finally:
        off.state.quire.close()


def test_the_studio_screen_asks_follows_and_lists_what_is_not_reviewed(site: tuple[Any, Api]) -> None:
    from tests.admin.conftest import logged_in
    from tests.studio.conftest import post_form

    app, admin = site
    post = create_item(admin, "posts", {"title": "Hello", "body": "<p>Hi</p>"})
    ann = logged_in(app)
    page = ann.get("/studio/translate").text
    assert "Translate what is missing" in page and 'value="posts"' in page
    assert ann.get(f"/studio/content/posts/item/{post['_id']}").text.count("/studio/translate?model=posts") == 1
    asked = post_form(ann, "/studio/translate", [("kind", "item"), ("name", "posts"), ("item", post["_id"]),
                                                 ("locale", "de")], token_from="/studio/translate")
    assert asked.status_code == 303
    app.state.quire.jobs.run_due(app.state.quire.store, [JOB])
    deadline = time.monotonic() + 10
    while "done" not in ann.get("/studio/translate/tasks").text and time.monotonic() < deadline:
        time.sleep(0.05)
    page = ann.get("/studio/translate").text
    assert "1 of 1, 2 values written" in page
    assert f'/studio/content/posts/item/{post["_id"]}' in page and "body_de, title_de" in page  # not reviewed
    editor = ann.get(f"/studio/content/posts/item/{post['_id']}").text
    assert "Machine translated" in editor and "body_de, title_de" in editor
    bad = post_form(ann, "/studio/translate", [("kind", "item"), ("name", "posts"), ("item", "")],
                    token_from="/studio/translate")
    assert bad.status_code == 400 and "Choose what to translate" in bad.text


def test_pages_titles_and_seo_texts(site: tuple[Any, Api], tmp_path: Path, app_env: dict[str, str],
                                    provider: FakeProvider) -> None:
    app, admin = site
    draft = admin.post("/api/pages/page", json={"data": {"title": "About us", "_state": 0,
                                                         "seo": {"title": "About", "description": "Who we are"}}})
    live = admin.post("/api/pages/page", json={"data": {"title": "Contact", "_state": 1}})
    assert draft.status_code == 200 and live.status_code == 200, (draft.text, live.text)
    task = _run(app, admin.post("/api/translate/pages", json={"locales": ["de"]}).json(), admin)
    assert task["state"] == "done" and task["translated"] == 3, task
    assert task["errors"] == [{"item": live.json()["_id"], "error": task["errors"][0]["error"]}]
    assert "no draft" in task["errors"][0]["error"]  # a published page is left as it is
    page = app.state.quire.pages.stored(draft.json()["_id"], app.state.quire.auth.identify(admin.key))
    assert page["title_de"] == "[DE] About us" and page["seo_de"] == {"title": "[DE] About",
                                                                       "description": "[DE] Who we are"}
    assert page["_mt"] == ["seo_de", "title_de"] and page["_state"] == 0
    stored_live = app.state.quire.pages.stored(live.json()["_id"], app.state.quire.auth.identify(admin.key))
    assert "title_de" not in stored_live


@pytest.mark.parametrize("attempt", [1, 2])
def test_a_task_whose_runner_stopped_is_taken_over_or_said_failed(site: tuple[Any, Api], attempt: int,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker killed during a translation: its job's lease ends; another
    runner takes the job over (translating what is still missing), or on
    its last attempt the job fails and the task says why."""
    app, admin = site
    quire = app.state.quire
    monkeypatch.setattr(quire.jobs, "wake", lambda *kinds: None)  # no runner thread: the claim below is ours
    post = create_item(admin, "posts", {"title": "Hello"})
    task = admin.post(f"/api/translate/item/posts/{post['_id']}", json={"locales": ["de"]}).json()
    claimed = quire.jobs.claim(quire.store, [JOB])
    assert claimed is not None
    jobs = quire.store.collection("system/jobs")
    with quire.store.transaction():  # the claim's runner is gone: its lease ends, on this attempt
        doc = jobs.get(claimed.id)
        jobs.replace({**doc, "lease_until": 0.0, "attempts": attempt})
    ended = _run(app, task, admin)
    draft = admin.get(f"/api/content/item/posts/{post['_id']}", params={"draft": 1}).json()
    if attempt == 1:
        assert ended["state"] == "done" and draft["title_de"] == "[DE] Hello", ended
    else:
        assert ended["state"] == "failed" and "worker running it stopped" in ended["error"], ended
        assert "title_de" not in draft
