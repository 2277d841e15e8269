"""Translations in the studio: the projects (create, relabel, change
locales, delete with a confirmation) and a project's grid of keys ×
locales, edited one cell at a time (htmx), filtered to the keys missing a
locale, searched across keys and values, paged on the server; keys added,
renamed and deleted; files imported (multipart upload, all or nothing) and
exported in the API's formats. Every read and write goes through
`L10nService` with the user's identity, as the API's do.

A project's name is its address in the API and cannot change (the API has
no rename); its label can."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.locales import LocaleService
from quire.errors import ApiError, BadRequest, Forbidden
from quire.http import json_response, quire_of, service
from quire.l10n.formats import FORMATS
from quire.l10n.service import MANAGE, READ, GridPage, L10nService, canonical_locale
from quire.ui.screens import (
    back_to,
    checked_form,
    multipart_file,
    need,
    redirect_flash,
    render,
    studio_page,
)
from quire.ui.web import Login, same_origin, same_token

LIMITS = (25, 50, 100, 200)
DEFAULT_LIMIT = 50
MAX_Q = 200
FORMAT_LABELS = {"po": "gettext PO (one locale)", "i18next": "i18next JSON (one locale)",
                 "json": "Quire JSON (the whole project)"}
LOCALE_SPLIT = re.compile(r"[\s,;]+")


def allowed(identity: Any) -> bool:
    """The sidebar's test: a role that may read translations (`l10n/manage`
    alone reads nothing, as in the API, so it would only meet a 403)."""
    return bool(identity.can(READ))


def _is_htmx(request: Request) -> bool:
    return bool(request.headers.get("hx-request")) and not request.headers.get("hx-boosted")


# -- projects -----------------------------------------------------------------


@studio_page
async def projects_page(request: Request, login: Login) -> Response:
    need(login, READ)
    return _projects(request, login)


def _projects(request: Request, login: Login, status: int = 200, **context: Any) -> Response:
    projects = service(request, L10nService).list_projects(login.identity)
    defaults = {"form": {"name": "", "label": "", "locales": _system_locales(request)}, "errors": {}}
    return render(request, login, "l10n/l10n_projects.html", status, projects=projects,
                  can_manage=login.can(MANAGE), **{**defaults, **context})


def _system_locales(request: Request) -> str:
    """A first guess for a new project's locales: English and the site's
    locales (the content's default locale has no code)."""
    codes = ["en"] + [c for c in service(request, LocaleService).codes() if canonical_locale(c) not in (None, "en")]
    return ", ".join(codes)


def _locales_of(text: str) -> list[str]:
    return [code for code in LOCALE_SPLIT.split(text.strip()) if code]


@studio_page
async def create_project(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    l10n = service(request, L10nService)
    form = {"name": posted.get("name").strip(), "label": posted.get("label").strip(),
            "locales": posted.get("locales")}
    errors: dict[str, str] = {}
    if not form["name"]:
        errors["name"] = "Give the project a name"
    elif l10n.find(form["name"]) is not None:
        errors["name"] = f"Project {form['name']} exists already; pick another name"
    if not errors:
        try:
            body = {"label": form["label"] or form["name"], "locales": _locales_of(form["locales"]), "keys": {}}
            await l10n.put(form["name"], body, login.identity)
        except BadRequest as exc:
            errors = _place(exc, {"name", "label", "locales"})
    if errors:
        return _projects(request, login, 400, form=form, errors=errors)
    return redirect_flash(request, f"/studio/l10n/{form['name']}", f"Created project {form['name']}.")


def _place(exc: BadRequest, known: set[str]) -> dict[str, str]:
    """The service's message next to the field it names (`locales[2]` is
    the locales field), else at the top (`""`)."""
    fields = [str(f).split("[")[0] for f in exc.extra.get("fields") or []]
    where = fields[0] if fields and all(f == fields[0] for f in fields) and fields[0] in known else ""
    return {where: exc.message}


@studio_page
async def settings_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    project = service(request, L10nService).get(request.path_params["name"], login.identity)
    form = {"label": project["label"], "locales": ", ".join(project["locales"])}
    return _settings(request, login, project, form)


def _settings(request: Request, login: Login, project: dict[str, Any], form: dict[str, str],
              errors: dict[str, str] | None = None, status: int = 200, confirm: str = "") -> Response:
    counts = dict.fromkeys(project["locales"], 0)
    for values in project["keys"].values():
        for code in values:
            counts[code] = counts.get(code, 0) + 1
    return render(request, login, "l10n/l10n_settings.html", status, project=project, form=form,
                  errors=errors or {}, counts=counts, confirm=confirm)


@studio_page
async def save_settings(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    l10n = service(request, L10nService)
    project = l10n.get(request.path_params["name"], login.identity)
    form = {"label": posted.get("label").strip(), "locales": posted.get("locales")}
    wanted = _locales_of(form["locales"])
    dropped = [code for code in project["locales"] if code not in {canonical_locale(w) for w in wanted}]
    losing = {code: n for code in dropped
              if (n := sum(1 for v in project["keys"].values() if code in v))}
    if losing and posted.get("confirm") != ",".join(sorted(losing)):
        named = ", ".join(f"{n:,} {'value' if n == 1 else 'values'} in {code}" for code, n in losing.items())
        return _settings(request, login, project, form, {
            "locales": f"Removing a locale deletes its values ({named}). Tick the box to confirm."}, 400,
            confirm=",".join(sorted(losing)))
    try:
        await l10n.patch(project["name"], {"label": form["label"] or project["name"], "locales": wanted},
                         login.identity)
    except BadRequest as exc:
        return _settings(request, login, project, form, _place(exc, {"label", "locales"}), 400)
    return redirect_flash(request, f"/studio/l10n/{project['name']}", f"Saved project {project['name']}.")


@studio_page
async def delete_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    project = service(request, L10nService).get(request.path_params["name"], login.identity)
    return render(request, login, "l10n/l10n_delete.html", project=project)


@studio_page
async def delete_project(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    l10n = service(request, L10nService)
    project = l10n.get(request.path_params["name"], login.identity)
    if posted.get("confirm") != project["name"]:
        return render(request, login, "l10n/l10n_delete.html", 400, project=project,
                      error="Confirm on this page to delete the project.")
    await l10n.delete(project["name"], login.identity)
    count = len(project["keys"])
    return redirect_flash(request, "/studio/l10n",
                          f"Deleted project {project['name']} and its {count:,} {'key' if count == 1 else 'keys'}.")


# -- the grid -----------------------------------------------------------------


@dataclass
class GridQuery:
    q: str = ""
    missing: str = ""
    page: int = 1
    limit: int = DEFAULT_LIMIT

    def params(self, **changes: Any) -> str:
        values = {"q": self.q, "missing": self.missing, "page": self.page, "limit": self.limit, **changes}
        pairs = [(k, str(v)) for k, v in values.items()
                 if v not in ("", None) and not (k == "page" and v == 1) and not (k == "limit" and v == DEFAULT_LIMIT)]
        return "?" + urlencode(pairs) if pairs else ""


def _number(text: str | None, default: int) -> int:
    """A page or a page size from a link: ASCII digits (not `²` or `٥`,
    which int() would take), else the default."""
    return int(text) if text and len(text) <= 9 and text.isascii() and text.isdigit() else default


def _grid_query(params: Any) -> GridQuery:
    limit = _number(params.get("limit"), DEFAULT_LIMIT)
    return GridQuery(q=(params.get("q") or "")[:MAX_Q], missing=(params.get("missing") or "")[:64],
                     page=max(1, _number(params.get("page"), 1)), limit=limit if limit in LIMITS else DEFAULT_LIMIT)


@studio_page
async def project_page(request: Request, login: Login) -> Response:
    need(login, READ)
    query = _grid_query(request.query_params)
    l10n = service(request, L10nService)
    name = request.path_params["name"]
    error = None
    try:
        grid = l10n.grid(name, login.identity, missing=query.missing or None, q=query.q,
                         skip=(query.page - 1) * query.limit, limit=query.limit)
    except ApiError as exc:
        if exc.status != 404 or not query.missing or l10n.find(name) is None:
            raise
        error = f"{query.missing} is not a locale of this project"
        query.missing = ""
        grid = l10n.grid(name, login.identity, skip=0, limit=query.limit)
        grid.rows, grid.total = [], 0
    return _grid(request, login, grid, query, error)


def _grid(request: Request, login: Login, grid: GridPage, query: GridQuery, error: str | None = None,
          status: int | None = None, key_error: dict[str, str] | None = None) -> Response:
    pages = max(1, -(-grid.total // query.limit))
    here = f"/studio/l10n/{grid.name}" + query.params()
    context = {
        "grid": grid, "query": query, "error": error, "limits": LIMITS, "pages": pages, "here": here,
        "can_manage": login.can(MANAGE), "formats": FORMAT_LABELS, "fragment": _is_htmx(request),
        "key_error": key_error or {},
        "first": (query.page - 1) * query.limit + 1, "last": (query.page - 1) * query.limit + len(grid.rows),
    }
    template = "l10n/l10n_grid.html" if _is_htmx(request) else "l10n/l10n_project.html"
    return render(request, login, template, status or (400 if error else 200), **context)


def _back(posted: Any, name: str) -> str:
    """Where a write returns: the grid as it was shown (same filter and
    page), never another site or another screen."""
    return back_to(posted.get("back"), f"/studio/l10n/{name}")


@studio_page
async def save_cell(request: Request, login: Login) -> Response:
    """One translation (htmx: the cell again, saying "Saved" or why not;
    without JavaScript: back to the grid with a message)."""
    posted = await checked_form(request, login)
    name = request.path_params["name"]
    key, locale, value = posted.get("key"), posted.get("locale"), posted.get("value")
    status = 200
    message = "Saved"
    try:
        need(login, MANAGE)
        project = await service(request, L10nService).set_value(name, key, locale, value, login.identity)
        stored = project["keys"].get(key, {}).get(canonical_locale(locale) or locale)
    except ApiError as exc:
        if not _is_htmx(request):
            raise
        status, message, stored = exc.status, exc.message, value
    if not _is_htmx(request):
        return redirect_flash(request, _back(posted, name), f"Saved {locale} of {key}.")
    return render(request, login, "l10n/l10n_saved.html", status, name=name, key=key, locale=locale,
                  value=stored, saved=status == 200, message=message, can_manage=True,
                  back=_back(posted, name))


@studio_page
async def add_key(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    name = request.path_params["name"]
    key = posted.get("key")
    l10n = service(request, L10nService)
    try:
        await l10n.add_key(name, key, login.identity)
    except BadRequest as exc:
        return _key_refused(request, login, l10n, name, posted, exc.message, "new-key")
    return redirect_flash(request, f"/studio/l10n/{name}?{urlencode({'q': key})}", f"Added key {key}.")


def _key_refused(request: Request, login: Login, l10n: L10nService, name: str, posted: Any, message: str,
                 where: str) -> Response:
    """The grid as it was shown, with the service's message next to the
    key form that was refused (`new-key` or `rename:<key>`)."""
    query = _grid_query(dict(parse_qsl(urlsplit(_back(posted, name)).query)))
    grid = l10n.grid(name, login.identity, missing=query.missing or None, q=query.q,
                     skip=(query.page - 1) * query.limit, limit=query.limit)
    return _grid(request, login, grid, query, status=400,
                 key_error={"where": where, "message": message, "value": posted.get("new") or posted.get("key")})


@studio_page
async def rename_key(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    name = request.path_params["name"]
    old, new = posted.get("key"), posted.get("new")
    l10n = service(request, L10nService)
    try:
        await l10n.rename_key(name, old, new, login.identity)
    except BadRequest as exc:
        return _key_refused(request, login, l10n, name, posted, exc.message, f"rename:{old}")
    return redirect_flash(request, _back(posted, name), f"Renamed key {old} to {new}.")


@studio_page
async def delete_key(request: Request, login: Login) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    name = request.path_params["name"]
    key = posted.get("key")
    await service(request, L10nService).delete_key(name, key, login.identity)
    return redirect_flash(request, _back(posted, name), f"Deleted key {key}.")


# -- files --------------------------------------------------------------------


@studio_page
async def export_file(request: Request, login: Login) -> Response:
    need(login, READ)
    fmt = request.query_params.get("format") or "json"
    if fmt not in FORMATS:
        raise BadRequest("<format> must be json, po or i18next")
    found = service(request, L10nService).export(request.path_params["name"], fmt,
                                                 request.query_params.get("locale") or None, login.identity)
    return Response(found.body, media_type=found.media_type, headers={
        "Content-Disposition": f'attachment; filename="{found.filename}"'})


@studio_page
async def import_file(request: Request, login: Login) -> Response:
    """A file posted as multipart (`file`, `format`, `locale`, `csrf`),
    from the page's form or its script (which asks for JSON to show the
    answer in place). The service checks the whole file before storing
    any of it: a file that does not parse changes nothing."""
    name = request.path_params["name"]
    wants_json = "application/json" in request.headers.get("accept", "")
    try:
        if not request.headers.get("content-type", "").startswith("multipart/form-data"):
            await checked_form(request, login)  # a form post: its token is checked first, as for every write
            raise BadRequest("Send the file as multipart/form-data")
        if not same_origin(request):
            raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
        need(login, MANAGE)
        l10n = service(request, L10nService)
        l10n.get(name, login.identity)  # 404 before reading a file for no project
        fields, filename, raw = await multipart_file(request, quire_of(request).max_body)
        token = fields.get("csrf") or request.headers.get("x-csrf-token", "")
        if not same_token(login.session["csrf"], token):
            raise Forbidden("The form has expired or did not come from this site; reload the page and try again")
        fmt = fields.get("format", "")
        if fmt not in FORMATS:
            raise BadRequest("Choose the file's format: PO, i18next or Quire JSON")
        locale = fields.get("locale", "").strip() or None
        if raw is None or not filename and not raw:
            raise BadRequest("Choose a file to import")
        project = await l10n.import_file(name, fmt, raw, locale, login.identity)
    except ApiError as exc:
        if wants_json:
            return json_response({"error": exc.message}, status=exc.status)
        if exc.status == 404 or isinstance(exc, Forbidden):
            raise
        return render(request, login, "message.html", exc.status, title="Nothing was imported",
                      message=exc.message, back=f"/studio/l10n/{name}", back_text="Back to the project")
    count = len(project["keys"])
    message = (f"Imported {filename or 'the file'} ({fmt}{', ' + locale if locale else ''}): "
               f"the project has {count:,} {'key' if count == 1 else 'keys'} in {', '.join(project['locales'])}.")
    if wants_json:
        response = json_response({"message": message, "url": f"/studio/l10n/{name}"})
        flash = redirect_flash(request, f"/studio/l10n/{name}", message)
        response.headers["set-cookie"] = flash.headers["set-cookie"]
        return response
    return redirect_flash(request, f"/studio/l10n/{name}", message)


routes = [
    route("/studio/l10n", get=projects_page, post=create_project, cors=False),
    route("/studio/l10n/{name}", get=project_page, cors=False),
    route("/studio/l10n/{name}/cell", post=save_cell, cors=False),
    route("/studio/l10n/{name}/keys", post=add_key, cors=False),
    route("/studio/l10n/{name}/keys/rename", post=rename_key, cors=False),
    route("/studio/l10n/{name}/keys/delete", post=delete_key, cors=False),
    route("/studio/l10n/{name}/settings", get=settings_page, post=save_settings, cors=False),
    route("/studio/l10n/{name}/delete", get=delete_page, post=delete_project, cors=False),
    route("/studio/l10n/{name}/export", get=export_file, cors=False),
    route("/studio/l10n/{name}/import", post=import_file, cors=False),
]
