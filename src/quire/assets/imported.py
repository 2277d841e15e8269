"""Assets taken in whole from elsewhere (an import from Cockpit, a bundle
with files): the file and its record keep their id, path, metadata and
times; what Quire derives from the bytes (type, size, dimensions, colours,
placeholder, hash) is derived again, as for an upload. Matched by id, so
taking in the same asset again replaces it in place."""

from __future__ import annotations

from typing import Any

from quire.assets.service import AssetService, Upload
from quire.auth.service import Identity
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
    if isinstance(path, str) and _valid_path(path):
        doc["path"] = "/" + path.lstrip("/")
    for key in ("_created", "_modified"):
        if isinstance(record.get(key), int) and not isinstance(record[key], bool):
            doc[key] = record[key]
    if isinstance(record.get("_cby"), str) or record.get("_cby") is None:
        doc["_cby"] = record.get("_cby")
    return doc


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
