"""What an uploaded file really is, decided from its bytes.

The client's file name and Content-Type are never trusted for the type:
binary formats are recognised by their signatures (`filetype`), text by
decoding it and looking at what it holds. Types that a browser would run
(HTML, scripts, PHP, executables) are refused whatever is configured, and
SVG is accepted only without scripts, event handlers or external references.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

import filetype
from defusedxml import ElementTree
from defusedxml.common import DefusedXmlException

from quire.assets import svg

ALWAYS_REFUSED = (
    "text/html", "application/xhtml+xml", "application/x-httpd-php", "text/x-php",
    "application/javascript", "text/javascript", "application/x-msdownload",
    "application/x-executable", "application/x-elf", "application/x-mach-binary",
    "application/x-sh", "application/x-shellscript", "application/vnd.microsoft.portable-executable",
    "application/x-dosexec", "application/java-archive",
)
RASTER = {"image/jpeg", "image/png", "image/gif", "image/webp", "image/bmp", "image/tiff", "image/avif",
          "image/heic", "image/x-icon"}
EXTENSIONS = {
    "image/jpeg": "jpg", "image/png": "png", "image/gif": "gif", "image/webp": "webp", "image/bmp": "bmp",
    "image/tiff": "tif", "image/avif": "avif", "image/svg+xml": "svg", "image/heic": "heic",
    "image/x-icon": "ico", "application/pdf": "pdf", "text/plain": "txt", "text/csv": "csv",
    "text/markdown": "md", "application/json": "json", "application/xml": "xml",
    "application/zip": "zip", "application/gzip": "gz", "application/x-tar": "tar",
    "application/x-7z-compressed": "7z", "application/rtf": "rtf",
}
ARCHIVES = {"application/zip", "application/gzip", "application/x-tar", "application/x-7z-compressed",
            "application/x-rar-compressed", "application/x-bzip2", "application/x-xz"}
CODE = {"application/json", "application/xml", "text/css", "text/x-yaml"}
_HTML = re.compile(rb"<\s*(!doctype\s+html|html|head|body|script|iframe|object|embed)\b", re.I)
_PHP = re.compile(rb"<\?(php|=)", re.I)
_SHEBANG = re.compile(rb"^#!")
_XML_BAD_TAGS = {"script", "foreignobject", "iframe", "object", "embed", "handler", "listener"}
XHTML = "{http://www.w3.org/1999/xhtml}"


class Refused(Exception):
    """A file that is not allowed; the message says why."""


@dataclass(frozen=True)
class Sniffed:
    mime: str
    ext: str
    kind: str  # image|video|audio|document|archive|code|unknown


def asset_kind(mime: str) -> str:
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("video/"):
        return "video"
    if mime.startswith("audio/"):
        return "audio"
    if mime in ARCHIVES:
        return "archive"
    if mime in CODE:
        return "code"
    if mime == "application/pdf" or mime.startswith("text/") or "document" in mime or mime in (
        "application/msword", "application/rtf", "application/vnd.ms-excel", "application/vnd.ms-powerpoint",
    ) or mime.startswith("application/vnd.oasis.opendocument"):
        return "document"
    return "unknown"


def sniff(data: bytes, filename: str) -> Sniffed:
    """The type of `data`; raises Refused for a type that must not be served."""
    guess = filetype.guess(data[:8192])
    if guess is not None:
        mime, ext = guess.mime, guess.extension
        if mime in ("application/x-msdownload", "application/x-executable", "application/x-elf"):
            raise Refused("executables are not allowed")
        if mime == "application/zip":
            mime, ext = _office_or_zip(data, filename)
        return Sniffed(mime, EXTENSIONS.get(mime, ext), asset_kind(mime))
    return _sniff_text(data, filename)


def _office_or_zip(data: bytes, filename: str) -> tuple[str, str]:
    """OOXML and ODF files are zip archives; tell them apart by their parts."""
    head = data[:4096]
    if b"[Content_Types].xml" in data[:65536]:
        for part, mime, ext in ((b"word/", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "docx"),
                                (b"xl/", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"),
                                (b"ppt/", "application/vnd.openxmlformats-officedocument.presentationml.presentation", "pptx")):
            if part in data[:65536]:
                return mime, ext
    if b"mimetypeapplication/vnd.oasis.opendocument." in head:
        start = head.index(b"mimetype") + 8
        mime = head[start:start + 80].split(b"PK")[0].decode("ascii", "replace")
        return mime, mime.rsplit(".", 1)[-1][:4]
    if b"META-INF/MANIFEST.MF" in data[:65536] and filename.lower().endswith((".jar", ".war")):
        raise Refused("Java archives are not allowed")
    return "application/zip", "zip"


def _sniff_text(data: bytes, filename: str) -> Sniffed:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return Sniffed("application/octet-stream", "bin", "unknown")
    if "\x00" in text:
        return Sniffed("application/octet-stream", "bin", "unknown")
    head = data[:4096].lstrip()
    if _PHP.search(data):
        raise Refused("PHP is not allowed")
    if _SHEBANG.match(head):
        raise Refused("scripts are not allowed")
    if _looks_like_svg(head):
        check_svg(data)
        return Sniffed("image/svg+xml", "svg", "image")
    if _HTML.search(data[:65536]):
        raise Refused("HTML is not allowed")
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            json.loads(stripped)
            return Sniffed("application/json", "json", "code")
        except ValueError:
            pass
    # markup a browser could render must pass the markup check; text that
    # merely starts with "<" and is not XML stays plain text
    if stripped.startswith("<?xml") or (re.match(r"<[A-Za-z]", stripped) and _well_formed(data)):
        check_markup(data, "XML")
        return Sniffed("application/xml", "xml", "code")
    lower = filename.lower()
    if lower.endswith(".csv"):
        return Sniffed("text/csv", "csv", "document")
    if lower.endswith((".md", ".markdown")):
        return Sniffed("text/markdown", "md", "document")
    return Sniffed("text/plain", "txt", "document")


def _looks_like_svg(head: bytes) -> bool:
    lowered = head[:2048].lower()
    return b"<svg" in lowered and (lowered.startswith(b"<svg") or lowered.startswith(b"<?xml")
                                   or lowered.startswith(b"<!doctype svg") or lowered.startswith(b"<!--"))


def _well_formed(data: bytes) -> bool:
    try:
        ElementTree.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (ElementTree.ParseError, DefusedXmlException, ValueError):
        return False
    return True


def check_svg(data: bytes) -> None:
    """Refuse SVG that could run code or load something when opened: only
    what `svg.check`'s allow-list knows passes (see assets/svg.py)."""
    if b"<?xml-stylesheet" in data:
        raise Refused("SVG with a stylesheet processing instruction is not allowed")
    try:
        root = ElementTree.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (ElementTree.ParseError, DefusedXmlException, ValueError):
        raise Refused("SVG is not well-formed or uses DTDs/entities") from None
    try:
        svg.check(root)
    except svg.UnsafeSvg as exc:
        raise Refused(f"SVG: {exc}") from None


def check_markup(data: bytes, what: str) -> None:
    """Refuse XML that a browser could run code from or load
    something for: scripts and embeddings in any namespace, XHTML, event
    handlers, `javascript:` and external references, XSLT stylesheets, DTDs
    and entities. The whole document is read, not only its start."""
    if b"<?xml-stylesheet" in data:
        raise Refused(f"{what} with a stylesheet processing instruction is not allowed")
    try:
        root = ElementTree.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (ElementTree.ParseError, DefusedXmlException, ValueError):
        raise Refused(f"{what} is not well-formed or uses DTDs/entities") from None
    svg_tag = "{" + svg.SVG_NS + "}"
    if any(isinstance(e.tag, str) and e.tag.startswith(svg_tag) for e in root.iter()):
        # SVG under a prefix (`<x:svg xmlns:x=...>`) is not sniffed as SVG,
        # but a browser renders it as one: the SVG allow-list applies whole.
        try:
            svg.check(root)
        except svg.UnsafeSvg as exc:
            raise Refused(f"{what} with SVG content: {exc}") from None
    for element in root.iter():
        raw_tag = element.tag if isinstance(element.tag, str) else ""
        if raw_tag.startswith(XHTML):
            raise Refused(f"{what} with XHTML content is not allowed")
        tag = raw_tag.rsplit("}", 1)[-1].lower()
        if tag in _XML_BAD_TAGS:
            raise Refused(f"{what} with <{tag}> is not allowed")
        for name, value in element.attrib.items():
            local = name.rsplit("}", 1)[-1].lower()
            if local.startswith("on"):
                raise Refused(f"{what} with event handler {local} is not allowed")
            if local in ("href", "src") or name.endswith("}href"):
                target = value.strip().lower()
                if not (target.startswith("#") or target.startswith("data:image/")):
                    raise Refused(f"{what} with external references is not allowed")
            squeezed = re.sub(r"[\x00-\x20]+", "", value).lower()  # browsers drop tabs/newlines in URLs
            if "javascript:" in squeezed or "url(http" in squeezed or "url(//" in squeezed:
                raise Refused(f"{what} with script or remote URLs is not allowed")


def allowed(mime: str, allowed_patterns: Iterable[str], refused_patterns: Iterable[str]) -> bool:
    if mime in ALWAYS_REFUSED or any(fnmatch.fnmatch(mime, p) for p in refused_patterns):
        return False
    return any(fnmatch.fnmatch(mime, p) for p in allowed_patterns)


def svg_dimensions(data: bytes) -> tuple[int, int] | None:
    """The pixel size an SVG declares (`svg.dimensions`); the file passed
    `check_svg` before."""
    try:
        root = ElementTree.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except (ElementTree.ParseError, DefusedXmlException, ValueError):
        return None
    return svg.dimensions(root)
