"""The SVG check: an allow-list of elements, attributes and CSS.

An uploaded SVG is served as it was sent, so it is accepted only when every
element and attribute is one that draws, and nothing in it can run code or
fetch anything: references point inside the document (`#id`), the only
embedded data are raster pictures in `<image>`, and CSS (in `<style>` and
`style=""`) uses no `@import`, no escapes and no function that loads.
Anything else refuses the whole file; nothing is rewritten, so what is
stored is exactly what was uploaded.

A deny-list misses what it did not think of (`java&#9;script:` in an
`<animate values>` slips past a substring test: browsers drop tabs and
newlines inside a URL). Here an unknown name is refused by default.
"""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
XML_NS = "http://www.w3.org/XML/1998/namespace"
# Editors' bookkeeping (Inkscape, Sodipodi, Illustrator, Sketch, RDF
# metadata): browsers draw none of it, so its elements and attributes are
# inert. Its children are still checked.
EDITOR_NS = {
    "http://www.inkscape.org/namespaces/inkscape",
    "http://sodipodi.sourceforge.net/DTD/sodipodi-0.dtd",
    "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "http://creativecommons.org/ns#",
    "http://purl.org/dc/elements/1.1/",
    "http://ns.adobe.com/AdobeIllustrator/10.0/",
    "http://ns.adobe.com/SaveForWeb/1.0/",
    "http://www.bohemiancoding.com/sketch/ns",
}

ELEMENTS = {
    "svg", "g", "defs", "desc", "title", "metadata", "symbol", "use", "switch", "a", "view", "style",
    "image", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon",
    "text", "tspan", "textpath",
    "lineargradient", "radialgradient", "stop", "pattern", "clippath", "mask", "marker",
    "animate", "animatemotion", "animatetransform", "set", "mpath",
    "filter", "feblend", "fecolormatrix", "fecomponenttransfer", "fecomposite", "feconvolvematrix",
    "fediffuselighting", "fedisplacementmap", "fedistantlight", "fedropshadow", "feflood", "fefunca",
    "fefuncb", "fefuncg", "fefuncr", "fegaussianblur", "feimage", "femerge", "femergenode",
    "femorphology", "feoffset", "fepointlight", "fespecularlighting", "fespotlight", "fetile",
    "feturbulence",
}

# Presentation attributes: they may also be set from CSS and animated.
PRESENTATION = {
    "alignment-baseline", "baseline-shift", "clip", "clip-path", "clip-rule", "color",
    "color-interpolation", "color-interpolation-filters", "color-profile", "color-rendering",
    "direction", "display", "dominant-baseline", "enable-background", "fill", "fill-opacity",
    "fill-rule", "filter", "flood-color", "flood-opacity", "font", "font-family", "font-size",
    "font-size-adjust", "font-stretch", "font-style", "font-variant", "font-weight",
    "glyph-orientation-horizontal", "glyph-orientation-vertical", "image-rendering", "kerning",
    "letter-spacing", "lighting-color", "marker", "marker-end", "marker-mid", "marker-start", "mask",
    "mask-type", "opacity", "overflow", "paint-order", "pointer-events", "shape-rendering",
    "stop-color", "stop-opacity", "stroke", "stroke-dasharray", "stroke-dashoffset", "stroke-linecap",
    "stroke-linejoin", "stroke-miterlimit", "stroke-opacity", "stroke-width", "text-anchor",
    "text-decoration", "text-rendering", "transform", "transform-origin", "unicode-bidi",
    "vector-effect", "visibility", "word-spacing", "writing-mode", "isolation", "mix-blend-mode",
    "white-space",
}
# Geometry and other plain values of the allowed elements.
GEOMETRY = {
    "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "rx", "ry", "fx", "fy", "fr", "width", "height",
    "d", "points", "pathlength", "viewbox", "preserveaspectratio", "offset", "dx", "dy", "rotate",
    "textlength", "lengthadjust", "startoffset", "method", "spacing", "side",
    "gradientunits", "gradienttransform", "spreadmethod", "patternunits", "patterncontentunits",
    "patterntransform", "clippathunits", "maskunits", "maskcontentunits", "markerunits",
    "markerwidth", "markerheight", "refx", "refy", "orient", "filterunits", "primitiveunits",
    "in", "in2", "result", "stddeviation", "edgemode", "mode", "operator", "k1", "k2", "k3", "k4",
    "values", "type", "tablevalues", "slope", "intercept", "amplitude", "exponent", "order",
    "kernelmatrix", "divisor", "bias", "targetx", "targety", "preservealpha", "kernelunitlength",
    "surfacescale", "diffuseconstant", "specularconstant", "specularexponent", "azimuth",
    "elevation", "z", "pointsatx", "pointsaty", "pointsatz", "limitingconeangle", "scale",
    "xchannelselector", "ychannelselector", "radius", "basefrequency", "numoctaves", "seed",
    "stitchtiles", "zoomandpan", "version", "baseprofile", "crossorigin", "decoding",
}
ANIMATION = {
    "attributename", "attributetype", "begin", "dur", "end", "min", "max", "restart", "repeatcount",
    "repeatdur", "fill", "calcmode", "keytimes", "keysplines", "keypoints", "from", "to", "by",
    "additive", "accumulate", "path",
}
COMMON = {"id", "class", "style", "lang", "tabindex", "role", "focusable", "systemlanguage",
          "requiredfeatures", "requiredextensions", "target"}
ATTRIBUTES = PRESENTATION | GEOMETRY | ANIMATION | COMMON | {"href"} | {f"aria-{n}" for n in (
    "label", "labelledby", "describedby", "hidden", "roledescription")}
ANIMATED = PRESENTATION | GEOMETRY  # what `attributeName` may name: never href, style or handlers
XML_ATTRIBUTES = {"space", "lang"}  # xml:space, xml:lang; never xml:base (it moves every reference)
XLINK_ATTRIBUTES = {"href", "title", "type", "show", "actuate", "role", "arcrole"}

# Functions CSS may call: colours, lengths, transforms. `url()` is checked on
# its own; anything loading (`image-set`, `src`, `image`, `element`) is not here.
CSS_FUNCTIONS = {
    "rgb", "rgba", "hsl", "hsla", "hwb", "lab", "lch", "oklab", "oklch", "color", "color-mix",
    "var", "calc", "min", "max", "clamp",
    "translate", "translatex", "translatey", "translatez", "translate3d", "rotate", "rotatex",
    "rotatey", "rotatez", "rotate3d", "scale", "scalex", "scaley", "scalez", "scale3d", "skew",
    "skewx", "skewy", "matrix", "matrix3d", "perspective",
    "blur", "brightness", "contrast", "drop-shadow", "grayscale", "hue-rotate", "invert",
    "saturate", "sepia", "cubic-bezier", "steps", "linear-gradient", "radial-gradient",
    "conic-gradient", "repeating-linear-gradient", "repeating-radial-gradient", "local",
    "format", "not", "is", "where", "nth-child", "nth-of-type", "nth-last-child", "nth-last-of-type",
}
RASTER_DATA = re.compile(r"data:image/(png|jpeg|jpg|gif|webp|avif);base64,[a-z0-9+/=]*", re.I)
_INVISIBLE = re.compile(r"[\x00-\x20\x7f]+")
_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_CSS_FUNCTION = re.compile(r"([a-z_-][a-z0-9_-]*)\s*\(", re.I)
_URL = re.compile(r"url\s*\(([^)]*)", re.I)  # CSS also reads an unclosed url( to the end
_SCHEME = re.compile(r"(?<![a-z0-9+.-])(javascript|vbscript|data):")


class UnsafeSvg(Exception):
    """Something in the SVG is not on the allow-list; the message names it."""


def check(root: Element) -> None:
    """Raise UnsafeSvg unless every element under `root` is allowed."""
    for element in root.iter():
        _check_element(element)


def _split(name: str) -> tuple[str, str]:
    if name.startswith("{"):
        namespace, _, local = name[1:].partition("}")
        return namespace, local
    return "", name


def _check_element(element: Element) -> None:
    if not isinstance(element.tag, str):  # comments and processing instructions
        return
    namespace, local = _split(element.tag)
    if namespace in EDITOR_NS:
        return
    if namespace not in (SVG_NS, ""):
        raise UnsafeSvg(f"element <{local}> of namespace {namespace} is not allowed")
    tag = local.lower()
    if tag not in ELEMENTS:
        raise UnsafeSvg(f"element <{local}> is not allowed")
    for name, value in element.attrib.items():
        _check_attribute(tag, name, value)
    if tag == "style":
        check_css("".join(element.itertext()), "<style>")
    if tag in ("animate", "set", "animatemotion", "animatetransform"):
        target = _split(element.get("attributeName", ""))[1].split(":")[-1].strip().lower()
        if target and target not in ANIMATED:
            raise UnsafeSvg(f"<{local}> may not animate '{target}'")


def _check_attribute(tag: str, name: str, value: str) -> None:
    namespace, local = _split(name)
    lowered = local.lower()
    if namespace in EDITOR_NS:
        return
    if namespace == XML_NS:
        if lowered not in XML_ATTRIBUTES:
            raise UnsafeSvg(f"attribute xml:{local} is not allowed")
        return
    if namespace == XLINK_NS:
        if lowered not in XLINK_ATTRIBUTES:
            raise UnsafeSvg(f"attribute xlink:{local} is not allowed")
    elif namespace:
        raise UnsafeSvg(f"attribute {local} of namespace {namespace} is not allowed")
    elif lowered not in ATTRIBUTES and not lowered.startswith("data-"):  # data-*: inert
        raise UnsafeSvg(f"attribute {local} on <{tag}> is not allowed")
    if lowered == "href":
        _check_reference(tag, value)
    elif lowered == "style":
        check_css(value, "style attribute")
    else:
        _check_value(local, value)


def _check_reference(tag: str, value: str) -> None:
    """href: a fragment of this document; `<image>` may also embed a raster
    picture as a data: URI (no SVG inside: it could carry anything)."""
    target = _INVISIBLE.sub("", value)
    if target.startswith("#") or (tag == "image" and RASTER_DATA.fullmatch(target)):
        return
    raise UnsafeSvg(f"reference '{value[:40]}' on <{tag}> is not allowed (only #fragment references)")


def _check_value(name: str, value: str) -> None:
    """A plain attribute value (also `values`/`to`/`from` of animations):
    no scheme a browser would follow, and url() only to a fragment."""
    scheme = _SCHEME.search(_INVISIBLE.sub("", value).lower())
    if scheme:
        raise UnsafeSvg(f"attribute {name} holds a '{scheme.group(0)}' URL")
    _check_urls(value, f"attribute {name}")


def _check_urls(text: str, where: str) -> None:
    for match in _URL.finditer(text):
        target = _INVISIBLE.sub("", match.group(1)).strip("'\"")
        if not target.startswith("#"):
            raise UnsafeSvg(f"{where} references '{match.group(1).strip()[:40]}' (only url(#fragment) is allowed)")


def check_css(css: str, where: str) -> None:
    """CSS that only paints: no escapes (they can spell anything), no
    at-rule but @media/@keyframes/@supports, url() to fragments only, and
    no function outside CSS_FUNCTIONS."""
    text = _CSS_COMMENT.sub(" ", css)
    if "\\" in text:
        raise UnsafeSvg(f"{where}: CSS escapes are not allowed")
    if "/*" in text or "<" in text:
        raise UnsafeSvg(f"{where}: malformed CSS")
    for at_rule in re.findall(r"@([a-z-]+)", text, re.I):
        if at_rule.lower() not in ("media", "keyframes", "supports"):
            raise UnsafeSvg(f"{where}: @{at_rule} is not allowed")
    squeezed = _INVISIBLE.sub("", text).lower()
    for scheme in ("javascript:", "vbscript:", "expression(", "behavior:", "-moz-binding"):
        if scheme in squeezed:
            raise UnsafeSvg(f"{where}: '{scheme}' is not allowed")
    _check_urls(text, where)
    for function in _CSS_FUNCTION.findall(text):
        lowered = function.lower()
        if lowered != "url" and lowered not in CSS_FUNCTIONS:
            raise UnsafeSvg(f"{where}: CSS function {function}() is not allowed")


_LENGTH = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(px)?\s*$")


def dimensions(root: Element) -> tuple[int, int] | None:
    """The drawing's size in pixels: its `width` and `height` when both are
    plain or `px` numbers, else the `viewBox`'s; None when neither says
    (a size in %, em or mm has no pixel size of its own)."""
    width, height = (_LENGTH.match(root.get(name) or "") for name in ("width", "height"))
    if width and height:
        return round(float(width.group(1))), round(float(height.group(1)))
    box = (root.get("viewBox") or "").replace(",", " ").split()
    if len(box) == 4:
        try:
            w, h = float(box[2]), float(box[3])
        except ValueError:
            return None
        if w > 0 and h > 0:
            return round(w), round(h)
    return None
