"""Image metadata at upload, and the resize pipeline of the image endpoint.

Pillow does the work. Every decode runs under a pixel budget (decompression
bombs are refused), EXIF orientation is applied, and output carries no
metadata. Animated GIF and WebP sources give a still image of their first
frame.
"""

from __future__ import annotations

import base64
import io
import warnings
from dataclasses import dataclass
from typing import Any, cast

import thumbhash
from PIL import Image, ImageOps, UnidentifiedImageError

from quire.assets import presets

MODES = presets.MODES  # one list for presets and requests
FORMATS = {"gif": "GIF", "jpeg": "JPEG", "png": "PNG", "webp": "WEBP", "bmp": "BMP", "avif": "AVIF"}
OUTPUT_MIME = {"gif": "image/gif", "jpeg": "image/jpeg", "png": "image/png", "webp": "image/webp",
               "bmp": "image/bmp", "avif": "image/avif"}
SOURCE_FORMAT = {"JPEG": "jpeg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp", "AVIF": "avif"}
EXT = {"jpeg": "jpg", "png": "png", "gif": "gif", "webp": "webp", "bmp": "bmp", "avif": "avif"}


class BadImage(Exception):
    """Not a decodable image, or one over the pixel budget."""


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int
    colors: list[str]
    thumbhash: str
    format: str


def _open(data: bytes, max_pixels: int) -> Image.Image:
    Image.MAX_IMAGE_PIXELS = max_pixels
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            if image.width * image.height > max_pixels:
                raise BadImage(f"image has more than {max_pixels} pixels")
            return image
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise BadImage(f"image has more than {max_pixels} pixels") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise BadImage(f"not a readable image ({exc.__class__.__name__})") from None


def _within_budget(image: Image.Image, decode_pixels: int) -> None:
    """Refuse to decode more than `decode_pixels` (after a JPEG's draft
    scale): a header may claim any size, whatever the file holds."""
    if image.width * image.height > decode_pixels:
        raise BadImage(f"image has {image.width * image.height} pixels to decode, more than the "
                       f"{decode_pixels} one image may use (larger JPEG is decoded at a reduced scale)")


def _draft_for(image: Image.Image, need: tuple[int, int], decode_pixels: int) -> None:
    """JPEG: pick the DCT scale (1, 1/2, 1/4, 1/8) that is the smallest
    still at least `need`, or failing that the largest that fits the pixel
    budget, and decode at it. Other formats are left as they are."""
    if image.format != "JPEG":
        return
    width, height = image.size
    chosen = 1
    for scale in (2, 4, 8):
        w, h = width // scale, height // scale
        if w < 1 or h < 1:
            break
        if (w >= need[0] and h >= need[1]) or (width // chosen) * (height // chosen) > decode_pixels:
            chosen = scale
        else:
            break
    if chosen > 1:
        image.draft("RGB", (width // chosen, height // chosen))


def inspect(data: bytes, max_pixels: int, decode_pixels: int | None = None) -> ImageInfo:
    """Size (after EXIF orientation), a palette of up to 5 colours and a
    ThumbHash placeholder."""
    image = _open(data, max_pixels)
    fmt = image.format or ""
    try:
        width, height = image.size
        image.draft("RGB", (128, 128))  # JPEG: decode at reduced scale, much faster
        # before anything reads EXIF: for PNG that decodes the whole image
        _within_budget(image, decode_pixels or max_pixels)
        oriented = (height, width) if _swaps(image) else (width, height)
        image = ImageOps.exif_transpose(image) or image
        small = image.convert("RGBA")
        small.thumbnail((64, 64))
    except (OSError, ValueError, SyntaxError) as exc:
        raise BadImage(f"not a readable image ({exc.__class__.__name__})") from None
    return ImageInfo(oriented[0], oriented[1], palette(small), _thumbhash(small), fmt)


def _oriented_size(image: Image.Image) -> tuple[int, int]:
    """The size as shown, after the EXIF orientation (read before decoding)."""
    width, height = image.size
    return (height, width) if _swaps(image) else (width, height)


def _swaps(image: Image.Image) -> bool:
    return image.getexif().get(0x0112, 1) in (5, 6, 7, 8)


def palette(image: Image.Image, count: int = 5) -> list[str]:
    """Up to `count` dominant colours, most frequent first, as #rrggbb."""
    rgb = image.convert("RGB")
    quantized = rgb.quantize(colors=count, method=Image.Quantize.MEDIANCUT)
    raw = quantized.getpalette() or []
    used = sorted(quantized.getcolors() or [], reverse=True)
    out = []
    for _, index in used:
        at = cast(int, index) * 3  # a palette image counts palette indexes
        r, g, b = raw[at: at + 3]
        color = f"#{r:02x}{g:02x}{b:02x}"
        if color not in out:
            out.append(color)
    return out[:count]


def _thumbhash(image: Image.Image) -> str:
    """ThumbHash of the picture as seen over white: the `thumbhash` package
    fails on its own alpha path, so transparency is flattened first."""
    small = image.copy()
    small.thumbnail((32, 32))
    rgba = _flatten(small).convert("RGBA")
    digest = thumbhash.rgba_to_thumb_hash(rgba.width, rgba.height, list(rgba.tobytes()))
    return base64.b64encode(bytes(digest)).decode()


@dataclass(frozen=True)
class ImageOptions:
    mode: str
    width: int | None
    height: int | None
    quality: int
    format: str  # one of FORMATS
    focal: tuple[float, float] | None

    def key(self) -> str:
        fp = f"{self.focal[0]:.4f},{self.focal[1]:.4f}" if self.focal else "c"
        return f"{self.mode}|{self.width}|{self.height}|{self.quality}|{self.format}|{fp}"


def target_size(src: tuple[int, int], opts: ImageOptions) -> tuple[int, int]:
    """The output size of a mode for a source size."""
    sw, sh = src
    w, h = opts.width, opts.height
    ratio = sw / sh
    if opts.mode == "bestFit":  # inside the given side(s), never larger than the source
        scale = min(w / sw if w else 1.0, h / sh if h else 1.0, 1.0)
        return max(1, round(sw * scale)), max(1, round(sh * scale))
    if opts.mode == "fitToWidth" or (w and not h):
        assert w
        return w, max(1, round(w / ratio))
    if opts.mode == "fitToHeight" or (h and not w):
        assert h
        return max(1, round(h * ratio)), h
    assert w and h
    return w, h  # thumbnail (crop to exactly w x h) and resize (distort)


# Seconds per megapixel of output to encode, measured with Pillow 13 on one
# core of a 2-core machine on noise (the slowest content: nothing to
# compress), quality 100: AVIF 0.26-0.40, PNG 0.26, WebP 0.17-0.18, GIF and
# JPEG about 0.01. Resizing costs about 0.015 per source megapixel decoded.
ENCODE_SECONDS_PER_MP = {"avif": 0.4, "png": 0.26, "webp": 0.18, "gif": 0.02, "jpeg": 0.01, "bmp": 0.01}
RESIZE_SECONDS_PER_MP = 0.015


def render_seconds(source: tuple[int, int], opts: ImageOptions, decode_pixels: int) -> float:
    """About how long making this image takes at worst (see the table
    above): what a render's time budget is checked against before it
    starts, since an encoder cannot be stopped half-way."""
    width, height = target_size(source, opts)
    decoded = min(source[0] * source[1], decode_pixels)
    return (width * height * ENCODE_SECONDS_PER_MP.get(opts.format, 0.4) + decoded * RESIZE_SECONDS_PER_MP) / 1e6


def render(data: bytes, opts: ImageOptions, max_pixels: int, decode_pixels: int | None = None) -> bytes:
    """The transformed image, encoded; no metadata carried over. At most
    `decode_pixels` are decoded; the output has its exact size even when a
    large JPEG had to be decoded at a scale below it."""
    image = _open(data, max_pixels)
    try:
        if image.format != "JPEG":  # before EXIF is read: for PNG that decodes the whole image
            _within_budget(image, decode_pixels or max_pixels)
        oriented = _oriented_size(image)
        tw, th = target_size(oriented, opts)
        # JPEG: decode at the smallest DCT scale still at least twice the
        # output, in the file's own orientation
        need = (th * 2, tw * 2) if _swaps(image) else (tw * 2, th * 2)
        _draft_for(image, need, decode_pixels or max_pixels)
        _within_budget(image, decode_pixels or max_pixels)
        image.seek(0)  # animated sources: the first frame
        image = ImageOps.exif_transpose(image) or image
        image = _resize(image, opts, tw, th)
        return _encode(image, opts)
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise BadImage(f"cannot transform this image ({exc.__class__.__name__})") from None


def _resize(image: Image.Image, opts: ImageOptions, tw: int, th: int) -> Image.Image:
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    if opts.mode == "thumbnail" and opts.width and opts.height:
        centering = opts.focal or (0.5, 0.5)
        return ImageOps.fit(image, (tw, th), Image.Resampling.LANCZOS, centering=centering)
    if (tw, th) == image.size:
        return image
    return image.resize((tw, th), Image.Resampling.LANCZOS, reducing_gap=3.0)


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)


def _encode(image: Image.Image, opts: ImageOptions) -> bytes:
    fmt = FORMATS[opts.format]
    out = io.BytesIO()
    params: dict[str, Any] = {}
    if fmt == "JPEG":
        if image.mode != "RGB":
            image = _flatten(image)
        params = {"quality": opts.quality, "optimize": False, "progressive": True}
    elif fmt in ("WEBP", "AVIF"):
        params = {"quality": opts.quality}
        if fmt == "WEBP":
            params["method"] = 4
    elif fmt == "PNG":
        params = {"optimize": False, "compress_level": 6}
    elif fmt == "GIF":
        image = image.convert("RGBA").quantize(colors=256) if image.mode in ("RGBA", "LA") else image.convert("P", palette=Image.Palette.ADAPTIVE)
    elif fmt == "BMP" and image.mode not in ("RGB", "L"):
        image = _flatten(image)
    image.save(out, fmt, **params)
    return out.getvalue()


def _flatten(image: Image.Image) -> Image.Image:
    """Alpha over white, for formats without transparency."""
    rgba = image.convert("RGBA")
    background = Image.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background


def source_format(data: bytes, max_pixels: int) -> str:
    image = _open(data, max_pixels)
    return SOURCE_FORMAT.get(image.format or "", "png" if _has_alpha(image) else "jpeg")
