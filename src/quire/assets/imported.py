"""Assets taken in whole from elsewhere (an import from Cockpit, a bundle
with files): the file and its record keep their id, path, metadata and
times; what Quire derives from the bytes (type, size, dimensions, colours,
placeholder, hash) is derived again, as for an upload. Matched by id, so
taking in the same asset again replaces it in place."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from quire.assets.service import PRIVATE_DIR, AssetService, Upload
from quire.auth.service import Identity
from quire.bundleparts import BundlePart, Checked, check_list, naming
from quire.errors import BadRequest, ValidationError
from quire.events import Reject
from quire.files import BadKey, check_key
from quire.ids import is_id

KEPT = ("title", "description", "tags", "altText", "folder", "fp")


def prepare(assets: AssetService, record: dict[str, Any], data: bytes, identity: Identity) -> dict[str, Any]:
    """The record as Quire stores it, checked as an upload and an edit of
    it are (400 or 415 naming the problem); no write."""
    if not is_id(record.get("_id")):
        raise BadRequest("an asset needs a 24-hex-digit _id")
    name = str(record.get("path") or record.get("title") or "file").rsplit("/", 1)[-1]
    doc, _ = assets._prepare(Upload(name, data), {}, identity)
    changes = assets._check_changes({k: record[k] for k in KEPT if k in record and k != "folder"})
    doc.update(changes)
    doc["_id"] = record["_id"]
    doc["folder"] = record.get("folder") or None  # checked against the folders when stored
    path = record.get("path")
    if isinstance(path, str) and _valid_path(path) and _free(assets, "/" + path.lstrip("/"), record["_id"]):
        doc["path"] = "/" + path.lstrip("/")
    for key in ("_created", "_modified"):
        if isinstance(record.get(key), int) and not isinstance(record[key], bool):
            doc[key] = record[key]
    if isinstance(record.get("_cby"), str) or record.get("_cby") is None:
        doc["_cby"] = record.get("_cby")
    return doc


def _free(assets: AssetService, path: str, asset_id: str) -> bool:
    """Whether an asset taken in may keep `path`: not where form attachments
    live (never served) and not the file of another asset (whose bytes it
    would replace). Otherwise it gets a new path, as an upload does."""
    if path.lstrip("/").split("/", 1)[0] == PRIVATE_DIR:
        return False
    return all(other["_id"] == asset_id for other in assets.assets.find({"path": path}, None, limit=2))


def _valid_path(path: str) -> bool:
    try:
        check_key(path.lstrip("/"))
    except BadKey:
        return False
    return bool(path.strip("/"))


async def store(assets: AssetService, doc: dict[str, Any], data: bytes, identity: Identity) -> None:
    """Write the file, then the record, inside the caller's transaction,
    with the event of an upload (or of an edit when the id is taken). A
    file already there with the same bytes is not written again."""
    folder = doc.get("folder")
    if folder is not None and assets.folders.get(folder) is None:
        raise ValidationError("asset data", {"folder": "is not a folder"})
    current = assets.assets.get(doc["_id"])
    if current is None or current.get("_hash") != doc["_hash"] or current.get("path") != doc["path"]:
        await assets.blocking(assets._write, doc["path"], data)
    try:
        await assets.events.emit("assets.asset.save", asset=doc, is_update=current is not None, identity=identity)
    except Reject as exc:
        raise BadRequest(exc.message) from None
    if current is None:
        assets.assets.insert(doc)
    else:
        assets.assets.replace(doc)


def store_folder(assets: AssetService, folder: dict[str, Any]) -> None:
    """A folder `{_id, name, parent}` inside the caller's transaction; its
    parent is stored first (the caller orders them)."""
    name, parent = folder.get("name"), folder.get("parent")
    if not is_id(folder.get("_id")) or not isinstance(name, str) or not name.strip() or "/" in name:
        raise BadRequest(f"folder {folder.get('_id')!r}: needs an id and a name without /")
    if parent is not None and assets.folders.get(parent) is None:
        raise BadRequest(f"folder {name}: its parent {parent} is not a folder")
    doc = {"_id": folder["_id"], "name": name.strip(), "parent": parent,
           "_created": folder.get("_created"), "_modified": folder.get("_modified")}
    if assets.folders.get(folder["_id"]) is None:
        assets.folders.insert(doc)
    else:
        assets.folders.replace(doc)


def bundle_parts(assets: AssetService) -> list[BundlePart]:
    """Asset folders and assets in bundles with files: records with their
    ids, paths, metadata and times; the files travel beside the bundle
    (`uploads/<path>`). A record whose file the bundle lacks refuses it."""

    def export_folders(wanted: set[str] | None = None) -> list[dict[str, Any]]:
        return assets.list_folders()

    def export_assets(wanted: set[str] | None = None) -> list[dict[str, Any]]:
        found = assets.assets.find(None, [(("_id",), 1)])
        return [a for a in found if wanted is None or a["_id"] in wanted]

    def check_folders(value: Any, checked: Checked) -> list[dict[str, Any]]:
        folders = check_list(value, "assetFolders", "asset folder")
        ids = {f.get("_id") for f in folders}
        placed: list[dict[str, Any]] = []
        left = list(folders)
        while left:  # parents first; a parent outside the bundle must be the site's
            done = {p["_id"] for p in placed}
            ready = [f for f in left if f.get("parent") is None or f.get("parent") in done
                     or (f.get("parent") not in ids and isinstance(f.get("parent"), str)
                         and assets.folders.get(f["parent"]) is not None)]
            if not ready:
                raise BadRequest(f"asset folder {left[0].get('name')!r}: its parent is not a folder")
            placed += ready
            left = [f for f in left if f not in ready]
        return placed

    def check_assets(value: Any, checked: Checked) -> list[tuple[dict[str, Any], Callable[[], bytes]]]:
        """Each record checked as an upload of its file is; the ready value
        reads the file again when it is stored (files are not held)."""
        records = check_list(value, "assets", "asset")
        folders = {f["_id"] for f in checked.values.get("assetFolders") or []}
        ready: list[tuple[dict[str, Any], Callable[[], bytes]]] = []
        for record in records:
            with naming(f"asset {record.get('_id')}: "):
                prepare(assets, {**record, "folder": None}, _file_of(record, checked), checked.identity)
                folder = record.get("folder")
                if folder is not None and folder not in folders and assets.folders.get(folder) is None:
                    raise BadRequest(f"its folder {folder} is not in the bundle or the site")
            ready.append((record, functools.partial(_file_of, record, checked)))
        return ready

    async def load_folders(folders: list[dict[str, Any]], identity: Any) -> int:
        for folder in folders:
            store_folder(assets, folder)
        return len(folders)

    async def load_assets(ready: list[tuple[dict[str, Any], Callable[[], bytes]]], identity: Any) -> int:
        for record, read in ready:
            data = read()
            await store(assets, prepare(assets, record, data, identity), data, identity)
        return len(ready)

    return [BundlePart("assetFolders", "asset folders", export_folders, check_folders, load_folders, with_files=True),
            BundlePart("assets", "assets", export_assets, check_assets, load_assets, with_files=True)]


def _file_of(record: dict[str, Any], checked: Checked) -> bytes:
    path = record.get("path")
    if checked.files is None:
        raise BadRequest("a bundle with assets carries their files: export it with --with-files")
    data = checked.files(f"uploads/{str(path).lstrip('/')}") if isinstance(path, str) else None
    if data is None:
        raise BadRequest(f"its file {path} is not in the bundle")
    return data

