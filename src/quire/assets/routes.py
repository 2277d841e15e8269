"""HTTP routes of assets (`/api/assets...`) and the public files under
`/storage/uploads` and `/storage/thumbs`."""

from __future__ import annotations

import base64
import mimetypes
import os
import re
from collections.abc import AsyncIterator, Callable, Iterator
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

import anyio.to_thread
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)

from quire.asgi import route
from quire.assets import presets
from quire.assets.service import PRIVATE_DIR, AssetService, Upload
from quire.auth.request import identify
from quire.errors import BadRequest, NotFound, PayloadTooLarge
from quire.files import FileInfo, Files, Pieces
from quire.http import (
    client_address,
    content_length,
    int_param,
    json_param,
    json_response,
    limited_receive,
    parse_json_text,
    quire_of,
    read_data,
    read_json,
    service,
)

IMMUTABLE = "public, max-age=31536000, immutable"
SMALL_FILE = 256 * 1024
# An uploaded file is served as data, never as a page: no sniffing, and an
# SVG (checked at upload) still runs nothing even if opened directly.
FILE_HEADERS = {"X-Content-Type-Options": "nosniff", "Cross-Origin-Resource-Policy": "cross-origin"}
SANDBOX_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox"
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")


def absolute(request: Request, path: str) -> str:
    public = quire_of(request).public_url  # a space's own already ends with its name (quire.spaces)
    if public:
        return public.rstrip("/") + path
    # a space's requests come under its name (`root_path`, quire.sites)
    host = f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}"
    return host + request.scope.get("root_path", "") + path


async def upload(request: Request) -> Response:
    identity = identify(request)
    identity.require("assets/upload")
    limit = service(request, AssetService).settings.max_request_bytes
    declared = content_length(request.headers.get("content-length"))
    if declared is not None and declared > limit:
        raise PayloadTooLarge(f"Upload is larger than {limit} bytes")
    if not request.headers.get("content-type", "").startswith("multipart/form-data"):
        raise BadRequest("Send files as multipart/form-data parts named 'files'")
    limited = Request(request.scope, limited_receive(request.receive, limit))
    try:
        form = await limited.form(max_files=100, max_fields=100)
    except PayloadTooLarge:
        raise
    except Exception as exc:  # malformed multipart
        raise BadRequest(f"Malformed multipart body: {exc}") from None
    try:
        files = [part for key, part in form.multi_items() if key in ("files", "files[]") and isinstance(part, UploadFile)]
        uploads = [Upload(part.filename or "file", await part.read()) for part in files]
        meta = _upload_meta(form)
    finally:
        await form.close()
    created = await service(request, AssetService).upload(uploads, meta, identity)
    return json_response(created)


def _upload_meta(form: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for key in ("folder", "title", "description", "altText"):
        value = form.get(key)
        if isinstance(value, str) and value:
            meta[key] = value
    tags: list[str] = []
    for value in form.getlist("tags") + form.getlist("tags[]"):
        if isinstance(value, str):
            if value.startswith("["):
                parsed = parse_json_text(value, "tags")
                if not isinstance(parsed, list) or not all(isinstance(t, str) for t in parsed):
                    raise BadRequest("<tags> must be a list of strings")
                tags += parsed
            else:
                tags += [t.strip() for t in value.split(",") if t.strip()]
    meta["tags"] = tags
    return meta


async def list_assets(request: Request) -> Response:
    identity = identify(request)
    identity.require("assets/read")
    spec, sort, fields = json_param(request, "filter"), json_param(request, "sort"), json_param(request, "fields")
    limit, skip = int_param(request, "limit"), int_param(request, "skip")
    docs, total = service(request, AssetService).find(spec, sort, limit, skip, fields)
    return json_response(docs if total is None else {"data": docs, "meta": {"total": total}})


async def get_asset(request: Request) -> Response:
    identify(request).require("assets/read")
    return json_response(service(request, AssetService).get(request.path_params["id"]))


async def update_asset(request: Request) -> Response:
    identity = identify(request)
    identity.require("assets/edit")
    data = await read_data(request)
    return json_response(await service(request, AssetService).update(request.path_params["id"], data, identity))


async def delete_asset(request: Request) -> Response:
    identity = identify(request)
    identity.require("assets/delete")
    await service(request, AssetService).delete(request.path_params["id"], identity)
    return json_response({"success": True})


async def list_folders(request: Request) -> Response:
    identify(request).require("assets/read")
    parent = request.query_params.get("parent")
    folders = service(request, AssetService).list_folders(parent or None, all_levels="parent" not in request.query_params)
    return json_response(folders)


async def save_folder(request: Request) -> Response:
    identify(request).require("assets/edit")
    quire = quire_of(request)
    body = await read_json(request, quire.max_body, quire.max_depth)
    data = body.get("data") if isinstance(body, dict) else None
    return json_response(await service(request, AssetService).save_folder(data))


async def delete_folder(request: Request) -> Response:
    identify(request).require("assets/delete")
    moved = await service(request, AssetService).delete_folder(request.path_params["id"])
    return json_response({"success": True, "moved": moved})


async def image(request: Request) -> Response:
    identity = identify(request)
    identity.require("assets/read")
    assets = service(request, AssetService)
    asset = assets.get(request.path_params["id"])
    params = dict(request.query_params)
    preset = _preset_name(request, params)
    if preset:
        params = presets.merged(assets.presets, preset, params)
    output = _flag(params, "o")
    redirect = _flag(params, "re")
    inline = _flag(params, "b64")
    opts, vary = assets.parse_image_options(params, asset, request.headers.get("accept", ""))
    answer = await assets.image(asset, opts, params.get("t", ""), identity, load=output or inline,
                                client=client_address(request))
    headers = {"Vary": "Accept"} if vary else {}
    url = absolute(request, answer.url)
    # a non-image answers its original's URL whatever was asked
    if answer.key is None:
        if redirect or output:
            return RedirectResponse(url, status_code=307, headers=headers)
        return PlainTextResponse(url, headers=headers)
    if inline:  # b64=1 wins over o and re: the image as a data: URI, as text
        assert answer.data is not None and answer.etag is not None and answer.modified is not None
        etag = answer.etag[:-1] + '.b64"'
        headers.update(_cache_headers(etag, answer.modified))
        if _not_modified(request, etag, answer.modified):
            return Response(status_code=304, headers=headers)
        body = await anyio.to_thread.run_sync(_data_uri, answer.mime, answer.data)  # megabytes: off the loop
        return PlainTextResponse(body, headers=headers)
    if redirect:
        return RedirectResponse(url, status_code=307, headers=headers)
    if not output:
        return PlainTextResponse(url, headers=headers)
    assert answer.data is not None and answer.etag is not None and answer.modified is not None
    headers.update({**_cache_headers(answer.etag, answer.modified), **FILE_HEADERS})
    if _not_modified(request, answer.etag, answer.modified):
        return Response(status_code=304, headers=headers)
    return Response(answer.data, media_type=answer.mime, headers=headers)


def _preset_name(request: Request, params: dict[str, str]) -> str:
    """The preset of the path (`/image/{id}/{preset}`) or of `?preset=`;
    naming two different ones is a 400."""
    in_path = request.path_params.get("preset", "")
    in_query = params.pop("preset", "")
    if in_path and in_query and in_path != in_query:
        raise BadRequest(f"Two presets given: '{in_path}' in the path and '{in_query}' in <preset>")
    return str(in_path or in_query)


def _cache_headers(etag: str, modified: float) -> dict[str, str]:
    return {"Cache-Control": IMMUTABLE, "ETag": etag, "Last-Modified": formatdate(modified, usegmt=True)}


def _not_modified(request: Request, etag: str, modified: float) -> bool:
    """If-None-Match decides when sent; else If-Modified-Since (RFC 9110)."""
    if request.headers.get("if-none-match"):
        return _etag_matches(request, etag)
    since = request.headers.get("if-modified-since")
    if not since:
        return False
    try:
        when = parsedate_to_datetime(since)
    except (TypeError, ValueError, OverflowError, IndexError):  # unparsable: as if not sent
        return False
    if when.tzinfo is None:
        return False
    return int(modified) <= when.timestamp()


def _data_uri(mime: str | None, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def _flag(params: dict[str, str], name: str) -> bool:
    raw = params.get(name, "0") or "0"
    if raw not in ("0", "1"):
        raise BadRequest(f"<{name}> must be 0 or 1")
    return raw == "1"


def _etag_matches(request: Request, etag: str) -> bool:
    wanted = request.headers.get("if-none-match")
    if not wanted:
        return False
    return wanted.strip() == "*" or etag in [tag.strip().removeprefix("W/") for tag in wanted.split(",")]


async def _serve(request: Request, assets: AssetService, files: Files, key: str,
                 used: Callable[[str], None] | None = None) -> Response:
    """A stored file of `files`, never outside it (hidden names neither);
    404 otherwise."""
    if any(part in ("", ".", "..") or part.startswith(".") for part in key.split("/")):
        raise NotFound("File not found")
    body: Pieces | None = None
    revalidating = "if-none-match" in request.headers or "if-modified-since" in request.headers
    if files.remote and not revalidating:  # one GET answers the size, the times and the bytes
        opened = await anyio.to_thread.run_sync(files.open, key)
        info, body = opened if opened is not None else (None, None)
    elif files.remote:  # likely a 304: a HEAD, and the bytes only if they are wanted after all
        info = await anyio.to_thread.run_sync(files.stat, key)
    else:  # on disk: a stat, then the file as Starlette sends it (ranges included)
        info = files.stat(key)
    if info is None:
        raise NotFound("File not found")
    try:
        etag = f'"{info.size:x}-{info.modified_ns:x}"'
        mime = mimetypes.guess_type(key.rpartition("/")[2])[0] or "application/octet-stream"
        headers = {**_cache_headers(etag, info.modified), **FILE_HEADERS}
        if mime == "image/svg+xml" or mime.startswith("text/") or mime.endswith("xml"):
            headers["Content-Security-Policy"] = SANDBOX_POLICY
        if used is not None:
            used(key)
        if _not_modified(request, etag, info.modified):
            return Response(status_code=304, headers=headers)
        if info.size <= SMALL_FILE:
            if body is not None:
                data = await anyio.to_thread.run_sync(_read_all, body)
            else:
                try:
                    data = await assets.blocking(files.read, key)
                except FileNotFoundError:  # removed since the stat
                    raise NotFound("File not found") from None
            return Response(data, media_type=mime, headers=headers)
        if body is not None and not request.headers.get("range"):
            answer = _streaming(body, info, mime, headers, 200)
            body = None  # the answer reads and closes it
            return answer
        return send_stored(request, files, info, mime, headers, etag)
    finally:
        if body is not None:
            await anyio.to_thread.run_sync(body.close)


def _read_all(pieces: Iterator[bytes]) -> bytes:
    return b"".join(pieces)


def send_stored(request: Request, files: Files, info: FileInfo, mime: str, headers: dict[str, str],
                etag: str | None = None) -> Response:
    """A stored file as the body: from local disk as Starlette sends files
    (ranges included); from a bucket streamed through this process, with
    one range (`Range: bytes=a-b`) honoured and others answered whole."""
    path = files.local_path(info.key)
    if path is not None:
        return FileResponse(path, media_type=mime, headers=headers, stat_result=os.stat(path))
    wanted = _one_range(request, info, etag)
    if isinstance(wanted, str):  # "unsatisfiable"
        return Response(status_code=416, headers={**headers, "Accept-Ranges": "bytes",
                                                  "Content-Range": f"bytes */{info.size}"})
    start, end, status = 0, info.size, 200
    if wanted is not None:
        start, end = wanted
        status = 206
        headers = {**headers, "Content-Range": f"bytes {start}-{end - 1}/{info.size}"}
    return _streaming(_ranged(files, info.key, start, end), info, mime, headers, status, end - start)


def _streaming(pieces: Iterator[bytes] | AsyncIterator[bytes], info: FileInfo, mime: str, headers: dict[str, str],
               status: int, length: int | None = None) -> Response:
    headers = {**headers, "Accept-Ranges": "bytes", "Content-Length": str(info.size if length is None else length)}
    body = pieces if isinstance(pieces, AsyncIterator) else _off_the_loop(pieces)
    return StreamingResponse(body, status_code=status, media_type=mime, headers=headers)


async def _ranged(files: Files, key: str, start: int, end: int) -> AsyncIterator[bytes]:
    pieces = await anyio.to_thread.run_sync(files.chunks, key, start, end)
    async for piece in _off_the_loop(pieces):
        yield piece


async def _off_the_loop(pieces: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The pieces, each fetched in a worker thread so a slow bucket never
    holds up the event loop; closed however the answer ends."""
    done = b""
    try:
        while piece := await anyio.to_thread.run_sync(next, pieces, done):
            yield piece
    finally:
        close = getattr(pieces, "close", None)
        if close is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(close)


def _one_range(request: Request, info: FileInfo, etag: str | None) -> tuple[int, int] | str | None:
    """(start, end) of a single satisfiable `Range: bytes=...` (end
    exclusive); "unsatisfiable" for one past the end; None for no range, an
    If-Range that no longer matches, several ranges or a malformed one
    (the whole file is then the answer, as RFC 9110 allows)."""
    header = request.headers.get("range")
    if not header:
        return None
    if_range = request.headers.get("if-range")
    if if_range and if_range.strip() != etag:
        try:
            when = parsedate_to_datetime(if_range)
        except (TypeError, ValueError, OverflowError, IndexError):
            return None
        if when.tzinfo is None or int(info.modified) > when.timestamp():
            return None
    match = _RANGE.fullmatch(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # the last n bytes
        length = int(last)
        if length == 0:
            return "unsatisfiable"
        return max(info.size - length, 0), info.size
    start = int(first)
    end = info.size if last == "" else min(int(last) + 1, info.size)
    if start >= info.size:
        return "unsatisfiable"
    if end <= start:
        return None
    return start, end


async def uploaded_file(request: Request) -> Response:
    path = request.path_params["path"]
    if path.split("/", 1)[0] == PRIVATE_DIR:  # form attachments: only through the inbox API
        raise NotFound("File not found")
    assets = service(request, AssetService)
    return await _serve(request, assets, assets.uploads, path)


async def thumb_file(request: Request) -> Response:
    assets = service(request, AssetService)
    return await _serve(request, assets, assets.thumbs, request.path_params["path"], used=assets.thumb_cache.touch)


routes = [
    route("/api/assets", get=list_assets, post=upload),
    route("/api/assets/folders", get=list_folders, post=save_folder),
    route("/api/assets/folders/{id}", delete=delete_folder),
    route("/api/assets/image/{id}", get=image),
    route("/api/assets/image/{id}/{preset}", get=image),
    route("/api/assets/{id}", get=get_asset, post=update_asset, delete=delete_asset),
    route("/storage/uploads/{path:path}", get=uploaded_file),
    route("/storage/thumbs/{path:path}", get=thumb_file),
]
