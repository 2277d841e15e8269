"""Suggested alt text and tags from a vision model, against a local fake
of an OpenAI-compatible chat completions API: the suggestion is kept
apart until an editor accepts or dismisses it; a model that hangs or
answers garbage changes nothing; off without `[vision] url`."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from quire.app import build_app
from quire.config import load_settings
from quire.vision.service import JOB
from tests.assets.helpers import solid, upload_one
from tests.client import TestClient
from tests.conftest import Api


class FakeVision(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.mode = "ok"
        self.seen: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1/chat/completions"


class _Handler(BaseHTTPRequestHandler):
    server: FakeVision

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
        self.server.seen.append({"body": body, "auth": self.headers.get("authorization")})
        if self.server.mode == "hang":
            time.sleep(4)
        content = {"alt": "A red <b>square</b>\non white", "tags": ["Red", "square", "red", 7, "x" * 99]}
        answer: Any = {"choices": [{"message": {"role": "assistant", "content": "```json\n" + json.dumps(content)
                                                + "\n```"}}]}
        if self.server.mode == "garbage":
            answer = {"choices": [{"message": {"content": "I think it is a square."}}]}
        data = json.dumps(answer).encode()
        try:
            self.send_response(500 if self.server.mode == "fail" else 200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def vision() -> Iterator[FakeVision]:
    server = FakeVision()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def site(tmp_path: Path, app_env: dict[str, str], vision: FakeVision) -> Iterator[tuple[Any, Api]]:
    app = build_app(load_settings(tmp_path / "data", env={
        **app_env, "QUIRE_VISION_URL": vision.url, "QUIRE_VISION_MODEL": "llava", "QUIRE_VISION_API_KEY": "vk",
        "QUIRE_VISION_TIMEOUT_SECONDS": "1"}))
    yield app, Api(TestClient(app), app.state.quire.auth.create_key("admin", "admin")["key"])
    app.state.quire.close()


def _suggested(app: Any, admin: Api, asset_id: str) -> dict[str, Any]:
    """The asset once its job ran (here, or by the app's own runner)."""
    app.state.quire.jobs.run_due(app.state.quire.store, [JOB])
    deadline = time.monotonic() + 15
    while True:
        asset: dict[str, Any] = admin.get(f"/api/assets/{asset_id}").json()
        jobs = app.state.quire.store.collection("system/jobs")
        # waiting: a job not tried yet, or under way (a failed attempt waits a minute for its next)
        waiting = [j for j in jobs.find() if j.get("kind") == JOB and (
            j.get("state") == "running" or (j.get("state") == "pending" and j.get("attempts") == 0))]
        if asset.get("suggested") or not waiting or time.monotonic() > deadline:
            return asset
        time.sleep(0.05)


def test_an_upload_gets_a_suggestion_the_editor_accepts(site: tuple[Any, Api], vision: FakeVision) -> None:
    app, admin = site
    stored = upload_one(admin, "red.png", solid(1600, 900), "image/png")
    asset = _suggested(app, admin, stored["_id"])
    assert asset["suggested"]["altText"] == "A red square on white"  # markup and line breaks gone
    assert asset["suggested"]["tags"] == ["red", "square", "x" * 40] and asset["suggested"]["model"] == "llava"
    assert asset.get("altText", "") == "" and asset.get("tags", []) == []  # not used until accepted
    sent = vision.seen[0]
    assert sent["auth"] == "Bearer vk" and sent["body"]["model"] == "llava"
    picture = sent["body"]["messages"][1]["content"][1]["image_url"]["url"]
    assert picture.startswith("data:image/jpeg;base64,")
    assert max(Image.open(io.BytesIO(base64.b64decode(picture.split(",", 1)[1]))).size) == 768  # a small copy
    accepted = admin.post(f"/api/assets/suggestion/{stored['_id']}", json={"accept": True})
    assert accepted.status_code == 200, accepted.text
    asset = admin.get(f"/api/assets/{stored['_id']}").json()
    assert asset["altText"] == "A red square on white" and asset["tags"] == ["red", "square", "x" * 40]
    assert "suggested" not in asset
    assert admin.post(f"/api/assets/suggestion/{stored['_id']}", json={"accept": True}).status_code == 404


def test_a_suggestion_is_dismissed_in_the_studio(site: tuple[Any, Api]) -> None:
    from tests.admin.conftest import logged_in
    from tests.studio.conftest import post_form

    app, admin = site
    stored = upload_one(admin, "red.png", solid(64, 64), "image/png")
    _suggested(app, admin, stored["_id"])
    ann = logged_in(app)
    page = ann.get(f"/studio/assets/{stored['_id']}").text
    assert "Suggested alt text and tags" in page and "A red square on white" in page
    done = post_form(ann, f"/studio/assets/{stored['_id']}/suggestion", {"accept": "0"},
                     token_from=f"/studio/assets/{stored['_id']}")
    assert done.status_code == 303
    asset = admin.get(f"/api/assets/{stored['_id']}").json()
    assert "suggested" not in asset and asset.get("altText", "") == ""


@pytest.mark.parametrize("mode", ["hang", "garbage", "fail"])
def test_a_model_that_fails_changes_nothing(site: tuple[Any, Api], vision: FakeVision, mode: str) -> None:
    app, admin = site
    vision.mode = mode
    stored = upload_one(admin, "red.png", solid(64, 64), "image/png")
    asset = _suggested(app, admin, stored["_id"])
    assert "suggested" not in asset and asset.get("altText", "") == ""


def test_off_without_a_model(tmp_path: Path, app_env: dict[str, str]) -> None:
    app = build_app(load_settings(tmp_path / "data", env=app_env))
    try:
        admin = Api(TestClient(app), app.state.quire.auth.create_key("admin", "admin")["key"])
        upload_one(admin, "red.png", solid(64, 64), "image/png")
        jobs = app.state.quire.store.collection("system/jobs")
        assert not jobs.exists() or not [j for j in jobs.find() if j.get("kind") == JOB]
    finally:
        app.state.quire.close()
