"""The assets manager in a real browser: drop three pictures and one
refused file at once (a progress bar and the server's answer per file),
folders with moves by drag and drop and by the "Move to folder" select, the
focal point set by clicking on the picture with the crop following it, and
a new file under the same id serving the new picture."""

from __future__ import annotations

import base64
import io
import re
from typing import Any

from PIL import Image

from tests.assets.helpers import BLUE, GREEN, RED, halves, solid
from tests.studio.browsing import (
    assert_clean,
    browser,
    login,
    new_context,
    open_page,
    screenshot,
    scripts_ran,
    studio,
    wait_until,
)

__all__ = ["browser", "new_context", "studio"]

DROP = """([files]) => {
  const transfer = new DataTransfer();
  for (const [name, type, b64] of files) {
    const bytes = Uint8Array.from(atob(b64), c => c.charCodeAt(0));
    transfer.items.add(new File([bytes], name, {type}));
  }
  return transfer;
}"""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _colour(page: Any, url: str) -> tuple[int, int, int]:
    """The colour at the middle of the picture `url` answers."""
    if url.startswith("/"):
        url = page.url.split("/studio/", 1)[0] + url
    response = page.request.get(url)
    assert response.ok, (url, response.status)
    image = Image.open(io.BytesIO(response.body())).convert("RGB")
    return image.getpixel((image.width // 2, image.height // 2))  # type: ignore[return-value]


def _near(got: tuple[int, ...], want: tuple[int, ...]) -> bool:
    return all(abs(a - b) < 40 for a, b in zip(got, want, strict=True))


def test_drop_three_pictures_and_one_refused_file(studio: Any, new_context: Any) -> None:
    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Assets", exact=True).click()
    page.wait_for_url(studio.base + "/studio/assets")
    files = [["red.png", "image/png", _b64(solid(120, 80, RED))],
             ["green.png", "image/png", _b64(solid(120, 80, GREEN))],
             ["blue.jpg", "image/jpeg", _b64(solid(120, 80, BLUE, "JPEG"))],
             ["setup.exe", "application/octet-stream", _b64(b"MZ\x90\x00" + b"\x00" * 200)]]
    transfer = page.evaluate_handle(DROP, [files])
    page.locator("#upload-zone").dispatch_event("drop", {"dataTransfer": transfer})
    rows = page.locator("#upload-list .upload-row")
    assert rows.count() == 4
    for name in ("red.png", "green.png", "blue.jpg"):
        row = rows.filter(has_text=name)
        row.get_by_role("link", name="Stored").wait_for()
        assert row.locator("progress").get_attribute("value") == "100"
    refused = rows.filter(has_text="setup.exe").locator(".upload-status")
    refused.filter(has_text="Refused").wait_for()
    assert "setup.exe" in refused.inner_text() and "not allowed" in refused.inner_text()
    page.locator("#assets-results").filter(has_text="1–3 of 3 assets").wait_for()
    assert page.locator(".asset-tile img").count() == 3
    from playwright.sync_api import expect  # here: the module is collected without playwright too

    for n in range(3):
        expect(page.locator(".asset-tile img").nth(n)).to_have_js_property("complete", True)
    screenshot(page, "studio-assets-upload.png")
    stored = studio.call("GET", "/api/assets")
    assert sorted(a["title"] for a in stored) == ["blue.jpg", "green.png", "red.png"]
    assert_clean(page)


def test_folders_and_moves_by_dropping_and_by_the_select(studio: Any, new_context: Any) -> None:
    from playwright.sync_api import expect

    studio_upload(studio, "sun.png", solid(60, 40, RED))
    studio_upload(studio, "moon.png", solid(60, 40, BLUE))
    page = open_page(new_context())
    login(page, studio)
    page.goto(studio.base + "/studio/assets")
    if not page.locator("#folder-name").is_visible():  # open by itself while there is no folder
        page.locator("summary", has_text="New folder").click()
    page.get_by_label("Name").fill("Holidays")
    page.get_by_role("button", name="Create folder").click()
    page.get_by_text("Created folder Holidays.").wait_for()
    page.get_by_role("link", name="All assets").click()
    expect(page.get_by_text("Created folder Holidays.")).to_have_count(0)  # the library, not the folder's page
    scripts_ran(page)  # dropping on a folder works through assets.js
    tile = page.locator(".asset-tile").filter(has_text="sun.png")
    folder = page.locator(".folder-link", has_text="Holidays")
    tile.drag_to(folder)
    page.get_by_text("Moved 1 asset to Holidays.").wait_for()
    # by keyboard: a checkbox, the select and its button (on the page the move came back to)
    page.get_by_label("Select moon.png").check()
    page.get_by_label("Move the selected assets to").select_option(label="Holidays")
    with page.expect_navigation():
        page.get_by_role("button", name="Move to folder").press("Enter")
    page.get_by_text("Moved 1 asset to Holidays.").wait_for()
    page.locator(".folder-link", has_text="Holidays").click()
    page.locator("#assets-results").filter(has_text="1–2 of 2 assets").wait_for()
    assert sorted(page.locator(".asset-title").all_inner_texts()) == ["moon.png", "sun.png"]
    screenshot(page, "studio-assets-folder.png")
    page.get_by_role("button", name="List").click()
    page.locator("table.asset-table").wait_for()
    screenshot(page, "studio-assets-list.png")
    page.get_by_role("button", name="Grid").click()
    page.locator(".asset-grid").wait_for()
    assert_clean(page)


def test_the_focal_point_is_set_by_clicking_and_the_crop_follows(studio: Any, new_context: Any) -> None:
    from playwright.sync_api import expect

    studio_upload(studio, "halves.png", halves(400, 100, RED, BLUE))
    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("link", name="Assets", exact=True).click()
    page.get_by_role("link", name="halves.png").first.click()
    picture = page.locator("#focal-image")
    for x, colour in ((0.02, RED), (0.98, BLUE)):
        # a click sets the point once assets.js has made the picture settable
        # (also on the page that the last save came back to), measured once
        # the picture has loaded: before, its box may still be the empty
        # image's, and a click meant for 2% across lands on its edge (0%)
        expect(picture).to_have_class(re.compile(r"\bfocal-settable\b"))
        wait_until(page, "document.querySelector('#focal-image').complete"
                         " && document.querySelector('#focal-image').naturalWidth > 0")
        box = picture.bounding_box()
        assert box is not None
        picture.click(position={"x": box["width"] * x, "y": box["height"] / 2})
        expect(page.locator("#focal-mark")).to_be_visible()
        assert abs(float(page.get_by_label("Across").input_value()) - x) < 0.02
        page.get_by_role("button", name="Save").click()
        page.get_by_text("Saved.").wait_for()
        crop = page.locator("#crop-preview")
        assert _near(_colour(page, crop.get_attribute("src") or ""), colour), x
    screenshot(page, "studio-assets-focal.png")
    assert_clean(page)


def test_a_new_file_keeps_the_id_and_serves_the_new_picture(studio: Any, new_context: Any,
                                                            tmp_path: Any) -> None:
    asset = studio_upload(studio, "swap.png", solid(100, 60, RED))
    page = open_page(new_context())
    login(page, studio)
    page.goto(f"{studio.base}/studio/assets/{asset['_id']}")
    old = page.locator("#focal-image").get_attribute("src") or ""
    assert _near(_colour(page, old), RED)
    new_file = tmp_path / "swap-green.png"
    new_file.write_bytes(solid(60, 100, GREEN))
    page.get_by_label("New file").set_input_files(str(new_file))
    page.get_by_role("button", name="Replace file").click()
    page.get_by_text("Replaced the file with swap-green.png.").wait_for()
    assert page.url == f"{studio.base}/studio/assets/{asset['_id']}"
    assert "60 × 100 pixels" in page.locator(".facts").inner_text()
    src = page.locator("#focal-image").get_attribute("src") or ""
    assert src != old and _near(_colour(page, src), GREEN)
    assert _near(_colour(page, f"/studio/assets/thumb/{asset['_id']}"), GREEN)
    assert page.request.get(studio.base + old).status == 404
    screenshot(page, "studio-assets-asset.png")
    page.get_by_role("link", name="Delete this asset…").click()
    page.get_by_text("No item uses this asset.").wait_for()
    screenshot(page, "studio-assets-delete.png")
    assert_clean(page)


def studio_upload(studio: Any, name: str, data: bytes) -> dict[str, Any]:
    """An asset uploaded through the API (multipart, with the admin key)."""
    import urllib.request
    boundary = "quireboundary"
    body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"{name}\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
    request = urllib.request.Request(studio.base + "/api/assets", method="POST", data=body, headers={
        "api-key": studio.key, "content-type": f"multipart/form-data; boundary={boundary}"})
    import json
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())[0]  # type: ignore[no-any-return]


def test_the_library_on_a_phone(studio: Any, new_context: Any) -> None:
    from tests.studio.browsing import NARROW

    studio_upload(studio, "phone.png", solid(80, 60, GREEN))
    page = open_page(new_context(NARROW))
    login(page, studio)
    page.goto(studio.base + "/studio/assets")
    page.locator(".asset-tile").first.wait_for()
    width = page.evaluate("() => document.scrollingElement.scrollWidth")
    assert width <= NARROW["width"] + 1, width
    screenshot(page, "studio-assets-phone.png")
    assert_clean(page)
