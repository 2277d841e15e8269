"""Bundles that carry their files (`quire export --with-files`) and bundles
of one model's items (`--model`, `--filter`)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

from quire.app import build_app
from quire.config import load_settings
from tests.assets.helpers import solid, upload_one
from tests.client import TestClient
from tests.commands import run_quire
from tests.conftest import Api, create_item, put_model

PNG = solid(5, 4)


def _site(admin: Api) -> dict[str, Any]:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"},
                                                         {"name": "image", "type": "asset"}])
    folder = admin.post("/api/assets/folders", json={"data": {"name": "Photos"}}).json()
    kept = upload_one(admin, "kept.png", PNG, folder=folder["_id"])
    other = upload_one(admin, "other.png", solid(7, 7))
    first = create_item(admin, "posts", {"title": "First", "image": {"_id": kept["_id"]}})
    create_item(admin, "posts", {"title": "Second", "image": {"_id": other["_id"]}})
    return {"kept": kept, "other": other, "first": first, "folder": folder}


def _open(data: Path, env: dict[str, str]) -> Any:
    return build_app(load_settings(data, env={"QUIRE_SERVER_QUIET": "1", "QUIRE_MODULES_PACKAGES": "false", **env}))


def test_a_bundle_with_files_brings_its_assets(admin: Api, data_dir: Path, tmp_path: Path,
                                               app_env: dict[str, str]) -> None:
    made = _site(admin)
    archive = tmp_path / "site.tar"
    run_quire("export", "--data", str(data_dir), "--with-files", "--out", str(archive))
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert names[0] == "bundle.json" and f"files/uploads{made['kept']['path']}" in names
    target_env = {k: v for k, v in app_env.items() if k != "QUIRE_STORE_URL"}
    done = run_quire("import", "--data", str(tmp_path / "copy"), str(archive), env={"QUIRE_STORE_URL": ""})
    assert "2 assets" in done.stdout and "1 asset folders" in done.stdout and "2 items" in done.stdout
    copy = _open(tmp_path / "copy", {**target_env, "QUIRE_STORE_URL": ""})
    try:
        client = Api(TestClient(copy), copy.state.quire.auth.create_key("k", "admin")["key"])
        post = client.get(f"/api/content/item/posts/{made['first']['_id']}").json()
        assert post["image"]["_id"] == made["kept"]["_id"] and post["image"]["folder"] == made["folder"]["_id"]
        assert copy.state.quire.assets.uploads.read(made["kept"]["path"].lstrip("/")) == PNG
    finally:
        copy.state.quire.close()
    again = run_quire("import", "--data", str(tmp_path / "copy"), str(archive), env={"QUIRE_STORE_URL": ""})
    assert "2 assets" in again.stdout  # matched by id: nothing doubled


def test_one_models_items_by_a_filter(admin: Api, data_dir: Path, tmp_path: Path) -> None:
    made = _site(admin)
    put_model(admin, "authors", type="collection", fields=[{"name": "name", "type": "text"}])
    out = run_quire("export", "--data", str(data_dir), "--model", "posts", "--filter", "{title:'First'}").stdout
    bundle = json.loads(out)
    assert [m["name"] for m in bundle["models"]] == ["posts"]
    assert [i["title"] for i in bundle["items"]["posts"]] == ["First"]
    assert "assets" not in bundle and "roles" not in bundle
    archive = tmp_path / "first.tar"
    run_quire("export", "--data", str(data_dir), "--model", "posts", "--filter", '{"title": "First"}',
              "--with-files", "--out", str(archive))
    with tarfile.open(archive) as tar:
        head = json.loads(tar.extractfile("bundle.json").read())  # type: ignore[union-attr]
        files = [n for n in tar.getnames() if n.startswith("files/")]
    assert [a["_id"] for a in head["assets"]] == [made["kept"]["_id"]]
    assert files == [f"files/uploads{made['kept']['path']}"]


def test_export_options_are_checked(data_dir: Path, admin: Api) -> None:
    _site(admin)
    done = run_quire("export", "--data", str(data_dir), "--filter", "{}", check=False)
    assert done.returncode == 2 and "--filter goes with --model" in done.stderr
    done = run_quire("export", "--data", str(data_dir), "--model", "posts", "--filter", "{nope", check=False)
    assert done.returncode == 1 and "<filter> is not valid json" in done.stderr
    done = run_quire("export", "--data", str(data_dir), "--model", "ghosts", check=False)
    assert done.returncode == 1 and "Model <ghosts> not found" in done.stderr


def test_assets_without_their_files_are_refused(admin: Api, data_dir: Path, tmp_path: Path) -> None:
    made = _site(admin)
    archive = tmp_path / "site.tar"
    run_quire("export", "--data", str(data_dir), "--with-files", "--out", str(archive))
    with tarfile.open(archive) as tar:
        bundle = tar.extractfile("bundle.json").read()  # type: ignore[union-attr]
    plain = tmp_path / "bundle.json"
    plain.write_bytes(bundle)
    done = run_quire("import", "--data", str(tmp_path / "a"), str(plain), env={"QUIRE_STORE_URL": ""}, check=False)
    assert done.returncode == 1 and "holds assets" in done.stderr
    # a bundle written without files: its items' pictures are not in the new site, and the import says so
    without = tmp_path / "without.json"
    without.write_bytes(run_quire("export", "--data", str(data_dir)).stdout.encode())
    done = run_quire("import", "--data", str(tmp_path / "c"), str(without), env={"QUIRE_STORE_URL": ""})
    assert "note: 2 items refer to 2 assets this site does not have" in done.stderr
    # an archive that lost a file
    cut = tmp_path / "cut.tar"
    with tarfile.open(archive) as source, tarfile.open(cut, "w") as out:
        for member in source:
            if member.name.endswith(made["other"]["path"]):
                continue
            out.addfile(member, io.BytesIO(source.extractfile(member).read()))  # type: ignore[union-attr]
    done = run_quire("import", "--data", str(tmp_path / "b"), str(cut), env={"QUIRE_STORE_URL": ""}, check=False)
    assert done.returncode == 1
    assert f"asset {made['other']['_id']}: its file {made['other']['path']} is not in the bundle" in done.stderr
