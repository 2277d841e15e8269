"""quire.files: the same behaviour from the data folder (`LocalFiles`) and
from a bucket on a local S3 server (`S3Files`, moto on 127.0.0.1), and the
`[assets] storage` settings."""

from __future__ import annotations

import errno
import io
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.config import AssetSettings, load_settings, s3_location
from quire.errors import ConfigError
from quire.files import BadKey, Files, LocalFiles, S3Files, StorageUnavailable, open_files
from tests.storage import ACCESS_KEY, REGION, SECRET_KEY, stored_keys


def s3_settings(server: Any, bucket: str, prefix: str = "site", **more: str) -> AssetSettings:
    return AssetSettings(storage=f"s3://{bucket}/{prefix}", s3_endpoint=server.endpoint, s3_region=REGION,
                         s3_access_key=ACCESS_KEY, s3_secret_key=SECRET_KEY, **more)


@pytest.fixture(params=["local", "s3"])
def files(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Files]:
    if request.param == "local":
        yield LocalFiles(tmp_path / "data")
        return
    server = request.getfixturevalue("s3_server")
    opened = open_files(s3_settings(server, request.getfixturevalue("s3_bucket")), tmp_path)
    yield opened
    opened.close()


def test_put_read_stat_and_delete(files: Files) -> None:
    assert files.stat("uploads/a.txt") is None and not files.exists("uploads/a.txt")
    files.put("uploads/a.txt", b"hello")
    assert files.read("uploads/a.txt") == b"hello"
    info = files.stat("uploads/a.txt")
    assert info is not None and (info.key, info.size) == ("uploads/a.txt", 5) and info.modified > 0
    files.put("uploads/a.txt", b"replaced")
    assert files.read("uploads/a.txt") == b"replaced"
    files.delete("uploads/a.txt")
    files.delete("uploads/a.txt")  # nothing there: no error
    assert not files.exists("uploads/a.txt")
    with pytest.raises(FileNotFoundError):
        files.read("uploads/a.txt")


def test_a_folder_is_not_a_file(files: Files) -> None:
    files.put("uploads/2026/01/a.png", b"x")
    assert files.stat("uploads/2026") is None
    with pytest.raises(FileNotFoundError):
        files.read("uploads/2026")


def test_keys_cannot_leave_the_root(files: Files) -> None:
    for key in ("../x", "a/../../x", "/etc/passwd", "a//b", "a/./b", "", "a\\..\\b"):
        with pytest.raises(BadKey):
            files.put(key, b"x")
        assert files.stat(key) is None


def test_under_roots_keys_in_a_folder(files: Files) -> None:
    uploads = files.under("uploads")
    uploads.put("2026/a.png", b"a")
    assert files.read("uploads/2026/a.png") == b"a"
    assert stored_keys(uploads) == ["2026/a.png"]
    assert stored_keys(files) == ["uploads/2026/a.png"]


def test_list_is_every_file_below_a_folder_and_no_neighbour(files: Files) -> None:
    for key in ("thumbs/abc/1.png", "thumbs/abc/2.png", "thumbs/abcd/3.png", "uploads/x.png"):
        files.put(key, b"12345")
    assert stored_keys(files, "thumbs/abc") == ["thumbs/abc/1.png", "thumbs/abc/2.png"]
    assert stored_keys(files, "nothing") == []
    assert files.delete_prefix("thumbs/abc") == 10
    assert stored_keys(files) == ["thumbs/abcd/3.png", "uploads/x.png"]
    files.delete_many(["thumbs/abcd/3.png", "uploads/x.png", "uploads/never.png"])
    assert stored_keys(files) == []


def test_put_new_keeps_the_first_file(files: Files) -> None:
    assert files.put_new("thumbs/a/x.webp", b"first") is True
    assert files.put_new("thumbs/a/x.webp", b"second") is False
    assert files.read("thumbs/a/x.webp") == b"first"
    assert stored_keys(files) == ["thumbs/a/x.webp"]  # no temporary file left either


def test_put_stream_writes_what_the_source_holds(files: Files) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    assert files.put_stream("uploads/big.bin", io.BytesIO(data)) == len(data)
    assert files.read("uploads/big.bin") == data


def test_chunks_read_a_range(files: Files) -> None:
    data = bytes(range(256)) * 1024
    files.put("uploads/r.bin", data)
    assert b"".join(files.chunks("uploads/r.bin")) == data
    assert b"".join(files.chunks("uploads/r.bin", 1000, 71000)) == data[1000:71000]
    assert b"".join(files.chunks("uploads/r.bin", 5)) == data[5:]
    with pytest.raises(FileNotFoundError):
        files.chunks("uploads/none.bin")


def test_the_lock_of_a_key_lets_one_writer_in_at_a_time(files: Files) -> None:
    inside: list[int] = []
    most = [0]
    guard = threading.Lock()

    def writer() -> None:
        with files.lock("thumbs/a/x.png"):
            with guard:
                inside.append(1)
                most[0] = max(most[0], len(inside))
            threading.Event().wait(0.02)
            with guard:
                inside.pop()

    threads = [threading.Thread(target=writer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert most[0] == 1


# -- S3 specifics --------------------------------------------------------------------


def test_keys_go_under_the_prefix_of_the_bucket(s3_server: Any, s3_bucket: str, tmp_path: Path) -> None:
    files = open_files(s3_settings(s3_server, s3_bucket, prefix="sites/one"), tmp_path)
    assert isinstance(files, S3Files)
    files.under("uploads").put("a.png", b"x")
    client = s3_server.client()
    listed = client.list_objects_v2(Bucket=s3_bucket)["Contents"]
    assert [(item["Key"], item["Size"]) for item in listed] == [("sites/one/uploads/a.png", 1)]
    head = client.head_object(Bucket=s3_bucket, Key="sites/one/uploads/a.png")
    assert head["ContentType"] == "image/png"
    files.close()
    client.close()


def test_a_missing_bucket_is_a_503_and_the_log_holds_no_secret(s3_server: Any, tmp_path: Path,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    files = open_files(s3_settings(s3_server, "no-such-bucket-here"), tmp_path)
    caplog.set_level(logging.DEBUG)
    for call in (lambda: files.put("a", b"x"), lambda: files.read("a"), lambda: list(files.list())):
        with pytest.raises(StorageUnavailable) as caught:
            call()
        assert caught.value.status == 503 and caught.value.headers == {"Retry-After": "5"}
    assert "NoSuchBucket" in caplog.text
    assert SECRET_KEY not in caplog.text
    files.close()


def test_credentials_come_from_the_aws_environment_when_not_set(s3_server: Any, s3_bucket: str, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    settings = AssetSettings(storage=f"s3://{s3_bucket}", s3_endpoint=s3_server.endpoint)
    files = open_files(settings, tmp_path)
    assert isinstance(files, S3Files) and files.prefix == ""
    credentials = files.client._request_signer._credentials
    assert (credentials.access_key, credentials.secret_key) == (ACCESS_KEY, SECRET_KEY)
    assert files.client.meta.region_name == REGION
    files.put("a.txt", b"x")
    assert stored_keys(files) == ["a.txt"]
    files.close()


# -- settings ---------------------------------------------------------------------


@pytest.mark.parametrize(("url", "location"), [
    ("s3://media", ("media", "")),
    ("s3://media/", ("media", "")),
    ("s3://media.example.com/sites/one", ("media.example.com", "sites/one/")),
    ("s3://my-bucket//a//b/", ("my-bucket", "a/b/")),
])
def test_storage_names_a_bucket_and_a_prefix(url: str, location: tuple[str, str]) -> None:
    assert s3_location(url) == location


@pytest.mark.parametrize("url", ["media", "https://media/x", "s3://x", "s3://Media", "s3://ab", "s3://a..b",
                                 "s3://key:secret@media/x", "s3://media/../x", "s3://media/a b", "file:///srv"])
def test_a_bad_storage_stops_the_start_without_echoing_it(url: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, env={"QUIRE_ASSETS_STORAGE": url})
    assert "assets.storage" in str(caught.value)
    assert url not in str(caught.value)


def test_s3_settings_are_checked(tmp_path: Path) -> None:
    base = {"QUIRE_ASSETS_STORAGE": "s3://media"}
    for env, named in (({"QUIRE_ASSETS_S3_ENDPOINT": "minio:9000"}, "assets.s3_endpoint"),
                       ({"QUIRE_ASSETS_S3_ADDRESSING": "dns"}, "assets.s3_addressing"),
                       ({"QUIRE_ASSETS_S3_ACCESS_KEY": "AKIA"}, "assets.s3_secret_key")):
        with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
            load_settings(tmp_path, env={**base, **env})


def test_keys_are_left_out_of_the_settings_repr(tmp_path: Path) -> None:
    settings = load_settings(tmp_path, env={"QUIRE_ASSETS_STORAGE": "s3://media",
                                            "QUIRE_ASSETS_S3_ACCESS_KEY": "AKIAEXAMPLEKEY",
                                            "QUIRE_ASSETS_S3_SECRET_KEY": "wJalrEXAMPLESECRET"})
    assert settings.assets.s3_secret_key == "wJalrEXAMPLESECRET"
    assert "wJalrEXAMPLESECRET" not in repr(settings.assets) and "AKIAEXAMPLEKEY" not in repr(settings.assets)


def test_a_service_without_conditional_writes_still_keeps_the_first_file(s3_server: Any, s3_bucket: str,
                                                                         tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    """Backblaze B2 answers `If-None-Match` on PutObject with 501
    NotImplemented: Quire then looks before it writes."""
    from botocore.exceptions import ClientError

    files = open_files(s3_settings(s3_server, s3_bucket), tmp_path)
    assert isinstance(files, S3Files)
    real_put = files.client.put_object
    refused: list[str] = []

    def put_like_b2(**args: Any) -> Any:
        if "IfNoneMatch" in args:
            refused.append(args["Key"])
            raise ClientError({"Error": {"Code": "NotImplemented", "Message": "A header you provided implies "
                                         "functionality that is not implemented"}}, "PutObject")
        return real_put(**args)

    files.client.put_object = put_like_b2
    thumbs = files.under("thumbs")
    assert thumbs.put_new("a/x.png", b"first") is True
    assert thumbs.put_new("a/x.png", b"second") is False
    assert files.under("thumbs").put_new("a/y.png", b"other") is True
    assert refused == ["site/thumbs/a/x.png"]  # asked once, then remembered
    assert thumbs.read("a/x.png") == b"first"
    assert "no conditional writes" in caplog.text
    files.close()


def test_open_answers_the_size_and_the_bytes(files: Files) -> None:
    data = bytes(range(256)) * 600
    files.put("uploads/o.bin", data)
    opened = files.open("uploads/o.bin")
    assert opened is not None
    info, pieces = opened
    assert (info.key, info.size) == ("uploads/o.bin", len(data))
    assert b"".join(pieces) == data
    again = files.open("uploads/o.bin")
    assert again is not None
    assert next(again[1]) == data[:64 * 1024]
    again[1].close()  # not read to the end: closed all the same
    assert files.open("uploads/none.bin") is None and files.open("../x") is None


def test_a_conflicting_conditional_write_is_tried_again(s3_server: Any, s3_bucket: str, tmp_path: Path) -> None:
    """AWS answers 409 ConditionalRequestConflict while another conditional
    write of the key is in flight; once it ends, ours fails or wins."""
    from botocore.exceptions import ClientError

    files = open_files(s3_settings(s3_server, s3_bucket), tmp_path)
    assert isinstance(files, S3Files)
    real_put = files.client.put_object
    conflicts = [2]

    def put_while_busy(**args: Any) -> Any:
        if conflicts[0]:
            conflicts[0] -= 1
            raise ClientError({"Error": {"Code": "ConditionalRequestConflict", "Message": "busy"},
                               "ResponseMetadata": {"HTTPStatusCode": 409}}, "PutObject")
        return real_put(**args)

    files.client.put_object = put_while_busy
    assert files.put_new("a.png", b"mine") is True
    assert conflicts == [0] and files.read("a.png") == b"mine"
    files.close()


def test_put_new_on_a_file_system_without_hard_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_links(*args: Any) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    files = LocalFiles(tmp_path / "data")
    assert files.put_new("thumbs/a/x.png", b"first") is True
    assert files.put_new("thumbs/a/x.png", b"second") is False
    assert files.read("thumbs/a/x.png") == b"first"
    assert [p.name for p in (tmp_path / "data" / "thumbs" / "a").iterdir()] == ["x.png"]
