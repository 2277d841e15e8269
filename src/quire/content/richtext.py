"""Rich text (`wysiwyg` fields) is stored as HTML, cleaned on every save by
an allow-list (nh3, the Rust `ammonia` sanitiser): tags and attributes not
on the list go (a `<script>` or `<style>` with its content, an `onerror=`
attribute), links keep only safe URL schemes. What a site needs beyond the
default list is set per field: `opts.html = {"tags": [...], "attributes":
{"tag": [...]}}` replaces the default tags and attributes for that field
(docs/content-api.md)."""

from __future__ import annotations

from typing import Any

import nh3

TAGS = frozenset({
    "p", "br", "hr", "h1", "h2", "h3", "h4", "h5", "h6", "strong", "b", "em", "i", "u", "s", "del", "ins",
    "sub", "sup", "mark", "small", "code", "pre", "kbd", "blockquote", "q", "cite", "abbr", "span", "div",
    "ul", "ol", "li", "dl", "dt", "dd", "a", "img", "figure", "figcaption", "picture", "table", "caption",
    "colgroup", "col", "thead", "tbody", "tfoot", "tr", "th", "td",
})
ATTRIBUTES: dict[str, frozenset[str]] = {
    "*": frozenset({"class", "lang", "dir", "title"}),
    "a": frozenset({"href", "target", "name"}),
    "img": frozenset({"src", "alt", "width", "height", "loading"}),
    "ol": frozenset({"start", "type", "reversed"}),
    "th": frozenset({"colspan", "rowspan", "scope"}),
    "td": frozenset({"colspan", "rowspan"}),
    "col": frozenset({"span"}),
    "colgroup": frozenset({"span"}),
    "abbr": frozenset({"title"}),
    "q": frozenset({"cite"}),
    "blockquote": frozenset({"cite"}),
}
URL_SCHEMES = frozenset({"http", "https", "mailto", "tel"})
# dropped with everything inside them (other refused tags keep their text)
DROPPED_WITH_CONTENT = frozenset({"script", "style"})

_DEFAULT = nh3.Cleaner(tags=set(TAGS), attributes={k: set(v) for k, v in ATTRIBUTES.items()},
                       url_schemes=set(URL_SCHEMES), clean_content_tags=set(DROPPED_WITH_CONTENT))


def clean(html: str, options: dict[str, Any] | None = None) -> str:
    """`html` with only what the field allows (`options`: the field's
    `opts.html`, checked by `check_options`; None for the default list)."""
    if not options:
        return str(_DEFAULT.clean(html))
    tags = set(options.get("tags", TAGS)) - DROPPED_WITH_CONTENT
    attributes = {k: set(v) for k, v in options.get("attributes", ATTRIBUTES).items()}
    cleaner = nh3.Cleaner(tags=tags, attributes=attributes, url_schemes=set(URL_SCHEMES),
                          clean_content_tags=set(DROPPED_WITH_CONTENT))
    return str(cleaner.clean(html))


def check_options(options: Any) -> str | None:
    """Why a field's `opts.html` cannot be used, or None when it can."""
    if not isinstance(options, dict):
        return "opts.html must be an object like {\"tags\": [\"p\", \"a\"], \"attributes\": {\"a\": [\"href\"]}}"
    unknown = set(options) - {"tags", "attributes"}
    if unknown:
        return f"opts.html has unknown keys {', '.join(sorted(unknown))} (use tags, attributes)"
    tags = options.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) and t.isalnum() for t in tags):
        return "opts.html.tags must be a list of tag names"
    refused = sorted(set(tags) & (DROPPED_WITH_CONTENT | {"iframe", "object", "embed", "form", "input"}))
    if refused:
        return f"opts.html.tags cannot allow {', '.join(refused)}"
    attributes = options.get("attributes", {})
    if not isinstance(attributes, dict) or not all(
            isinstance(v, list) and all(isinstance(a, str) and a.replace("-", "").isalnum() for a in v)
            for v in attributes.values()):
        return "opts.html.attributes must map tag names to lists of attribute names"
    handlers = sorted({a for v in attributes.values() for a in v if a.lower().startswith("on")} |
                      {a for v in attributes.values() for a in v if a.lower() in ("style", "srcdoc")})
    if handlers:
        return f"opts.html.attributes cannot allow {', '.join(handlers)}"
    return None
