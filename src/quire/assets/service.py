"""Assets: upload, metadata, folders, deletion and the generated images.

Files live under `uploads/YYYY/MM/DD/<safe-name>_<unique>.<ext>`,
generated images under `thumbs/<asset id>/<key>[-<t>].<ext>` (in the data
folder, or the bucket of `[assets] storage`: quire.files) where
the key hashes the file's content hash and the options (and `-<t>` hashes
the `t` parameter when given), so a changed file or option is a new name and
every generated file can be cached forever.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import re
import secrets
import threading
import time
import unicodedata
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import anyio
import anyio.from_thread
import anyio.to_thread
import orjson

from quire.assets import images, presets, sniff
from quire.assets.thumbcache import BucketThumbCap, ThumbCache
from quire.auth.service import Identity
from quire.cache import Cache
from quire.config import AssetSettings
from quire.errors import (
    ApiError,
    BadRequest,
    NotFound,
    PayloadTooLarge,
    PreconditionFailed,
    TooManyRequests,
    Unavailable,
    ValidationError,
)
from quire.events import Events, Reject
from quire.files import BadKey, Files, LocalFiles, StorageUnavailable, check_key, discard
from quire.ids import is_id, new_id
from quire.numbers import parse_int
from quire.ratelimit import RateLimiter
from quire.slots import LoopSlots
from quire.store import Store
from quire.store.query import parse_fields, parse_filter, parse_sort

log = logging.getLogger("quire.assets")
T = TypeVar("T")

ASSETS = "assets/assets"
FOLDERS = "assets/folders"
PRIVATE_DIR = "inbox"  # <data>/uploads/inbox holds form attachments, never public
RENDERS = "assets/renders"  # distinct renders per source and hour, shared by all workers
ASSETS_KEPT = 10_000  # asset documents kept in memory (and as many JSON answers)
TITLES_KEPT = 50_000  # libraries up to this size are searched by title in memory
TITLE_IDS = 400  # ids of title matches a filtered search names at most
HINTS = {"title": "text", "mime": "text", "type": "text", "size": "number", "width": "number",
         "height": "number", "folder": "text", "_hash": "text", "path": "text", "altText": "text",
         "description": "text", "_created": "number", "_modified": "number", "_cby": "text"}
EDITABLE = {"title", "description", "tags", "altText", "folder", "fp"}
_SAFE = re.compile(r"[^a-z0-9]+")


class UnsupportedType(ApiError):
    status = 415


TOO_MANY_RENDERS = ("Too many different images of this asset were generated in the last hour; "
                    "use a size that exists already or try again later")


class RenderBusy(Unavailable):
    """Every render slot of this process stayed taken for `render_wait_seconds`."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("Busy generating other images; try again shortly", retry_after)


@dataclass
class Upload:
    filename: str
    data: bytes


class ThumbCap(Protocol):
    def touch(self, key: str) -> None: ...
    def added(self, size: int) -> None: ...


@dataclass
class ImageAnswer:
    """What the image endpoint sends: a URL (`url`, relative to the site) and,
    for generated images, its key under `thumbs` and its ETag."""

    url: str
    key: str | None = None
    etag: str | None = None
    mime: str | None = None
    vary_accept: bool = False
    data: bytes | None = None  # the bytes, when asked for
    modified: float | None = None  # the file's mtime (Last-Modified)


def safe_name(filename: str) -> str:
    """An ASCII, lower-case stem that cannot name a path outside its folder."""
    stem = Path(filename.replace("\\", "/")).name.rsplit(".", 1)[0]
    ascii_stem = unicodedata.normalize("NFKD", stem).encode("ascii", "ignore").decode().lower()
    cleaned = _SAFE.sub("-", ascii_stem).strip("-")[:60]
    return cleaned or "file"


class AssetService:
    def __init__(self, store: Store, cache: Cache, files: Files, events: Events,
                 settings: AssetSettings) -> None:
        self.store = store
        self.cache = cache
        self.events = events
        self.settings = settings
        self.files = files  # the data folder, or a bucket (quire.files.open_files)
        self.uploads = self.files.under("uploads")
        self.thumbs = self.files.under("thumbs")
        self.assets = store.collection(ASSETS, HINTS)
        self.folders = store.collection(FOLDERS, {"name": "text", "parent": "text"})
        self.generated = 0  # images rendered by this process (tests count them)
        self.presets = presets.check(settings.presets, settings.max_output_size)
        self.render_limiter = RateLimiter(store, settings.renders_per_hour, 3600, RENDERS)
        self.thumb_cache: ThumbCap = (ThumbCache(self.thumbs.root, settings.thumbs_max_bytes)
                                      if isinstance(self.thumbs, LocalFiles)
                                      else BucketThumbCap(self.thumbs, settings.thumbs_max_bytes))
        self._rendering = 0  # renders running in this process (all its event loops)
        self._rendering_lock = threading.Lock()  # test clients run event loops in several threads
        self._slots = LoopSlots(lambda: self.settings.max_concurrent_renders)
        # Asset documents by id (None: no such asset) and their JSON, kept
        # until the next commit of any process, so lists of items with
        # pictures cost no query.
        self._docs = cache.region("assets.docs", ASSETS_KEPT)
        self._json = cache.region("assets.json", ASSETS_KEPT)
        self._title_list = cache.region("assets.titles", 1)
        self._indexed = False

    def ensure_indexes(self) -> None:
        """Store indexes for the studio's asset library: newest first, and
        newest first within a folder or a type (a 10,000-asset library's
        first page reads 48 rows, not every row). Made once per process."""
        if not self._indexed:
            self.store.ensure_indexes(ASSETS, [[("_created",)], [("folder",), ("_created",)],
                                               [("type",), ("_created",)]])
            self._indexed = True

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` on storage: inline on local disk (as always), in a
        worker thread when it goes over the network."""
        if self.files.remote:
            return await anyio.to_thread.run_sync(fn, *args)
        return fn(*args)

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
        out = self._json.get_many(found)
        for asset_id, doc in found.items():
            if asset_id not in out:
                out[asset_id] = encoded = orjson.dumps(doc)
                self._json.put(asset_id, encoded)
        return out

    def get_many(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Assets by id, for content answers. Asset objects are kept in
        memory until the next commit of any process (the store's generation
        moves), so lists of items with pictures cost no query."""
        kept = self._docs.get_many(ids)
        missing = [i for i in ids if i not in kept and is_id(i)]
        if missing:
            generation = self.cache.generation
            found = self.assets.get_many(missing)
            for asset_id in missing:
                kept[asset_id] = doc = found.get(asset_id)
                self._docs.put(asset_id, doc, generation)
        return {i: doc for i in ids if (doc := kept.get(i)) is not None}

    def find(self, spec: Any, sort: Any, limit: int | None, skip: int | None,
             fields: Any) -> tuple[list[dict[str, Any]], int | None]:
        """A page of assets; `spec`, `sort` and `fields` are the request's
        JSON values (filter, sort and projection), checked here."""
        node, order, projection = parse_filter(spec), parse_sort(sort), parse_fields(fields)
        docs = self.assets.find(node, order, limit or None, skip, projection)  # limit=0: no limit
        total = self.cache.count(self.assets, node) if limit is not None and skip is not None else None
        return docs, total

    def titled(self, words: str, spec: dict[str, Any] | None, limit: int,
               skip: int) -> tuple[list[dict[str, Any]], int]:
        """A page of the assets whose title holds `words` (case-insensitive,
        plain text) and that match `spec`, newest first, with the total.

        The titles of a library of up to TITLES_KEPT assets are read once
        per store generation (one pass over two fields) and matched in
        memory, so a search costs no scan of every document: the page is
        then read by id, or with `spec` among at most TITLE_IDS ids. Larger
        libraries, and searches matching more ids than that under a filter,
        are a regex filter in the store."""
        needle = words.casefold()
        pattern = {"title": {"$regex": re.escape(words), "$options": "i"}}
        titles = self._titles()
        if titles is not None:
            ids = [asset_id for asset_id, title in titles if needle in title]
            if spec is None:
                page = ids[skip: skip + limit]
                found = self.get_many(page)
                return [found[i] for i in page if i in found], len(ids)
            if len(ids) <= TITLE_IDS:
                docs, total = self.find({"$and": [{"_id": {"$in": ids}}, spec]}, {"_created": -1}, limit, skip, None)
                return docs, total or 0
        docs, total = self.find(pattern if spec is None else {"$and": [pattern, spec]}, {"_created": -1},
                                limit, skip, None)
        return docs, total or 0

    def _titles(self) -> list[tuple[str, str]] | None:
        """(id, case-folded title) of every asset, newest first; None for a
        library larger than TITLES_KEPT."""
        generation = self.cache.generation
        kept = self._title_list.get("all")
        if kept is not None:
            return kept or None
        if self.cache.count(self.assets, None) > TITLES_KEPT:
            self._title_list.put("all", [], generation)
            return None
        rows = self.assets.pick(["title"], None, [(("_created",), -1)])
        titles = [(row["_id"], str(row.get("title") or "").casefold()) for row in rows]
        self._title_list.put("all", titles, generation)
        return titles

    # -- uploading ----------------------------------------------------------

    async def upload(self, files: list[Upload], meta: dict[str, Any], identity: Identity) -> list[dict[str, Any]]:
        """Store every file or none: a failure removes what was written."""
        if not files:
            raise BadRequest("No files uploaded (send them as multipart parts named 'files')")
        folder = meta.get("folder")
        if folder and self.folders.get(folder) is None:
            raise BadRequest(f"Folder {folder} not found", fields=["folder"])
        prepared = [await anyio.to_thread.run_sync(self._prepare, f, meta, identity) for f in files]
        written: list[str] = []
        try:
            for doc, data in prepared:
                written.append(doc["path"])
                await self.blocking(self._write, doc["path"], data)
            async with self.store.atomic():
                for doc, _ in prepared:
                    try:
                        await self.events.emit("assets.asset.save", asset=doc, is_update=False, identity=identity)
                    except Reject as exc:
                        raise BadRequest(exc.message) from None
                    self.assets.insert(doc)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.blocking(discard, self.uploads, [self.key_of(path) for path in written])
            raise
        return [doc for doc, _ in prepared]

    def same_file(self, data: bytes) -> dict[str, Any] | None:
        """An asset of the library whose file holds exactly these bytes (the
        studio offers it instead of a second copy); None if there is none."""
        return self.assets.find_one({"_hash": hashlib.sha256(data).hexdigest()}, [(("_created",), 1)])

    def _prepare(self, upload: Upload, meta: dict[str, Any], identity: Identity) -> tuple[dict[str, Any], bytes]:
        name, data = upload.filename or "file", upload.data
        limit = self.settings.max_upload_bytes
        if len(data) > limit:
            raise PayloadTooLarge(f"File {name} is larger than {limit} bytes")
        if not data:
            raise BadRequest(f"File {name} is empty")
        try:
            kind = sniff.sniff(data, name)
        except sniff.Refused as exc:
            raise UnsupportedType(f"File {name}: {exc}") from None
        if not sniff.allowed(kind.mime, self.settings.allowed_types, self.settings.refused_types):
            raise UnsupportedType(f"File {name}: type {kind.mime} is not allowed")
        width = height = None
        colors: list[str] = []
        placeholder = None
        if kind.mime in sniff.RASTER:
            try:
                info = images.inspect(data, self.settings.max_pixels, self.settings.decode_pixels)
            except images.BadImage as exc:
                raise BadRequest(f"File {name}: {exc}") from None
            width, height, colors, placeholder = info.width, info.height, info.colors, info.thumbhash
        elif kind.mime == "image/svg+xml":
            width, height = sniff.svg_dimensions(data) or (None, None)
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

    def _write(self, path: str, data: bytes) -> None:
        self.uploads.put(self.key_of(path), data)

    def key_of(self, path: str) -> str:
        """The key under `uploads` of an asset path (`/2026/01/31/x.png`)."""
        key = path.lstrip("/")
        try:
            return check_key(key)
        except BadKey:
            raise BadRequest("Invalid asset path") from None

    async def replace_file(self, asset_id: str, upload: Upload, identity: Identity) -> dict[str, Any]:
        """A new file for an asset, keeping its id and its metadata (title,
        description, alt text, tags, folder, focal point). The file, its
        type, size, dimensions, palette and hash are the new file's; the old
        file and every image generated from it are removed after the commit,
        so the same id serves only the new picture. Refused (type, size, an
        unreadable image) like an upload, with nothing changed."""
        current = self.get(asset_id)
        fresh, data = await anyio.to_thread.run_sync(self._prepare, upload, {}, identity)
        await self.blocking(self._write, fresh["path"], data)
        try:
            async with self.store.atomic():
                current = self.get(asset_id)
                kept = {k: fresh[k] for k in ("path", "mime", "type", "size", "width", "height", "colors",
                                              "thumbhash", "_hash")}
                updated = {**current, **kept, "_modified": int(time.time())}
                try:
                    await self.events.emit("assets.asset.save", asset=updated, is_update=True, identity=identity)
                except Reject as exc:
                    raise BadRequest(exc.message) from None
                self.assets.replace(updated)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self.blocking(discard, self.uploads, [self.key_of(fresh["path"])])
            raise
        await self._remove_files(current["path"] if current["path"] != updated["path"] else None, asset_id)
        return updated

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
            raise ValidationError("asset data", errors)
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
        await self._remove_files(doc["path"], doc["_id"])

    async def _remove_files(self, path: str | None, asset_id: str) -> None:
        """Remove an asset's file (when `path` is given) and its generated
        images, after the commit. The change is made by then: storage that
        fails now leaves files no record names, which is logged, not
        answered as an error."""
        try:
            if path is not None:
                await self.blocking(self.uploads.delete, self.key_of(path))
            await anyio.to_thread.run_sync(self._remove_generated, asset_id)
        except StorageUnavailable:
            log.warning("asset %s: its files could not be removed; they are left in the storage", asset_id)

    def _remove_generated(self, asset_id: str) -> None:
        size = self.thumbs.delete_prefix(check_key(asset_id))
        if size:
            self.thumb_cache.added(-size)

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
        largest = self.settings.max_output_size
        if (width or 0) > largest or (height or 0) > largest:
            raise BadRequest(f"Width and height can be at most {largest}")
        quality = _int(params, "q", self.settings.default_quality)
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

    async def image(self, asset: dict[str, Any], opts: images.ImageOptions, stamp: str,
                    identity: Identity, load: bool = False, client: str | None = None) -> ImageAnswer:
        """The generated image of `asset` (made once, even under a burst).

        Rendering is bounded: a few renders at a time per process (later
        ones wait `render_wait_seconds`, then 503), at most half of them
        for one caller (its key or user, else its `client` address), and
        callers who cannot write assets may cause `renders_per_hour` new
        images per asset and hour (then 429, unless an image differing only
        in `t` exists: that one is the answer) and no render estimated to
        take over `render_budget_seconds` (400). What exists already is
        served to anyone."""
        if asset["mime"] not in sniff.RASTER or asset["mime"] in ("image/heic", "image/x-icon"):
            return ImageAnswer(url=f"/storage/uploads{asset['path']}")
        base = _digest(f"{asset['_hash']}|{opts.key()}")[:32]
        name = f"{base}-{_digest(stamp)[:10]}" if stamp else base
        key = f"{check_key(asset['_id'])}/{name}.{images.EXT[opts.format]}"
        counted = not (identity.can("assets/upload") or identity.can("assets/edit"))
        for _ in range(3):  # a file evicted between finding and reading it is made again
            # stat, touch and maybe read megabytes: in a worker thread, off the event loop
            answer = await anyio.to_thread.run_sync(self._answer, asset, opts, key, load)
            if answer is None:
                if counted:
                    self._check_budget(asset, opts)
                caller = identity.key_id or f"client {client}"
                key = await self._render(asset, opts, key, base, counted, caller)
                answer = await anyio.to_thread.run_sync(self._answer, asset, opts, key, load)
            if answer is not None:
                return answer
        raise RenderBusy(1)

    def _answer(self, asset: dict[str, Any], opts: images.ImageOptions, key: str, load: bool) -> ImageAnswer | None:
        """The answer for the generated image `key`; None when it is not there."""
        data = None
        if load:  # size, times and bytes in one read (one request to a bucket)
            opened = self.thumbs.open(key)
            if opened is None:
                return None
            info, pieces = opened
            data = b"".join(pieces)
        else:
            found = self.thumbs.stat(key)
            if found is None:
                return None
            info = found
        self.thumb_cache.touch(key)
        name = key.rsplit("/", 1)[1]
        return ImageAnswer(url=f"/storage/thumbs/{key}", key=key, etag=f'"{name.rsplit(".", 1)[0]}"',
                           mime=images.OUTPUT_MIME[opts.format], data=data, modified=info.modified)

    def _check_budget(self, asset: dict[str, Any], opts: images.ImageOptions) -> None:
        """Refuse a render estimated to take longer than the budget: an
        encoder cannot be stopped half-way, so an anonymous 4096 px AVIF at
        quality 100 would otherwise hold a render slot for 10-17 s."""
        budget = self.settings.render_budget_seconds
        width, height = asset.get("width"), asset.get("height")
        if not budget or not isinstance(width, int) or not isinstance(height, int) or width < 1 or height < 1:
            return
        seconds = images.render_seconds((width, height), opts, self.settings.decode_pixels)
        if seconds > budget:
            raise BadRequest(f"Making this image would take about {seconds:.0f} s, more than the "
                             f"{budget} s allowed; ask for a smaller size, or JPEG instead of "
                             f"{opts.format.upper()}")

    async def _render(self, asset: dict[str, Any], opts: images.ImageOptions, key: str, base: str,
                      counted: bool, caller: str) -> str:
        """Render `target` in a worker thread once a render slot is free;
        answers the file to serve (another `t` of the same image when the
        caller is over the hourly cap)."""
        async with self._render_slot(caller):
            made, size = await anyio.to_thread.run_sync(self._generate, asset, opts, key, base, counted)
        if size:
            await anyio.to_thread.run_sync(self.thumb_cache.added, size)
        return made

    @contextlib.asynccontextmanager
    async def _render_slot(self, caller: str) -> AsyncIterator[None]:
        """One of `max_concurrent_renders` slots of this worker (its event
        loop), at most half of them for one caller, waiting at most
        `render_wait_seconds` for it (503 with Retry-After after that).
        Waiters sleep on a semaphore until a slot is released; nothing
        polls."""
        async with self._slots.taken(self.settings.render_wait_seconds, RenderBusy, caller):
            with self._rendering_lock:
                self._rendering += 1
            try:
                yield
            finally:
                with self._rendering_lock:
                    self._rendering -= 1

    def _generate(self, asset: dict[str, Any], opts: images.ImageOptions, key: str, base: str,
                  counted: bool) -> tuple[str, int]:
        """Render under the key's lock (threads of this process, and on local
        disk other processes too), written create-only, so that another
        instance on the same bucket that made it first keeps its file.
        Answers the key to serve and the bytes written (0 when nothing was)."""
        with self.thumbs.lock(key):
            if self.thumbs.exists(key):
                return key, 0
            if counted:
                retry = anyio.from_thread.run(self.render_limiter.hit, asset["_id"], "")
                if retry is not None:
                    other = self._same_image(key, base)
                    if other is None:
                        raise TooManyRequests(TOO_MANY_RENDERS, retry)
                    return other, 0
            try:
                data = self.uploads.read(self.key_of(asset["path"]))
            except FileNotFoundError:
                # the record outlived its file (a database restored without
                # the uploads folder): nothing to resize, said as such
                log.warning("asset %s: its file %s is missing", asset["_id"], asset["path"])
                raise NotFound("The file of this asset is missing") from None
            try:
                out = images.render(data, opts, self.settings.max_pixels, self.settings.decode_pixels)
            except images.BadImage as exc:
                raise BadRequest(str(exc)) from None
            if not self.thumbs.put_new(key, out):
                return key, 0  # another instance wrote it meanwhile: its file is the one kept
            self.generated += 1
            return key, len(out)

    def _same_image(self, key: str, base: str) -> str | None:
        """A generated image of the same options with another (or no) `t`:
        the most recently used one, or None."""
        folder, _, name = key.rpartition("/")
        suffix = name[name.rindex("."):]
        best = None
        for info in self.thumbs.list(folder):
            other = info.key.rpartition("/")[2]
            same = other.startswith(base) and other.endswith(suffix) and other[len(base)] in ".-"
            if same and (best is None or info.used_ns > best.used_ns):
                best = info
        return best.key if best else None


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


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
    return parse_int(raw, name)


def _dimension(params: dict[str, str], name: str) -> int | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    value = _int(params, name, 0)
    if value < 1:
        raise BadRequest(f"<{name}> must be a positive integer")
    return value
