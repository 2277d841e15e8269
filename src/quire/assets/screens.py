"""The assets manager (`/studio/assets`): the library as a grid of
thumbnails or a list, paged on the server, searched by title and filtered
by type, tag and folder; folders to create, rename, delete and move assets
into (drag and drop, or the "Move to folder" select); uploads of many files,
one request per file so that a refused file stores nothing of itself and
never stops the others; and an asset's page: its metadata, its focal point
set by clicking on the picture, sizes, palette, where it is used (the
content module's index of asset references), a new file under the same id,
and deletion with a warning naming how many items use it. Every read and
write goes through `AssetService` with the user's identity."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.assets.service import AssetService, Upload
from quire.errors import ApiError, BadRequest, Forbidden, NotFound, ValidationError
from quire.http import json_response, quire_of, service
from quire.ids import is_id
from quire.modules import FindSection, Found, Services, Usage
from quire.ui.prefs import PrefsService
from quire.ui.screens import (
    back_to,
    checked_form,
    multipart_form,
    need,
    redirect_flash,
    render,
    studio_page,
)
from quire.ui.web import Login, redirect, same_origin, same_token

LIMITS = (24, 48, 96, 192)
DEFAULT_LIMIT = 48
MAX_SKIP = 1_000_000
KINDS = ("image", "video", "audio", "document", "archive", "code", "unknown")
VIEW_KEY = "assets/view"
USED_SHOWN = 50  # items listed as using an asset (the count is exact)
MAX_TEXT = 10_000  # characters of a title, description or alt text
MAX_TAGS = 100
CROP = (240, 120)  # the focal point's preview: a wide crop that follows the point
MAX_MOVE = 500
MAX_FOLDER_NAME = 200


@dataclass
class LibraryQuery:
    q: str = ""
    type: str = ""
    tag: str = ""
    folder: str = ""
    limit: int = DEFAULT_LIMIT
    page: int = 1

    def params(self, **changes: Any) -> str:
        values = {"q": self.q, "type": self.type, "tag": self.tag, "folder": self.folder,
                  "limit": self.limit if self.limit != DEFAULT_LIMIT else "", "page": self.page if self.page > 1 else ""}
        values.update(changes)
        pairs = [(k, str(v)) for k, v in values.items() if v not in ("", None) and not (k == "page" and v == 1)]
        return "?" + urlencode(pairs) if pairs else ""

    @property
    def skip(self) -> int:
        return (self.page - 1) * self.limit

    def spec(self) -> dict[str, Any] | None:
        """The filters other than the title search (AssetService.titled does that)."""
        parts: list[dict[str, Any]] = []
        if self.type:
            parts.append({"type": self.type})
        if self.tag:
            parts.append({"tags": self.tag})
        if self.folder == "none":
            parts.append({"folder": None})
        elif self.folder:
            parts.append({"folder": self.folder})
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else {"$and": parts}


def _text(value: str, limit: int = 200) -> str:
    return " ".join(value.replace("\x00", "").split())[:limit]


def parse_library(params: Any) -> LibraryQuery:
    """The query string of the library: out-of-range values become the
    defaults (a link is never an error), an unknown folder simply finds
    nothing."""
    query = LibraryQuery(q=_text(params.get("q", "")), tag=_text(params.get("tag", ""), 100))
    kind = params.get("type", "")
    query.type = kind if kind in KINDS else ""
    folder = params.get("folder", "")
    query.folder = folder if folder == "none" or is_id(folder) else ""
    try:
        limit = int(params.get("limit", DEFAULT_LIMIT))
    except ValueError:
        limit = DEFAULT_LIMIT
    query.limit = limit if limit in LIMITS else DEFAULT_LIMIT
    try:
        page = int(params.get("page", 1))
    except ValueError:
        page = 1
    query.page = max(1, min(page, MAX_SKIP // query.limit))
    return query


def folder_tree(folders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Folders in tree order, each with its depth and path ("a / b")."""
    children: dict[str | None, list[dict[str, Any]]] = {}
    ids = {f["_id"] for f in folders}
    for folder in folders:
        parent = folder.get("parent") if folder.get("parent") in ids else None
        children.setdefault(parent, []).append(folder)
    out: list[dict[str, Any]] = []

    def walk(parent: str | None, depth: int, path: str) -> None:
        for folder in sorted(children.get(parent, []), key=lambda f: str(f.get("name", "")).lower()):
            if any(f["_id"] == folder["_id"] for f in out):  # a cycle in stored data: listed once
                continue
            named = f"{path} / {folder['name']}" if path else str(folder["name"])
            out.append({**folder, "depth": depth, "label": named})
            walk(folder["_id"], depth + 1, named)

    walk(None, 0, "")
    return out


def _folder_name(form: Any) -> str:
    """A folder's name as typed: refused (400) when too long or holding
    control characters; the service refuses an empty one or a slash."""
    name = form.get("name").strip()
    if len(name) > MAX_FOLDER_NAME:
        raise BadRequest(f"A folder name has at most {MAX_FOLDER_NAME} characters", fields=["name"])
    if any(ord(c) < 32 for c in name):
        raise BadRequest("A folder name cannot hold control characters", fields=["name"])
    return name


def _is_htmx(request: Request) -> bool:
    return bool(request.headers.get("hx-request")) and not request.headers.get("hx-boosted")


def _back(form_value: str) -> str:
    """A same-site address of the library to return to (never elsewhere)."""
    return back_to(form_value, "/studio/assets", under=True)


def size_text(size: Any) -> str:
    if not isinstance(size, int):
        return ""
    for unit, step in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if size >= step:
            return f"{size / step:.1f} {unit}"
    return f"{size} B"


# -- the library -------------------------------------------------------------


@studio_page
async def library(request: Request, login: Login) -> Response:
    need(login, "assets/read")
    assets = service(request, AssetService)
    query = parse_library(request.query_params)
    if query.q:
        docs, total = assets.titled(query.q, query.spec(), query.limit, query.skip)
    else:
        docs, found = assets.find(query.spec(), {"_created": -1}, query.limit, query.skip, None)
        total = found or 0
    folders = folder_tree(assets.list_folders())
    names = {f["_id"]: f["label"] for f in folders}
    view = service(request, PrefsService).get(login.user["_id"], VIEW_KEY, "grid")
    pages = max(1, -(-total // query.limit))
    context: dict[str, Any] = {
        "assets": docs, "total": total, "query": query, "folders": folders, "folder_names": names,
        "view": "list" if view == "list" else "grid", "kinds": KINDS, "limits": LIMITS,
        "pages": pages, "size_text": size_text,
        "current_folder": names.get(query.folder) if query.folder not in ("", "none") else None,
        "can_upload": login.can("assets/upload"), "can_edit": login.can("assets/edit"),
        "can_delete": login.can("assets/delete"),
        "here": request.url.path + query.params(),
        "max_upload": assets.settings.max_upload_bytes,
    }
    template = "assets/assets_results.html" if _is_htmx(request) else "assets/assets_library.html"
    return render(request, login, template, **context)


@studio_page
async def set_view(request: Request, login: Login) -> Response:
    """Grid or list: remembered for the user (a preference, like a list's columns)."""
    form = await checked_form(request, login)
    need(login, "assets/read")
    view = form.get("view")
    if view not in ("grid", "list"):
        raise BadRequest("The view is grid or list")
    await service(request, PrefsService).aset(login.user["_id"], VIEW_KEY, view)
    return redirect(_back(form.get("back")))


# -- uploads -----------------------------------------------------------------


def _wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _check_token(request: Request, login: Login, form: FormData) -> None:
    sent = form.get("csrf")
    token = sent if isinstance(sent, str) and sent else request.headers.get("x-csrf-token", "")
    if not same_origin(request) or not same_token(login.session["csrf"], token):
        raise Forbidden("The form has expired or did not come from this site; reload the page and try again")


@studio_page
async def upload(request: Request, login: Login) -> Response:
    """Files uploaded to the library (multipart, parts named `file`, the
    token as `csrf` or the X-CSRF-Token header, an optional `folder`).
    Each file is stored on its own: one refused (type, size, unreadable)
    stores nothing of itself and leaves the others stored. The page's
    script sends one file per request and reads JSON (`{"_id", "title"}` or
    `{"error"}` with the API's status); a plain form post goes back to the
    library saying what was stored and what was refused."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        await checked_form(request, login)  # a form post: its token is checked first, as for every write
        raise BadRequest("Send the files as multipart/form-data")
    assets = service(request, AssetService)
    try:
        form = await multipart_form(request, assets.settings.max_request_bytes, 100)
    except ApiError as exc:
        if _wants_json(request):
            return json_response({"error": exc.message}, status=exc.status)
        raise
    try:
        try:
            _check_token(request, login, form)
            need(login, "assets/upload")
            folder = form.get("folder")
            meta: dict[str, Any] = {"folder": folder} if isinstance(folder, str) and folder else {}
            parts = [p for key, p in form.multi_items() if key in ("file", "files") and isinstance(p, UploadFile)]
            files = [Upload(p.filename or "file", await p.read()) for p in parts]
            again = form.get("duplicates") == "keep"  # the user chose a second copy
        finally:
            await form.close()
    except ApiError as exc:  # the script shows the reason next to the file
        if _wants_json(request):
            return json_response({"error": exc.message}, status=exc.status)
        raise
    stored: list[dict[str, Any]] = []
    refused: list[tuple[str, ApiError]] = []
    # a file the library holds already is not stored twice unless asked:
    # the user gets the choice (the script) or is told (a plain form)
    duplicates: list[tuple[str, dict[str, Any]]] = []
    for one in files:
        same = None if again else await anyio.to_thread.run_sync(assets.same_file, one.data)
        if same is not None:
            duplicates.append((one.filename, same))
            continue
        try:
            stored += await assets.upload([one], meta, login.identity)
        except ApiError as exc:
            refused.append((one.filename, exc))
    if _wants_json(request):
        if not files:
            return json_response({"error": "No file uploaded"}, status=400)
        if refused and not stored:
            return json_response({"error": refused[0][1].message}, status=refused[0][1].status)
        return json_response({"stored": [{"_id": d["_id"], "title": d["title"]} for d in stored],
                              "refused": [{"file": name, "error": exc.message} for name, exc in refused],
                              "duplicates": [{"file": name, "_id": d["_id"], "title": d["title"]}
                                             for name, d in duplicates]})
    if not files:
        raise BadRequest("No file uploaded: choose one or more files")
    said = [f"Uploaded {len(stored)} file{'' if len(stored) == 1 else 's'}."]
    said += [f"Refused {name}: {exc.message}" for name, exc in refused]
    said += [f"Not uploaded {name}: the library has it already as {d['title']} (tick “Upload files the library "
             "has already” to keep a second copy)." for name, d in duplicates]
    return redirect_flash(request, _back(str(form.get("back") or "")), " ".join(said))


# -- folders -----------------------------------------------------------------


@studio_page
async def create_folder(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, "assets/edit")
    parent = form.get("parent") or None
    if parent is not None and not is_id(parent):
        raise BadRequest("Parent folder not found")
    folder = await service(request, AssetService).save_folder({"name": _folder_name(form), "parent": parent})
    return redirect_flash(request, f"/studio/assets?folder={folder['_id']}", f"Created folder {folder['name']}.")


@studio_page
async def rename_folder(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, "assets/edit")
    assets = service(request, AssetService)
    folder_id = request.path_params["fid"]
    current = assets.folders.get(folder_id) if is_id(folder_id) else None
    if current is None:
        raise NotFound("Folder not found")
    folder = await assets.save_folder({"_id": folder_id, "name": _folder_name(form),
                                       "parent": current.get("parent")})
    return redirect_flash(request, f"/studio/assets?folder={folder_id}", f"Renamed the folder to {folder['name']}.")


@studio_page
async def delete_folder(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, "assets/delete")
    folder_id = request.path_params["fid"]
    if not is_id(folder_id):
        raise NotFound("Folder not found")
    moved = await service(request, AssetService).delete_folder(folder_id)
    return redirect_flash(request, "/studio/assets",
                          f"Deleted the folder; {moved} asset{'' if moved == 1 else 's'} moved to no folder.")


@studio_page
async def move(request: Request, login: Login) -> Response:
    """Assets into a folder (`folder` empty: out of every folder), from the
    library's checkboxes and select, or a drop on a folder (the script
    posts the same fields)."""
    form = await checked_form(request, login)
    need(login, "assets/edit")
    ids = [i for i in form.getlist("ids") if is_id(i)][:MAX_MOVE]
    if not ids:
        raise BadRequest("Select the assets to move")
    folder = form.get("folder") or None
    assets = service(request, AssetService)
    if folder is not None and (not is_id(folder) or assets.folders.get(folder) is None):
        raise BadRequest("That folder does not exist")
    moved = 0
    for asset_id in ids:
        try:
            await assets.update(asset_id, {"folder": folder}, login.identity)
            moved += 1
        except NotFound:
            continue
    name = assets.folders.get(folder)["name"] if folder else "no folder"  # type: ignore[index]
    return redirect_flash(request, _back(form.get("back")),
                          f"Moved {moved} asset{'' if moved == 1 else 's'} to {name}.")


# -- one asset ---------------------------------------------------------------


def _asset(request: Request) -> dict[str, Any]:
    return service(request, AssetService).get(request.path_params["id"])  # 404 for a bad or unknown id


def _usage(request: Request, login: Login, asset_id: str) -> Usage:
    """Where the asset is used, as the modules that use assets tell."""
    return quire_of(request).usage(login.identity, "asset", asset_id, USED_SHOWN)


def _page_context(request: Request, login: Login, asset: dict[str, Any]) -> dict[str, Any]:
    assets = service(request, AssetService)
    folders = folder_tree(assets.list_folders())
    return {"asset": asset, "folders": folders, "usage": _usage(request, login, asset["_id"]),
            "size_text": size_text, "crop": CROP, "errors": {}, "values": None,
            "can_edit": login.can("assets/edit"), "can_delete": login.can("assets/delete"),
            "can_replace": login.can("assets/edit") and login.can("assets/upload"),
            "is_image": asset.get("type") == "image" and asset.get("mime") not in ("image/heic", "image/x-icon"),
            "max_upload": assets.settings.max_upload_bytes}


@studio_page
async def asset_page(request: Request, login: Login) -> Response:
    need(login, "assets/read")
    asset = _asset(request)
    return render(request, login, "assets/assets_asset.html", **_page_context(request, login, asset))


def _focal(form: Any) -> tuple[Any, str | None]:
    """The focal point typed or clicked: both coordinates (0..1) or neither."""
    x, y = form.get("fp_x").strip(), form.get("fp_y").strip()
    if not x and not y:
        return None, None
    try:
        fx, fy = float(x), float(y)
    except ValueError:
        return None, "Give both coordinates as numbers from 0 to 1, or neither"
    if not (0 <= fx <= 1 and 0 <= fy <= 1):
        return None, "Give both coordinates as numbers from 0 to 1, or neither"
    return {"x": round(fx, 4), "y": round(fy, 4)}, None


@studio_page
async def save_asset(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, "assets/edit")
    assets = service(request, AssetService)
    asset = _asset(request)
    tags = [t for t in (_text(t, 100) for t in form.get("tags").split(",")) if t]
    errors: dict[str, str] = {}
    data: dict[str, Any] = {"tags": list(dict.fromkeys(tags))}
    if len(data["tags"]) > MAX_TAGS:
        errors["tags"] = f"At most {MAX_TAGS} tags"
    for key in ("title", "description", "altText"):
        value = form.get(key).replace("\x00", "")
        if len(value) > MAX_TEXT:
            errors[key] = f"At most {MAX_TEXT:,} characters"
        data[key] = value.strip() if key == "title" else value
    if not data["title"]:
        errors["title"] = "A title is required"
    fp, problem = _focal(form)
    if problem:
        errors["fp"] = problem
    data["fp"] = fp
    folder = form.get("folder") or None
    if folder is not None and not is_id(folder):
        errors["folder"] = "is not a folder"
    else:
        data["folder"] = folder
    if not errors:
        try:
            await assets.update(asset["_id"], data, login.identity)
        except ValidationError as exc:
            errors = {k: str(v) for k, v in (exc.errors or {}).items()} or {"title": exc.message}
        except BadRequest as exc:
            errors = {"title": exc.message}
    if errors:
        context = _page_context(request, login, asset)
        context.update(errors=errors, values={**data, "tags": form.get("tags"), "fp_x": form.get("fp_x"),
                                              "fp_y": form.get("fp_y")})
        return render(request, login, "assets/assets_asset.html", 400, **context)
    return redirect_flash(request, f"/studio/assets/{asset['_id']}", "Saved.")


@studio_page
async def replace(request: Request, login: Login) -> Response:
    """A new file under the same id (multipart `file`, token `csrf`)."""
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        await checked_form(request, login)
        raise BadRequest("Send the file as multipart/form-data")
    assets = service(request, AssetService)
    form = await multipart_form(request, assets.settings.max_request_bytes, 100)
    try:
        _check_token(request, login, form)
        need(login, "assets/edit")
        need(login, "assets/upload")
        part = form.get("file")
        if not isinstance(part, UploadFile) or not part.filename:
            raise BadRequest("Choose the new file")
        one = Upload(part.filename or "file", await part.read())
    finally:
        await form.close()
    asset = _asset(request)
    try:
        await assets.replace_file(asset["_id"], one, login.identity)
    except ApiError as exc:
        if isinstance(exc, NotFound):
            raise
        context = _page_context(request, login, asset)
        context["errors"] = {"file": exc.message}
        return render(request, login, "assets/assets_asset.html", exc.status, **context)
    return redirect_flash(request, f"/studio/assets/{asset['_id']}", f"Replaced the file with {one.filename}.")


@studio_page
async def confirm_delete(request: Request, login: Login) -> Response:
    need(login, "assets/delete")
    asset = _asset(request)
    return render(request, login, "assets/assets_delete.html", asset=asset,
                  usage=_usage(request, login, asset["_id"]))


@studio_page
async def delete(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, "assets/delete")
    asset = _asset(request)
    await service(request, AssetService).delete(asset["_id"], login.identity)
    return redirect_flash(request, "/studio/assets", f"Deleted {asset.get('title') or 'the asset'}.")


@studio_page
async def crop(request: Request, login: Login) -> Response:
    """The focal point's preview: a crop of the picture around its focal
    point, made by the image endpoint's own path (so it is what API
    clients get), as a redirect to the generated file."""
    need(login, "assets/read")
    assets = service(request, AssetService)
    asset = _asset(request)
    if asset.get("type") != "image":
        raise NotFound("Not an image")
    opts, _ = assets.parse_image_options({"w": str(CROP[0]), "h": str(CROP[1]), "m": "thumbnail"}, asset,
                                         request.headers.get("accept", ""))
    answer = await assets.image(asset, opts, "", login.identity)
    return redirect(answer.url)


# after the pickers' /studio/assets/pick, /thumb/{id} and /upload (editor.routes)
routes = [
    route("/studio/assets", get=library, post=upload, cors=False),
    route("/studio/assets/view", post=set_view, cors=False),
    route("/studio/assets/move", post=move, cors=False),
    route("/studio/assets/folders", post=create_folder, cors=False),
    route("/studio/assets/folders/{fid}", post=rename_folder, cors=False),
    route("/studio/assets/folders/{fid}/delete", post=delete_folder, cors=False),
    route("/studio/assets/{id}", get=asset_page, post=save_asset, cors=False),
    route("/studio/assets/{id}/replace", post=replace, cors=False),
    route("/studio/assets/{id}/delete", get=confirm_delete, post=delete, cors=False),
    route("/studio/assets/{id}/crop", get=crop, cors=False),
]


FOUND_PER_SEARCH = 8  # assets the studio's search box shows


def find(services: Services, identity: Any, words: str) -> list[FindSection]:
    """Assets whose title, path or tags hold the words, the newest first."""
    if not identity.can("assets/read"):
        return []
    pattern = {"$regex": re.escape(words), "$options": "i"}
    spec = {"$or": [{"title": pattern}, {"path": pattern}, {"tags": pattern}]}
    docs, _ = services.get(AssetService).find(spec, {"_created": -1}, FOUND_PER_SEARCH, None, None)
    found = [Found(d.get("title") or d.get("path", ""), f"/studio/assets/{d['_id']}", note=d.get("mime", ""),
                   thumb=f"/studio/assets/thumb/{d['_id']}" if str(d.get("mime", "")).startswith("image/") else None)
             for d in docs]
    return [FindSection("Assets", found, order=40)]
