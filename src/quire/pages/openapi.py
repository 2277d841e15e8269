"""OpenAPI paths of the pages API."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    from quire.content.openapi import PREVIEW_ANSWER, PREVIEW_BODY, optional_body
    from quire.openapi import (
        DATA_BODY,
        FIELDS,
        FILTER,
        ID_PATTERN,
        LIMIT,
        LIST,
        LOCALE,
        NAME64_PATTERN,
        OBJECT,
        OBJECTS,
        PERSONA,
        POPULATE,
        SKIP,
        SORT,
        SUCCESS,
        op,
        param,
    )

    read = (400, 401, 403, 404)
    write = (400, 401, 403, 404, 409, 412, 413)
    page_id = param("id", "path", "string", "Page id", pattern=ID_PATTERN)
    menu = param("name", "path", "string", "Menu name", pattern=NAME64_PATTERN)

    def tagged(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="pages", **kw)

    return {
        "/api/pages/menus": {"get": tagged("All menus, links resolved for the locale", [LOCALE], (401, 403), schema=OBJECTS)},
        "/api/pages/menu": {
            "post": tagged("Create or replace a menu {data: {name, label, links}}; with data._id change that menu",
                           [], (400, 401, 403, 404, 412, 413), body=DATA_BODY, schema=OBJECT),
        },
        "/api/pages/menu/{name}": {
            "get": tagged("One menu: page links answered with their route, inactive links left out",
                          [menu, LOCALE], read, schema=OBJECT),
            "delete": tagged("Delete a menu", [menu], (401, 403, 404), ok='{"success": true}', schema=SUCCESS),
        },
        "/api/pages/pages": {
            "get": tagged("Published pages: an array, or {data, meta: {total}} with limit and skip",
                          [LOCALE, FILTER, SORT, FIELDS, LIMIT, SKIP, POPULATE, *PERSONA], read, schema=LIST),
        },
        "/api/pages/page": {
            "get": tagged("The published page at a route (a collection page's item in data.item)",
                          [param("route", "query", "string", "The route, starting with /", True),
                           LOCALE, FIELDS, POPULATE, *PERSONA], read, schema=OBJECT),
            "post": tagged("Create a page, or change one partially when data._id is given", [], write,
                           body=DATA_BODY, ok="The whole stored page", schema=OBJECT),
        },
        "/api/pages/page/{id}": {
            "get": tagged("One published page by id (any state with a preview token of it)",
                          [page_id, LOCALE, FIELDS, POPULATE,
                           param("preview", "query", "string",
                                 "A preview token of this page (POST /api/pages/preview/{id}): the page in any "
                                 "state, without a key"), *PERSONA], read,
                          schema=OBJECT),
            "delete": tagged("Delete a page and its subtree", [page_id], (401, 403, 404),
                             ok='{"success": true}', schema=SUCCESS),
        },
        "/api/pages/preview/{id}": {
            "post": optional_body(tagged(
                "A signed, expiring preview token for a page, and [pages] preview_url filled in",
                [page_id], (400, 401, 403, 404), schema=PREVIEW_ANSWER), PREVIEW_BODY),
        },
        "/api/pages/routes": {
            "get": tagged("Routes, slugs, types and lastmod of published pages: {locale: [...]}",
                          [param("locale", "query", "string", "Only this locale")], (401, 403),
                          schema={"type": "object", "additionalProperties": OBJECTS}),
        },
        "/api/pages/settings": {
            "get": tagged("Page settings: seo, images, scripts, locales, preview, meta", [LOCALE], (401, 403),
                          schema=OBJECT),
            "post": tagged("Change settings keys {data: {seo, images, scripts, preview, meta}}", [],
                           (400, 401, 403, 412, 413), body=DATA_BODY, schema=OBJECT),
        },
        "/api/pages/sitemap": {
            "get": tagged("Sitemap entries: [{routes: {locale: route}, type, lastmod}]", [], (401, 403),
                          schema=OBJECTS),
        },
        "/api/pages/sitemap.xml": {
            "get": tagged("XML sitemap with hreflang alternates", [], (401, 403), ok="The sitemap",
                          media="application/xml", schema={"type": "string"}),
        },
    }
