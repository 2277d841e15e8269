"""GET /api/assets/image/{id}: resize modes, focal point, formats, caching
headers, wrong values, non-image assets, and generation under concurrency
(issue 3 item 3, api.md "Assets", behaviour.md section 3)."""

from __future__ import annotations

import asyncio
import io
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx2
import pytest
from PIL import Image

from quire.app import Quire
from quire.files import LocalFiles
from tests.assets.helpers import (
    BLUE,
    GREEN,
    RED,
    WHITE,
    animated_gif,
    encode,
    halves,
    halves_image,
    near,
    noise,
    open_image,
    oriented_jpeg,
    solid,
    upload,
    upload_one,
)
from tests.client import TestClient
from tests.conftest import Api, role_key
from tests.storage import stored_keys

IMMUTABLE = "public, max-age=31536000, immutable"
BASE = "http://testserver"
CLEAN_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
             b'<rect width="10" height="10" fill="red"/></svg>')
PDF = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"


def image_url(asset_id: str) -> str:
    return f"/api/assets/image/{asset_id}"


def get_image(api: Api, asset_id: str, **params: Any) -> Any:
    return api.get(image_url(asset_id), params=params, follow_redirects=False)


def rendered(api: Api, asset_id: str, **params: Any) -> Image.Image:
    """The generated image (o=1), opened with Pillow."""
    response = get_image(api, asset_id, o=1, **params)
    assert response.status_code == 200, response.text
    return open_image(response.content)


@pytest.fixture
def wide(admin: Api) -> dict[str, Any]:
    """200x100 PNG: left half red, right half blue."""
    return upload_one(admin, "wide.png", halves(200, 100, RED, BLUE), "image/png")


@pytest.fixture
def photo(admin: Api) -> dict[str, Any]:
    """A 64x48 JPEG of noise (compresses differently by quality)."""
    return upload_one(admin, "photo.jpg", encode(noise(64, 48), "JPEG", quality=95), "image/jpeg")


# -- modes ----------------------------------------------------------------------


def test_thumbnail_is_the_default_mode_and_crops_to_exactly_w_by_h(admin: Api, wide: dict[str, Any]) -> None:
    out = rendered(admin, wide["_id"], w=50, h=50, mime="png")
    assert out.size == (50, 50)
    explicit = rendered(admin, wide["_id"], m="thumbnail", w=50, h=50, mime="png")
    assert explicit.size == (50, 50)
    assert explicit.convert("RGB").tobytes() == out.convert("RGB").tobytes()


def test_thumbnail_crops_the_centre_without_a_focal_point(admin: Api, wide: dict[str, Any]) -> None:
    out = rendered(admin, wide["_id"], w=50, h=50, mime="png").convert("RGB")
    # the centre 100x100 of the source: its left half red, right half blue
    assert near(out.getpixel((5, 25)), RED)
    assert near(out.getpixel((44, 25)), BLUE)


@pytest.mark.parametrize(("fp", "left", "right"), [
    ({"x": 0, "y": 0.5}, RED, RED),
    ({"x": 1, "y": 0.5}, BLUE, BLUE),
    ({"x": 0.5, "y": 0.5}, RED, BLUE),
])
def test_thumbnail_crop_follows_the_focal_point(admin: Api, wide: dict[str, Any], fp: dict[str, float],
                                                left: tuple[int, int, int], right: tuple[int, int, int]) -> None:
    updated = admin.post(f"/api/assets/{wide['_id']}", json={"data": {"fp": fp}})
    assert updated.status_code == 200, updated.text
    out = rendered(admin, wide["_id"], w=50, h=50, mime="png").convert("RGB")
    assert out.size == (50, 50)
    assert near(out.getpixel((2, 25)), left)
    assert near(out.getpixel((47, 25)), right)


def test_changing_the_focal_point_gives_a_new_image(admin: Api, wide: dict[str, Any]) -> None:
    first = get_image(admin, wide["_id"], w=50, h=50, mime="png").text
    admin.post(f"/api/assets/{wide['_id']}", json={"data": {"fp": {"x": 0, "y": 0}}})
    second = get_image(admin, wide["_id"], w=50, h=50, mime="png").text
    assert first != second


@pytest.mark.parametrize(("w", "h", "size"), [
    (400, 400, (200, 100)),   # never enlarges
    (1000, 50, (100, 50)),
    (100, 100, (100, 50)),    # fits inside
    (50, 200, (50, 25)),
    (200, 100, (200, 100)),
])
def test_best_fit_fits_inside_and_never_enlarges(admin: Api, wide: dict[str, Any], w: int, h: int,
                                                 size: tuple[int, int]) -> None:
    out = rendered(admin, wide["_id"], m="bestFit", w=w, h=h, mime="png")
    assert out.size == size
    assert out.width <= w and out.height <= h


def test_best_fit_keeps_the_whole_picture(admin: Api, wide: dict[str, Any]) -> None:
    out = rendered(admin, wide["_id"], m="bestFit", w=100, h=100, mime="png").convert("RGB")
    assert near(out.getpixel((2, 25)), RED) and near(out.getpixel((97, 25)), BLUE)


@pytest.mark.parametrize("params", [{"w": 400}, {"h": 300}, {"w": 400, "h": 1000}])
def test_best_fit_with_one_side_never_enlarges(admin: Api, wide: dict[str, Any], params: dict[str, Any]) -> None:
    out = rendered(admin, wide["_id"], m="bestFit", mime="png", **params)
    assert out.size == (200, 100)


@pytest.mark.parametrize(("w", "h"), [(30, 70), (300, 20), (200, 100), (1, 1)])
def test_resize_gives_exactly_w_by_h(admin: Api, wide: dict[str, Any], w: int, h: int) -> None:
    out = rendered(admin, wide["_id"], m="resize", w=w, h=h, mime="png")
    assert out.size == (w, h)


def test_resize_distorts_rather_than_crops(admin: Api, wide: dict[str, Any]) -> None:
    out = rendered(admin, wide["_id"], m="resize", w=20, h=80, mime="png").convert("RGB")
    assert near(out.getpixel((1, 40)), RED) and near(out.getpixel((18, 40)), BLUE)


@pytest.mark.parametrize(("params", "size"), [
    ({"m": "fitToWidth", "w": 100}, (100, 50)),
    ({"m": "fitToWidth", "w": 400}, (400, 200)),
    ({"m": "fitToWidth", "w": 100, "h": 10}, (100, 50)),
    ({"m": "fitToHeight", "h": 25}, (50, 25)),
    ({"m": "fitToHeight", "h": 300}, (600, 300)),
    ({"m": "fitToHeight", "w": 7, "h": 25}, (50, 25)),
])
def test_fit_to_width_and_height_keep_the_ratio(admin: Api, wide: dict[str, Any], params: dict[str, Any],
                                                size: tuple[int, int]) -> None:
    assert rendered(admin, wide["_id"], mime="png", **params).size == size


@pytest.mark.parametrize(("params", "size"), [
    ({"w": 100}, (100, 50)),
    ({"h": 20}, (40, 20)),
    ({"m": "resize", "w": 50}, (50, 25)),
    ({"m": "resize", "h": 10}, (20, 10)),
    ({"m": "bestFit", "w": 80}, (80, 40)),
    ({"m": "bestFit", "h": 40}, (80, 40)),
])
def test_a_missing_side_follows_the_ratio(admin: Api, wide: dict[str, Any], params: dict[str, Any],
                                          size: tuple[int, int]) -> None:
    assert rendered(admin, wide["_id"], mime="png", **params).size == size


def test_fit_to_width_without_w_is_400(admin: Api, wide: dict[str, Any]) -> None:
    response = get_image(admin, wide["_id"], m="fitToWidth", h=10)
    assert response.status_code == 400
    assert "fitToWidth" in response.json()["error"]


# -- formats ----------------------------------------------------------------------


@pytest.mark.parametrize(("mime", "fmt", "content_type"), [
    ("gif", "GIF", "image/gif"),
    ("jpeg", "JPEG", "image/jpeg"),
    ("png", "PNG", "image/png"),
    ("webp", "WEBP", "image/webp"),
    ("bmp", "BMP", "image/bmp"),
    ("avif", "AVIF", "image/avif"),
])
def test_output_format(admin: Api, wide: dict[str, Any], mime: str, fmt: str, content_type: str) -> None:
    response = get_image(admin, wide["_id"], w=40, h=20, mime=mime, o=1)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == content_type
    out = open_image(response.content)
    assert out.format == fmt
    assert out.size == (40, 20)
    rgb = out.convert("RGB")
    assert near(rgb.getpixel((2, 10)), RED, 60) and near(rgb.getpixel((37, 10)), BLUE, 60)
    url = get_image(admin, wide["_id"], w=40, h=20, mime=mime).text
    assert url.rsplit(".", 1)[-1] == {"jpeg": "jpg"}.get(mime, mime)


def test_transparent_png_to_jpeg_is_flattened(admin: Api) -> None:
    source = Image.new("RGBA", (20, 20), (0, 0, 0, 0))
    source.paste((0, 0, 255, 255), (10, 0, 20, 20))
    asset = upload_one(admin, "alpha.png", encode(source, "PNG"))
    for mime in ("jpeg", "bmp"):
        out = rendered(admin, asset["_id"], w=20, h=20, mime=mime)
        assert out.mode == "RGB"
        assert near(out.getpixel((15, 10)), BLUE, 60)
        assert near(out.getpixel((3, 10)), WHITE, 30)  # transparency becomes white


@pytest.mark.parametrize(("accept", "fmt"), [
    ("image/avif,image/webp,*/*", "WEBP"),
    ("image/webp", "WEBP"),
    ("image/png,*/*", "PNG"),
    ("", "PNG"),
])
def test_mime_auto_is_webp_when_accepted_else_the_source_format(admin: Api, wide: dict[str, Any],
                                                                 accept: str, fmt: str) -> None:
    response = admin.get(image_url(wide["_id"]), params={"w": 20, "h": 10, "mime": "auto", "o": 1},
                         headers={"Accept": accept})
    assert response.status_code == 200
    assert open_image(response.content).format == fmt
    assert response.headers["vary"] == "Accept"


def test_mime_auto_is_not_webp_when_accept_refuses_it(admin: Api, wide: dict[str, Any]) -> None:
    response = admin.get(image_url(wide["_id"]), params={"w": 20, "h": 10, "o": 1},
                         headers={"Accept": "image/webp;q=0, image/png, */*;q=0.8"})
    assert response.status_code == 200
    assert open_image(response.content).format == "PNG"
    assert response.headers["vary"] == "Accept"


def test_vary_accept_survives_a_cross_origin_request(admin: Api, wide: dict[str, Any]) -> None:
    # a site on another origin is the usual caller; its caches must still
    # key the auto-negotiated image on Accept
    for o in (0, 1):
        response = admin.get(image_url(wide["_id"]), params={"w": 20, "h": 10, "o": o},
                             headers={"Accept": "image/webp", "Origin": "https://site.example"})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] in ("*", "https://site.example")
        vary = {v.strip().lower() for v in response.headers["vary"].split(",")}
        assert "accept" in vary, response.headers["vary"]


def test_mime_defaults_to_auto(admin: Api, photo: dict[str, Any]) -> None:
    jpeg = admin.get(image_url(photo["_id"]), params={"w": 20, "o": 1}, headers={"Accept": "*/*"})
    assert jpeg.status_code == 200
    assert open_image(jpeg.content).format == "JPEG"
    assert jpeg.headers["vary"] == "Accept"
    webp = admin.get(image_url(photo["_id"]), params={"w": 20, "o": 1}, headers={"Accept": "image/webp,*/*"})
    assert open_image(webp.content).format == "WEBP"
    url = admin.get(image_url(photo["_id"]), params={"w": 20}, headers={"Accept": "image/webp"})
    assert url.headers["vary"] == "Accept" and url.text.endswith(".webp")


@pytest.mark.parametrize(("source", "fmt"), [
    (lambda: solid(20, 10, RED, "GIF"), "GIF"),
    (lambda: solid(20, 10, RED, "BMP"), "BMP"),
    (lambda: solid(20, 10, RED, "WEBP"), "WEBP"),
    (lambda: solid(20, 10, RED, "JPEG"), "JPEG"),
])
def test_mime_auto_without_webp_keeps_the_source_format(admin: Api, source: Any, fmt: str) -> None:
    asset = upload_one(admin, "src.bin", source())
    response = admin.get(image_url(asset["_id"]), params={"w": 10, "o": 1}, headers={"Accept": "*/*"})
    assert response.status_code == 200, response.text
    out = open_image(response.content)
    assert out.format == fmt and out.size == (10, 5)


def test_quality_changes_the_jpeg_size(admin: Api, photo: dict[str, Any]) -> None:
    sizes = {}
    for q in (5, 50, 100):
        response = get_image(admin, photo["_id"], w=64, h=48, mime="jpeg", q=q, o=1)
        assert response.status_code == 200
        assert open_image(response.content).format == "JPEG"
        sizes[q] = len(response.content)
    assert sizes[5] < sizes[50] < sizes[100]


def test_default_quality_is_80(admin: Api, photo: dict[str, Any]) -> None:
    default = get_image(admin, photo["_id"], w=64, h=48, mime="jpeg")
    explicit = get_image(admin, photo["_id"], w=64, h=48, mime="jpeg", q=80)
    other = get_image(admin, photo["_id"], w=64, h=48, mime="jpeg", q=81)
    assert default.text == explicit.text != other.text


# -- answers: URL, redirect, bytes ---------------------------------------------------


def test_o0_answers_text_plain_absolute_url_that_serves_the_image(admin: Api, anon: Api,
                                                                   wide: dict[str, Any]) -> None:
    response = get_image(admin, wide["_id"], w=30, h=30, mime="png", o=0)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    url = response.text
    assert url.startswith(f"{BASE}/storage/thumbs/{wide['_id']}/") and url.endswith(".png")
    assert get_image(admin, wide["_id"], w=30, h=30, mime="png").text == url  # o=0 is the default
    served = anon.get(url.removeprefix(BASE))
    assert served.status_code == 200
    assert served.headers["content-type"] == "image/png"
    assert served.headers["cache-control"] == IMMUTABLE
    assert open_image(served.content).size == (30, 30)


def test_o0_url_uses_the_configured_public_url(admin: Api, quire: Quire, wide: dict[str, Any]) -> None:
    quire.public_url = "https://cdn.example.com/"
    response = get_image(admin, wide["_id"], w=30, h=30, mime="png")
    assert response.status_code == 200
    assert response.text.startswith(f"https://cdn.example.com/storage/thumbs/{wide['_id']}/")


def test_re1_redirects_307_to_the_generated_image(admin: Api, wide: dict[str, Any]) -> None:
    url = get_image(admin, wide["_id"], w=30, h=30, mime="png").text
    response = get_image(admin, wide["_id"], w=30, h=30, mime="png", re=1)
    assert response.status_code == 307
    assert response.headers["location"] == url
    followed = admin.get(image_url(wide["_id"]), params={"w": 30, "h": 30, "mime": "png", "re": 1})
    assert followed.status_code == 200
    assert open_image(followed.content).size == (30, 30)


def test_o1_answers_bytes_immutable_with_etag_and_304(admin: Api, wide: dict[str, Any]) -> None:
    response = get_image(admin, wide["_id"], w=30, h=20, mime="png", o=1)
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/png"
    assert response.headers["cache-control"] == IMMUTABLE
    etag = response.headers["etag"]
    assert etag.startswith('"') and etag.endswith('"')
    assert open_image(response.content).size == (30, 20)
    cached = admin.get(image_url(wide["_id"]), params={"w": 30, "h": 20, "mime": "png", "o": 1},
                       headers={"If-None-Match": etag})
    assert cached.status_code == 304
    assert cached.content == b""
    assert cached.headers["etag"] == etag
    other = admin.get(image_url(wide["_id"]), params={"w": 30, "h": 20, "mime": "png", "o": 1},
                      headers={"If-None-Match": '"nope"'})
    assert other.status_code == 200 and other.content == response.content


def test_o1_bytes_equal_the_file_at_the_o0_url(admin: Api, anon: Api, wide: dict[str, Any]) -> None:
    url = get_image(admin, wide["_id"], w=30, h=20, mime="webp").text
    data = get_image(admin, wide["_id"], w=30, h=20, mime="webp", o=1).content
    assert anon.get(url.removeprefix(BASE)).content == data


def test_generated_image_is_cached_and_reused(admin: Api, quire: Quire, wide: dict[str, Any]) -> None:
    first = get_image(admin, wide["_id"], w=30, h=20, mime="png", o=1)
    assert quire.assets.generated == 1
    second = get_image(admin, wide["_id"], w=30, h=20, mime="png", o=1)
    assert quire.assets.generated == 1
    assert first.content == second.content
    assert len(stored_keys(quire.assets.thumbs, wide["_id"])) == 1


def test_t_changes_the_cache_key_and_nothing_else(admin: Api, quire: Quire, wide: dict[str, Any]) -> None:
    plain = get_image(admin, wide["_id"], w=30, h=20, mime="png")
    stamped = get_image(admin, wide["_id"], w=30, h=20, mime="png", t="1700000000")
    other = get_image(admin, wide["_id"], w=30, h=20, mime="png", t="1700000001")
    again = get_image(admin, wide["_id"], w=30, h=20, mime="png", t="1700000000")
    assert len({plain.text, stamped.text, other.text}) == 3
    assert again.text == stamped.text
    assert quire.assets.generated == 3
    assert len(stored_keys(quire.assets.thumbs, wide["_id"])) == 3
    images = [get_image(admin, wide["_id"], w=30, h=20, mime="png", o=1, **t).content
              for t in ({}, {"t": "1700000000"}, {"t": "1700000001"})]
    opened = [open_image(b) for b in images]
    assert {i.size for i in opened} == {(30, 20)}
    assert len({i.convert("RGB").tobytes() for i in opened}) == 1
    assert len(set(images)) == 1


def test_output_has_no_exif_or_other_metadata(admin: Api) -> None:
    source = oriented_jpeg(halves_image(40, 30), 1, **{"271": "CameraMaker", "305": "SecretSoftware"})
    assert open_image(source).getexif().get(271) == "CameraMaker"
    asset = upload_one(admin, "meta.jpg", source, "image/jpeg")
    for mime in ("jpeg", "png", "webp"):
        response = get_image(admin, asset["_id"], w=20, h=15, mime=mime, o=1)
        assert response.status_code == 200
        out = open_image(response.content)
        assert len(out.getexif()) == 0
        assert "exif" not in out.info and "icc_profile" not in out.info
        assert b"CameraMaker" not in response.content and b"SecretSoftware" not in response.content


def test_exif_orientation_is_applied(admin: Api) -> None:
    # stored 40x20, left red, right blue; orientation 6 = turn 90 degrees clockwise to show
    asset = upload_one(admin, "turned.jpg", oriented_jpeg(halves_image(40, 20, RED, BLUE), 6), "image/jpeg")
    out = rendered(admin, asset["_id"], m="bestFit", w=100, h=100, mime="png").convert("RGB")
    assert out.size == (20, 40)
    assert near(out.getpixel((10, 5)), RED) and near(out.getpixel((10, 34)), BLUE)
    exact = rendered(admin, asset["_id"], m="resize", w=10, h=20, mime="jpeg")
    assert exact.size == (10, 20)
    assert len(exact.getexif()) == 0  # no orientation left to apply twice


def test_exif_orientation_3_is_upside_down(admin: Api) -> None:
    asset = upload_one(admin, "flip.jpg", oriented_jpeg(halves_image(40, 20, RED, BLUE), 3), "image/jpeg")
    out = rendered(admin, asset["_id"], m="fitToWidth", w=40, mime="png").convert("RGB")
    assert out.size == (40, 20)
    assert near(out.getpixel((3, 10)), BLUE) and near(out.getpixel((36, 10)), RED)


def test_animated_gif_gives_a_still_of_its_first_frame(admin: Api) -> None:
    source = animated_gif([RED, GREEN, BLUE])
    assert Image.open(io.BytesIO(source)).n_frames == 3
    asset = upload_one(admin, "anim.gif", source, "image/gif")
    assert asset["mime"] == "image/gif"
    for mime in ("gif", "webp", "png"):
        out = rendered(admin, asset["_id"], w=10, h=10, mime=mime)
        assert getattr(out, "n_frames", 1) == 1
        assert not getattr(out, "is_animated", False)
        assert near(out.convert("RGB").getpixel((5, 5)), RED)


def test_animated_webp_gives_a_still_of_its_first_frame(admin: Api) -> None:
    frames = [Image.new("RGB", (20, 20), c) for c in (GREEN, RED, BLUE)]
    source = encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100, lossless=True)
    asset = upload_one(admin, "anim.webp", source)
    out = rendered(admin, asset["_id"], w=10, h=10, mime="webp")
    assert getattr(out, "n_frames", 1) == 1
    assert near(out.convert("RGB").getpixel((5, 5)), GREEN)


# -- wrong values -----------------------------------------------------------------


@pytest.mark.parametrize(("params", "message"), [
    ({"w": "abc"}, "<w> must be an integer"),
    ({"w": 10, "h": "1.5"}, "<h> must be an integer"),
    ({"w": 0}, "<w> must be a positive integer"),
    ({"w": -5}, "<w> must be a positive integer"),
    ({"h": 0}, "<h> must be a positive integer"),
    ({"w": 10, "m": "unknown"}, "Unknown resize mode 'unknown' (use thumbnail, bestFit, resize, fitToWidth, fitToHeight)"),
    ({"w": 10, "m": "Thumbnail"}, "Unknown resize mode 'Thumbnail' (use thumbnail, bestFit, resize, fitToWidth, fitToHeight)"),
    ({"w": 10, "q": 500}, "<q> must be between 1 and 100"),
    ({"w": 10, "q": 0}, "<q> must be between 1 and 100"),
    ({"w": 10, "q": -1}, "<q> must be between 1 and 100"),
    ({"w": 10, "q": "high"}, "<q> must be an integer"),
    ({"w": 10, "mime": "tiff"}, "Unknown mime 'tiff' (use auto, gif, jpeg, png, webp, bmp, avif)"),
    ({"w": 10, "mime": "image/png"}, "Unknown mime 'image/png' (use auto, gif, jpeg, png, webp, bmp, avif)"),
    ({"w": 10, "o": 2}, "<o> must be 0 or 1"),
    ({"w": 10, "o": "yes"}, "<o> must be 0 or 1"),
    ({"w": 10, "re": 2}, "<re> must be 0 or 1"),
    ({"w": 4097}, "Width and height can be at most 4096"),
    ({"h": 5000}, "Width and height can be at most 4096"),
    ({"w": 10, "h": 100000}, "Width and height can be at most 4096"),
    ({}, "Target width or height parameter is missing"),
    ({"m": "resize", "q": 50}, "Target width or height parameter is missing"),
    ({"w": "", "h": ""}, "Target width or height parameter is missing"),
])
def test_wrong_values_are_400_with_a_clear_message(admin: Api, quire: Quire, wide: dict[str, Any],
                                                   params: dict[str, Any], message: str) -> None:
    response = get_image(admin, wide["_id"], **params)
    assert response.status_code == 400
    assert response.json() == {"error": message}
    assert quire.assets.generated == 0


def test_max_output_size_is_configurable(admin: Api, quire: Quire, wide: dict[str, Any]) -> None:
    quire.assets.settings = replace(quire.assets.settings, max_output_size=100)
    response = get_image(admin, wide["_id"], w=101)
    assert response.status_code == 400
    assert response.json() == {"error": "Width and height can be at most 100"}
    assert get_image(admin, wide["_id"], w=100).status_code == 200


def test_largest_allowed_output_is_4096(admin: Api, wide: dict[str, Any]) -> None:
    response = get_image(admin, wide["_id"], m="resize", w=4096, h=1, mime="png", o=1)
    assert response.status_code == 200
    assert open_image(response.content).size == (4096, 1)


@pytest.mark.parametrize("asset_id", ["0123456789abcdef01234567", "nope"])
def test_unknown_asset_is_404(admin: Api, asset_id: str) -> None:
    response = get_image(admin, asset_id, w=10)
    assert response.status_code == 404
    assert response.json() == {"error": "Asset not found"}


def test_image_endpoint_needs_assets_read(admin: Api, anon: Api, wide: dict[str, Any]) -> None:
    response = get_image(anon, wide["_id"], w=10)
    assert response.status_code == 401
    assert "error" in response.json()
    nope = role_key(admin, "uploader", {"assets/upload": True})
    assert get_image(nope, wide["_id"], w=10).status_code == 403
    reader = role_key(admin, "reader", {"assets/read": True})
    assert get_image(reader, wide["_id"], w=10).status_code == 200


def test_source_over_the_pixel_budget_is_400_at_generation(admin: Api, quire: Quire) -> None:
    asset = upload_one(admin, "big.png", solid(1500, 1000))
    quire.assets.settings = replace(quire.assets.settings, max_pixels=1_000_000)
    response = get_image(admin, asset["_id"], w=10, mime="png")
    assert response.status_code == 400
    assert "pixels" in response.json()["error"]
    assert quire.assets.generated == 0


# -- non-images ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "content"), [("doc.pdf", PDF), ("notes.txt", b"plain text here\n")])
def test_non_image_answers_the_original_url(admin: Api, anon: Api, quire: Quire, name: str,
                                            content: bytes) -> None:
    asset = upload_one(admin, name, content)
    original = f"{BASE}/storage/uploads{asset['path']}"
    text = get_image(admin, asset["_id"], w=100, h=100)
    assert text.status_code == 200
    assert text.headers["content-type"].startswith("text/plain")
    assert text.text == original
    redirect = get_image(admin, asset["_id"], w=100, h=100, re=1)
    assert redirect.status_code == 307
    assert redirect.headers["location"] == original
    as_bytes = get_image(admin, asset["_id"], w=100, o=1)
    assert as_bytes.status_code == 307 and as_bytes.headers["location"] == original
    assert anon.get(original.removeprefix(BASE)).content == content
    assert quire.assets.generated == 0


def test_svg_is_never_rasterised(admin: Api, anon: Api, quire: Quire) -> None:
    asset = upload_one(admin, "logo.svg", CLEAN_SVG, "image/svg+xml")
    original = f"{BASE}/storage/uploads{asset['path']}"
    for mime in ("png", "auto", "jpeg"):
        response = get_image(admin, asset["_id"], w=50, h=50, mime=mime)
        assert response.status_code == 200
        assert response.text == original
    redirect = get_image(admin, asset["_id"], w=50, o=1)
    assert redirect.status_code == 307 and redirect.headers["location"] == original
    served = anon.get(original.removeprefix(BASE))
    assert served.content == CLEAN_SVG and "content-security-policy" in served.headers
    assert quire.assets.generated == 0
    assert stored_keys(quire.assets.thumbs) == []


def test_non_image_still_validates_parameters(admin: Api) -> None:
    asset = upload_one(admin, "doc.pdf", PDF)
    response = get_image(admin, asset["_id"], w="abc")
    assert response.status_code == 400
    assert response.json() == {"error": "<w> must be an integer"}


# -- concurrency ------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_burst_of_identical_requests_generates_the_image_once(app: Any, admin: Api, quire: Quire) -> None:
    source = encode(noise(600, 400), "JPEG", quality=90)
    asset = upload_one(admin, "burst.jpg", source, "image/jpeg")
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
        async def one() -> Any:
            return await client.get(image_url(asset["_id"]), params={"w": 300, "h": 200, "mime": "webp", "o": 1},
                                    headers={"api-key": admin.key or ""})

        responses = await asyncio.gather(*(one() for _ in range(16)))
    assert [r.status_code for r in responses] == [200] * 16
    assert len({r.content for r in responses}) == 1
    assert len({r.headers["etag"] for r in responses}) == 1
    assert open_image(responses[0].content).size == (300, 200)
    assert quire.assets.generated == 1
    assert len(stored_keys(quire.assets.thumbs, asset["_id"])) == 1
    if isinstance(quire.assets.thumbs, LocalFiles):  # nor a lock or part file left in the folder
        assert not [p for p in quire.assets.thumbs.root.rglob("*") if p.name.endswith((".part", ".lock"))]


@pytest.mark.anyio
async def test_a_burst_of_different_requests_generates_each_once(app: Any, admin: Api, quire: Quire) -> None:
    asset = upload_one(admin, "mixed.png", halves(120, 80))
    sizes = [10, 20, 30, 40]
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
        async def one(w: int) -> Any:
            return await client.get(image_url(asset["_id"]), params={"w": w, "mime": "png", "o": 1},
                                    headers={"api-key": admin.key or ""})

        responses = await asyncio.gather(*(one(w) for w in sizes * 4))
    assert all(r.status_code == 200 for r in responses)
    for w, response in zip(sizes * 4, responses, strict=True):
        assert open_image(response.content).width == w
    assert quire.assets.generated == len(sizes)


@pytest.mark.anyio
async def test_concurrent_uploads_all_land_with_distinct_ids_and_files(app: Any, admin: Api, quire: Quire) -> None:
    contents = [solid(10 + i, 10, (i * 20, 0, 0)) for i in range(10)]
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
        async def one(i: int) -> Any:
            return await client.post("/api/assets", files=[("files", ("same.png", contents[i], "image/png"))],
                                     headers={"api-key": admin.key or ""})

        responses = await asyncio.gather(*(one(i) for i in range(10)))
    assert [r.status_code for r in responses] == [200] * 10
    assets = [r.json()[0] for r in responses]
    assert len({a["_id"] for a in assets}) == 10
    assert len({a["path"] for a in assets}) == 10
    for asset, content in zip(assets, contents, strict=True):
        assert quire.assets.uploads.read(asset["path"].lstrip("/")) == content
    assert sorted(a["width"] for a in assets) == [10 + i for i in range(10)]
    assert len(stored_keys(quire.assets.uploads)) == 10
    assert len(quire.assets.assets.find()) == 10


def test_concurrent_uploads_from_threads_all_land(app: Any, admin_key: str, quire: Quire) -> None:
    # one client used as a context manager: one event loop serves every
    # thread's request, as one server process does
    contents = [solid(5, 5 + i) for i in range(10)]
    with TestClient(app, raise_server_exceptions=False) as shared:
        api = Api(shared, admin_key)
        with ThreadPoolExecutor(max_workers=10) as pool:
            responses = list(pool.map(lambda c: upload(api, ("t.png", c, "image/png")), contents))
        assert [r.status_code for r in responses] == [200] * 10, [r.text for r in responses]
        assets = [r.json()[0] for r in responses]
        assert len({a["_id"] for a in assets}) == 10 and len({a["path"] for a in assets}) == 10
        assert sorted(a["height"] for a in assets) == [5 + i for i in range(10)]
        for asset, content in zip(assets, contents, strict=True):
            assert quire.assets.uploads.read(asset["path"].lstrip("/")) == content
        assert len(stored_keys(quire.assets.uploads)) == 10
        assert len(api.get("/api/assets").json()) == 10


def test_concurrent_identical_image_requests_from_threads_generate_once(app: Any, admin_key: str,
                                                                        quire: Quire) -> None:
    with TestClient(app, raise_server_exceptions=False) as shared:
        api = Api(shared, admin_key)
        asset = upload_one(api, "t.jpg", encode(noise(300, 200), "JPEG"), "image/jpeg")
        with ThreadPoolExecutor(max_workers=12) as pool:
            responses = list(pool.map(lambda _: get_image(api, asset["_id"], w=150, mime="png", o=1), range(12)))
        assert [r.status_code for r in responses] == [200] * 12
        assert len({r.content for r in responses}) == 1
        assert open_image(responses[0].content).size == (150, 100)
        assert quire.assets.generated == 1


def test_an_asset_whose_file_is_gone_answers_404_not_500(admin: Api, quire: Quire, wide: dict[str, Any]) -> None:
    quire.assets.uploads.delete(wide["path"].lstrip("/"))
    response = admin.get(f"/api/assets/image/{wide['_id']}", params={"w": 33, "o": 1})
    assert response.status_code == 404
    assert response.json() == {"error": "The file of this asset is missing"}
