"""Assets with `[assets] storage` in a bucket (moto's S3 server on
127.0.0.1), whatever QUIRE_TEST_STORAGE says: two instances on one bucket
make a generated image once, files are streamed through Quire with their
headers and ranges, the generated images' cap, and a bucket that fails
answers 503, not 500."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.assets import images
from quire.assets.routes import SMALL_FILE
from quire.config import load_settings
from quire.files import S3Files
from tests.assets.helpers import encode, noise, solid, upload_one
from tests.client import TestClient
from tests.conftest import Api
from tests.storage import stored_keys

MiB = 1024 * 1024


@pytest.fixture
def make_app(data_dir: Path, s3_env: dict[str, str]) -> Iterator[Callable[..., Any]]:
    """Apps on one data folder (one database) and one bucket: each stands
    for an instance of its own (its own S3 client, its own locks)."""
    made: list[Any] = []

    def make(**assets: Any) -> Any:
        env = {"QUIRE_SERVER_QUIET": "true", **s3_env}
        app = build_app(load_settings(data_dir, env=env, overrides={"assets": assets}))
        made.append(app)
        return app

    yield make
    for app in made:
        app.state.quire.close()


def admin_of(app: Any) -> Api:
    quire: Quire = app.state.quire
    return Api(TestClient(app, raise_server_exceptions=False), str(quire.auth.create_key("admin", "admin")["key"]))


def test_files_live_in_the_bucket_not_in_the_data_folder(make_app: Any, data_dir: Path, s3_server: Any,
                                                         s3_bucket: str) -> None:
    app = make_app()
    admin = admin_of(app)
    asset = upload_one(admin, "red.png", solid(40, 30))
    url = admin.get(f"/api/assets/image/{asset['_id']}", params={"w": 20, "mime": "png"}).text
    client = s3_server.client()
    keys = sorted(item["Key"] for item in client.list_objects_v2(Bucket=s3_bucket)["Contents"])
    client.close()
    assert keys == sorted([f"site/uploads{asset['path']}", "site/thumbs/" + url.split("/storage/thumbs/", 1)[1]])
    assert not (data_dir / "uploads").exists() and not (data_dir / "thumbs").exists()
    served = admin.get(f"/storage/uploads{asset['path']}")
    assert served.status_code == 200 and served.content == solid(40, 30)


def test_two_instances_rendering_the_same_image_keep_one_file(make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = make_app(), make_app()
    admin = admin_of(first)
    asset = upload_one(admin, "noise.jpg", encode(noise(200, 100), "JPEG"), "image/jpeg")
    both_rendering = threading.Barrier(2, timeout=30)
    real_render = images.render
    made: list[bytes] = []

    def render_together(*args: Any) -> bytes:
        out = real_render(*args)
        both_rendering.wait()  # neither instance has written yet: both rendered it
        # the two renders differ by a byte, so the kept file tells whose it is
        out += b"\0" * (1 + len(made))
        made.append(out)
        return out

    monkeypatch.setattr(images, "render", render_together)
    answers: dict[int, Any] = {}

    def ask(n: int, app: Any) -> None:
        api = admin.with_key(admin.key)
        api.client = TestClient(app, raise_server_exceptions=False)
        answers[n] = api.get(f"/api/assets/image/{asset['_id']}", params={"w": 100, "mime": "png", "o": 1})

    threads = [threading.Thread(target=ask, args=(n, app)) for n, app in enumerate((first, second))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [answers[n].status_code for n in (0, 1)] == [200, 200]
    assert len(made) == 2 and made[0] != made[1]
    quires: list[Quire] = [first.state.quire, second.state.quire]
    assert sorted(q.assets.generated for q in quires) == [0, 1]  # one write won, the other kept it
    [key] = stored_keys(quires[0].assets.thumbs)
    kept = quires[0].assets.thumbs.read(key)
    assert kept in made
    assert answers[0].content == answers[1].content == kept
    assert answers[0].headers["etag"] == answers[1].headers["etag"]


def test_an_image_made_by_one_instance_is_served_by_the_other(make_app: Any) -> None:
    first, second = make_app(), make_app()
    admin = admin_of(first)
    asset = upload_one(admin, "red.png", solid(40, 30))
    params = {"w": 20, "mime": "webp", "o": 1}
    made = admin.get(f"/api/assets/image/{asset['_id']}", params=params)
    other = Api(TestClient(second, raise_server_exceptions=False), admin.key)
    again = other.get(f"/api/assets/image/{asset['_id']}", params=params)
    assert made.status_code == again.status_code == 200
    assert again.content == made.content and again.headers["etag"] == made.headers["etag"]
    assert (first.state.quire.assets.generated, second.state.quire.assets.generated) == (1, 0)


def test_a_large_file_is_streamed_with_its_headers_and_ranges(make_app: Any) -> None:
    app = make_app()
    admin = admin_of(app)
    content = b"".join(b"%d,row %d\n" % (n, n) for n in range(SMALL_FILE // 8))  # past the size read whole
    asset = upload_one(admin, "data.csv", content, "text/csv")
    url = f"/storage/uploads{asset['path']}"
    anon = admin.with_key(None)
    whole = anon.get(url)
    assert whole.status_code == 200 and whole.content == content
    headers = whole.headers
    assert headers["content-length"] == str(len(content)) and headers["accept-ranges"] == "bytes"
    assert headers["content-type"].startswith("text/csv")
    assert headers["x-content-type-options"] == "nosniff" and "sandbox" in headers["content-security-policy"]
    assert headers["cache-control"] == "public, max-age=31536000, immutable"
    etag = headers["etag"]
    assert anon.get(url, headers={"if-none-match": etag}).status_code == 304

    part = anon.get(url, headers={"range": "bytes=1000-1999"})
    assert part.status_code == 206 and part.content == content[1000:2000]
    assert part.headers["content-range"] == f"bytes 1000-1999/{len(content)}"
    tail = anon.get(url, headers={"range": "bytes=-10"})
    assert tail.status_code == 206 and tail.content == content[-10:]
    start = anon.get(url, headers={"range": f"bytes={len(content) - 5}-"})
    assert start.status_code == 206 and start.content == content[-5:]
    past = anon.get(url, headers={"range": f"bytes={len(content)}-"})
    assert past.status_code == 416 and past.headers["content-range"] == f"bytes */{len(content)}"
    for ignored in ("bytes=0-1,5-6", "pages=1-2", "bytes=9-3"):  # several, unknown unit, backwards: whole file
        answer = anon.get(url, headers={"range": ignored})
        assert answer.status_code == 200 and answer.content == content, ignored
    stale = anon.get(url, headers={"range": "bytes=0-9", "if-range": '"another"'})
    assert stale.status_code == 200 and stale.content == content
    fresh = anon.get(url, headers={"range": "bytes=0-9", "if-range": etag})
    assert fresh.status_code == 206 and fresh.content == content[:10]


def test_generated_images_past_the_cap_lose_the_oldest(make_app: Any) -> None:
    app = make_app(thumbs_max_bytes=MiB)
    admin = admin_of(app)
    asset = upload_one(admin, "noise.png", encode(noise(300, 300), "PNG"))
    thumbs = app.state.quire.assets.thumbs
    assert isinstance(thumbs, S3Files)

    def render(w: int) -> str:
        response = admin.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "h": 300, "m": "resize",
                                                                          "mime": "png"})
        assert response.status_code == 200, response.text
        return response.text.split("/storage/thumbs/", 1)[1]

    made = []
    for w in (300, 299, 298, 297):
        made.append(render(w))
        time.sleep(1.05)  # S3 keeps write times in whole seconds: the order must show in them
    left = stored_keys(thumbs)
    assert made[0] not in left and made[-1] in left  # the oldest went first
    assert sum(info.size for info in thumbs.list()) <= 0.9 * MiB
    assert render(300) == made[0] and made[0] in stored_keys(thumbs)  # and is made again when asked for


def test_deleting_an_asset_removes_its_objects(make_app: Any) -> None:
    app = make_app()
    admin = admin_of(app)
    keep, drop = upload_one(admin, "keep.png", solid(8, 8)), upload_one(admin, "drop.png", solid(9, 9))
    for asset in (keep, drop):
        assert admin.get(f"/api/assets/image/{asset['_id']}", params={"w": 4, "mime": "png"}).status_code == 200
    assert admin.delete(f"/api/assets/{drop['_id']}").status_code == 200
    assets = app.state.quire.assets
    assert stored_keys(assets.uploads) == [keep["path"].lstrip("/")]
    assert [key.split("/")[0] for key in stored_keys(assets.thumbs)] == [keep["_id"]]


def test_a_bucket_that_is_gone_answers_503_with_retry_after(make_app: Any, s3_server: Any, s3_bucket: str,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    app = make_app()
    admin = admin_of(app)
    asset = upload_one(admin, "red.png", solid(8, 8))
    client = s3_server.client()
    for item in client.list_objects_v2(Bucket=s3_bucket)["Contents"]:
        client.delete_object(Bucket=s3_bucket, Key=item["Key"])
    client.delete_bucket(Bucket=s3_bucket)
    client.close()
    # (a HEAD cannot tell a missing bucket from a missing object: /storage answers 404 then)
    for answer in (admin.post("/api/assets", files=[("files", ("b.png", solid(4, 4), "image/png"))]),
                   admin.get(f"/api/assets/image/{asset['_id']}", params={"w": 4})):
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "5"
        assert answer.json() == {"error": "The file storage is not available; try again shortly"}
    # a delete is committed before its files go: it answers 200, and the log says what was left
    assert admin.delete(f"/api/assets/{asset['_id']}").status_code == 200
    assert "could not be removed" in caplog.text
    assert admin.get(f"/api/assets/{asset['_id']}").status_code == 404
