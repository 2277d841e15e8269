"""Bounded image work (behaviour.md §3, issue 13 item 2): render slots per
worker, the hourly cap of new renders per asset for callers who cannot
write assets, the size cap of thumbs/ with LRU eviction, and the pixel
budget of one decode."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from quire.app import Quire, build_app
from quire.assets import images, thumbcache
from quire.config import load_settings
from tests.assets.helpers import (
    encode,
    noise,
    open_image,
    png_claiming,
    png_of_zeros,
    solid,
    upload,
    upload_one,
)
from tests.client import TestClient
from tests.conftest import Api, role_key
from tests.storage import local_only, stored_keys

BASE = "http://testserver"
MiB = 1024 * 1024


@pytest.fixture
def make_app(data_dir: Path, app_env: dict[str, str]) -> Iterator[Callable[..., Any]]:
    """Apps on the same data dir with [assets] overrides; two of them stand
    for two worker processes."""
    made: list[Any] = []

    def make(**assets: Any) -> Any:
        app = build_app(load_settings(data_dir, env=app_env, overrides={"assets": assets}))
        made.append(app)
        return app

    yield make
    for app in made:
        app.state.quire.close()


def clients(app: Any) -> tuple[Api, Api]:
    """(admin, reader): the reader may only read assets."""
    quire: Quire = app.state.quire
    admin = Api(TestClient(app, raise_server_exceptions=False), str(quire.auth.create_key("admin", "admin")["key"]))
    reader = role_key(admin, "reader", {"assets/read": True})
    return admin, reader


def thumbs_of(data_dir: Path) -> list[Path]:
    """The generated images in the local data folder (the size cap tests are local-only)."""
    return [p for p in (data_dir / "thumbs").rglob("*") if p.is_file() and not p.name.startswith(".")]


# -- render slots -------------------------------------------------------------------


def held_renders(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Make every render wait until the returned event is set."""
    release = threading.Event()
    real = images.render

    def slow(*args: Any, **kw: Any) -> bytes:
        assert release.wait(20)
        return real(*args, **kw)

    monkeypatch.setattr(images, "render", slow)
    return release


async def until(check: Callable[[], bool]) -> None:
    for _ in range(400):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached")


@pytest.mark.anyio
async def test_a_render_beyond_the_slots_waits_then_gets_503_with_retry_after(
        make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(max_concurrent_renders=1, render_wait_seconds=1)
    admin, _ = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    release = held_renders(monkeypatch)
    quire: Quire = app.state.quire
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        def get(w: int) -> Any:
            return client.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "mime": "png"},
                              headers={"api-key": admin.key or ""})

        first = asyncio.create_task(get(10))
        await until(lambda: quire.assets._rendering == 1)
        started = time.monotonic()
        busy = await get(20)
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert busy.json()["error"].startswith("Busy generating other images")
        assert time.monotonic() - started >= 0.9  # it waited for a slot first
        release.set()
        assert (await first).status_code == 200
        assert (await get(20)).status_code == 200
    assert quire.assets._rendering == 0


@pytest.mark.anyio
async def test_a_waiting_render_gets_the_slot_when_it_frees(make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(max_concurrent_renders=1, render_wait_seconds=10)
    admin, _ = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    release = held_renders(monkeypatch)
    quire: Quire = app.state.quire
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        def get(w: int) -> Any:
            return client.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "mime": "png", "o": 1},
                              headers={"api-key": admin.key or ""})

        tasks = [asyncio.create_task(get(w)) for w in (10, 20, 30)]
        await until(lambda: quire.assets._rendering == 1)
        await asyncio.sleep(0.2)
        assert quire.assets._rendering == 1  # one at a time
        release.set()
        responses = await asyncio.gather(*tasks)
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert [open_image(r.content).width for r in responses] == [10, 20, 30]


@pytest.mark.anyio
async def test_waiting_for_a_slot_does_not_poll_and_files_are_read_off_the_event_loop(
        make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A waiting render sleeps on the slot until it is released (no timer
    wakes it every few milliseconds), and the answer's file work (stat,
    reading megabytes) runs in a worker thread, not on the event loop."""
    app = make_app(max_concurrent_renders=1, render_wait_seconds=10)
    admin, _ = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    release = held_renders(monkeypatch)
    quire: Quire = app.state.quire
    sleeps: list[float] = []
    real_sleep = anyio.sleep

    async def counted_sleep(delay: float, *args: Any) -> Any:
        sleeps.append(delay)
        return await real_sleep(delay, *args)

    monkeypatch.setattr(anyio, "sleep", counted_sleep)
    loop_thread = threading.get_ident()
    answered_in: list[int] = []
    real_answer = quire.assets._answer

    def recorded_answer(*args: Any) -> Any:
        answered_in.append(threading.get_ident())
        return real_answer(*args)

    monkeypatch.setattr(quire.assets, "_answer", recorded_answer)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        def get(w: int) -> Any:
            return client.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "mime": "png", "o": 1},
                              headers={"api-key": admin.key or ""})

        first = asyncio.create_task(get(10))
        await until(lambda: quire.assets._rendering == 1)
        second = asyncio.create_task(get(20))
        await asyncio.sleep(0.5)  # the second waits for the slot meanwhile
        assert sleeps == []
        release.set()
        assert [r.status_code for r in await asyncio.gather(first, second)] == [200, 200]
    assert len(answered_in) == 4  # per request: a look before rendering, the answer after
    assert loop_thread not in answered_in


# -- new renders per asset and hour ------------------------------------------------------


@pytest.mark.anyio
async def test_one_caller_holds_at_most_half_the_slots_and_others_still_render(
        make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two slots: a caller whose render holds one waits for its own render
    (then 503), while another caller takes the second slot at once."""
    app = make_app(max_concurrent_renders=2, render_wait_seconds=1)
    admin, first_reader = clients(app)
    second_reader = role_key(admin, "reader", {"assets/read": True})
    asset = upload_one(admin, "a.png", solid(40, 40))
    release = held_renders(monkeypatch)
    quire: Quire = app.state.quire
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        def get(api: Api, w: int) -> Any:
            return client.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "mime": "png", "o": 1},
                              headers={"api-key": api.key or ""})

        held = asyncio.create_task(get(first_reader, 10))
        await until(lambda: quire.assets._rendering == 1)
        busy = await get(first_reader, 20)  # a slot is free, but not for this caller
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
        other = asyncio.create_task(get(second_reader, 30))
        await until(lambda: quire.assets._rendering == 2)  # the other caller got the free slot
        release.set()
        assert (await held).status_code == 200 and (await other).status_code == 200
        assert (await get(first_reader, 20)).status_code == 200  # its share is free again
    assert quire.assets._rendering == 0


def test_a_render_over_the_time_budget_is_refused_for_readers_only(make_app: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(render_budget_seconds=3)
    admin, reader = clients(app)
    asset = upload_one(admin, "big.png", solid(4000, 3000))
    rendered: list[Any] = []
    real = images.render

    def recorded(data: bytes, opts: images.ImageOptions, *args: Any) -> bytes:
        rendered.append(opts)
        return real(data, images.ImageOptions(opts.mode, 8, 6, opts.quality, opts.format, None), *args)

    monkeypatch.setattr(images, "render", recorded)  # the test proves the refusal, not the encoder's speed
    big = {"w": 4000, "mime": "avif", "q": 100, "o": 1}
    refused = reader.get(f"/api/assets/image/{asset['_id']}", params=big)
    assert refused.status_code == 400 and rendered == []
    assert refused.json()["error"] == ("Making this image would take about 5 s, more than the 3 s allowed; "
                                       "ask for a smaller size, or JPEG instead of AVIF")
    assert reader.get(f"/api/assets/image/{asset['_id']}", params={**big, "mime": "jpeg"}).status_code == 200
    assert reader.get(f"/api/assets/image/{asset['_id']}", params={**big, "w": 800}).status_code == 200
    assert admin.get(f"/api/assets/image/{asset['_id']}", params=big).status_code == 200  # an editor's own site
    assert [o.format for o in rendered] == ["jpeg", "avif", "avif"]
    # once made, the image is served to anyone: nothing is rendered again
    assert reader.get(f"/api/assets/image/{asset['_id']}", params=big).status_code == 200
    assert len(rendered) == 3


def test_no_budget_when_it_is_0(make_app: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(render_budget_seconds=0)
    admin, reader = clients(app)
    asset = upload_one(admin, "big.png", solid(4000, 3000))
    real = images.render
    monkeypatch.setattr(images, "render", lambda data, opts, *a: real(
        data, images.ImageOptions(opts.mode, 8, 6, opts.quality, opts.format, None), *a))
    response = reader.get(f"/api/assets/image/{asset['_id']}", params={"w": 4000, "mime": "avif", "q": 100, "o": 1})
    assert response.status_code == 200


def test_readers_may_cause_a_few_new_renders_per_asset_and_hour(make_app: Any) -> None:
    app = make_app(renders_per_hour=3)
    admin, reader = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    other = upload_one(admin, "b.png", solid(40, 40))
    url = f"/api/assets/image/{asset['_id']}"
    for w in (10, 11, 12):
        assert reader.get(url, params={"w": w, "mime": "png"}).status_code == 200
    over = reader.get(url, params={"w": 13, "mime": "png"})
    assert over.status_code == 429
    assert 3500 <= int(over.headers["retry-after"]) <= 3600
    assert "Too many different images of this asset" in over.json()["error"]
    # what exists is served to anyone; another asset has its own count
    assert reader.get(url, params={"w": 10, "mime": "png"}).status_code == 200
    assert reader.get(f"/api/assets/image/{other['_id']}", params={"w": 13, "mime": "png"}).status_code == 200
    # callers who can write assets are neither counted nor held back
    assert admin.get(url, params={"w": 13, "mime": "png"}).status_code == 200
    assert reader.get(url, params={"w": 13, "mime": "png"}).status_code == 200
    assert app.state.quire.assets.generated == 5


def test_over_the_cap_another_t_is_answered_with_the_existing_file(make_app: Any) -> None:
    app = make_app(renders_per_hour=1)
    admin, reader = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    url = f"/api/assets/image/{asset['_id']}"
    plain = reader.get(url, params={"w": 10, "mime": "png"})
    assert plain.status_code == 200
    stamped = reader.get(url, params={"w": 10, "mime": "png", "t": "1700000000"})
    assert stamped.status_code == 200 and stamped.text == plain.text
    as_bytes = reader.get(url, params={"w": 10, "mime": "png", "t": "1700000001", "o": 1})
    assert as_bytes.status_code == 200 and open_image(as_bytes.content).size == (10, 10)
    # only `t` may differ: another size is a new render
    assert reader.get(url, params={"w": 11, "mime": "png", "t": "1"}).status_code == 429
    assert app.state.quire.assets.generated == 1


@pytest.mark.anyio
async def test_a_burst_of_identical_requests_counts_once(make_app: Any) -> None:
    app = make_app(renders_per_hour=2)
    admin, reader = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=BASE) as client:
        def get(w: int) -> Any:
            return client.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "mime": "png"},
                              headers={"api-key": reader.key or ""})

        burst = await asyncio.gather(*(get(10) for _ in range(8)))
        assert [r.status_code for r in burst] == [200] * 8
        assert (await get(11)).status_code == 200  # the burst counted one render
        assert (await get(12)).status_code == 429
    assert app.state.quire.assets.generated == 2


def test_the_count_is_shared_by_all_workers(make_app: Any) -> None:
    one, two = make_app(renders_per_hour=2), make_app(renders_per_hour=2)
    admin, reader_one = clients(one)
    reader_two = Api(TestClient(two, raise_server_exceptions=False), reader_one.key)
    asset = upload_one(admin, "a.png", solid(40, 40))
    url = f"/api/assets/image/{asset['_id']}"
    assert reader_one.get(url, params={"w": 10, "mime": "png"}).status_code == 200
    assert reader_two.get(url, params={"w": 11, "mime": "png"}).status_code == 200
    assert reader_two.get(url, params={"w": 12, "mime": "png"}).status_code == 429
    assert reader_one.get(url, params={"w": 12, "mime": "png"}).status_code == 429


def test_renders_per_hour_0_turns_the_cap_off(make_app: Any) -> None:
    app = make_app(renders_per_hour=0)
    admin, reader = clients(app)
    asset = upload_one(admin, "a.png", solid(40, 40))
    for w in range(10, 20):
        assert reader.get(f"/api/assets/image/{asset['_id']}", params={"w": w, "mime": "png"}).status_code == 200


# -- size cap of thumbs/ -------------------------------------------------------------------


@local_only
def test_generated_images_are_capped_and_the_least_recently_used_go(make_app: Any, data_dir: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(thumbs_max_bytes=MiB)
    admin, reader = clients(app)
    asset = upload_one(admin, "noise.png", encode(noise(300, 300), "PNG"))
    url = f"/api/assets/image/{asset['_id']}"

    def render(w: int) -> Path:
        response = admin.get(url, params={"w": w, "h": 300, "m": "resize", "mime": "png"})
        assert response.status_code == 200, response.text
        return data_dir / "thumbs" / response.text.split("/storage/thumbs/", 1)[1]

    walks = []
    real_files = thumbcache.ThumbCache._files
    monkeypatch.setattr(thumbcache.ThumbCache, "_files", lambda self: walks.append(1) or real_files(self))
    a, b, c = render(300), render(299), render(298)
    assert a.stat().st_size > 200_000  # noise hardly compresses
    assert len(walks) == 1  # the first count of an empty folder; then no walk per render
    now = time.time()
    for path, age in ((a, 1000), (b, 3000), (c, 2000)):
        os.utime(path, (now - age, path.stat().st_mtime))
    assert reader.get(f"/storage/thumbs/{asset['_id']}/{a.name}").status_code == 200  # a is used again
    render(297)  # over 1 MiB now: b (least recently used), then c if needed, go
    assert not b.exists()
    assert a.exists()
    kept = thumbs_of(data_dir)
    total = sum(p.stat().st_size for p in kept)
    assert total <= 0.9 * MiB
    assert int((data_dir / "thumbs" / ".usage").read_text()) == total
    # an evicted image is simply made again when asked for
    assert render(299) == b and b.exists()


@local_only
def test_deleting_an_asset_takes_its_images_off_the_count(make_app: Any, data_dir: Path) -> None:
    app = make_app()
    admin, _ = clients(app)
    keep = upload_one(admin, "keep.png", solid(40, 40))
    drop = upload_one(admin, "drop.png", solid(40, 40))
    for asset in (keep, drop):
        assert admin.get(f"/api/assets/image/{asset['_id']}", params={"w": 20, "mime": "png"}).status_code == 200
    assert admin.delete(f"/api/assets/{drop['_id']}").status_code == 200
    left = sum(p.stat().st_size for p in thumbs_of(data_dir))
    assert int((data_dir / "thumbs" / ".usage").read_text()) == left > 0


# -- pixel budget -------------------------------------------------------------------------


PEAK_SCRIPT = """
import resource, sys
from quire.assets import images
from tests.assets.helpers import png_claiming, png_of_zeros
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
# 100 megapixels declared with the rows missing; 64 megapixels of zeros in 190 KB
for data in (png_claiming(10000, 10000), png_of_zeros(8000, 8000)):
    try:
        images.inspect(data, 100_000_000, 24_000_000)
        print("accepted", file=sys.stderr)
    except images.BadImage as exc:
        print("refused:", exc, file=sys.stderr)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""


def test_tiny_pngs_claiming_huge_sizes_are_refused_without_decoding_them() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}"}
    done = subprocess.run([sys.executable, "-c", PEAK_SCRIPT], capture_output=True, text=True, env=env,
                          cwd=root, timeout=120, check=True)
    assert done.stderr.splitlines() == [
        "refused: image has 100000000 pixels to decode, more than the 24000000 one image may use "
        "(larger JPEG is decoded at a reduced scale)",
        "refused: image has 64000000 pixels to decode, more than the 24000000 one image may use "
        "(larger JPEG is decoded at a reduced scale)",
    ]
    assert int(done.stdout.strip()) < 50 * 1024  # KiB; decoding the zeros took 750 MB


def test_a_decompression_bomb_under_max_pixels_is_refused_at_upload(admin: Api, quire: Quire,
                                                                    data_dir: Path) -> None:
    response = upload(admin, ("zeros.png", png_of_zeros(8000, 8000), "image/png"))
    assert response.status_code == 400
    assert "64000000 pixels to decode" in response.json()["error"]
    assert stored_keys(quire.assets.uploads) == []


def test_upload_over_the_decode_budget_is_400_and_jpeg_is_decoded_at_a_reduced_scale(make_app: Any) -> None:
    app = make_app(decode_pixels=1_000_000)
    admin, _ = clients(app)
    claimed = upload(admin, ("bomb.png", png_claiming(10000, 10000), "image/png"))
    assert claimed.status_code == 400
    assert "more than the 1000000 one image may use" in claimed.json()["error"]
    big_png = upload(admin, ("big.png", solid(1500, 1000), "image/png"))
    assert big_png.status_code == 400
    photo = upload_one(admin, "big.jpg", encode(noise(2000, 1500), "JPEG", quality=80))
    assert (photo["width"], photo["height"]) == (2000, 1500)
    decoded: list[tuple[int, int]] = []
    real = images._resize

    def spy(image: Any, *args: Any) -> Any:
        decoded.append(image.size)
        return real(image, *args)

    images._resize = spy  # type: ignore[assignment]
    try:
        out = admin.get(f"/api/assets/image/{photo['_id']}", params={"w": 1500, "h": 1000, "mime": "png", "o": 1})
    finally:
        images._resize = real  # type: ignore[assignment]
    assert out.status_code == 200, out.text
    assert open_image(out.content).size == (1500, 1000)  # the exact size asked for
    assert decoded and decoded[0][0] * decoded[0][1] <= 1_000_000


def test_a_stored_png_over_a_lowered_budget_is_400_at_render(make_app: Any) -> None:
    app = make_app()
    admin, _ = clients(app)
    asset = upload_one(admin, "big.png", solid(1500, 1000))
    app.state.quire.assets.settings = replace(app.state.quire.assets.settings, decode_pixels=1_000_000)
    response = admin.get(f"/api/assets/image/{asset['_id']}", params={"w": 100, "mime": "png"})
    assert response.status_code == 400
    assert "1500000 pixels to decode" in response.json()["error"]
