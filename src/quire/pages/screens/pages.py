"""Pages in the studio: the page tree (drag and drop or buttons to reorder
and move, the route changes of a move shown before it is saved), the page
editor (type, title and slug per locale, SEO, layout components, the
linked model, state, the API's answer), and the page settings form. Every
read and write goes through `PagesService` / `MenuService` with the user's
identity, as the API's do. Menus are in `studio/menus.py`."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest, Conflict, NotFound, ValidationError
from quire.http import service
from quire.ids import is_id
from quire.modules import FindSection, Found, Services, Usage
from quire.pages.locales import pages_in_locale
from quire.pages.menus import MenuService
from quire.pages.service import MANAGE, READ, PagesService
from quire.pages.validate import LINK_TARGETS, PAGE_TYPES, STATES
from quire.ui import tree as trees
from quire.ui.screens import Form, checked_form, json_of, need, redirect_flash, render, studio_page
from quire.ui.web import Login

STATE_NAMES = {1: "published", 0: "draft", -1: "archived"}
SEO_KEYS = ("title", "description")
MAX_TEXT = 100_000  # a title, slug or URL typed into the editor
MAX_COMPONENTS = 500


def _pages(request: Request) -> PagesService:
    return service(request, PagesService)


def _htmx(request: Request) -> bool:
    return bool(request.headers.get("hx-request"))


def other_locales(request: Request) -> list[dict[str, Any]]:
    """The project's locales other than the default."""
    return [loc for loc in _pages(request).content.locales.list() if not loc.get("default")]


def pretty(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def _json_field(form: Form, name: str, errors: dict[str, str], kind: type, what: str) -> Any:
    """A JSON text area of the form: empty is None; else `kind` or an error."""
    text = form.get(name).strip()
    if not text:
        return None
    try:
        value = json_of(text)
    except ValueError as exc:
        errors[name] = f"is not JSON: {exc}"
        return None
    if not isinstance(value, kind):
        errors[name] = f"must be {what}"
        return None
    return value


# -- the tree ---------------------------------------------------------------

def _tree(request: Request, login: Login, status: int = 200, *, plan: dict[str, Any] | None = None,
          problem: str | None = None) -> Response:
    nodes = _pages(request).outline(login.identity)
    template = "pages/pages_tree_nodes.html" if _htmx(request) else "pages/pages_tree.html"
    return render(request, login, template, status, nodes=nodes, total=trees.count(nodes),
                  can_manage=login.can(MANAGE), states=STATE_NAMES, plan=plan, problem=problem)


def _may_see(login: Login) -> None:
    if not (login.can(READ) or login.can(MANAGE)):
        need(login, READ)


@studio_page
async def tree_page(request: Request, login: Login) -> Response:
    _may_see(login)
    return _tree(request, login)


def flat(nodes: list[dict[str, Any]], depth: int = 0) -> list[tuple[dict[str, Any], int]]:
    out = []
    for node in nodes:
        out.append((node, depth))
        out += flat(node.get("_children") or [], depth + 1)
    return out


def _place(form: Form, nodes: list[dict[str, Any]], page_id: str) -> tuple[str | None, int] | None:
    """(parent, position) the form asks for: a keyboard move (`dir`), or a
    drop / the "move under" form (`parent`, `position`)."""
    direction = form.get("dir")
    if direction:
        if direction not in trees.MOVES:
            raise BadRequest("Move up, down, indent or outdent")
        return trees.target(nodes, page_id, direction)
    parent = form.get("parent") or None
    if parent is not None and not is_id(parent):
        raise BadRequest("parent must be a page id")
    position = form.get("position", "1000000")
    if not (position.isascii() and position.isdigit()) or len(position) > 7:
        raise BadRequest("position must be a whole number (0: first)")
    return parent, int(position)


@studio_page
async def move(request: Request, login: Login) -> Response:
    """A move from the tree. One that changes routes is shown first (the
    routes before and after) and done only when confirmed."""
    form = await checked_form(request, login)
    need(login, MANAGE)
    pages = _pages(request)
    page_id = form.get("id")
    nodes = pages.outline(login.identity)
    spot = trees.find(nodes, page_id)
    if spot is None:
        raise BadRequest("No such page in the tree (it may have been deleted): reload the page")
    try:
        place = _place(form, nodes, page_id)
        if place is None:
            return _tree(request, login) if _htmx(request) else redirect_flash(request, "/studio/pages", "Not moved.")
        parent, position = place
        title = spot.siblings[spot.index].get("title") or page_id
        if parent != spot.parent and form.get("confirm") != "1":
            changes = pages.move_plan(page_id, parent, login.identity)
            if changes:
                plan = {"id": page_id, "title": title, "parent": parent or "", "position": position,
                        "changes": changes, "parent_title": _title_in(nodes, parent)}
                if _htmx(request):
                    return _tree(request, login, plan=plan)
                return render(request, login, "pages/pages_move_confirm.html", plan=plan, standalone=True)
        await pages.move(page_id, parent, position, login.identity)
    except (ValidationError, Conflict) as exc:
        if _htmx(request):
            return _tree(request, login, exc.status, problem=f"Not moved: {exc.message}")
        raise
    if _htmx(request):
        return _tree(request, login)
    return redirect_flash(request, "/studio/pages", f"Moved “{title}”.")


def _title_in(nodes: list[dict[str, Any]], page_id: str | None) -> str:
    if page_id is None:
        return "the top level"
    spot = trees.find(nodes, page_id)
    return str(spot.siblings[spot.index].get("title") or page_id) if spot else page_id


@studio_page
async def move_form(request: Request, login: Login) -> Response:
    """The keyboard's "move under" form of one page: every page it may go
    under (not itself or its own subtree)."""
    need(login, MANAGE)
    page_id = request.path_params["id"]
    nodes = _pages(request).outline(login.identity)
    spot = trees.find(nodes, page_id)
    if spot is None:
        raise _not_found()
    node = spot.siblings[spot.index]
    inside = {n["_id"] for n, _ in flat([node])}
    targets = [(n, d) for n, d in flat(nodes) if n["_id"] not in inside]
    return render(request, login, "pages/pages_move.html", node=node, parent=spot.parent, targets=targets)


def _not_found() -> NotFound:
    return NotFound("Page not found")


# -- the editor -------------------------------------------------------------

def _models(request: Request) -> dict[str, list[Any]]:
    models = service(request, ContentService).models.all()
    return {kind: [m for m in models if m.type == kind] for kind in ("collection", "singleton")}


def _form_of(page: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    """What the editor's inputs show of a stored page."""
    data = dict(page.get("data") or {})
    seo = dict(page.get("seo") or {})
    known = {"model", "slugField", "url", "target"}
    form: dict[str, Any] = {
        "type": page.get("type", "layout"), "title": page.get("title", ""), "slug": page.get("slug", ""),
        "state": page.get("_state", 1), "pid": page.get("_pid") or "",
        "data_model": data.get("model", ""), "data_slugField": data.get("slugField", ""),
        "data_url": data.get("url", ""), "data_target": data.get("target", ""),
        "data_more": pretty({k: v for k, v in data.items() if k not in known}) if set(data) - known else "",
        "seo_more": pretty({k: v for k, v in seo.items() if k not in SEO_KEYS}) if set(seo) - set(SEO_KEYS) else "",
        "layout": [_component_row(c) for c in page.get("layout") or []],
    }
    for key in SEO_KEYS:
        form[f"seo_{key}"] = seo.get(key, "")
    for code in codes:
        form[f"title_{code}"] = page.get(f"title_{code}") or ""
        form[f"slug_{code}"] = page.get(f"slug_{code}") or ""
        local = page.get(f"seo_{code}") or {}
        for key in SEO_KEYS:
            form[f"seo_{code}_{key}"] = local.get(key, "") if isinstance(local, dict) else ""
    return form


def _component_row(comp: Any) -> dict[str, str]:
    comp = comp if isinstance(comp, dict) else {}
    return {"component": str(comp.get("component") or ""), "label": str(comp.get("label") or ""),
            "data": pretty(comp["data"]) if comp.get("data") else "",
            "children": pretty(comp["children"]) if comp.get("children") else ""}


def _rows_of(form: Form) -> list[dict[str, str]]:
    names = ("component", "label", "data", "children")
    columns = [form.getlist(f"comp_{n}") for n in names]
    count = min(len(c) for c in columns)
    if count > MAX_COMPONENTS:
        raise BadRequest(f"A layout holds at most {MAX_COMPONENTS} components here")
    return [{n: columns[i][row] for i, n in enumerate(names)} for row in range(count)]


def _layout_op(rows: list[dict[str, str]], op: str) -> int | None:
    """Add, remove or move a component row in place; the row to focus."""
    if op == "add":
        rows.append({"component": "", "label": "", "data": "", "children": ""})
        return len(rows) - 1
    action, _, index = op.partition("-")
    if not (index.isascii() and index.isdigit()) or int(index) >= len(rows):
        return None
    i = int(index)
    if action == "remove":
        del rows[i]
        return min(i, len(rows) - 1) if rows else None
    if action == "up" and i > 0:
        rows[i - 1], rows[i] = rows[i], rows[i - 1]
        return i - 1
    if action == "down" and i < len(rows) - 1:
        rows[i + 1], rows[i] = rows[i], rows[i + 1]
        return i + 1
    return i


def _data_of(form: Form, kind: str, errors: dict[str, str]) -> dict[str, Any]:
    data = _json_field(form, "data_more", errors, dict, "a JSON object") or {}
    if kind in ("collection", "singleton"):
        data["model"] = form.get("data_model")
        if kind == "collection":
            data["slugField"] = form.get("data_slugField").strip() or "slug"
    elif kind == "link":
        data["url"] = form.get("data_url").strip()
        if form.get("data_target"):
            data["target"] = form.get("data_target")
    return data


def _page_data(form: Form, codes: list[str], is_new: bool, errors: dict[str, str],
               rows: list[dict[str, str]]) -> dict[str, Any]:
    """The page write of the editor's form (the service checks it)."""
    for name, value in form.pairs:
        if len(value) > MAX_TEXT:
            raise BadRequest(f"{name} is longer than {MAX_TEXT:,} characters")
    kind = form.get("type")
    if kind not in PAGE_TYPES:
        errors["type"] = f"must be one of {', '.join(PAGE_TYPES)}"
    state = form.get("state")
    if state not in {str(s) for s in STATES}:
        errors["_state"] = "must be published, draft or archived"
    data: dict[str, Any] = {"type": kind, "title": form.get("title").strip(),
                            "data": _data_of(form, kind, errors), "_state": int(state) if state in ("1", "0", "-1") else 1}
    slug = form.get("slug").strip()
    if slug or not is_new:
        data["slug"] = slug
    seo = _json_field(form, "seo_more", errors, dict, "a JSON object") or {}
    seo.update({k: form.get(f"seo_{k}").strip() for k in SEO_KEYS if form.get(f"seo_{k}").strip()})
    data["seo"] = seo
    for code in codes:
        data[f"title_{code}"] = form.get(f"title_{code}").strip() or None
        local_slug = form.get(f"slug_{code}").strip()
        if local_slug or not is_new:
            data[f"slug_{code}"] = local_slug or None
        local = {k: form.get(f"seo_{code}_{k}").strip() for k in SEO_KEYS if form.get(f"seo_{code}_{k}").strip()}
        data[f"seo_{code}"] = local or None
        if is_new and data[f"title_{code}"] is None:
            del data[f"title_{code}"]
        if is_new and data[f"seo_{code}"] is None:
            del data[f"seo_{code}"]
    layout = []
    for i, row in enumerate(rows):
        comp: dict[str, Any] = {"component": row["component"].strip()}
        if row["label"].strip():
            comp["label"] = row["label"].strip()
        for part, kind_of, what in (("data", dict, "a JSON object"), ("children", list, "a JSON list of components")):
            text = row[part].strip()
            if not text:
                continue
            try:
                value = json_of(text)
            except ValueError as exc:
                errors[f"layout[{i}].{part}"] = f"is not JSON: {exc}"
                continue
            if not isinstance(value, kind_of):
                errors[f"layout[{i}].{part}"] = f"must be {what}"
            comp[part] = value
        layout.append(comp)
    data["layout"] = layout
    if is_new:
        parent = form.get("pid")
        if parent and not is_id(parent):
            errors["_pid"] = "must be a page"
        data["_pid"] = parent or None
    return data


def _errors_of(exc: ApiError) -> dict[str, str]:
    """The service's refusal as {field: message} to show next to inputs."""
    if isinstance(exc, ValidationError):
        return {_field_key(k): v for k, v in exc.errors.items()}
    fields = exc.extra.get("fields") or []
    return {_field_key(f): exc.message for f in fields} or {"": exc.message}


def _field_key(name: str) -> str:
    """`data.model` and `data_de.model` show at the model input; a layout
    row's problem `layout` stays at the layout."""
    if name.startswith("data") and "." in name:
        return "data." + name.split(".", 1)[1]
    return name


def _editor(request: Request, login: Login, page: dict[str, Any] | None, form: dict[str, Any], status: int = 200,
            errors: dict[str, str] | None = None, focus: str | None = None) -> Response:
    pages = _pages(request)
    locales = other_locales(request)
    preview = None
    locale = request.query_params.get("locale") or None
    if page is not None:
        codes = [loc["i18n"] for loc in locales]
        preview = pretty(pages.preview(page, locale if locale in codes else None, login.identity))
    errors = errors or {}
    shown = {"type", "title", "slug", "_state", "data.model", "data.slugField", "data.url", "data.target", "data_more",
             "seo", "seo_more", "layout", "_pid"} | {f"{n}_{loc['i18n']}" for loc in locales for n in ("title", "slug", "seo")}
    rest = {k: v for k, v in errors.items() if k not in shown and not k.startswith("layout[")}
    parents = flat(pages.outline(login.identity)) if page is None else []
    site_preview = []
    if page is not None and pages.settings.preview_url and login.can(MANAGE):
        site_preview = pages.preview_link(page["_id"], login.identity, 3600)["links"]
    return render(request, login, "pages/pages_editor.html", status, page=page, form=form, locales=locales,
                  errors=errors, rest=rest, models=_models(request), types=PAGE_TYPES, states=STATE_NAMES,
                  targets=LINK_TARGETS, preview=preview, preview_locale=locale, focus=focus, parents=parents,
                  site_preview=site_preview)


@studio_page
async def new_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    codes = _pages(request).codes()
    form = _form_of({"_pid": request.query_params.get("parent") or None}, codes)
    return _editor(request, login, None, form)


@studio_page
async def edit_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    page = _pages(request).stored(request.path_params["id"], login.identity)
    return _editor(request, login, page, _form_of(page, _pages(request).codes()))


async def _save(request: Request, login: Login, form: Form, page: dict[str, Any] | None) -> Response:
    need(login, MANAGE)
    pages = _pages(request)
    codes = pages.codes()
    rows = _rows_of(form)
    op = form.get("op", "save")
    errors: dict[str, str] = {}
    data = _page_data(form, codes, page is None, errors, rows)
    shown = _form_of({**(page or {}), **{k: v for k, v in data.items() if v is not None}}, codes)
    shown.update({k: form.get(k) for k in ("data_more", "seo_more", "slug", "pid")})
    shown["layout"] = rows
    if op != "save":
        focus = _layout_op(rows, op)
        return _editor(request, login, page, shown, focus=None if focus is None else f"comp-{focus}")
    if errors:
        return _editor(request, login, page, shown, 400, errors)
    if page is not None:
        data["_id"] = page["_id"]
    try:
        saved = await pages.save(data, login.identity)
    except (ValidationError, Conflict, BadRequest) as exc:
        return _editor(request, login, page, shown, exc.status, _errors_of(exc))
    return redirect_flash(request, f"/studio/pages/{saved['_id']}", f"Saved “{saved.get('title')}”.")


@studio_page
async def create_page(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    return await _save(request, login, form, None)


@studio_page
async def save_page(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    page = _pages(request).stored(request.path_params["id"], login.identity)
    return await _save(request, login, form, page)


@studio_page
async def delete_page(request: Request, login: Login) -> Response:
    """GET: what would go (the page and its subtree); POST: delete them."""
    if request.method == "POST":
        await checked_form(request, login)
    need(login, MANAGE)
    pages = _pages(request)
    page = pages.stored(request.path_params["id"], login.identity)
    if request.method == "POST":
        await pages.delete(page["_id"], login.identity)
        return redirect_flash(request, "/studio/pages", f"Deleted “{page.get('title')}” and the pages under it.")
    spot = trees.find(pages.outline(login.identity), page["_id"])
    below = flat(spot.siblings[spot.index].get("_children") or []) if spot else []
    return render(request, login, "pages/pages_delete.html", page=page, below=below)


# -- settings ---------------------------------------------------------------

SETTINGS_TEXT = {"seo": ("title", "description"), "scripts": ("header", "footer"), "meta": ("siteName",)}
SETTINGS_JSON = ("images", "preview")


def _settings_form(settings: dict[str, Any], codes: list[str]) -> dict[str, Any]:
    form: dict[str, Any] = {}
    for key, known in SETTINGS_TEXT.items():
        value = settings.get(key) or {}
        for name in known:
            form[f"{key}_{name}"] = value.get(name, "")
        rest = {k: v for k, v in value.items() if k not in known}
        form[f"{key}_more"] = pretty(rest) if rest else ""
    for key in SETTINGS_JSON:
        form[key] = pretty(settings[key]) if settings.get(key) else ""
    for code in codes:
        local = settings.get(f"seo_{code}") or {}
        for name in SETTINGS_TEXT["seo"]:
            form[f"seo_{code}_{name}"] = local.get(name, "")
    return form


@studio_page
async def settings_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    menus = service(request, MenuService)
    if request.method == "GET":
        settings = menus.stored_settings(login.identity)
        return render(request, login, "pages/pages_settings.html", form=_settings_form(settings, _pages(request).codes()),
                      locales=other_locales(request), errors={})
    form = await checked_form(request, login)
    codes = _pages(request).codes()
    errors: dict[str, str] = {}
    data: dict[str, Any] = {}
    for name, text in form.pairs:
        if len(text) > MAX_TEXT:
            raise BadRequest(f"{name} is longer than {MAX_TEXT:,} characters")
    for key, known in SETTINGS_TEXT.items():
        value: dict[str, Any] = _json_field(form, f"{key}_more", errors, dict, "a JSON object") or {}
        value.update({n: form.get(f"{key}_{n}") for n in known if form.get(f"{key}_{n}").strip()})
        data[key] = value
    for key in SETTINGS_JSON:
        data[key] = _json_field(form, key, errors, dict, "a JSON object") or {}
    for code in codes:
        local = {n: form.get(f"seo_{code}_{n}") for n in SETTINGS_TEXT["seo"] if form.get(f"seo_{code}_{n}").strip()}
        data[f"seo_{code}"] = local or None
    if not errors:
        try:
            await menus.save_settings(data, login.identity)
        except ValidationError as exc:
            errors = {f"{k}_more" if k in SETTINGS_TEXT else k: v for k, v in exc.errors.items()}
        else:
            return redirect_flash(request, "/studio/pages/settings", "Page settings saved.")
    shown = {**_settings_form({}, codes), **{k: form.get(k) for k, _ in form.pairs}}
    return render(request, login, "pages/pages_settings.html", 400, form=shown, locales=other_locales(request),
                  errors=errors)


routes = [
    route("/studio/pages", get=tree_page, cors=False),
    route("/studio/pages/move", post=move, cors=False),
    route("/studio/pages/new", get=new_page, post=create_page, cors=False),
    route("/studio/pages/settings", get=settings_page, post=settings_page, cors=False),
    route("/studio/pages/{id}", get=edit_page, post=save_page, cors=False),
    route("/studio/pages/{id}/move", get=move_form, cors=False),
    route("/studio/pages/{id}/delete", get=delete_page, post=delete_page, cors=False),
]


FOUND_PER_SEARCH = 8  # pages the studio's search box shows


def find(services: Services, identity: Any, words: str) -> list[FindSection]:
    """Pages whose title or slug holds the words (for those who manage them)."""
    if not identity.can(MANAGE):
        return []
    pages = services.get(PagesService).titled(words, FOUND_PER_SEARCH, identity)
    found = [Found(p.get("title") or p.get("slug") or p["_id"], f"/studio/pages/{p['_id']}", code=p.get("_r") or None,
                   note="" if p.get("_state") == 1 else "draft") for p in pages]
    return [FindSection("Pages", found, order=30)]


def locale_usage(services: Services, identity: Any, kind: str, code: str, limit: int) -> Usage | None:
    """How many pages hold values in a locale (`Module.usage` of kind
    "locale"), for the locale's removal screen."""
    if kind != "locale":
        return None
    return Usage([], pages_in_locale(services.get(PagesService), code))
