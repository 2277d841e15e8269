"""Assets: upload, metadata, folders, deletion and the generated images.

Files live under `<data>/uploads/YYYY/MM/DD/<safe-name>_<unique>.<ext>`,
generated images under `<data>/thumbs/<asset id>/<key>.<ext>` where the key
hashes the file's content hash and the options, so a changed file or option
is a new name and every generated file can be cached forever.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import orjson

from quire.assets import images, sniff
from quire.auth.service import Identity
from quire.errors import ApiError, BadRequest, NotFound, PayloadTooLarge, PreconditionFailed
from quire.events import Events, Reject
from quire.ids import is_id, new_id
from quire.store import SqliteStore
from quire.store.query import Projection

ASSETS = "assets/assets"
FOLDERS = "assets/folders"
HINTS = {"title": "text", "mime": "text", "type": "text", "size": "number", "width": "number",
         "height": "number", "folder": "text", "_hash": "text", "path": "text", "altText": "text",
         "description": "text", "_created": "number", "_modified": "number", "_cby": "text"}
EDITABLE = {"title", "description", "tags", "altText", "folder", "fp"}
_SAFE = re.compile(r"[^a-z0-9]+")


class UnsupportedType(ApiError):
    status = 415


@dataclass
class Upload:
    filename: str
    data: bytes


@dataclass
class ImageAnswer:
    """What the image endpoint sends: a URL (`url`, relative to the site) and,
    for generated images, the file and its ETag."""

    url: str
    file: Path | None = None
    etag: str | None = None
    mime: str | None = None
    vary_accept: bool = False


def safe_name(filename: str) -> str:
    """An ASCII, lower-case stem that cannot name a path outside its folder."""
    stem = Path(filename.replace("\\", "/")).name.rsplit(".", 1)[0]
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode().lower()
    cleaned = _SAFE.sub("-", ascii_stem).strip("-")[:60]
    return cleaned or "file"


class AssetService:
    def __init__(self, store: SqliteStore, data_dir: Path, events: Events, settings: dict[str, Any]) -> None:
        self.store = store
        self.events = events
        self.settings = settings
        self.uploads = data_dir / "uploads"
        self.thumbs = data_dir / "thumbs"
        self.assets = store.collection(ASSETS, HINTS)
        self.folders = store.collection(FOLDERS, {"name": "text", "parent": "text"})
        self.generated = 0  # images rendered by this process (tests count them)
        self._cache: dict[str, dict[str, Any] | None] = {}
        self._json: dict[str, bytes] = {}
        self._cache_generation = -1

    # -- reading ------------------------------------------------------------

    def get(self, asset_id: str) -> dict[str, Any]:
        doc = self.assets.get(asset_id) if is_id(asset_id) else None
        if doc is None:
            raise NotFound("Asset not found")
        return doc

    def get_many_json(self, ids: list[str]) -> dict[str, bytes]:
        """Like get_many, each asset as its JSON bytes (made once per
        generation)."""
        found = self.get_many(ids)
        out = {}
        for asset_id, doc in found.items():
            cached = self._json.get(asset_id)
            if cached is None:
                cached = self._json[asset_id] = orjson.dumps(doc)
            out[asset_id] = cached
        return out

    def get_many(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Assets by id, for content answers. Asset objects are kept in
        memory until the next commit of any process (the store's generation
        moves), so lists of items with pictures cost no query."""
        if self._cache_generation != self.store.generation:
            self._cache.clear()
            self._json.clear()
            self._cache_generation = self.store.generation
        missing = [i for i in ids if i not in self._cache and is_id(i)]
        if missing:
            found = self.assets.get_many(missing)
            if len(self._cache) > 10_000:
                self._cache.clear()
                self._json.clear()
            for asset_id in missing:
                self._cache[asset_id] = found.get(asset_id)
        return {i: doc for i in ids if (doc := self._cache.get(i)) is not None}

    def find(self, node: Any, sort: Any, limit: int | None, skip: int | None,
             projection: Projection | None) -> tuple[list[dict[str, Any]], int | None]:
        docs = self.assets.find(node, sort, limit, skip, projection)
        total = self.assets.count(node) if limit is not None and skip is not None else None
        return docs, total

    # -- uploading ----------------------------------------------------------

    async def upload(self, files: list[Upload], meta: dict[str, Any], identity: Identity) -> list[dict[str, Any]]:
        """Store every file or none: a failure removes what was written."""
        if not files:
            raise BadRequest("No files uploaded (send them as multipart parts named 'files')")
        folder = meta.get("folder")
        if folder and self.folders.get(folder) is None:
            raise BadRequest(f"Folder {folder} not found", fields=["folder"])
        prepared = [await anyio.to_thread.run_sync(self._prepare, f, meta, identity) for f in files]
        written: list[Path] = []
        try:
            for doc, data in prepared:
                written.append(self._write(doc["path"], data))
            async with self.store.atomic():
                for doc, _ in prepared:
                    try:
                        await self.events.emit("assets.asset.save", asset=doc, is_update=False, identity=identity)
                    except Reject as exc:
                        raise BadRequest(exc.message) from None
                    self.assets.insert(doc)
        except BaseException:
            for path in written:
                path.unlink(missing_ok=True)
            raise
        return [doc for doc, _ in prepared]

    def _prepare(self, upload: Upload, meta: dict[str, Any], identity: Identity) -> tuple[dict[str, Any], bytes]:
        name, data = upload.filename or "file", upload.data
        limit = self.settings["max_upload_bytes"]
        if len(data) > limit:
            raise PayloadTooLarge(f"File {name} is larger than {limit} bytes")
        if not data:
            raise BadRequest(f"File {name} is empty")
        try:
            kind = sniff.sniff(data, name)
        except sniff.Refused as exc:
            raise UnsupportedType(f"File {name}: {exc}") from None
        if not sniff.allowed(kind.mime, self.settings["allowed_types"], self.settings["refused_types"]):
            raise UnsupportedType(f"File {name}: type {kind.mime} is not allowed")
        width = height = None
        colors: list[str] = []
        placeholder = None
        if kind.mime in sniff.RASTER:
            try:
                info = images.inspect(data, self.settings["max_pixels"])
            except images.BadImage as exc:
                raise BadRequest(f"File {name}: {exc}") from None
            width, height, colors, placeholder = info.width, info.height, info.colors, info.thumbhash
        now = int(time.time())
        day = time.strftime("%Y/%m/%d", time.gmtime(now))
        doc = {
            "_id": new_id(),
            "path": f"/{day}/{safe_name(name)}_{secrets.token_hex(4)}.{kind.ext}",
            "title": meta.get("title") or name.rsplit("/", 1)[-1],
            "description": meta.get("description", ""),
            "tags": list(meta.get("tags") or []),
            "mime": kind.mime,
            "type": kind.kind,
            "size": len(data),
            "width": width,
            "height": height,
            "colors": colors,
            "thumbhash": placeholder,
            "altText": meta.get("altText", ""),
            "folder": meta.get("folder") or None,
            "fp": None,
            "_hash": hashlib.sha256(data).hexdigest(),
            "_created": now,
            "_modified": now,
            "_cby": identity.actor,
        }
        return doc, data

    def _write(self, path: str, data: bytes) -> Path:
        target = self.file_of(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
        try:
            with open(temp, "xb") as handle:
                handle.write(data)
            os.replace(temp, target)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        return target

    def file_of(self, path: str) -> Path:
        """The file of an asset path; never outside the uploads folder."""
        target = (self.uploads / path.lstrip("/")).resolve()
        if not target.is_relative_to(self.uploads.resolve()):
            raise BadRequest("Invalid asset path")
        return target

    # -- editing ------------------------------------------------------------

    async def update(self, asset_id: str, data: Any, identity: Identity) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        changes = self._check_changes(data)
        async with self.store.atomic():
            current = self.get(asset_id)
            updated = {**current, **changes, "_modified": int(time.time())}
            try:
                await self.events.emit("assets.asset.save", asset=updated, is_update=True, identity=identity)
            except Reject as exc:
                raise BadRequest(exc.message) from None
            self.assets.replace(updated)
        return updated

    def _check_changes(self, data: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(k for k in data if k not in EDITABLE and k != "_id")
        if unknown:
            raise BadRequest(f"Fields cannot be changed: {', '.join(unknown)}", fields=unknown)
        out: dict[str, Any] = {}
        errors: dict[str, str] = {}
        for key in ("title", "description", "altText"):
            if key in data:
                if isinstance(data[key], str):
                    out[key] = data[key]
                else:
                    errors[key] = "must be text"
        if "tags" in data:
            tags = data["tags"]
            if isinstance(tags, list) and all(isinstance(t, str) for t in tags):
                out["tags"] = tags
            else:
                errors["tags"] = "must be a list of strings"
        if "folder" in data:
            folder = data["folder"]
            if folder is None or (isinstance(folder, str) and self.folders.get(folder) is not None):
                out["folder"] = folder
            else:
                errors["folder"] = "is not a folder"
        if "fp" in data:
            fp = data["fp"]
            if fp is None:
                out["fp"] = None
            elif (isinstance(fp, dict) and set(fp) == {"x", "y"}
                  and all(isinstance(fp[k], int | float) and not isinstance(fp[k], bool) and 0 <= fp[k] <= 1 for k in "xy")):
                out["fp"] = {"x": fp["x"], "y": fp["y"]}
            else:
                errors["fp"] = 'must be {"x": 0..1, "y": 0..1} or null'
        if errors:
            raise BadRequest("Invalid asset data: " + "; ".join(f"{k} {v}" for k, v in errors.items()),
                             fields=sorted(errors))
        return out

    async def delete(self, asset_id: str, identity: Identity) -> None:
        async with self.store.atomic():
            doc = self.get(asset_id)
            self.assets.delete(asset_id)
            try:
                await self.events.emit("assets.asset.remove", asset=doc, identity=identity)
            except Reject as exc:
                raise BadRequest(exc.message) from None
        # after the commit: a failed delete must not lose the file
        self.file_of(doc["path"]).unlink(missing_ok=True)
        shutil.rmtree(self.thumbs / doc["_id"], ignore_errors=True)

    # -- folders ------------------------------------------------------------

    def list_folders(self, parent: str | None = None, all_levels: bool = True) -> list[dict[str, Any]]:
        node = None if all_levels else {"parent": parent}
        return self.folders.find(node, [(("name",), 1)])

    async def save_folder(self, data: Any) -> dict[str, Any]:
        if not isinstance(data, dict):
            raise PreconditionFailed("Item data is missing")
        name, parent = data.get("name"), data.get("parent")
        folder_id = data.get("_id")
        if not isinstance(name, str) or not name.strip() or "/" in name:
            raise BadRequest("Folder name is required and cannot contain /", fields=["name"])
        if parent is not None and (not isinstance(parent, str) or self.folders.get(parent) is None):
            raise BadRequest("Parent folder not found", fields=["parent"])
        async with self.store.atomic():
            if folder_id is not None:
                current = self.folders.get(folder_id) if isinstance(folder_id, str) else None
                if current is None:
                    raise NotFound("Folder not found")
                if parent is not None and folder_id in self._folder_ancestors(parent) | {parent}:
                    raise BadRequest("A folder cannot be inside itself", fields=["parent"])
                doc = {**current, "name": name.strip(), "parent": parent, "_modified": int(time.time())}
                self.folders.replace(doc)
            else:
                now = int(time.time())
                doc = self.folders.insert({"_id": new_id(), "name": name.strip(), "parent": parent,
                                           "_created": now, "_modified": now})
        return doc

    def _folder_ancestors(self, folder_id: str) -> set[str]:
        seen: set[str] = set()
        current = self.folders.get(folder_id)
        while current is not None and current.get("parent") and current["parent"] not in seen:
            seen.add(current["parent"])
            current = self.folders.get(current["parent"])
        return seen

    async def delete_folder(self, folder_id: str) -> int:
        """Delete a folder and its subfolders; their assets move to the root.
        Answers how many assets moved."""
        async with self.store.atomic():
            if not isinstance(folder_id, str) or self.folders.get(folder_id) is None:
                raise NotFound("Folder not found")
            doomed = [folder_id]
            frontier = [folder_id]
            while frontier:
                children = self.folders.find({"parent": {"$in": frontier}})
                frontier = [c["_id"] for c in children]
                doomed += frontier
            moved = 0
            for asset in self.assets.find({"folder": {"$in": doomed}}):
                self.assets.replace({**asset, "folder": None, "_modified": int(time.time())})
                moved += 1
            for fid in doomed:
                self.folders.delete(fid)
        return moved

    # -- images -------------------------------------------------------------

    def parse_image_options(self, params: dict[str, str], asset: dict[str, Any], accept: str) -> tuple[images.ImageOptions, bool]:
        """Options from the query; the bool says the answer depends on Accept."""
        mode = params.get("m") or "thumbnail"
        if mode not in images.MODES:
            raise BadRequest(f"Unknown resize mode '{mode}' (use {', '.join(images.MODES)})")
        width, height = _dimension(params, "w"), _dimension(params, "h")
        if width is None and height is None:
            raise BadRequest("Target width or height parameter is missing")
        if mode == "fitToWidth" and width is None:
            raise BadRequest("fitToWidth needs w")
        if mode == "fitToHeight" and height is None:
            raise BadRequest("fitToHeight needs h")
        largest = self.settings["max_output_size"]
        if (width or 0) > largest or (height or 0) > largest:
            raise BadRequest(f"Width and height can be at most {largest}")
        quality = _int(params, "q", self.settings["default_quality"])
        if not 1 <= quality <= 100:
            raise BadRequest("<q> must be between 1 and 100")
        wanted = params.get("mime") or "auto"
        if wanted != "auto" and wanted not in images.FORMATS:
            raise BadRequest(f"Unknown mime '{wanted}' (use auto, {', '.join(images.FORMATS)})")
        vary = wanted == "auto"
        if vary:
            source = {"image/jpeg": "jpeg", "image/png": "png", "image/gif": "gif", "image/webp": "webp",
                      "image/bmp": "bmp", "image/avif": "avif"}.get(asset["mime"], "png")
            wanted = "webp" if accepts_webp(accept) else source
        fp = asset.get("fp")
        focal = (float(fp["x"]), float(fp["y"])) if isinstance(fp, dict) else None
        return images.ImageOptions(mode, width, height, quality, wanted, focal), vary

    async def image(self, asset: dict[str, Any], opts: images.ImageOptions, stamp: str) -> ImageAnswer:
        """The generated image of `asset` (made once, even under a burst)."""
        if asset["mime"] not in sniff.RASTER or asset["mime"] in ("image/heic", "image/x-icon"):
            return ImageAnswer(url=f"/storage/uploads{asset['path']}")
        key = hashlib.sha256(f"{asset['_hash']}|{opts.key()}|{stamp}".encode()).hexdigest()[:40]
        name = f"{key}.{images.EXT[opts.format]}"
        target = self.thumbs / asset["_id"] / name
        if not target.exists():
            # the lock file is opened anew by each waiting thread, so flock
            # serialises threads of this process and other processes alike
            await anyio.to_thread.run_sync(self._generate, asset, opts, target)
        return ImageAnswer(url=f"/storage/thumbs/{asset['_id']}/{name}", file=target, etag=f'"{key}"',
                           mime=images.OUTPUT_MIME[opts.format])

    def _generate(self, asset: dict[str, Any], opts: images.ImageOptions, target: Path) -> None:
        """Render under a file lock, so processes also generate it only once."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with _file_lock(target.with_suffix(".lock")):
            if target.exists():
                return
            data = self.file_of(asset["path"]).read_bytes()
            try:
                out = images.render(data, opts, self.settings["max_pixels"])
            except images.BadImage as exc:
                raise BadRequest(str(exc)) from None
            temp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.part")
            temp.write_bytes(out)
            os.replace(temp, target)
            self.generated += 1


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        path.unlink()


def accepts_webp(accept: str) -> bool:
    """Whether an Accept header names image/webp with a quality above 0
    (browsers that can show WebP name it; `*/*` alone does not count)."""
    for entry in accept.split(","):
        kind, *params = (part.strip() for part in entry.split(";"))
        if kind.lower() != "image/webp":
            continue
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    return float(value) > 0
                except ValueError:
                    return False
        return True
    return False


def _int(params: dict[str, str], name: str, default: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"<{name}> must be an integer") from None


def _dimension(params: dict[str, str], name: str) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    value = _int(params, name, 0)
    if value < 1:
        raise BadRequest(f"<{name}> must be a positive integer")
    return value
