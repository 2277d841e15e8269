"""POST /api/assets and the public files under /storage/uploads (issue 3,
behaviour.md section 3): the asset object, sniffed types, storage layout,
limits, refused types, and nothing left behind when an upload fails."""

from __future__ import annotations

import base64
import hashlib
import io
import re
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from quire.app import Quire
from quire.events import Events, Reject
from quire.files import LocalFiles
from tests.assets.helpers import (
    BLUE,
    RED,
    files_under,
    halves_image,
    oriented_jpeg,
    png_claiming,
    raw_get,
    solid,
    upload,
    upload_one,
)
from tests.conftest import Api, role_key
from tests.storage import stored_keys

FIELDS = {"_id", "path", "title", "description", "tags", "mime", "type", "size", "width", "height",
          "colors", "thumbhash", "altText", "folder", "_hash", "_created", "_modified", "_cby"}
IMMUTABLE = "public, max-age=31536000, immutable"
HEX_COLOR = re.compile(r"^#[0-9a-f]{6}$")
STORED = re.compile(r"^/(\d{4})/(\d{2})/(\d{2})/([a-z0-9-]+)_([0-9a-z]+)\.([a-z0-9]+)$")
CLEAN_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">'
             b'<rect width="10" height="10" fill="red"/></svg>')


def today_paths() -> set[str]:
    """Today's UTC date folder, and the next one in case the day turns."""
    now = time.time()
    return {time.strftime("%Y/%m/%d", time.gmtime(now)), time.strftime("%Y/%m/%d", time.gmtime(now + 120))}


def stored_assets(quire: Quire) -> list[dict[str, Any]]:
    return quire.assets.assets.find()


def assert_nothing_stored(quire: Quire, data_dir: Path, admin: Api) -> None:
    assert stored_keys(quire.assets.uploads) == []
    assert stored_assets(quire) == []
    listed = admin.get("/api/assets")
    assert listed.status_code == 200 and listed.json() == []


# -- the asset object -----------------------------------------------------------


def test_single_png_upload_answers_array_with_every_asset_field(admin: Api, quire: Quire) -> None:
    key = quire.auth.create_key("uploader", "admin")
    api = admin.with_key(key["key"])
    content = solid(32, 16, RED)
    before = int(time.time())
    response = upload(api, ("red.png", content, "image/png"))
    after = int(time.time())
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert isinstance(body, list) and len(body) == 1
    asset = body[0]
    assert set(asset) >= FIELDS, FIELDS - set(asset)
    assert re.fullmatch(r"[0-9a-f]{24}", asset["_id"])
    assert STORED.match(asset["path"]) and asset["path"].endswith(".png")
    assert asset["title"] == "red.png"
    assert asset["description"] == "" and asset["altText"] == ""
    assert asset["tags"] == [] and asset["folder"] is None
    assert asset["mime"] == "image/png" and asset["type"] == "image"
    assert asset["size"] == len(content)
    assert (asset["width"], asset["height"]) == (32, 16)
    assert 1 <= len(asset["colors"]) <= 5
    assert all(HEX_COLOR.match(c) for c in asset["colors"])
    assert asset["colors"][0] == "#ff0000"
    assert isinstance(asset["thumbhash"], str) and base64.b64decode(asset["thumbhash"])
    assert asset["_hash"] == hashlib.sha256(content).hexdigest()
    assert before <= asset["_created"] <= after and asset["_modified"] == asset["_created"]
    assert asset["_cby"] == key["_id"]
    # what was answered is what is stored
    got = admin.get(f"/api/assets/{asset['_id']}")
    assert got.status_code == 200 and got.json() == asset


def test_palette_has_at_most_five_colours_for_a_many_coloured_image(admin: Api) -> None:
    image = Image.new("RGB", (70, 10))
    for i, color in enumerate([(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0), (0, 255, 255),
                               (255, 0, 255), (0, 0, 0)]):
        image.paste(color, (i * 10, 0, i * 10 + 10, 10))
    out = io.BytesIO()
    image.save(out, "PNG")
    asset = upload_one(admin, "many.png", out.getvalue())
    assert 1 <= len(asset["colors"]) <= 5
    assert all(HEX_COLOR.match(c) for c in asset["colors"])
    assert len(set(asset["colors"])) == len(asset["colors"])


def test_multiple_files_answer_one_object_each_in_order(admin: Api, quire: Quire) -> None:
    files = [("a.png", solid(8, 8, RED), "image/png"), ("b.png", solid(9, 7, BLUE), "image/png"),
             ("notes.txt", b"hello world\n", "text/plain")]
    response = upload(admin, *files)
    assert response.status_code == 200, response.text
    body = response.json()
    assert [a["title"] for a in body] == ["a.png", "b.png", "notes.txt"]
    assert [(a["width"], a["height"]) for a in body] == [(8, 8), (9, 7), (None, None)]
    assert len({a["_id"] for a in body}) == 3 and len({a["path"] for a in body}) == 3
    for asset, (_, content, _) in zip(body, files, strict=True):
        assert set(asset) >= FIELDS
        assert quire.assets.uploads.read(asset["path"].lstrip("/")) == content
    assert len(admin.get("/api/assets").json()) == 3


def test_mime_is_sniffed_from_bytes_not_from_name_or_content_type(admin: Api, anon: Api) -> None:
    content = solid(10, 10)
    asset = upload_one(admin, "photo.jpg", content, "text/plain")
    assert asset["mime"] == "image/png" and asset["type"] == "image"
    assert asset["path"].endswith(".png") and "/photo_" in asset["path"]
    served = anon.get(f"/storage/uploads{asset['path']}")
    assert served.status_code == 200
    assert served.headers["content-type"] == "image/png"
    assert served.content == content


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("a.txt", "hello")
    return out.getvalue()


PDF = b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"


@pytest.mark.parametrize(("name", "content", "mime", "kind", "ext"), [
    ("pic.png", solid(4, 4), "image/png", "image", "png"),
    ("doc.pdf", PDF, "application/pdf", "document", "pdf"),
    ("bundle.zip", _zip(), "application/zip", "archive", "zip"),
    ("notes.txt", b"just some text\nover two lines\n", "text/plain", "document", "txt"),
    ("data.json", b'{"a": [1, 2, 3]}', "application/json", "code", "json"),
])
def test_type_follows_the_sniffed_mime(admin: Api, name: str, content: bytes, mime: str, kind: str,
                                       ext: str) -> None:
    asset = upload_one(admin, name, content, "application/octet-stream")
    assert (asset["mime"], asset["type"]) == (mime, kind)
    assert asset["path"].endswith(f".{ext}")
    if kind != "image":
        assert asset["width"] is None and asset["height"] is None
        assert asset["colors"] == [] and asset["thumbhash"] is None


# -- storage --------------------------------------------------------------------


def test_file_is_stored_under_dated_folder_with_safe_name_and_unique_suffix(admin: Api,
                                                                           quire: Quire) -> None:
    content = solid(6, 6)
    first = upload_one(admin, "My Photo.PNG", content)
    second = upload_one(admin, "My Photo.PNG", content)
    for asset in (first, second):
        match = STORED.match(asset["path"])
        assert match, asset["path"]
        assert "/".join(match.group(1, 2, 3)) in today_paths()
        assert match.group(4) == "my-photo" and match.group(6) == "png"
        assert quire.assets.uploads.read(asset["path"].lstrip("/")) == content
    assert first["path"] != second["path"]


def test_stored_file_is_public_immutable_with_etag_and_304(admin: Api, anon: Api) -> None:
    content = solid(5, 5)
    asset = upload_one(admin, "pub.png", content)
    url = f"/storage/uploads{asset['path']}"
    served = anon.get(url)
    assert served.status_code == 200
    assert served.content == content
    assert served.headers["cache-control"] == IMMUTABLE
    etag = served.headers["etag"]
    assert etag
    again = anon.get(url, headers={"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["etag"] == etag
    other = anon.get(url, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.content == content


def test_unknown_stored_file_is_json_404(anon: Api) -> None:
    response = anon.get("/storage/uploads/2020/01/01/nothing_0000.png")
    assert response.status_code == 404
    assert "error" in response.json()


def test_exif_orientation_6_swaps_width_and_height(admin: Api) -> None:
    content = oriented_jpeg(halves_image(40, 20, RED, BLUE), 6)
    asset = upload_one(admin, "turned.jpg", content, "image/jpeg")
    assert asset["mime"] == "image/jpeg"
    assert (asset["width"], asset["height"]) == (20, 40)


def test_tags_as_comma_list(admin: Api) -> None:
    asset = upload_one(admin, "t.png", solid(4, 4), tags="nature, sky ,, blue")
    assert asset["tags"] == ["nature", "sky", "blue"]


def test_tags_as_json_array_and_title_from_form(admin: Api) -> None:
    asset = upload_one(admin, "t.png", solid(4, 4), tags='["a b", "c,d"]', title="Sunset")
    assert asset["tags"] == ["a b", "c,d"]
    assert asset["title"] == "Sunset"


def test_tags_json_that_is_not_a_list_of_strings_is_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    response = upload(admin, ("t.png", solid(4, 4)), data={"tags": "[1, 2]"})
    assert response.status_code == 400
    assert "tags" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_upload_into_existing_folder(admin: Api) -> None:
    folder = admin.post("/api/assets/folders", json={"data": {"name": "Photos"}})
    assert folder.status_code == 200, folder.text
    asset = upload_one(admin, "f.png", solid(4, 4), folder=folder.json()["_id"])
    assert asset["folder"] == folder.json()["_id"]


def test_upload_into_unknown_folder_is_400_and_stores_nothing(admin: Api, quire: Quire,
                                                              data_dir: Path) -> None:
    response = upload(admin, ("f.png", solid(4, 4)), data={"folder": "0123456789abcdef01234567"})
    assert response.status_code == 400
    body = response.json()
    assert "Folder" in body["error"] and body.get("fields") == ["folder"]
    assert_nothing_stored(quire, data_dir, admin)


# -- refused types --------------------------------------------------------------

ELF = b"\x7fELF\x02\x01\x01" + b"\x00" * 9 + b"\x02\x00\x3e\x00" + b"\x00" * 60
EXE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + b"\x00" * 60 + b"This program cannot be run in DOS mode"

REFUSED = {
    "html": ("page.html", b"<!DOCTYPE html><html><body><p>hi</p></body></html>"),
    "html named png": ("innocent.png", b"<html><script>alert(1)</script></html>"),
    "php": ("shell.txt", b"<?php system($_GET['c']); ?>"),
    "php short tag": ("short.txt", b"hello <?= $x ?>"),
    "shebang": ("run.txt", b"#!/bin/sh\necho pwned\n"),
    "elf": ("prog.bin", ELF),
    "exe": ("setup.png", EXE),
    "svg script": ("s.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    "svg onload": ("o.svg", b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"><rect/></svg>'),
    "svg external href": (
        "h.svg",
        b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
        b'<image xlink:href="https://evil.example/x.png"/></svg>',
    ),
    "svg foreignObject": (
        "f.svg",
        b'<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div xmlns="http://www.w3.org/1999/xhtml">'
        b'x</div></foreignObject></svg>',
    ),
    "svg entities": (
        "e.svg",
        b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaaaaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
        b'<svg xmlns="http://www.w3.org/2000/svg"><text>&b;</text></svg>',
    ),
    "svg namespaced script": (
        "n.svg",
        b'<svg:svg xmlns:svg="http://www.w3.org/2000/svg"><svg:script>alert(1)</svg:script></svg:svg>',
    ),
    "xhtml in xml with prefixed script": (
        "page.xml",
        b'<?xml version="1.0"?><x:html xmlns:x="http://www.w3.org/1999/xhtml">'
        b'<x:body><x:script>alert(document.domain)</x:script></x:body></x:html>',
    ),
    "xml with xhtml script after 64 KiB": (
        "late.xml",
        b'<?xml version="1.0"?><root xmlns="http://www.w3.org/1999/xhtml"><!--' + b"a" * 70000
        + b'--><script>alert(document.domain)</script></root>',
    ),
    "xml with xslt stylesheet": (
        "styled.xml",
        b'<?xml version="1.0"?><?xml-stylesheet type="text/xsl" href="/storage/uploads/2026/01/01/x_00000000.xml"?><r/>',
    ),
    "svg href": ("a.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><a href="javascript:alert(1)"><rect/></a></svg>'),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_dangerous_types_are_refused_with_415(admin: Api, quire: Quire, data_dir: Path, case: str) -> None:
    name, content = REFUSED[case]
    response = upload(admin, (name, content, "image/png"))
    assert response.status_code == 415, response.text
    assert response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_clean_svg_is_accepted_and_served_with_a_content_security_policy(admin: Api, anon: Api) -> None:
    asset = upload_one(admin, "logo.svg", CLEAN_SVG, "image/svg+xml")
    assert asset["mime"] == "image/svg+xml" and asset["type"] == "image"
    assert asset["path"].endswith(".svg")
    served = anon.get(f"/storage/uploads{asset['path']}")
    assert served.status_code == 200
    assert served.headers["content-type"].startswith("image/svg+xml")
    assert served.content == CLEAN_SVG
    policy = served.headers["content-security-policy"]
    assert "default-src 'none'" in policy
    assert served.headers["x-content-type-options"] == "nosniff"


def test_configured_refused_types_are_415(admin: Api, quire: Quire, data_dir: Path) -> None:
    quire.assets.settings = replace(quire.assets.settings, refused_types=("application/pdf",))
    response = upload(admin, ("doc.pdf", PDF))
    assert response.status_code == 415
    assert "application/pdf" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


# -- limits ---------------------------------------------------------------------


def test_file_over_max_upload_bytes_is_413(admin: Api, quire: Quire, data_dir: Path) -> None:
    quire.assets.settings = replace(quire.assets.settings, max_upload_bytes=1000)
    response = upload(admin, ("big.txt", b"x" * 2000, "text/plain"))
    assert response.status_code == 413
    assert "1000" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)
    small = upload(admin, ("small.txt", b"x" * 900, "text/plain"))
    assert small.status_code == 200


def test_request_over_max_request_bytes_is_413(admin: Api, quire: Quire, data_dir: Path) -> None:
    quire.assets.settings = replace(quire.assets.settings, max_request_bytes=2000)
    response = upload(admin, ("big.txt", b"x" * 5000, "text/plain"))
    assert response.status_code == 413
    assert "error" in response.json()
    assert_nothing_stored(quire, data_dir, admin)


def test_one_refused_file_in_a_multi_upload_stores_nothing(admin: Api, quire: Quire, data_dir: Path) -> None:
    response = upload(admin, ("ok1.png", solid(4, 4)), ("ok2.txt", b"fine"),
                      ("bad.html", b"<html><body>x</body></html>"), ("ok3.png", solid(5, 5)))
    assert response.status_code == 415
    assert "bad.html" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_one_oversized_file_in_a_multi_upload_stores_nothing(admin: Api, quire: Quire, data_dir: Path) -> None:
    quire.assets.settings = replace(quire.assets.settings, max_upload_bytes=1000)
    response = upload(admin, ("ok.txt", b"fine"), ("big.txt", b"y" * 1500))
    assert response.status_code == 413
    assert_nothing_stored(quire, data_dir, admin)


def test_upload_failing_after_files_were_written_removes_them(admin: Api, quire: Quire, data_dir: Path,
                                                              events: Events) -> None:
    seen: list[str] = []

    def refuse_second(asset: dict[str, Any], **_: Any) -> None:
        seen.append(asset["title"])
        if len(seen) == 2:
            raise Reject("second file refused by a hook")

    events.on("assets.asset.save", refuse_second)
    response = upload(admin, ("one.png", solid(4, 4)), ("two.png", solid(5, 5)), ("three.png", solid(6, 6)))
    assert response.status_code == 400
    assert response.json()["error"] == "second file refused by a hook"
    assert seen == ["one.png", "two.png"]
    assert_nothing_stored(quire, data_dir, admin)


@pytest.mark.parametrize("name", [
    "../../evil.png", "../../../../../../tmp/evil.png", "/etc/evil.png", "..\\..\\evil.png",
    "C:\\Windows\\evil.png", "Fötö ñamé 图片.png", "....png", ".hidden.png", "%2e%2e%2fevil.png",
])
def test_names_cannot_escape_the_dated_upload_folder(admin: Api, quire: Quire, tmp_path: Path,
                                                     name: str) -> None:
    content = solid(4, 4)
    asset = upload_one(admin, name, content, "image/png")
    match = STORED.match(asset["path"])
    assert match, asset["path"]
    assert "/".join(match.group(1, 2, 3)) in today_paths()
    key = asset["path"].lstrip("/")
    assert stored_keys(quire.assets.uploads) == [key]
    assert quire.assets.uploads.read(key) == content
    if isinstance(quire.assets.uploads, LocalFiles):
        # the only file written anywhere below the test's temp dir is that one
        stored = (quire.assets.uploads.root / key).resolve()
        written = [p for p in files_under(tmp_path) if p.suffix == ".png"]
        assert [p.resolve() for p in written] == [stored]


def test_unicode_name_becomes_ascii_stem(admin: Api) -> None:
    asset = upload_one(admin, "Fötö ñamé.png", solid(4, 4))
    assert STORED.match(asset["path"]).group(4) == "foto-name"  # type: ignore[union-attr]
    assert asset["title"] == "Fötö ñamé.png"


def _secret_beside(data_dir: Path) -> None:
    """The database file next to the uploads (on PostgreSQL, a file of the
    same name): what a traversal would reach."""
    if not (data_dir / "quire.db").exists():
        (data_dir / "quire.db").write_bytes(b"SQLite format 3\x00 (a stand-in)")


TRAVERSALS = [
    "/storage/uploads/../quire.db",
    "/storage/uploads/..%2Fquire.db",
    "/storage/uploads/..%2fquire.db",
    "/storage/uploads/%2e%2e/quire.db",
    "/storage/uploads/%2e%2e%2fquire.db",
    "/storage/uploads/2020/../../quire.db",
    "/storage/uploads/..%5Cquire.db",
    "/storage/uploads//etc/passwd",
    "/storage/thumbs/../quire.db",
    "/storage/thumbs/..%2Fquire.db",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_storage_paths_that_leave_the_folder_are_404(admin: Api, anon: Api, data_dir: Path, path: str) -> None:
    upload_one(admin, "x.png", solid(4, 4))  # the uploads folder exists
    _secret_beside(data_dir)
    response = anon.get(path)
    assert response.status_code == 404
    assert "error" in response.json()
    assert not response.content.startswith(b"SQLite format")


@pytest.mark.parametrize("path", ["/storage/uploads/../quire.db", "/storage/uploads/../../data/quire.db",
                                  "/storage/uploads/./../quire.db", "/storage/thumbs/../quire.db",
                                  "/storage/uploads/.%2e/quire.db"])
def test_storage_traversal_sent_raw_to_the_app_is_404(admin: Api, app: Any, data_dir: Path, path: str) -> None:
    upload_one(admin, "x.png", solid(4, 4))
    _secret_beside(data_dir)
    status, headers, body = raw_get(app, path)
    assert status == 404
    assert headers["content-type"].startswith("application/json")
    assert b"SQLite format" not in body


# -- images that cannot be read ---------------------------------------------------


def test_decompression_bomb_by_configured_max_pixels_is_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    quire.assets.settings = replace(quire.assets.settings, max_pixels=1_000_000)
    response = upload(admin, ("wide.png", solid(2000, 1000), "image/png"))
    assert response.status_code == 400
    assert "pixels" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_png_header_claiming_huge_dimensions_is_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    response = upload(admin, ("bomb.png", png_claiming(60000, 60000), "image/png"))
    assert response.status_code == 400
    assert "pixels" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_corrupt_bytes_with_a_jpeg_signature_are_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    content = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + b"\x13\x37" * 200
    response = upload(admin, ("broken.jpg", content, "image/jpeg"))
    assert response.status_code == 400
    assert "broken.jpg" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_truncated_png_is_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    content = solid(50, 50)[:60]
    response = upload(admin, ("cut.png", content, "image/png"))
    assert response.status_code == 400
    assert_nothing_stored(quire, data_dir, admin)


def test_empty_file_is_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    response = upload(admin, ("empty.png", b"", "image/png"))
    assert response.status_code == 400
    assert "empty" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


# -- malformed requests -----------------------------------------------------------


def test_multipart_without_files_parts_is_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    response = admin.post("/api/assets", files=[("other", ("a.png", solid(4, 4), "image/png"))],
                          data={"title": "x"})
    assert response.status_code == 400
    assert "files" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_empty_multipart_body_is_400(admin: Api) -> None:
    response = admin.post("/api/assets", content=b"--xyz--\r\n",
                          headers={"content-type": "multipart/form-data; boundary=xyz"})
    assert response.status_code == 400
    assert "error" in response.json()


@pytest.mark.parametrize(("content_type", "content"), [
    ("application/json", b'{"files": ["a.png"]}'),
    ("application/x-www-form-urlencoded", b"files=a.png"),
    ("image/png", solid(4, 4)),
])
def test_non_multipart_body_is_400(admin: Api, quire: Quire, data_dir: Path, content_type: str,
                                   content: bytes) -> None:
    response = admin.post("/api/assets", content=content, headers={"content-type": content_type})
    assert response.status_code == 400
    assert "multipart" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_malformed_multipart_is_400(admin: Api) -> None:
    response = admin.post("/api/assets", content=b"--xyz\r\nContent-Disposition: garbage\r\n\r\nabc",
                          headers={"content-type": "multipart/form-data; boundary=xyz"})
    assert response.status_code == 400
    assert "error" in response.json()


# -- permissions ------------------------------------------------------------------


def test_upload_without_key_is_401(anon: Api, admin: Api, quire: Quire, data_dir: Path) -> None:
    response = upload(anon, ("a.png", solid(4, 4)))
    assert response.status_code == 401
    assert "error" in response.json()
    assert_nothing_stored(quire, data_dir, admin)


def test_upload_with_role_lacking_assets_upload_is_403(admin: Api, quire: Quire, data_dir: Path) -> None:
    reader = role_key(admin, "reader", {"assets/read": True, "assets/edit": True})
    response = upload(reader, ("a.png", solid(4, 4)))
    assert response.status_code == 403
    assert "error" in response.json()
    assert_nothing_stored(quire, data_dir, admin)


def test_upload_with_role_having_assets_upload_is_200(admin: Api) -> None:
    uploader = role_key(admin, "uploader", {"assets/upload": True})
    response = upload(uploader, ("a.png", solid(4, 4)))
    assert response.status_code == 200, response.text
    assert response.json()[0]["mime"] == "image/png"


def _transparent_rgba() -> Image.Image:
    image = Image.new("RGBA", (20, 20), (0, 0, 0, 0))
    image.paste((255, 0, 0, 255), (0, 0, 10, 20))
    return image


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


COLOUR_MODES = {
    "opaque rgba": lambda: _png(Image.new("RGBA", (20, 10), (255, 0, 0, 255))),
    "half transparent rgba": lambda: _png(Image.new("RGBA", (20, 10), (255, 0, 0, 128))),
    "transparent areas": lambda: _png(_transparent_rgba()),
    "grey with alpha": lambda: _png(Image.new("LA", (20, 10), (100, 50))),
    "palette with transparency": lambda: _png(_transparent_rgba().convert("P")),
    "grey": lambda: _png(Image.new("L", (20, 10), 100)),
    "cmyk jpeg": lambda: _encode(Image.new("CMYK", (20, 10), (0, 255, 255, 0)), "JPEG"),
}


def _encode(image: Image.Image, fmt: str) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


@pytest.mark.parametrize("case", list(COLOUR_MODES))
def test_images_of_every_colour_mode_upload_with_metadata(admin: Api, case: str) -> None:
    response = upload(admin, (f"{case}.png", COLOUR_MODES[case](), "image/png"))
    assert response.status_code == 200, response.text
    asset = response.json()[0]
    assert asset["mime"] in ("image/png", "image/jpeg") and asset["type"] == "image"
    assert asset["width"] == 20 and asset["height"] in (10, 20)
    assert 1 <= len(asset["colors"]) <= 5 and all(HEX_COLOR.match(c) for c in asset["colors"])
    assert isinstance(asset["thumbhash"], str) and asset["thumbhash"]


def test_tags_as_repeated_fields(admin: Api) -> None:
    asset = upload_one(admin, "t.png", solid(4, 4), tags=["one", "two, three"])
    assert asset["tags"] == ["one", "two", "three"]


def test_tags_that_are_not_json_are_400(admin: Api, quire: Quire, data_dir: Path) -> None:
    response = upload(admin, ("t.png", solid(4, 4)), data={"tags": "[oops"})
    assert response.status_code == 400
    assert "tags" in response.json()["error"]
    assert_nothing_stored(quire, data_dir, admin)


def test_colors_are_most_frequent_first(admin: Api) -> None:
    image = Image.new("RGB", (40, 10), BLUE)
    image.paste(RED, (0, 0, 30, 10))  # three quarters red
    asset = upload_one(admin, "two.png", _png(image))
    assert asset["colors"][:2] == ["#ff0000", "#0000ff"]


def test_directories_under_storage_are_404(admin: Api, anon: Api) -> None:
    asset = upload_one(admin, "x.png", solid(4, 4))
    folder = asset["path"].rsplit("/", 1)[0]
    for path in ("/storage/uploads/", f"/storage/uploads{folder}", f"/storage/uploads{folder}/"):
        response = anon.get(path)
        assert response.status_code == 404, path
        assert "error" in response.json()
