"""Validation of what clients send for pages, menus and settings.

Each check collects every problem as {field path: message}, so one 400
names all the fields at fault; nothing is stored until all pass.
"""

from __future__ import annotations

import re
from typing import Any

from quire.errors import ValidationError
from quire.ids import is_id
from quire.pages.routing import slug_problem

PAGE_TYPES = ("layout", "collection", "singleton", "link")
LOCALIZED = ("title", "slug", "data", "seo")
READ_ONLY = {"_created", "_modified", "_cby", "_mby", "_r"}
STATES = (-1, 0, 1)
LINK_TARGETS = ("_self", "_blank", "_parent", "_top")
SETTINGS_KEYS = ("seo", "images", "scripts", "preview", "meta")
MENU_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
_SCHEME = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*):")
PAGE_LINK = re.compile(r"^pages://([0-9a-f]{24})$")

Errors = dict[str, str]


def check_page(data: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    """The fields of a page write, checked one by one (the merged page is
    checked as a whole by `check_page_shape`)."""
    clean: dict[str, Any] = {}
    errors: Errors = {}
    for key, value in data.items():
        if key == "_id" or key in READ_ONLY or key.startswith("_r_"):
            continue
        problem = _page_field(key, value, codes)
        if problem is None:
            clean[key] = value
        else:
            errors[key] = problem
    if errors:
        raise ValidationError("page data", errors)
    return clean


def split_locale(key: str, codes: list[str]) -> tuple[str, str]:
    """`title_de` -> ("title", "de"), for any of the locale `codes` (which
    may hold `_` themselves: `title_pt_BR`); ("", "") when the key ends in
    none of them."""
    for code in codes:
        if key.endswith("_" + code) and len(key) > len(code) + 1:
            return key[:-len(code) - 1], code
    return "", ""


def _page_field(key: str, value: Any, codes: list[str]) -> str | None:
    base, code = split_locale(key, codes)
    localized = base in LOCALIZED and code in codes
    if localized and value is None:
        return None  # drops that locale's value
    name = base if localized else key
    if name == "type":
        return None if value in PAGE_TYPES else f"must be one of {', '.join(PAGE_TYPES)}"
    if name == "title":
        return None if isinstance(value, str) else "must be a string"
    if name == "slug":
        return slug_problem(value) if isinstance(value, str) else "must be a string"
    if name in ("data", "seo"):
        return None if isinstance(value, dict) else "must be an object"
    if name == "layout":
        return layout_problem(value)
    if name == "_pid":
        return None if value is None or is_id(value) else "must be a page id or null"
    if name == "_o":
        return None if isinstance(value, int | float) and not isinstance(value, bool) else "must be a number"
    if name == "_state":
        return None if value in STATES and not isinstance(value, bool) else (
            "must be 1 (published), 0 (draft) or -1 (archived)")
    if name == "_mt":  # localized values machine-translated, not reviewed yet (quire.translate)
        return None if value is None or (isinstance(value, list) and len(value) <= 1000 and all(
            isinstance(v, str) and 0 < len(v) <= 200 for v in value)) else (
            "must be a list of localized fields' names (title_de), or null")
    return "is not a page field"


def layout_problem(value: Any, path: str = "") -> str | None:
    """A layout is a list of components {component, label, data, children}."""
    if not isinstance(value, list):
        return f"{path}must be a list of components".strip()
    for i, comp in enumerate(value):
        at = f"[{i}]"
        if not isinstance(comp, dict):
            return f"{path}{at} must be an object"
        if not isinstance(comp.get("component"), str) or not comp["component"]:
            return f"{path}{at}.component must be a non-empty string"
        if "label" in comp and comp["label"] is not None and not isinstance(comp["label"], str):
            return f"{path}{at}.label must be a string"
        if "data" in comp and comp["data"] is not None and not isinstance(comp["data"], dict):
            return f"{path}{at}.data must be an object"
        if comp.get("children") is not None:
            problem = layout_problem(comp["children"], f"{path}{at}.children")
            if problem:
                return problem
    return None


def check_page_shape(page: dict[str, Any], model_kind: Any, codes: list[str]) -> None:
    """Rules over the whole (merged) page. `model_kind(name)` answers the
    kind of a content model, or None when there is no such model. A
    locale's `data_<code>` is checked as it is read: merged over `data`."""
    errors: Errors = {}
    if not isinstance(page.get("title"), str) or not page["title"].strip():
        errors["title"] = "is required"
    if page.get("_pid") is not None and page.get("slug") == "":
        errors["slug"] = "is required (only a top-level page, the home page, may have an empty slug)"
    data = page.get("data") or {}
    _type_rules(page.get("type"), data, "data", model_kind, errors)
    for code in codes:
        localized = page.get(f"data_{code}")
        if isinstance(localized, dict):
            _type_rules(page.get("type"), {**data, **localized}, f"data_{code}", model_kind, errors)
    if errors:
        raise ValidationError("page data", errors)


def _type_rules(kind: Any, data: dict[str, Any], at: str, model_kind: Any, errors: Errors) -> None:
    if kind in ("collection", "singleton"):
        model = data.get("model")
        wanted = "collection" if kind == "collection" else "singleton"
        if not isinstance(model, str) or model_kind(model) is None:
            errors[f"{at}.model"] = f"must name a {wanted} model"
        elif model_kind(model) != wanted:
            errors[f"{at}.model"] = f"{model} is a {model_kind(model)} model, not a {wanted}"
        slug_field = data.get("slugField", "slug")
        if kind == "collection" and not (isinstance(slug_field, str) and slug_field):
            errors[f"{at}.slugField"] = "must be a field name"
    elif kind == "link":
        problem = url_problem(data.get("url"), allow_pages=False)
        if problem:
            errors[f"{at}.url"] = problem


def url_problem(url: Any, allow_pages: bool = True) -> str | None:
    """Links may be absolute http(s), mailto: and tel: URLs, site paths
    (`/about`, `#top`, `?q=1`) and, in menus, `pages://<page id>`. Other
    schemes (javascript:, data:, ...) are refused."""
    if not isinstance(url, str) or not url.strip():
        return "is required"
    if url.startswith("//"):
        return "must name its scheme (https://...) when it points to another site"
    if url.startswith(("/", "#", "?")):
        return None
    scheme = _SCHEME.match(url)
    if scheme is None:
        return "must be an absolute URL, a path starting with /, or pages://<page id>"
    name = scheme.group(1).lower()
    if name in ("http", "https"):
        return None if re.match(r"^https?://[^/\s]+", url, re.I) else "is not a valid URL"
    if name in ("mailto", "tel"):
        return None
    if name == "pages" and allow_pages:
        return None if PAGE_LINK.match(url) else "must be pages://<24 hex page id>"
    return f"may not use the {name}: scheme"


def check_menu(data: dict[str, Any], codes: list[str], page_exists: Any) -> dict[str, Any]:
    """{name, label, links}; `page_exists(ids)` answers the ids that exist."""
    errors: Errors = {}
    clean: dict[str, Any] = {}
    for key, value in data.items():
        if key in ("_id", "_created", "_modified"):
            continue
        if key == "name":
            if not isinstance(value, str) or not MENU_NAME.match(value):
                errors["name"] = "must be a name like main or footer-links (letters, digits, - and _)"
        elif key == "label":
            if not isinstance(value, str):
                errors["label"] = "must be a string"
        elif key == "links":
            _check_links(value, "links", codes, errors)
        else:
            errors[key] = "is not a menu field"
            continue
        clean[key] = value
    if not errors and "links" in clean:
        wanted = set(page_ids(clean["links"]))
        for missing in sorted(wanted - page_exists(sorted(wanted))):
            errors["links"] = f"links to pages://{missing}, which does not exist"
    if errors:
        raise ValidationError("menu", errors)
    return clean


def _check_links(links: Any, path: str, codes: list[str], errors: Errors) -> None:
    if not isinstance(links, list):
        errors[path] = "must be a list of links"
        return
    for i, link in enumerate(links):
        at = f"{path}[{i}]"
        if not isinstance(link, dict):
            errors[at] = "must be an object"
            continue
        for key, value in link.items():
            base, code = split_locale(key, codes)
            if key == "title" or (base == "title" and code in codes):
                if value is not None and not isinstance(value, str):
                    errors[f"{at}.{key}"] = "must be a string"
            elif key == "url":
                problem = url_problem(value)
                if problem:
                    errors[f"{at}.url"] = problem
            elif key == "target":
                if value not in LINK_TARGETS:
                    errors[f"{at}.target"] = f"must be one of {', '.join(LINK_TARGETS)}"
            elif key == "active":
                if not isinstance(value, bool):
                    errors[f"{at}.active"] = "must be true or false"
            elif key == "data":
                if value is not None and not isinstance(value, dict):
                    errors[f"{at}.data"] = "must be an object"
            elif key == "children":
                _check_links(value, f"{at}.children", codes, errors)
            else:
                errors[f"{at}.{key}"] = "is not a link field"
        if "url" not in link:
            errors[f"{at}.url"] = "is required"


def page_ids(links: list[dict[str, Any]]) -> list[str]:
    out = []
    for link in links:
        match = PAGE_LINK.match(link.get("url", ""))
        if match:
            out.append(match.group(1))
        out += page_ids(link.get("children") or [])
    return out


def check_settings(data: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    errors: Errors = {}
    clean: dict[str, Any] = {}
    for key, value in data.items():
        base, code = split_locale(key, codes)
        if key == "locales":
            errors[key] = "is read-only: it lists the locales of /api/system/locales"
        elif key in SETTINGS_KEYS or (base == "seo" and code in codes):
            if value is not None and not isinstance(value, dict):
                errors[key] = "must be an object"
            else:
                clean[key] = value
        elif key not in ("_id", "_modified"):
            errors[key] = f"is not a settings field (fields: {', '.join(SETTINGS_KEYS)})"
    if errors:
        raise ValidationError("settings", errors)
    return clean
