"""OpenAPI paths of the translations API (merged by quire.openapi.document)."""

from __future__ import annotations

from typing import Any


def paths() -> dict[str, Any]:
    # imported here: quire.openapi imports this module while it loads
    from quire.openapi import LOCALE_PATTERN, OBJECT, OBJECTS, SUCCESS, op, param

    name = param("name", "path", "string", "Project name", pattern="^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")
    locale = param("locale", "path", "string",
                   "Locale code in any spelling (pt-BR, pt_br); compared canonically", pattern=LOCALE_PATTERN)
    nested = param("nested", "query", "string",
                   "1 or true: dotted keys as nested objects (see docs/l10n.md for collisions)",
                   enum=["1", "true", "0", "false"])
    fmt = param("format", "query", "string", "json (default, the whole project), po or i18next",
                enum=["json", "po", "i18next"])
    file_locale = param("locale", "query", "string",
                        "Locale of a po or i18next file (po: else the file's Language header)")

    def l10n(summary: str, params: list[dict[str, Any]], errors: tuple[int, ...], **kw: Any) -> dict[str, Any]:
        return op(summary, params, errors, tag="l10n", **kw)

    export = l10n("Export the project (json) or one locale (po, i18next) as a file attachment",
                  [name, fmt, param("locale", "query", "string", "Locale; required for po and i18next")],
                  (400, 401, 403, 404), ok="The file (Content-Disposition: attachment)")
    export["responses"]["200"]["content"] = {
        "application/json": {"schema": OBJECT},
        "text/x-gettext-translation": {"schema": {"type": "string"}},
    }
    imported = l10n("Import a file: json replaces the project, po and i18next merge one locale",
                    [name, fmt, file_locale], (400, 401, 403, 412, 413), ok="The stored project", schema=OBJECT)
    imported["requestBody"] = {"required": True, "content": {
        "application/json": {"schema": {"type": "object"}},
        "text/x-gettext-translation": {"schema": {"type": "string"}},
    }}
    return {
        "/api/l10n/projects": {
            "get": l10n("List projects: name, label, locales, number of keys", [], (401, 403), schema=OBJECTS),
        },
        "/api/l10n/project/{name}": {
            "get": l10n("A project in full form: key -> {locale: string or null}",
                        [name, nested], (400, 401, 403, 404), schema=OBJECT),
            "put": l10n("Create or replace a project {label, locales, keys}", [name],
                        (400, 401, 403, 412, 413), body=True, ok="The stored project", schema=OBJECT),
            "patch": l10n("Change a project: label and locales replace, keys merge (null removes)",
                          [name], (400, 401, 403, 404, 412, 413), body=True, ok="The stored project",
                          schema=OBJECT),
            "delete": l10n("Delete a project", [name], (401, 403, 404, 412), ok='{"success": true}',
                           schema=SUCCESS),
        },
        "/api/l10n/project/{name}/{locale}": {
            "get": l10n("One locale of a project: key -> string or null",
                        [name, locale, nested], (400, 401, 403, 404), schema=OBJECT),
        },
        "/api/l10n/project/{name}/export": {"get": export},
        "/api/l10n/project/{name}/import": {"post": imported},
    }
