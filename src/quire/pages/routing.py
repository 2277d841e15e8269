"""Slugs and routes of pages, per locale.

A page's route is the slugs of its ancestors and its own, joined by `/`.
Each locale has its own route: a page's slug in locale `de` is `slug_de`,
or `slug` when that is empty. The home page is the top-level page whose
slug is empty; its route is `/` and its slug adds nothing to its children's
routes. Routes are stored with the page: `_r` for the default locale and
`_r_<code>` only where a locale's route differs, so a reader falls back to
`_r` exactly like any localized field.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

DEFAULT = "default"
MAX_SLUG = 200
# Anything a path segment can carry without escaping trouble: no slash,
# query, fragment, percent, backslash, whitespace or control characters.
_BAD_SLUG = re.compile(r"[/?#%\\\s\x00-\x1f\x7f]")


def slug_problem(slug: str) -> str | None:
    """Why `slug` cannot be a slug, or None."""
    if len(slug) > MAX_SLUG:
        return f"must be at most {MAX_SLUG} characters"
    if slug in (".", ".."):
        return "cannot be . or .."
    if _BAD_SLUG.search(slug):
        return "may not contain /, ?, #, %, \\ or spaces"
    return None


def slugify(text: str) -> str:
    """`Über uns!` -> `uber-uns`: letters and digits of the text, accents
    removed, lowercased, runs of anything else turned into one dash."""
    folded = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in folded if not unicodedata.combining(c)).lower()
    return re.sub(r"[\W_]+", "-", kept).strip("-")[:MAX_SLUG].strip("-")


def slug_in(page: dict[str, Any], locale: str) -> str:
    if locale != DEFAULT:
        value = page.get(f"slug_{locale}")
        if isinstance(value, str) and value:
            return value
    value = page.get("slug")
    return value if isinstance(value, str) else ""


def route_key(locale: str) -> str:
    return "_r" if locale == DEFAULT else f"_r_{locale}"


def route_in(page: dict[str, Any], locale: str) -> str:
    """The stored route of `page` for `locale` (with the fallback)."""
    if locale != DEFAULT:
        value = page.get(route_key(locale))
        if isinstance(value, str):
            return value
    return str(page.get("_r") or "/")


def join(parent_route: str | None, slug: str) -> str:
    base = "" if parent_route in (None, "/") else parent_route
    return f"{base}/{slug}" if slug else (parent_route or "/")


def normalize(route: str) -> str:
    """`about/team/` -> `/about/team`; `` -> `/`."""
    parts = [p for p in route.split("/") if p]
    return "/" + "/".join(parts)


def compute_routes(
    pages: dict[str, dict[str, Any]], roots: Iterable[str], locales: list[str]
) -> dict[str, dict[str, str]]:
    """Routes of the pages under and including `roots`, per locale:
    {page id: {locale: route}}. `pages` holds every page by id (with the
    pending change applied)."""
    children: dict[str | None, list[str]] = {}
    for page_id, page in pages.items():
        children.setdefault(page.get("_pid"), []).append(page_id)
    out: dict[str, dict[str, str]] = {}
    stack: list[str] = list(roots)
    while stack:
        page_id = stack.pop()
        page = pages[page_id]
        parent = pages.get(page.get("_pid") or "")
        routes = {}
        for locale in locales:
            if parent is None:
                parent_route = None
            elif parent["_id"] in out:
                parent_route = out[parent["_id"]][locale]
            else:
                parent_route = route_in(parent, locale)
            routes[locale] = join(parent_route, slug_in(page, locale))
        out[page_id] = routes
        stack.extend(children.get(page_id, []))
    return out


def stored_routes(routes: dict[str, str]) -> dict[str, str]:
    """The route keys to store: `_r`, and `_r_<code>` where it differs."""
    default = routes[DEFAULT]
    out = {"_r": default}
    for locale, route in routes.items():
        if locale != DEFAULT and route != default:
            out[route_key(locale)] = route
    return out
