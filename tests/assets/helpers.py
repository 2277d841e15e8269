"""Images made in memory with Pillow, and small helpers shared by the asset
tests (upload, walk the data dir, raw ASGI requests)."""

from __future__ import annotations

import asyncio
import io
import random
import struct
import zlib
from pathlib import Path
from typing import Any

from PIL import Image

from tests.conftest import Api

RED = (255, 0, 0)
GREEN = (0, 255, 0)
BLUE = (0, 0, 255)
WHITE = (255, 255, 255)
ORIENTATION = 0x0112


# -- images -------------------------------------------------------------------


def encode(image: Image.Image, fmt: str = "PNG", **params: Any) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **params)
    return out.getvalue()


def solid(width: int, height: int, color: tuple[int, int, int] = RED, fmt: str = "PNG", **params: Any) -> bytes:
    return encode(Image.new("RGB", (width, height), color), fmt, **params)


def halves_image(width: int, height: int, left: tuple[int, int, int] = RED,
                 right: tuple[int, int, int] = BLUE) -> Image.Image:
    """Left half one colour, right half another."""
    image = Image.new("RGB", (width, height), left)
    image.paste(right, (width // 2, 0, width, height))
    return image


def halves(width: int, height: int, left: tuple[int, int, int] = RED, right: tuple[int, int, int] = BLUE,
           fmt: str = "PNG", **params: Any) -> bytes:
    return encode(halves_image(width, height, left, right), fmt, **params)


def oriented_jpeg(image: Image.Image, orientation: int, **extra_tags: Any) -> bytes:
    """A JPEG whose EXIF says how to turn the stored pixels for display."""
    exif = Image.Exif()
    exif[ORIENTATION] = orientation
    for tag, value in extra_tags.items():
        exif[int(tag)] = value
    return encode(image, "JPEG", exif=exif.tobytes(), quality=95)


def animated_gif(colors: list[tuple[int, int, int]], size: tuple[int, int] = (20, 20)) -> bytes:
    frames = [Image.new("RGB", size, c) for c in colors]
    return encode(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    data = random.Random(seed).randbytes(width * height * 3)
    return Image.frombytes("RGB", (width, height), data)


def png_claiming(width: int, height: int) -> bytes:
    """A valid 1x1 PNG whose header claims width x height (a decompression
    bomb as far as the header is concerned)."""
    data = bytearray(solid(1, 1))
    # signature (8) + length (4) + b"IHDR" (4) + 13 bytes of IHDR data + CRC (4)
    assert data[12:16] == b"IHDR"
    struct.pack_into(">II", data, 16, width, height)
    crc = zlib.crc32(bytes(data[12:29])) & 0xFFFFFFFF
    struct.pack_into(">I", data, 29, crc)
    return bytes(data)


def open_image(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def near(pixel: Any, color: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(int(a) - int(b)) <= tolerance for a, b in zip(pixel[:3], color, strict=True))


# -- HTTP ---------------------------------------------------------------------




def upload(api: Api, *files: tuple[Any, ...], data: dict[str, Any] | None = None) -> Any:
    """POST /api/assets with one `files` part per (name, bytes[, content type])."""
    parts = [("files", f if len(f) == 3 else (f[0], f[1], "application/octet-stream")) for f in files]
    return api.post("/api/assets", files=parts, data=data or {})


def upload_one(api: Api, name: str, content: bytes, content_type: str = "application/octet-stream",
               **form: Any) -> dict[str, Any]:
    response = upload(api, (name, content, content_type), data=form)
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, list) and len(body) == 1
    return body[0]  # type: ignore[no-any-return]


def files_under(root: Path) -> list[Path]:
    """Every file below `root` (none when it does not exist)."""
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def raw_get(app: Any, path: str) -> tuple[int, dict[str, str], bytes]:
    """GET `path` straight through the ASGI app, with no client-side URL
    normalisation (so `..` reaches the server as sent)."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
        "scheme": "http", "path": path, "raw_path": path.encode(), "root_path": "",
        "query_string": b"", "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 1234), "server": ("testserver", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], headers, body


def png_of_zeros(width: int, height: int) -> bytes:
    """A real RGB PNG of width x height black pixels: every row is there, and
    zlib squeezes them to about a thousandth (a decompression bomb that
    stays under a pixel limit on the declared size)."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    packer = zlib.compressobj(9)
    row = b"\0" * (width * 3 + 1)  # filter byte + pixels
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", idat) + chunk(b"IEND", b"")
