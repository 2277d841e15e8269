"""OpenAPI paths of the pages API."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    from quire.openapi import (
        FIELDS,
        FILTER,
        LIMIT,
        LOCALE,
        PERSONA,
        POPULATE,
        SKIP,
        SORT,
        op,
        param,
    )

    read = (400, 401, 403, 404)
    write = (400, 401, 403, 404, 409, 412, 413)
    page_id = param("id", "path", "string", "Page id")
    menu = param("name", "path", "string", "Menu name")

    def tagged(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="pages", **kw)

    return {
        "/api/pages/menus": {"get": tagged("All menus, links resolved for the locale", [LOCALE], (401, 403))},
        "/api/pages/menu": {
            "post": tagged("Create or replace a menu {data: {name, label, links}}; with data._id change that menu",
                           [], (400, 401, 403, 404, 412, 413), body=True),
        },
        "/api/pages/menu/{name}": {
            "get": tagged("One menu: page links answered with their route, inactive links left out",
                          [menu, LOCALE], read),
            "delete": tagged("Delete a menu", [menu], (401, 403, 404), ok='{"success": true}'),
        },
        "/api/pages/pages": {
            "get": tagged("Published pages: an array, or {data, meta: {total}} with limit and skip",
                          [LOCALE, FILTER, SORT, FIELDS, LIMIT, SKIP, POPULATE, *PERSONA], read),
        },
        "/api/pages/page": {
            "get": tagged("The published page at a route (a collection page's item in data.item)",
                          [param("route", "query", "string", "The route, starting with /", True),
                           LOCALE, FIELDS, POPULATE, *PERSONA], read),
            "post": tagged("Create a page, or change one partially when data._id is given", [], write,
                           body=True, ok="The whole stored page"),
        },
        "/api/pages/page/{id}": {
            "get": tagged("One published page by id", [page_id, LOCALE, FIELDS, POPULATE, *PERSONA], read),
            "delete": tagged("Delete a page and its subtree", [page_id], (401, 403, 404),
                             ok='{"success": true}'),
        },
        "/api/pages/routes": {
            "get": tagged("Routes, slugs, types and lastmod of published pages per locale",
                          [param("locale", "query", "string", "Only this locale")], (401, 403)),
        },
        "/api/pages/settings": {
            "get": tagged("Page settings: seo, images, scripts, locales, preview, meta", [LOCALE], (401, 403)),
            "post": tagged("Change settings keys {data: {seo, images, scripts, preview, meta}}", [],
                           (400, 401, 403, 412, 413), body=True),
        },
        "/api/pages/sitemap": {
            "get": tagged("Sitemap entries: [{routes: {locale: route}, type, lastmod}]", [], (401, 403)),
        },
        "/api/pages/sitemap.xml": {
            "get": tagged("XML sitemap with hreflang alternates", [], (401, 403), ok="application/xml"),
        },
    }
