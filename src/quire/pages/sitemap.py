"""`sitemap.xml`: the sitemap entries as a standard XML sitemap
(sitemaps.org 0.9) with `xhtml:link` hreflang alternates.

A locale's absolute URL is the site URL, then `/<code>` for a non-default
locale when `[pages] locale_prefix` is on, then the route. The default
locale's hreflang is `[pages] default_language`; `x-default` points at the
default locale's URL. Entries whose locales share one URL are written once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape, quoteattr

from quire.pages.routing import DEFAULT

HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
    'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n'
)


def absolute_url(site: str, locale: str, route: str, locale_prefix: bool) -> str:
    prefix = f"/{locale}" if locale_prefix and locale != DEFAULT else ""
    return site.rstrip("/") + prefix + quote(route, safe="/-._~!$&'()*+,;=:@")


def render(entries: list[dict[str, Any]], site: str, default_language: str, locale_prefix: bool,
           limit: int) -> bytes:
    parts = [HEAD]
    written = 0
    for entry in entries:
        urls = {loc: absolute_url(site, loc, route, locale_prefix) for loc, route in entry["routes"].items()}
        distinct = list(dict.fromkeys(urls.values()))
        alternates = ""
        if len(distinct) > 1:
            links = [(default_language if loc == DEFAULT else loc, url) for loc, url in urls.items()]
            links.append(("x-default", urls[DEFAULT]))
            alternates = "".join(
                f"    <xhtml:link rel=\"alternate\" hreflang={quoteattr(lang)} href={quoteattr(url)}/>\n"
                for lang, url in links
            )
        for url in distinct:
            if written >= limit:
                break
            parts.append(f"  <url>\n    <loc>{escape(url)}</loc>\n    <lastmod>{entry['lastmod']}</lastmod>\n"
                         f"{alternates}  </url>\n")
            written += 1
    parts.append("</urlset>\n")
    return "".join(parts).encode()
