"""`quire backup` and `quire restore`: the whole site (store and files)
round trip byte for byte, checked archives, refusals, damage."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from tests.assets.helpers import solid, upload_one
from tests.backups.conftest import Target, rows
from tests.commands import run_quire
from tests.conftest import Api, create_item, put_model

PNG = solid(4, 3)


def _site(admin: Api) -> dict[str, Any]:
    put_model(admin, "posts", type="collection",
              fields=[{"name": "title", "type": "text", "i18n": True}, {"name": "image", "type": "asset"}])
    assert admin.put("/api/system/locales", json=[{"i18n": "de", "name": "Deutsch"}]).status_code == 200
    picture = upload_one(admin, "dot.png", PNG)
    post = create_item(admin, "posts", {"title": "Hello", "title_de": "Hallo", "image": {"_id": picture["_id"]}})
    hook = admin.post("/api/webhooks", json={"name": "site", "url": "https://example.com/hook", "events": ["content.*"]})
    assert hook.status_code == 200, hook.text
    return {"picture": picture, "post": post, "hook": hook.json()}


def test_a_site_comes_back_whole(admin: Api, quire: Any, data_dir: Path, target: Target, tmp_path: Path) -> None:
    made = _site(admin)
    archive = tmp_path / "site.tar"
    done = run_quire("backup", "--data", str(data_dir), str(archive))
    assert "Backed up" in done.stdout and "1 files" in done.stdout
    checked = run_quire("restore", "--verify", str(archive))
    assert "is whole" in checked.stdout
    restored = run_quire("restore", "--data", str(target.data), str(archive), env=target.env)
    assert "Restored" in restored.stdout

    app = target.open()
    try:
        ours = app.state.quire
        assert rows(ours.store) == rows(quire.store)  # every document, byte for byte, in order
        picture = made["picture"]
        stored = ours.assets.uploads.read(picture["path"].lstrip("/"))
        assert stored == PNG
        from tests.client import TestClient

        client = Api(TestClient(app), admin.key)  # the keys came back too
        post = client.get(f"/api/content/item/posts/{made['post']['_id']}", params={"locale": "de"}).json()
        assert post["title"] == "Hallo" and post["image"]["_id"] == picture["_id"]
        # the webhook's secret opens with the restored key (it signs as before)
        sealed = ours.store.collection("system/webhooks").get(made["hook"]["_id"])["secret"]
        assert ours.webhooks.sealer.open(sealed) == made["hook"]["secret"]
    finally:
        app.state.quire.close()


def test_restore_refuses_a_site_that_is_there(admin: Api, data_dir: Path, target: Target, tmp_path: Path) -> None:
    _site(admin)
    archive = tmp_path / "site.tar"
    run_quire("backup", "--data", str(data_dir), str(archive))
    done = run_quire("restore", "--data", str(data_dir), str(archive), check=False)
    assert done.returncode == 1
    assert "the target already holds a site" in done.stderr and "--force" in done.stderr
    again = run_quire("restore", "--data", str(data_dir), str(archive), "--force")
    assert "Restored" in again.stdout


def _rewrite(archive: Path, change: Any) -> Path:
    """A copy of the archive with each member passed through `change`."""
    damaged = archive.with_name("damaged.tar")
    with tarfile.open(archive) as source, tarfile.open(damaged, "w", format=tarfile.PAX_FORMAT) as out:
        for member in source:
            data = source.extractfile(member).read() if member.isfile() else b""  # type: ignore[union-attr]
            data = change(member, data)
            if data is None:
                continue
            member.size = len(data)
            out.addfile(member, io.BytesIO(data))
    return damaged


@pytest.mark.parametrize("damage", ["flipped byte in a file", "flipped byte in a collection", "collection cut",
                                    "manifest gone", "not a tar", "a file outside the uploads",
                                    "manifest not JSON", "a store table of its own"])
def test_a_damaged_archive_is_refused_and_leaves_the_target_empty(
        admin: Api, data_dir: Path, target: Target, tmp_path: Path, damage: str) -> None:
    _site(admin)
    archive = tmp_path / "site.tar"
    run_quire("backup", "--data", str(data_dir), str(archive))
    if damage == "flipped byte in a file":
        bad = _rewrite(archive, lambda m, d: bytes([d[0] ^ 1]) + d[1:] if m.name.startswith("files/") else d)
        expected = "is damaged: its checksum does not match"
    elif damage == "flipped byte in a collection":
        def flip(m: Any, d: bytes) -> bytes:
            if "content%2Fposts" not in m.name:
                return d
            middle = len(d) // 2
            return d[:middle] + bytes([d[middle] ^ 0xFF]) + d[middle + 1:]
        bad = _rewrite(archive, flip)
        expected = "is damaged"
    elif damage == "collection cut":
        bad = _rewrite(archive, lambda m, d: d[: len(d) // 2] if "content%2Fposts" in m.name else d)
        expected = "is damaged"
    elif damage == "manifest gone":
        bad = _rewrite(archive, lambda m, d: None if m.name.endswith("manifest.json") else d)
        expected = "cut short: it has no manifest"
    elif damage == "manifest not JSON":
        bad = _rewrite(archive, lambda m, d: b"{nope" if m.name.endswith("manifest.json") else d)
        expected = "manifest.json is damaged: not JSON"
    elif damage == "a store table of its own":
        def rename(m: Any, d: bytes) -> bytes:
            if "content%2Fposts" in m.name:
                m.name = "store/_quire_meta.jsonl.gz"
            return d
        bad = _rewrite(archive, rename)
        expected = "not a collection of a site"
    elif damage == "a file outside the uploads":
        def escape(m: Any, d: bytes) -> bytes:
            if m.name.startswith("files/uploads/"):
                m.name = "files/uploads/../../../escaped.png"
            return d
        bad = _rewrite(archive, escape)
        expected = "is not a file of the uploads"
    else:
        bad = tmp_path / "bad.tar"
        bad.write_bytes(b"this is no archive" * 100)
        expected = "is not a Quire backup"
    verify = run_quire("restore", "--verify", str(bad), check=False)
    assert verify.returncode == 1 and expected in verify.stderr, verify.stderr
    done = run_quire("restore", "--data", str(target.data), str(bad), env=target.env, check=False)
    assert done.returncode == 1 and expected in done.stderr and "Traceback" not in done.stderr
    app = target.open()
    try:
        assert all(not docs for docs in rows(app.state.quire.store).values())
        assert not list(app.state.quire.assets.uploads.list())
    finally:
        app.state.quire.close()


def test_backup_needs_a_site_and_a_folder(tmp_path: Path) -> None:
    done = run_quire("backup", "--data", str(tmp_path / "nothing"), str(tmp_path / "x.tar"), check=False)
    assert done.returncode == 1 and "holds no site" in done.stderr
    done = run_quire("restore", "--verify", str(tmp_path / "missing.tar"), check=False)
    assert done.returncode == 2 and "does not exist" in done.stderr


def test_an_upload_deleted_while_files_are_copied_is_in_the_archive(
        admin: Api, quire: Any, data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The moment's records name a picture whose deletion commits after the
    moment and removes its file before the backup copies it: the hold moves
    the file aside, the backup takes it from there, and once the backup is
    done the file is gone as the deletion meant."""
    import anyio

    from quire import backup

    picture = upload_one(admin, "dot.png", PNG)
    key = picture["path"].lstrip("/")
    copying = backup._write_files

    def delete_first(*args: Any, **kwargs: Any) -> Any:
        anyio.run(quire.assets.delete, picture["_id"], quire.auth.role_identity("admin", "x", "x"))
        assert not quire.assets.uploads.exists(key)  # removed from the uploads (held aside)
        return copying(*args, **kwargs)

    monkeypatch.setattr(backup, "_write_files", delete_first)
    archive = tmp_path / "site.tar"
    summary = backup.write_backup(quire.store, quire.assets.files, data_dir, archive, "test")
    assert summary.missing == [] and summary.files == 1
    with tarfile.open(archive) as tar:
        assert tar.extractfile(f"files/uploads/{key}").read() == PNG  # type: ignore[union-attr]
    assert not list(quire.assets.files.list("held"))  # the hold let go, what it held is removed


def test_a_killed_backup_keeps_the_last_archive_and_is_cleaned_up_by_the_next(
        admin: Api, data_dir: Path, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    _site(admin)
    for n in range(150):
        upload_one(admin, f"p{n}.png", solid(200, 150, (n, 0, 0)))
    archive = tmp_path / "site.tar"
    run_quire("backup", "--data", str(data_dir), str(archive))
    kept = archive.read_bytes()
    run = subprocess.Popen([sys.executable, "-m", "quire", "backup", "--data", str(data_dir), str(archive)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".site.tar.*.part")):
        assert run.poll() is None and time.monotonic() < deadline, "the backup ended before it could be killed"
        time.sleep(0.005)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    assert archive.read_bytes() == kept  # the last whole archive is untouched
    assert list(tmp_path.glob(".site.tar.*.part"))  # what the killed one left
    run_quire("backup", "--data", str(data_dir), str(archive))
    assert not list(tmp_path.glob(".site.tar.*.part")) and not list(tmp_path.glob(".quire-backup-*"))
    assert "is whole" in run_quire("restore", "--verify", str(archive)).stdout


def test_files_in_a_bucket_go_into_the_archive_and_back_into_a_bucket(
        s3_server: Any, tmp_path: Path) -> None:
    """[assets] storage on S3 (moto on 127.0.0.1): the uploads come from the
    bucket and are restored into the target's bucket."""
    from quire.app import build_app
    from quire.config import load_settings
    from tests.client import TestClient

    source_env = {"QUIRE_SERVER_QUIET": "1", **s3_server.env(s3_server.new_bucket())}
    target_env = dict(s3_server.env(s3_server.new_bucket()))
    app = build_app(load_settings(tmp_path / "site", env=source_env))
    try:
        admin = Api(TestClient(app), app.state.quire.auth.create_key("k", "admin")["key"])
        picture = upload_one(admin, "dot.png", PNG)
    finally:
        app.state.quire.close()
    archive = tmp_path / "site.tar"
    run_quire("backup", "--data", str(tmp_path / "site"), str(archive), env=source_env)
    run_quire("restore", "--data", str(tmp_path / "restored"), str(archive), env=target_env)
    restored = build_app(load_settings(tmp_path / "restored", env={"QUIRE_SERVER_QUIET": "1", **target_env}))
    try:
        files = restored.state.quire.assets.uploads
        assert files.remote and files.read(picture["path"].lstrip("/")) == PNG
    finally:
        restored.state.quire.close()


def test_an_sqlite_sites_archive_restores_into_postgresql(pg_url: str, tmp_path: Path) -> None:
    """The archive is the store's documents, not a database file: it
    restores into the other backend, byte for byte."""
    from quire.app import build_app
    from quire.config import load_settings
    from tests.client import TestClient

    env = {"QUIRE_SERVER_QUIET": "1", "QUIRE_MODULES_PACKAGES": "false"}
    app = build_app(load_settings(tmp_path / "site", env=env))
    try:
        admin = Api(TestClient(app), app.state.quire.auth.create_key("k", "admin")["key"])
        _site(admin)
        archive = tmp_path / "site.tar"
        run_quire("backup", "--data", str(tmp_path / "site"), str(archive), env={"QUIRE_STORE_URL": ""})
        run_quire("restore", "--data", str(tmp_path / "pg"), str(archive), env={"QUIRE_STORE_URL": pg_url})
        target = Target(tmp_path / "pg", {"QUIRE_STORE_URL": pg_url}).open()
        try:
            assert rows(target.state.quire.store) == rows(app.state.quire.store)
        finally:
            target.state.quire.close()
    finally:
        app.state.quire.close()


def test_a_folder_is_no_archive_and_an_initialised_folder_takes_a_restore(admin: Api, data_dir: Path,
                                                                          tmp_path: Path) -> None:
    _site(admin)
    done = run_quire("backup", "--data", str(data_dir), str(tmp_path), check=False)
    assert done.returncode == 2 and "is a folder: name the archive" in done.stderr
    archive = tmp_path / "site.tar"
    run_quire("backup", "--data", str(data_dir), str(archive))
    fresh = tmp_path / "fresh"
    run_quire("init", "--data", str(fresh), env={"QUIRE_STORE_URL": ""})
    assert (fresh / "webhooks.key").is_file()  # a key of its own, sealing nothing yet
    done = run_quire("restore", "--data", str(fresh), str(archive), env={"QUIRE_STORE_URL": ""})
    assert "Restored" in done.stdout

