"""The assets manager at the HTTP level: permissions of every route, CSRF,
the library's paging, search and filters, folders, uploads one file per
request (a refused file stores nothing of itself), an asset's page (edit,
focal point, usage, replace, delete) and hostile input."""

from __future__ import annotations

import re
from typing import Any

import pytest
from PIL import Image

from tests.admin.conftest import new_browser
from tests.assets.helpers import BLUE, GREEN, RED, files_under, halves, solid, upload_one
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import Browser, logged_in, page_csrf
from tests.studio.conftest import post_form as _post_form

ROLE_READ = {"assets/read": True}


def post_form(browser: Browser, path: str, data: Any, token_from: str = "/studio/assets", **kwargs: Any) -> Any:
    """A studio form posted, following the redirect to the page that says what was done."""
    kwargs.setdefault("follow_redirects", True)
    return _post_form(browser, path, data, token_from, **kwargs)


def _csrf(browser: Browser) -> str:
    return page_csrf(browser.get("/studio/assets").text)


def _upload(browser: Browser, files: list[tuple[str, bytes, str]], token: str | None = None,
            json: bool = True, **data: str) -> Any:
    headers = {"accept": "application/json"} if json else {}
    if token is not None:
        headers["x-csrf-token"] = token
    return browser.post("/studio/assets", files=[("file", f) for f in files], data=data, headers=headers)


def _role(admin: Api, name: str, *perms: str) -> None:
    admin.put(f"/api/system/roles/{name}", json={"permissions": {p: True for p in perms}})


def test_every_route_needs_a_login_and_its_permission(app: Any, admin: Api) -> None:
    asset = upload_one(admin, "a.png", solid(8, 8), "image/png")
    stranger = new_browser(app)
    for path in ("/studio/assets", f"/studio/assets/{asset['_id']}", f"/studio/assets/{asset['_id']}/delete"):
        response = stranger.get(path, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"].startswith("/auth/login")
    _role(admin, "nobody", "content/none/read")
    nobody = logged_in(app, "nina", "nobody")
    for path in ("/studio/assets", f"/studio/assets/{asset['_id']}", f"/studio/assets/{asset['_id']}/crop"):
        assert nobody.get(path).status_code == 403
    assert 'href="/studio/assets"' not in nobody.get("/").text
    _role(admin, "viewer", "assets/read")
    vic = logged_in(app, "vic", "viewer")
    library = vic.get("/studio/assets")
    assert library.status_code == 200 and 'href="/studio/assets"' in library.text
    assert 'id="upload-zone"' not in library.text and 'id="move"' not in library.text
    page = vic.get(f"/studio/assets/{asset['_id']}").text
    assert "Replace the file" not in page and "Delete this asset" not in page
    token = page_csrf(page)
    # a role without the permission is refused on the server whatever it posts
    assert post_form(vic, f"/studio/assets/{asset['_id']}", {"title": "x"}, "/studio/assets").status_code == 403
    assert post_form(vic, "/studio/assets/folders", {"name": "x"}, "/studio/assets").status_code == 403
    assert post_form(vic, f"/studio/assets/{asset['_id']}/delete", {}, "/studio/assets").status_code == 403
    assert vic.get(f"/studio/assets/{asset['_id']}/delete").status_code == 403
    refused = _upload(vic, [("b.png", solid(4, 4), "image/png")], token)
    assert refused.status_code == 403 and "assets/upload" in refused.json()["error"]
    assert admin.get(f"/api/assets/{asset['_id']}").json()["title"] == "a.png"
    assert len(admin.get("/api/assets").json()) == 1


def test_writes_without_the_token_are_refused_and_store_nothing(app: Any, admin: Api) -> None:
    asset = upload_one(admin, "a.png", solid(8, 8), "image/png")
    ann = logged_in(app)
    ann.get("/studio/assets")
    for path, data in ((f"/studio/assets/{asset['_id']}", {"title": "changed"}),
                       ("/studio/assets/folders", {"name": "Sneaky"}),
                       ("/studio/assets/move", {"ids": asset["_id"], "folder": ""}),
                       (f"/studio/assets/{asset['_id']}/delete", {})):
        response = ann.post(path, data=data)
        assert response.status_code == 403, path
    assert _upload(ann, [("b.png", solid(4, 4), "image/png")], "wrong").status_code == 403
    assert ann.post(f"/studio/assets/{asset['_id']}/replace",
                    files=[("file", ("c.png", solid(4, 4), "image/png"))]).status_code == 403
    assert admin.get(f"/api/assets/{asset['_id']}").json()["title"] == "a.png"
    assert admin.get("/api/assets/folders").json() == []
    assert len(admin.get("/api/assets").json()) == 1


def test_uploads_store_each_file_on_its_own_and_say_why_one_is_refused(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    token = _csrf(ann)
    ok = _upload(ann, [("red.png", solid(10, 10), "image/png")], token)
    assert ok.status_code == 200 and ok.json()["stored"][0]["title"] == "red.png"
    bad = _upload(ann, [("evil.exe", b"MZ\x90\x00" + b"\x00" * 100, "application/octet-stream")], token)
    assert bad.status_code == 415 and "evil.exe" in bad.json()["error"]
    # a plain form post of several files: the good ones stored, the refusal said
    form = ann.post("/studio/assets", data={"csrf": token}, follow_redirects=True,
                    files=[("files", ("g.png", solid(6, 6, GREEN), "image/png")),
                           ("files", ("bad.exe", b"MZ\x90\x00" + b"\x00" * 100, "application/octet-stream")),
                           ("files", ("b.png", solid(6, 6, BLUE), "image/png"))])
    assert form.status_code == 200  # followed the redirect to the library
    assert "Uploaded 2 files." in form.text and "Refused bad.exe" in form.text
    titles = sorted(a["title"] for a in admin.get("/api/assets").json())
    assert titles == ["b.png", "g.png", "red.png"]
    assert _upload(ann, [], token).status_code == 400


def test_uploads_go_into_the_folder_shown(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    created = post_form(ann, "/studio/assets/folders", {"name": "Photos"}, "/studio/assets")
    assert "Created folder Photos." in created.text
    folder = admin.get("/api/assets/folders").json()[0]
    response = _upload(ann, [("in.png", solid(4, 4), "image/png")], _csrf(ann), folder=folder["_id"])
    assert response.status_code == 200
    asset = admin.get(f"/api/assets/{response.json()['stored'][0]['_id']}").json()
    assert asset["folder"] == folder["_id"]


def test_library_pages_searches_and_filters(app: Any, admin: Api) -> None:
    for n in range(30):
        upload_one(admin, f"pic{n:02d}.png", solid(4, 4), "image/png", tags="sea" if n % 3 == 0 else "land")
    upload_one(admin, "notes.txt", b"hello notes", "text/plain")
    ann = logged_in(app)
    page = ann.get("/studio/assets", params={"limit": "24"}).text
    assert "1–24 of 31 assets" in page and "Page 1 of 2" in page
    assert page.count('class="asset-tile"') == 24
    second = ann.get("/studio/assets", params={"limit": "24", "page": "2"}).text
    assert "25–31 of 31 assets" in second
    assert "3 of 1" not in ann.get("/studio/assets", params={"q": "PIC0"}).text
    found = ann.get("/studio/assets", params={"q": "pic0"}).text
    assert "1–10 of 10 assets" in found
    assert "1–10 of 10 assets" in ann.get("/studio/assets", params={"tag": "sea"}).text
    docs = ann.get("/studio/assets", params={"type": "document"}).text
    assert "1–1 of 1 assets" in docs and "notes.txt" in docs
    # a fragment for htmx: only the results
    fragment = ann.get("/studio/assets", params={"q": "pic"}, headers={"hx-request": "true"}).text
    assert fragment.lstrip().startswith("{#") is False and 'id="assets-results"' in fragment and "<html" not in fragment
    # hostile query strings are defaults, never errors
    for params in ({"limit": "x"}, {"page": "-4"}, {"page": "9" * 40}, {"type": "<script>"},
                   {"folder": "../../x"}, {"q": "(" * 5000}, {"tag": "\x00"}):
        assert ann.get("/studio/assets", params=params).status_code == 200, params


def test_the_view_is_remembered_per_user(app: Any, admin: Api) -> None:
    upload_one(admin, "a.png", solid(4, 4), "image/png")
    ann = logged_in(app)
    assert 'class="asset-tile"' in ann.get("/studio/assets").text
    post_form(ann, "/studio/assets/view", {"view": "list", "back": "/studio/assets"}, "/studio/assets")
    listed = ann.get("/studio/assets").text
    assert 'class="asset-row"' in listed and 'class="asset-tile"' not in listed
    other = logged_in(app, "bob", "admin")
    assert 'class="asset-tile"' in other.get("/studio/assets").text
    assert post_form(ann, "/studio/assets/view", {"view": "table"}, "/studio/assets").status_code == 400


def test_folders_are_created_renamed_moved_into_and_deleted(app: Any, admin: Api) -> None:
    a = upload_one(admin, "a.png", solid(4, 4), "image/png")
    b = upload_one(admin, "b.png", solid(4, 4), "image/png")
    ann = logged_in(app)
    post_form(ann, "/studio/assets/folders", {"name": "Trips"}, "/studio/assets")
    trips = admin.get("/api/assets/folders").json()[0]
    post_form(ann, "/studio/assets/folders", {"name": "Rome", "parent": trips["_id"]}, "/studio/assets")
    rome = next(f for f in admin.get("/api/assets/folders").json() if f["name"] == "Rome")
    bad = post_form(ann, "/studio/assets/folders", {"name": "a/b"}, "/studio/assets")
    assert bad.status_code == 400 and "cannot contain /" in bad.text
    moved = post_form(ann, "/studio/assets/move", [("ids", a["_id"]), ("ids", b["_id"]), ("folder", rome["_id"]),
                                                   ("back", "/studio/assets")], "/studio/assets")
    assert "Moved 2 assets to Rome." in moved.text
    inside = ann.get("/studio/assets", params={"folder": rome["_id"]}).text
    assert "1–2 of 2 assets" in inside and "Trips / Rome" in inside
    assert "No assets" in ann.get("/studio/assets", params={"folder": "none"}).text
    renamed = post_form(ann, f"/studio/assets/folders/{rome['_id']}", {"name": "Roma"}, "/studio/assets")
    assert "Renamed the folder to Roma." in renamed.text
    assert post_form(ann, "/studio/assets/move", [("ids", a["_id"]), ("folder", "f" * 24)],
                     "/studio/assets").status_code == 400
    assert post_form(ann, "/studio/assets/move", [("folder", rome["_id"])], "/studio/assets").status_code == 400
    gone = post_form(ann, f"/studio/assets/folders/{trips['_id']}/delete", {}, "/studio/assets")
    assert "2 assets moved to no folder" in gone.text
    assert admin.get("/api/assets/folders").json() == []
    assert admin.get(f"/api/assets/{a['_id']}").json()["folder"] is None
    assert post_form(ann, "/studio/assets/folders/nope/delete", {}, "/studio/assets").status_code == 404
    # a move back to an address elsewhere never leaves the library
    back = post_form(ann, "/studio/assets/move", [("ids", a["_id"]), ("folder", ""),
                                                  ("back", "https://evil.example/")], "/studio/assets",
                     follow_redirects=False)
    assert back.headers["location"] == "/studio/assets"


def test_the_asset_page_edits_details_and_the_focal_point(app: Any, admin: Api) -> None:
    asset = upload_one(admin, "sea.png", halves(200, 100), "image/png")
    ann = logged_in(app)
    page = ann.get(f"/studio/assets/{asset['_id']}").text
    assert "200 × 100 pixels" in page and "#ff0000" in page and "Not used by any item." in page
    saved = post_form(ann, f"/studio/assets/{asset['_id']}",
                      {"title": "The sea", "altText": "Waves", "description": "Blue", "tags": "sea, blue, sea",
                       "folder": "", "fp_x": "0.9", "fp_y": "0.5"}, "/studio/assets")
    assert saved.status_code == 200 and "Saved." in saved.text
    stored = admin.get(f"/api/assets/{asset['_id']}").json()
    assert stored["title"] == "The sea" and stored["altText"] == "Waves" and stored["tags"] == ["sea", "blue"]
    assert stored["fp"] == {"x": 0.9, "y": 0.5}
    for data, message in (({"title": "", "fp_x": "", "fp_y": ""}, "A title is required"),
                          ({"title": "t", "fp_x": "2", "fp_y": "0.1"}, "numbers from 0 to 1"),
                          ({"title": "t", "fp_x": "0.5", "fp_y": ""}, "numbers from 0 to 1"),
                          ({"title": "t", "fp_x": "nan", "fp_y": "x"}, "numbers from 0 to 1"),
                          ({"title": "t", "folder": "0" * 24}, "is not a folder"),
                          ({"title": "t" * 20_000}, "At most")):
        response = post_form(ann, f"/studio/assets/{asset['_id']}", data, "/studio/assets")
        assert response.status_code == 400 and message in response.text, data
    assert admin.get(f"/api/assets/{asset['_id']}").json()["title"] == "The sea"
    cleared = post_form(ann, f"/studio/assets/{asset['_id']}", {"title": "The sea", "fp_x": "", "fp_y": ""},
                        "/studio/assets")
    assert cleared.status_code == 200 and admin.get(f"/api/assets/{asset['_id']}").json()["fp"] is None
    assert ann.get("/studio/assets/" + "0" * 24).status_code == 404
    assert ann.get("/studio/assets/not-an-id").status_code == 404


def test_the_crop_follows_the_focal_point(app: Any, admin: Api) -> None:
    # left half red, right half blue: a narrow crop at the far right is blue
    asset = upload_one(admin, "halves.png", halves(400, 100), "image/png")
    ann = logged_in(app)

    def crop_colour() -> tuple[int, ...]:
        response = ann.get(f"/studio/assets/{asset['_id']}/crop", follow_redirects=True)
        assert response.status_code == 200
        import io
        image = Image.open(io.BytesIO(response.content)).convert("RGB")
        return image.getpixel((image.width // 2, image.height // 2))  # type: ignore[return-value]

    for x, colour in (("0.0", RED), ("1.0", BLUE)):
        post_form(ann, f"/studio/assets/{asset['_id']}", {"title": "h", "fp_x": x, "fp_y": "0.5"}, "/studio/assets")
        got = crop_colour()
        assert all(abs(a - b) < 40 for a, b in zip(got, colour, strict=True)), (x, got)


def test_usage_counts_items_through_the_index_and_warns_on_delete(app: Any, admin: Api) -> None:
    used = upload_one(admin, "used.png", solid(8, 8), "image/png")
    put_model(admin, "posts", type="collection", fields=[
        {"name": "title", "type": "text"}, {"name": "image", "type": "asset"},
        {"name": "blocks", "type": "set", "opts": {"fields": [{"name": "pic", "type": "asset"}]}, "multiple": True}])
    one = create_item(admin, "posts", {"title": "One", "image": {"_id": used["_id"]}})
    create_item(admin, "posts", {"title": "Two", "blocks": [{"pic": {"_id": used["_id"]}}]})
    three = create_item(admin, "posts", {"title": "Three", "image": {"_id": used["_id"]}})
    ann = logged_in(app)
    page = ann.get(f"/studio/assets/{used['_id']}").text
    assert "Used by 3 items" in page
    assert f'href="/studio/content/posts/item/{one["_id"]}"' in page and ">Two<" in page
    # an item that stops using it, and one deleted, are no longer counted
    admin.post("/api/content/item/posts", json={"data": {"_id": one["_id"], "title": "One", "image": None}})
    admin.delete(f"/api/content/item/posts/{three['_id']}")
    confirm = ann.get(f"/studio/assets/{used['_id']}/delete").text
    assert "Used by 1 item:" in confirm and ">Two<" in confirm
    # a reader of assets who may not read posts sees the count, not the titles
    _role(admin, "viewer", "assets/read")
    vic = logged_in(app, "vic", "viewer").get(f"/studio/assets/{used['_id']}").text
    assert "Used by 1 item (1 you cannot open)" in vic and ">Two<" not in vic
    done = post_form(ann, f"/studio/assets/{used['_id']}/delete", {}, "/studio/assets")
    assert done.status_code == 200 and "Deleted used.png." in done.text
    assert admin.get(f"/api/assets/{used['_id']}").status_code == 404
    # the model going takes its references along
    other = upload_one(admin, "other.png", solid(8, 8), "image/png")
    create_item(admin, "posts", {"title": "Four", "image": {"_id": other["_id"]}})
    assert "Used by 1 item" in ann.get(f"/studio/assets/{other['_id']}").text
    assert admin.delete("/api/system/models/posts").status_code == 200
    assert "Not used by any item." in ann.get(f"/studio/assets/{other['_id']}").text


def test_the_index_is_built_from_items_stored_before_it(app: Any, admin: Api, data_dir: Any) -> None:
    used = upload_one(admin, "used.png", solid(8, 8), "image/png")
    put_model(admin, "posts", type="collection", fields=[{"name": "image", "type": "asset"}])
    create_item(admin, "posts", {"image": {"_id": used["_id"]}})
    from quire.content.asset_refs import BUILT, REFS, AssetRefs
    quire = app.state.quire
    refs = quire.get(AssetRefs)
    quire.store.collection(REFS).delete_many(None)
    quire.store.delete_meta(BUILT)
    assert refs.count(used["_id"]) == 0
    refs.setup()
    assert refs.count(used["_id"]) == 1
    # a reference whose item is gone another way (no event) is not counted where it is listed
    refs.refs.insert({"asset": used["_id"], "model": "posts", "item": "f" * 24})
    refs.refs.insert({"asset": used["_id"], "model": "gone", "item": "e" * 24})
    assert refs.count(used["_id"]) == 3
    pairs, total = refs.used_by(used["_id"])
    assert total == 1 and [model for model, _ in pairs] == ["posts"]


def test_replacing_the_file_keeps_the_id_and_drops_the_old_images(app: Any, admin: Api, data_dir: Any) -> None:
    asset = upload_one(admin, "old.png", solid(40, 20, RED), "image/png", title="Keep me")
    ann = logged_in(app)
    old_thumb = ann.get(f"/studio/assets/thumb/{asset['_id']}", follow_redirects=False).headers["location"]
    assert ann.get(old_thumb).status_code == 200
    token = _csrf(ann)
    response = ann.post(f"/studio/assets/{asset['_id']}/replace", data={"csrf": token}, follow_redirects=True,
                        files=[("file", ("new.png", solid(30, 60, BLUE), "image/png"))])
    assert response.status_code == 200 and "Replaced the file with new.png." in response.text
    stored = admin.get(f"/api/assets/{asset['_id']}").json()
    assert stored["title"] == "Keep me" and (stored["width"], stored["height"]) == (30, 60)
    assert stored["path"] != asset["path"] and ann.get(f"/storage/uploads{asset['path']}").status_code == 404
    assert ann.get(old_thumb).status_code == 404
    new_thumb = ann.get(f"/studio/assets/thumb/{asset['_id']}", follow_redirects=True)
    assert new_thumb.status_code == 200 and new_thumb.url.path != old_thumb
    refused = ann.post(f"/studio/assets/{asset['_id']}/replace", data={"csrf": token},
                       files=[("file", ("x.exe", b"MZ" + b"\x00" * 64, "application/octet-stream"))])
    assert refused.status_code == 415 and "x.exe" in refused.text
    assert admin.get(f"/api/assets/{asset['_id']}").json()["path"] == stored["path"]
    uploads = [p for p in files_under(data_dir / "uploads")]
    assert len(uploads) == 1  # the refused file left nothing behind, the old one is gone
    empty = ann.post(f"/studio/assets/{asset['_id']}/replace", data={"csrf": token},
                     files=[("other", ("y.png", b"", "image/png"))])
    assert empty.status_code == 400


def test_a_file_that_is_no_picture_has_a_page_too(app: Any, admin: Api) -> None:
    notes = upload_one(admin, "notes.txt", b"hello notes", "text/plain")
    ann = logged_in(app)
    page = ann.get(f"/studio/assets/{notes['_id']}").text
    assert f'href="/storage/uploads{notes["path"]}"' in page and "Focal point" not in page
    assert ">TXT<" in ann.get("/studio/assets").text
    assert ann.get(f"/studio/assets/{notes['_id']}/crop").status_code == 404
    assert "Focal point" not in post_form(ann, f"/studio/assets/{notes['_id']}", {"title": ""}).text


@pytest.mark.parametrize("path", ["/studio/assets/move", "/studio/assets/folders",
                                  "/studio/assets/000000000000000000000000"])
def test_hostile_forms_are_4xx(app: Any, admin: Api, path: str) -> None:
    ann = logged_in(app)
    for data in ({"ids": "\x00", "folder": "\x00", "name": "\x00", "title": "\x00"},
                 {"name": "n" * 100_000}, [("ids", "x")] * 600):
        response = post_form(ann, path, data, "/studio/assets")
        assert 400 <= response.status_code < 500, (path, response.status_code)
    assert re.search(r"<h1>", ann.get("/studio/assets").text)


@pytest.mark.parametrize("kept, ids", [(50_000, 400), (50_000, 2), (3, 400)])
def test_title_search_in_memory_and_in_the_store_agree(app: Any, admin: Api, monkeypatch: Any,
                                                      kept: int, ids: int) -> None:
    from quire.assets import service as asset_service
    monkeypatch.setattr(asset_service, "TITLES_KEPT", kept)
    monkeypatch.setattr(asset_service, "TITLE_IDS", ids)
    for n in range(8):
        upload_one(admin, f"Harbour {n}.png", solid(4, 4), "image/png", tags="sea" if n % 2 else "land")
    upload_one(admin, "Mountain.png", solid(4, 4), "image/png", tags="sea")
    ann = logged_in(app)
    found = ann.get("/studio/assets", params={"q": "HARBOUR", "limit": "24"}).text
    assert "1–8 of 8 assets" in found and "Mountain" not in found
    assert found.index("Harbour 7.png") < found.index("Harbour 0.png")  # newest first
    sea = ann.get("/studio/assets", params={"q": "harbour", "tag": "sea"}).text
    assert "1–4 of 4 assets" in sea and "Harbour 0.png" not in sea
    assert "No assets match" in ann.get("/studio/assets", params={"q": "harbour.*"}).text
    upload_one(admin, "harbour late.png", solid(4, 4), "image/png")  # a write: the titles are read again
    assert "1–9 of 9 assets" in ann.get("/studio/assets", params={"q": "harbour"}).text


def test_a_file_over_the_size_limit_is_refused_with_its_reason_and_leaves_no_file(tmp_path: Any) -> None:
    import os

    from quire.app import build_app
    from quire.config import load_settings

    small = build_app(load_settings(tmp_path, env={"QUIRE_SERVER_QUIET": "true",
                                                   "QUIRE_ASSETS_MAX_UPLOAD_BYTES": "3000"}))
    try:
        ann = logged_in(small)
        token = _csrf(ann)

        def files() -> set[str]:
            return {os.path.join(d, f) for d, _, names in os.walk(tmp_path) for f in names
                    if not f.endswith((".db", ".db-wal", ".db-shm", "-journal"))}

        before = files()
        big = os.urandom(5000)
        refused = _upload(ann, [("big.png", solid(4, 4) + big, "image/png")], token)
        assert refused.status_code == 413 and "big.png" in refused.json()["error"]
        assert files() == before  # nothing of it on disk
        stored = _upload(ann, [("small.png", solid(4, 4), "image/png")], token)
        assert stored.status_code == 200
        assert [a["title"] for a in small.state.quire.assets.find(None, None, None, None, None)[0]] == ["small.png"]
    finally:
        small.state.quire.close()
