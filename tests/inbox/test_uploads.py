"""Attachments of submissions: where and how they are stored, per-file and
per-request caps, refused types, empty inputs, nothing half-stored on any
failure, privacy (/storage never serves them) and the download endpoint."""

from __future__ import annotations

import errno
import re
from datetime import UTC, datetime
from typing import Any

import pytest

from quire.app import Quire
from tests.client import TestClient
from tests.conftest import Api, role_key
from tests.inbox.conftest import (
    EXE,
    HTML,
    PDF,
    SCRIPT,
    inbox_files,
    make_form,
    multipart,
    png,
    stored,
    submit,
)
from tests.storage import local_only

FILE = re.compile(r"inbox/uploads/(?P<form>[0-9a-f]{24})/(?P<month>\d{4}-\d{2})/(?P<stem>[a-z0-9-]+)_[0-9a-f]{16}\.(?P<ext>[a-z0-9]+)")


def ok(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    return response.json()["record"]  # type: ignore[no-any-return]


def upload_failed(response: Any, status: int = 412) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["error"] == "Upload failed"
    assert isinstance(body.get("detail"), str) and body["detail"]
    return body["detail"]  # type: ignore[no-any-return]


def test_one_file_is_stored_with_its_attachment_object(client: TestClient, form: dict[str, Any],
                                                      quire: Quire) -> None:
    image = png()
    record = ok(submit(client, form["token"], data={"data[name]": "Ada"},
                      files={"data[photo]": ("My Photo.PNG", image, "image/png")}))
    assert record["data"] == {"name": "Ada"}
    [item] = record["attachments"]["photo"]
    assert set(item) == {"name", "file", "size", "mime"}
    assert (item["name"], item["size"], item["mime"]) == ("My Photo.PNG", len(image), "image/png")
    match = FILE.fullmatch(item["file"])
    assert match, item["file"]
    assert match["form"] == form["_id"] and match["month"] == datetime.now(UTC).strftime("%Y-%m")
    assert (match["stem"], match["ext"]) == ("my-photo", "png")
    assert quire.assets.uploads.read(item["file"]) == image
    assert inbox_files(quire) == [item["file"]]  # no temporary file left
    assert stored(quire, form["_id"])[0]["attachments"] == record["attachments"]


def test_several_files_per_field_with_brackets(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    files = [("data[files][]", ("a.png", png((1, 2, 3)), "image/png")),
             ("data[files][]", ("b.pdf", PDF, "application/pdf")),
             ("data[files][]", ("c.txt", b"plain words", "text/plain")),
             ("data[cv]", ("cv.pdf", PDF, "application/pdf"))]
    record = ok(submit(client, form["token"], data={"data[name]": "x"}, files=files))
    assert [(a["name"], a["mime"]) for a in record["attachments"]["files"]] == [
        ("a.png", "image/png"), ("b.pdf", "application/pdf"), ("c.txt", "text/plain")]
    assert [a["name"] for a in record["attachments"]["cv"]] == ["cv.pdf"]
    keys = [a["file"] for items in record["attachments"].values() for a in items]
    assert sorted(keys) == inbox_files(quire)
    assert [quire.assets.uploads.read(key) for key in keys] == [png((1, 2, 3)), PDF, b"plain words", PDF]


def test_repeated_field_without_brackets_keeps_every_file(client: TestClient, form: dict[str, Any]) -> None:
    files = [("data[doc]", ("a.pdf", PDF, "application/pdf")), ("data[doc]", ("b.pdf", PDF, "application/pdf"))]
    record = ok(submit(client, form["token"], files=files))
    assert [a["name"] for a in record["attachments"]["doc"]] == ["a.pdf", "b.pdf"]


def test_only_files_is_a_submission(client: TestClient, form: dict[str, Any]) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("a.png", png(), "image/png")}))
    assert record["data"] == {} and len(record["attachments"]["f"]) == 1


def test_same_name_twice_gets_two_unique_files(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    files = [("data[f][]", ("same.png", png((1, 1, 1)), "image/png")),
             ("data[f][]", ("same.png", png((2, 2, 2)), "image/png"))]
    first = ok(submit(client, form["token"], files=files))["attachments"]["f"]
    second = ok(submit(client, form["token"], files=files[:1]))["attachments"]["f"]
    names = [a["file"] for a in first + second]
    assert len(set(names)) == 3
    assert len(inbox_files(quire)) == 3


@pytest.mark.parametrize(("filename", "name"), [
    ("../../../etc/passwd.png", "passwd.png"),
    ("C:\\Users\\ada\\Lebenslauf – Müller.png", "Lebenslauf – Müller.png"),
    ("", "file.png"),
    ("<script>.png", "<script>.png"),
])
def test_file_names_are_safe_on_disk_and_kept_for_people(client: TestClient, form: dict[str, Any], quire: Quire,
                                                         filename: str, name: str) -> None:
    body, headers = multipart([("data[name]", "x"), ("data[f]", filename, png(), "image/png")])
    record = ok(submit(client, form["token"], content=body, headers=headers))
    [item] = record["attachments"]["f"]
    assert item["name"] == name
    assert FILE.fullmatch(item["file"]), item["file"]
    assert inbox_files(quire) == [item["file"]]  # in the attachments' folder, under its safe name


def test_type_comes_from_the_bytes_not_the_client(client: TestClient, form: dict[str, Any]) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("notes.html", png(), "text/html")}))
    [item] = record["attachments"]["f"]
    assert item["mime"] == "image/png" and item["file"].endswith(".png")
    assert item["name"] == "notes.html"


def test_empty_file_inputs_are_ignored(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    body, headers = multipart([("data[name]", "Ada"), ("data[cv]", "", b"", "application/octet-stream"),
                               ("data[more][]", "", b"", "application/octet-stream"),
                               ("data[more][]", "b.png", png(), "image/png")])
    record = ok(submit(client, form["token"], content=body, headers=headers))
    assert record["data"] == {"name": "Ada"}
    assert list(record["attachments"]) == ["more"] and len(record["attachments"]["more"]) == 1
    assert len(inbox_files(quire)) == 1


# -- caps and refused types ---------------------------------------------------------------


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FILE_BYTES": "2000"}])
def test_file_over_max_file_bytes_is_412(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    ok(submit(client, form["token"], files={"data[f]": ("a.txt", b"a" * 2000, "text/plain")}))
    detail = upload_failed(submit(client, form["token"], data={"data[n]": "1"}, files=[
        ("data[f][]", ("small.txt", b"b" * 10, "text/plain")),
        ("data[f][]", ("big.txt", b"c" * 2001, "text/plain"))]))
    assert "big.txt" in detail
    assert len(stored(quire)) == 1 and len(inbox_files(quire)) == 1  # only the first submission


@pytest.mark.parametrize(("filename", "content"), [
    ("page.html", HTML),
    ("page.png", HTML),
    ("x.xhtml", b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body/></html>'),
    ("run.sh", SCRIPT),
    ("app.exe", EXE),
    ("x.php", b"<?php echo 1; ?>"),
    ("pic.svg", b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
    ("blob.bin", bytes(range(256)) * 4),
])
def test_refused_types_are_412_and_leave_nothing(client: TestClient, form: dict[str, Any], quire: Quire,
                                                 filename: str, content: bytes) -> None:
    response = submit(client, form["token"], data={"data[name]": "x"}, files=[
        ("data[f][]", ("fine.png", png(), "image/png")), ("data[f][]", (filename, content, "image/png"))])
    upload_failed(response)
    assert stored(quire) == [] and inbox_files(quire) == []


def test_safe_svg_is_accepted(client: TestClient, form: dict[str, Any]) -> None:
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
    [item] = ok(submit(client, form["token"], files={"data[f]": ("a.svg", svg, "image/svg+xml")}))["attachments"]["f"]
    assert item["mime"] == "image/svg+xml"


@pytest.mark.parametrize("inbox_env", [{"QUIRE_ASSETS_REFUSED_TYPES": "application/pdf"}])
def test_types_refused_for_assets_are_refused_here(client: TestClient, form: dict[str, Any]) -> None:
    upload_failed(submit(client, form["token"], files={"data[f]": ("a.pdf", PDF, "application/pdf")}))
    ok(submit(client, form["token"], files={"data[f]": ("a.png", png(), "image/png")}))


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FILES": "2"}])
def test_max_files_files_are_accepted(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    two = [("data[f][]", (f"{i}.png", png(), "image/png")) for i in range(2)]
    record = ok(submit(client, form["token"], files=two))
    assert len(record["attachments"]["f"]) == 2 and len(inbox_files(quire)) == 2


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FILES": "2"}])
def test_more_than_max_files_is_412(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    three = [("data[f][]", (f"{i}.png", png(), "image/png")) for i in range(3)]
    upload_failed(submit(client, form["token"], data={"data[n]": "1"}, files=three))
    assert stored(quire) == [] and inbox_files(quire) == []


def test_more_than_the_default_ten_files_is_412(client: TestClient, form: dict[str, Any]) -> None:
    eleven = [("data[f][]", (f"{i}.txt", b"x", "text/plain")) for i in range(11)]
    upload_failed(submit(client, form["token"], files=eleven))


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FILES": "2"}])
def test_empty_file_inputs_do_not_count_against_max_files(client: TestClient, form: dict[str, Any]) -> None:
    body, headers = multipart([("data[a][]", "a.png", png(), "image/png"), ("data[a][]", "b.png", png(), "image/png"),
                               ("data[c]", "", b"", "application/octet-stream")])
    record = ok(submit(client, form["token"], content=body, headers=headers))
    assert len(record["attachments"]["a"]) == 2 and "c" not in record["attachments"]


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_REQUEST_BYTES": "4096"}])
def test_request_over_max_request_bytes_is_413(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    upload_failed(submit(client, form["token"], files={"data[f]": ("a.txt", b"a" * 5000, "text/plain")}), 413)
    upload_failed(submit(client, form["token"], data={"data[message]": "m" * 5000}), 413)

    def chunks() -> Any:  # no Content-Length: the size is counted while reading
        body, _ = multipart([("data[f]", "a.txt", b"a" * 5000, "text/plain")])
        for i in range(0, len(body), 1000):
            yield body[i:i + 1000]

    _, headers = multipart([])
    upload_failed(submit(client, form["token"], content=chunks(), headers=headers), 413)
    response = submit(client, form["token"], content=iter([b'{"data": {"m": "', b"x" * 5000, b'"}}']),
                      headers={"content-type": "application/json"})
    assert response.status_code == 413 and "error" in response.json()
    assert stored(quire) == [] and inbox_files(quire) == []
    ok(submit(client, form["token"], files={"data[f]": ("a.txt", b"a" * 1000, "text/plain")}))


@local_only
def test_a_write_error_is_412_and_leaves_nothing(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    blocker = quire.settings.data_dir / "uploads" / "inbox" / "uploads" / form["_id"]
    blocker.parent.mkdir(parents=True)
    blocker.write_bytes(b"a file where the form's folder should be")
    upload_failed(submit(client, form["token"], data={"data[n]": "1"},
                         files={"data[f]": ("a.png", png(), "image/png")}))
    assert stored(quire) == []
    assert inbox_files(quire) == [f"inbox/uploads/{form['_id']}"]


def test_a_failure_while_writing_the_second_file_removes_the_first(client: TestClient, form: dict[str, Any],
                                                                   quire: Quire,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    uploads = quire.assets.uploads
    real = uploads.put
    calls: list[str] = []

    def flaky(key: str, data: bytes) -> None:
        if key.startswith("inbox/"):
            calls.append(key)
            if len(calls) == 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        real(key, data)

    monkeypatch.setattr(uploads, "put", flaky)
    upload_failed(submit(client, form["token"], files=[("data[f][]", ("1.png", png(), "image/png")),
                                                       ("data[f][]", ("2.png", png(), "image/png"))]))
    assert len(calls) == 2
    assert stored(quire) == [] and inbox_files(quire) == []


# -- privacy and downloads -----------------------------------------------------------


def test_attachments_are_never_served_by_storage(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("a.txt", b"secret", "text/plain")}))
    relative = record["attachments"]["f"][0]["file"]
    assert quire.assets.uploads.read(relative) == b"secret"
    for path in (f"/storage/uploads/{relative}", "/storage/uploads/" + relative.replace("/", "%2F"),
                 f"/storage/uploads/{relative.replace('inbox/', 'inbox//', 1)}",
                 f"/storage/uploads//{relative}"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert b"secret" not in response.content
        assert "error" in response.json()


def test_download_an_attachment(admin: Api, client: TestClient, form: dict[str, Any]) -> None:
    record = ok(submit(client, form["token"], files=[
        ("data[f][]", ("a.png", png(), "image/png")), ("data[f][]", ("Bericht 2024 – Ü.pdf", PDF, "application/pdf"))]))
    response = admin.get(f"/api/inbox/submissions/{record['_id']}/attachments/f/1")
    assert response.status_code == 200
    assert response.content == PDF
    assert response.headers["content-type"].startswith("application/pdf")
    disposition = response.headers["content-disposition"]
    assert disposition.startswith("attachment;")
    assert "filename*=UTF-8''Bericht%202024%20%E2%80%93%20%C3%9C.pdf" in disposition
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in response.headers["content-security-policy"]
    assert "no-store" in response.headers["cache-control"]
    assert 'filename="Bericht 2024 _ _.pdf"' in disposition  # an ASCII fallback for old clients
    first = admin.get(f"/api/inbox/submissions/{record['_id']}/attachments/f/0")
    assert first.content == png() and first.headers["content-type"].startswith("image/png")


def test_a_quote_in_the_file_name_cannot_break_the_header(admin: Api, client: TestClient, form: dict[str, Any],
                                                          quire: Quire) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("a.png", png(), "image/png")}))
    record["attachments"]["f"][0]["name"] = 'x"; filename="evil.html'
    quire.store.collection("inbox/submissions").replace(record)
    response = admin.get(f"/api/inbox/submissions/{record['_id']}/attachments/f/0")
    disposition = response.headers["content-disposition"]
    assert disposition.count('"') == 2 and 'filename="evil.html"' not in disposition


def test_text_attachment_is_downloaded_not_rendered(admin: Api, client: TestClient, form: dict[str, Any]) -> None:
    text = b"<b>not html, but a browser might think so</b>"
    record = ok(submit(client, form["token"], files={"data[f]": ("note.txt", text, "text/plain")}))
    response = admin.get(f"/api/inbox/submissions/{record['_id']}/attachments/f/0")
    assert response.content == text
    assert response.headers["content-disposition"].startswith("attachment")
    assert response.headers["x-content-type-options"] == "nosniff"


def test_unknown_attachments_are_404(admin: Api, client: TestClient, form: dict[str, Any]) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("a.png", png(), "image/png")}))
    rid = record["_id"]
    for path in (f"{rid}/attachments/f/1", f"{rid}/attachments/f/-1", f"{rid}/attachments/f/x",
                 f"{rid}/attachments/g/0", f"{'0' * 24}/attachments/f/0", "nope/attachments/f/0",
                 f"{rid}/attachments/f/%C2%B2", f"{rid}/attachments/f/%D9%A0"):  # "²" and "٠" are digits to str.isdigit
        response = admin.get(f"/api/inbox/submissions/{path}")
        assert response.status_code == 404, path
        assert "error" in response.json()


def test_a_record_pointing_outside_the_inbox_folder_is_404(admin: Api, client: TestClient, form: dict[str, Any],
                                                           quire: Quire) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("a.png", png(), "image/png")}))
    quire.assets.uploads.put("public.txt", b"public asset")
    quire.assets.files.put("secret.txt", b"secret")  # beside the uploads folder
    for target in ("public.txt", "inbox/../public.txt", "inbox/uploads/../../../secret.txt"):
        record["attachments"]["f"][0]["file"] = target
        quire.store.collection("inbox/submissions").replace(record)
        response = admin.get(f"/api/inbox/submissions/{record['_id']}/attachments/f/0")
        assert response.status_code == 404, target


def test_download_needs_inbox_submissions(admin: Api, anon: Api, client: TestClient, form: dict[str, Any]) -> None:
    record = ok(submit(client, form["token"], files={"data[f]": ("a.png", png(), "image/png")}))
    url = f"/api/inbox/submissions/{record['_id']}/attachments/f/0"
    assert anon.get(url).status_code == 401
    manager = role_key(admin, "manager", {"inbox/manage": True})
    assert manager.get(url).status_code == 403
    reader = role_key(admin, "reader", {"inbox/submissions": True})
    assert reader.get(url).status_code == 200


def test_deleting_a_submission_deletes_its_files(admin: Api, client: TestClient, form: dict[str, Any],
                                                 quire: Quire) -> None:
    gone = ok(submit(client, form["token"], files=[("data[f][]", ("a.png", png(), "image/png")),
                                                   ("data[f][]", ("b.pdf", PDF, "application/pdf"))]))
    kept = ok(submit(client, form["token"], files={"data[f]": ("c.png", png(), "image/png")}))
    assert len(inbox_files(quire)) == 3
    assert admin.delete(f"/api/inbox/submissions/{gone['_id']}").json() == {"success": True}
    assert inbox_files(quire) == [kept["attachments"]["f"][0]["file"]]


def test_store_false_keeps_no_record_and_no_file_without_mail(client: TestClient, admin: Api,
                                                              quire: Quire) -> None:
    form = make_form(admin, store=False, emails=["team@example.com"])  # no [smtp] host: no e-mail
    response = submit(client, form["token"], data={"data[name]": "Ada"},
                      files={"data[f]": ("a.png", png(), "image/png")})
    record = ok(response)
    assert record["data"] == {"name": "Ada"} and len(record["attachments"]["f"]) == 1
    assert stored(quire) == [] and inbox_files(quire) == []
    assert admin.get(f"/api/inbox/submissions/{record['_id']}").status_code == 404
