"""OpenAPI paths of the assets API and the stored files."""

from __future__ import annotations

from typing import Any

from quire.openapi import (
    DATA_BODY,
    FIELDS,
    FILTER,
    ID_PATTERN,
    ITEM,
    LIMIT,
    LIST,
    OBJECT,
    OBJECTS,
    SKIP,
    SORT,
    SUCCESS,
    op,
    param,
)

ASSET_ID = param("id", "path", "string", "Asset id", pattern=ID_PATTERN)


def _upload_op() -> dict[str, Any]:
    operation = op("Upload one or more files (multipart parts named files); answers the created asset objects",
                   [], (400, 403, 413, 415), tag="assets", schema=OBJECTS)
    operation["requestBody"] = {"required": True, "content": {"multipart/form-data": {"schema": {
        "type": "object",
        "properties": {
            "files": {"type": "array", "items": {"type": "string", "format": "binary"}},
            "folder": {"type": "string"}, "title": {"type": "string"},
            "tags": {"type": "string", "description": "comma-separated, or a JSON array"},
        },
        "required": ["files"],
    }}}}
    return operation


def _image_op(preset_in_path: bool = False) -> dict[str, Any]:
    def p(name: str, kind: str, text: str, **constraints: Any) -> dict[str, Any]:
        return param(name, "query", kind, text, **constraints)

    preset = (param("preset", "path", "string", "Name of an image preset ([assets.presets]); "
                    "parameters given in the query win over the preset's") if preset_in_path else
              p("preset", "string", "Name of an image preset ([assets.presets]); parameters given "
                "in the query win over the preset's"))
    summary = "Generate or fetch a resized image" + (" with a named preset" if preset_in_path else "")
    operation = op(summary, [
        ASSET_ID,
        preset,
        p("m", "string", "Mode: thumbnail (default; crop to exactly w x h, focal point aware), bestFit, resize, "
          "fitToWidth, fitToHeight", enum=["thumbnail", "bestFit", "resize", "fitToWidth", "fitToHeight"]),
        p("w", "int", "Width (at most the configured maximum, default 4096); w or h is required", minimum=1),
        p("h", "int", "Height", minimum=1),
        p("q", "int", "Quality (default 80)", minimum=1, maximum=100),
        p("mime", "string", "auto (webp when accepted, else the source format), gif, jpeg, png, webp, bmp, avif",
          enum=["auto", "gif", "jpeg", "png", "webp", "bmp", "avif"]),
        p("re", "string", "1: answer 307 to the generated image", enum=["0", "1"]),
        p("t", "string", "Any text; only changes the cache key"),
        p("o", "string", "0 (default): the image's absolute URL as text/plain; 1: the image bytes",
          enum=["0", "1"]),
        p("b64", "string", "1: the image as a data: URI (text/plain); wins over o and re", enum=["0", "1"]),
    ], (400, 401, 403, 404, 429, 503), tag="assets",
        ok="URL as text/plain, or the image (o=1), or a data: URI (b64=1), or 307 (re=1)")
    operation["responses"]["200"]["content"] = {
        "text/plain": {"schema": {"type": "string", "format": "uri"}},
        "image/*": {"schema": {"type": "string", "format": "binary"}},
    }
    operation["responses"]["304"] = {"description": "Not modified (If-None-Match)"}
    operation["responses"]["307"] = {"description": "Redirect to the image (re=1), or to the original of a non-image"}
    return operation


def _file_op(summary: str, path_text: str) -> dict[str, Any]:
    operation = op(summary, [param("path", "path", "string", path_text)], (404,), tag="assets",
                   security=False, ok="The file")
    operation["responses"]["200"]["content"] = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
    operation["responses"]["304"] = {"description": "Not modified (If-None-Match)"}
    return operation


def paths() -> dict[str, Any]:
    return {
        "/api/assets": {
            "get": op("List assets: an array, or {data, meta: {total}} with limit and skip",
                      [FILTER, SORT, FIELDS, LIMIT, SKIP], (400, 403), tag="assets", schema=LIST),
            "post": _upload_op(),
        },
        "/api/assets/{id}": {
            "get": op("Get an asset object", [ASSET_ID], (403, 404), tag="assets", schema=ITEM),
            "post": op("Update an asset's title, description, tags, altText, folder or focal point fp",
                       [ASSET_ID], (400, 403, 404, 412, 413), body=DATA_BODY, tag="assets", schema=OBJECT),
            "delete": op("Delete an asset, its file and its generated images", [ASSET_ID],
                         (403, 404), tag="assets", ok='{"success": true}', schema=SUCCESS),
        },
        "/api/assets/folders": {
            "get": op("List folders (all, or the children of ?parent=)",
                      [param("parent", "query", "string", "Only the folders directly under this one")],
                      (403,), tag="assets", schema=OBJECTS),
            "post": op("Create a folder {data: {name, parent}}, or rename/move one with data._id",
                       [], (400, 403, 404, 412, 413), body=DATA_BODY, tag="assets", schema=OBJECT),
        },
        "/api/assets/folders/{id}": {
            "delete": op("Delete a folder and its subfolders; their assets move to the root",
                         [param("id", "path", "string", "Folder id", pattern=ID_PATTERN)], (403, 404),
                         tag="assets", ok='{"success": true, "moved": <assets moved to the root>}',
                         schema=SUCCESS),
        },
        "/api/assets/image/{id}": {"get": _image_op()},
        "/api/assets/image/{id}/{preset}": {"get": _image_op(preset_in_path=True)},
        "/storage/uploads/{path}": {
            "get": _file_op("An uploaded file (public, immutable, ETag/304)", "YYYY/MM/DD/name_unique.ext"),
        },
        "/storage/thumbs/{path}": {
            "get": _file_op("A generated image (public, immutable, ETag/304)", "<asset id>/<key>.<ext>"),
        },
    }
