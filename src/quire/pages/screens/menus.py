"""Menus in the studio: the list of menus (one per name) and a menu's
editor, a tree of links to pages or URLs with a title per locale. The form
holds the links depth first, each with its depth; the buttons add, remove,
move up/down and indent/outdent a link (with its children) and re-show the
form without saving; drag and drop (pages.js) does the same in the page.
Saving goes through `MenuService.save`, whose refusals show at the links."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.errors import BadRequest, ValidationError
from quire.http import service
from quire.pages.menus import MenuService
from quire.pages.screens.pages import flat, other_locales, pretty
from quire.pages.service import MANAGE, PagesService
from quire.pages.validate import LINK_TARGETS, PAGE_LINK
from quire.ui.screens import Form, checked_form, json_of, need, redirect_flash, render, studio_page
from quire.ui.web import Login

MAX_LINKS = 1000
MAX_DEPTH = 10
MAX_TEXT = 10_000
LINK_ERROR = re.compile(r"^links((?:\[\d+\](?:\.children)?)+)(?:\.(.+))?$")


def _menus(request: Request) -> MenuService:
    return service(request, MenuService)


@studio_page
async def menus_page(request: Request, login: Login) -> Response:
    """GET: the menus; POST: create one by name (then its editor)."""
    need(login, MANAGE)
    menus = _menus(request)
    errors: dict[str, str] = {}
    values = {"name": "", "label": ""}
    status = 200
    if request.method == "POST":
        form = await checked_form(request, login)
        values = {"name": form.get("name").strip()[:200], "label": form.get("label").strip()[:MAX_TEXT]}
        taken = any(m["name"] == values["name"] for m in menus.stored_all(login.identity))
        if taken:
            errors["name"] = f"{values['name']} is the name of another menu"
        else:
            try:
                await menus.save({"name": values["name"], "label": values["label"] or values["name"], "links": []},
                                 login.identity)
            except ValidationError as exc:
                errors = exc.errors
            else:
                return redirect_flash(request, f"/studio/menus/{values['name']}", f"Menu {values['name']} created.")
        status = 400
    return render(request, login, "pages/menus.html", status, menus=menus.stored_all(login.identity),
                  values=values, errors=errors, count=_count)


def _count(links: list[dict[str, Any]]) -> int:
    return sum(1 + _count(link.get("children") or []) for link in links)


# -- a menu's links as rows (depth first, with depths) and back ---------------

def _rows(links: list[dict[str, Any]], codes: list[str], depth: int = 0) -> list[dict[str, Any]]:
    out = []
    for link in links:
        url = str(link.get("url") or "")
        match = PAGE_LINK.match(url)
        row = {"depth": depth, "title": link.get("title") or "", "page": match.group(1) if match else "",
               "url": "" if match else url, "target": link.get("target") or "",
               "active": "0" if link.get("active") is False else "1",
               "data": pretty(link["data"]) if link.get("data") else ""}
        for code in codes:
            row[f"title_{code}"] = link.get(f"title_{code}") or ""
        out.append(row)
        out += _rows(link.get("children") or [], codes, depth + 1)
    return out


def _rows_of(form: Form, codes: list[str]) -> list[dict[str, Any]]:
    names = ["depth", "title", "page", "url", "target", "active", "data", *(f"title_{c}" for c in codes)]
    columns = {n: form.getlist(f"link_{n}") for n in names}
    count = min(len(c) for c in columns.values())
    if count > MAX_LINKS:
        raise BadRequest(f"A menu holds at most {MAX_LINKS} links here")
    rows: list[dict[str, Any]] = []
    for i in range(count):
        row: dict[str, Any] = {n: columns[n][i][:MAX_TEXT] for n in names}
        depth = row["depth"]
        wanted = int(depth) if depth.isascii() and depth.isdigit() and len(depth) < 3 else 0
        # a link is at most one level below the one before it
        row["depth"] = min(wanted, rows[-1]["depth"] + 1 if rows else 0, MAX_DEPTH)
        rows.append(row)
    return rows


def _links(rows: list[dict[str, Any]], codes: list[str], errors: dict[str, str]) -> list[dict[str, Any]]:
    """The rows as the API's nested links; JSON problems in `errors`."""
    top: list[dict[str, Any]] = []
    stack: list[tuple[int, list[dict[str, Any]]]] = [(-1, top)]
    for i, row in enumerate(rows):
        link: dict[str, Any] = {"url": f"pages://{row['page']}" if row["page"] else row["url"].strip()}
        if row["title"].strip():
            link["title"] = row["title"].strip()
        for code in codes:
            if row[f"title_{code}"].strip():
                link[f"title_{code}"] = row[f"title_{code}"].strip()
        if row["target"]:
            link["target"] = row["target"]
        if row["active"] == "0":
            link["active"] = False
        if row["data"].strip():
            try:
                link["data"] = json_of(row["data"])
            except ValueError as exc:
                errors[f"{i}.data"] = f"is not JSON: {exc}"
        link["children"] = []
        while stack[-1][0] >= row["depth"]:
            stack.pop()
        stack[-1][1].append(link)
        stack.append((row["depth"], link["children"]))
    return top


def _nest(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows as nested nodes {i, row, children} for the page to show."""
    top: list[dict[str, Any]] = []
    stack: list[tuple[int, list[dict[str, Any]]]] = [(-1, top)]
    for i, row in enumerate(rows):
        node: dict[str, Any] = {"i": i, "row": row, "children": []}
        while stack[-1][0] >= row["depth"]:
            stack.pop()
        stack[-1][1].append(node)
        stack.append((row["depth"], node["children"]))
    return top


def _block(rows: list[dict[str, Any]], i: int) -> int:
    """The end (exclusive) of row i with the rows under it."""
    end = i + 1
    while end < len(rows) and rows[end]["depth"] > rows[i]["depth"]:
        end += 1
    return end


def _op(rows: list[dict[str, Any]], op: str, codes: list[str]) -> int | None:
    """Add, remove, move or (in/out)dent a link with its children; the row to focus."""
    if op == "add":
        rows.append({"depth": 0, "title": "", "page": "", "url": "", "target": "", "active": "1", "data": "",
                     **{f"title_{c}": "" for c in codes}})
        return len(rows) - 1
    action, _, index = op.partition("-")
    if not (index.isascii() and index.isdigit()) or int(index) >= len(rows):
        return None
    i = int(index)
    end = _block(rows, i)
    depth = rows[i]["depth"]
    if action == "remove":
        del rows[i:end]
        return min(i, len(rows) - 1) if rows else None
    if action == "up":
        before = i - 1
        while before >= 0 and rows[before]["depth"] > depth:
            before -= 1
        if before < 0 or rows[before]["depth"] != depth:
            return i
        rows[before:end] = rows[i:end] + rows[before:i]
        return before
    if action == "down":
        if end >= len(rows) or rows[end]["depth"] != depth:
            return i
        after = _block(rows, end)
        rows[i:after] = rows[end:after] + rows[i:end]
        return i + after - end
    if action in ("indent", "outdent"):
        step = 1 if action == "indent" else -1
        if (step == 1 and (i == 0 or rows[i - 1]["depth"] < depth or depth >= MAX_DEPTH)) or (step == -1 and depth == 0):
            return i
        for row in rows[i:end]:
            row["depth"] += step
        return i
    return i


def _row_errors(exc: ValidationError, rows: list[dict[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """The service's `links[0].children[1].url` as (row index.field -> message), and the rest."""
    paths: list[str] = []
    stack: list[tuple[int, str, list[int]]] = []
    counters: dict[str, int] = {}
    for row in rows:
        while stack and stack[-1][0] >= row["depth"]:
            stack.pop()
        parent = stack[-1][1] + ".children" if stack else "links"
        n = counters.get(parent, 0)
        counters[parent] = n + 1
        path = f"{parent}[{n}]"
        paths.append(path)
        stack.append((row["depth"], path, []))
    at_rows: dict[str, str] = {}
    rest: dict[str, str] = {}
    for key, message in exc.errors.items():
        match = LINK_ERROR.match(key)
        if match:
            path = "links" + match.group(1)
            if path in paths:
                at_rows[f"{paths.index(path)}.{match.group(2) or 'url'}"] = message
                continue
        rest[key] = message
    return at_rows, rest


def _editor(request: Request, login: Login, menu: dict[str, Any], rows: list[dict[str, Any]], values: dict[str, str],
            status: int = 200, errors: dict[str, str] | None = None, focus: int | None = None) -> Response:
    pages = flat(service(request, PagesService).outline(login.identity))
    return render(request, login, "pages/menus_edit.html", status, menu=menu, rows=rows, tree=_nest(rows),
                  values=values,
                  locales=other_locales(request), pages=pages, targets=LINK_TARGETS, errors=errors or {}, focus=focus)


@studio_page
async def menu_page(request: Request, login: Login) -> Response:
    form = await checked_form(request, login) if request.method == "POST" else None
    need(login, MANAGE)
    menus = _menus(request)
    menu = menus.stored(request.path_params["name"], login.identity)
    codes = service(request, PagesService).codes()
    if form is None:
        return _editor(request, login, menu, _rows(menu.get("links") or [], codes),
                       {"name": menu["name"], "label": menu.get("label") or ""})
    rows = _rows_of(form, codes)
    values = {"name": form.get("name").strip()[:200], "label": form.get("label")[:MAX_TEXT]}
    op = form.get("op", "save")
    if op != "save":
        return _editor(request, login, menu, rows, values, focus=_op(rows, op, codes))
    errors: dict[str, str] = {}
    links = _links(rows, codes, errors)
    if not errors:
        try:
            saved = await menus.save({"_id": menu["_id"], "name": values["name"], "label": values["label"],
                                      "links": links}, login.identity)
        except ValidationError as exc:
            at_rows, rest = _row_errors(exc, rows)
            errors = {**at_rows, **rest}
        else:
            return redirect_flash(request, f"/studio/menus/{saved['name']}", f"Menu {saved['name']} saved.")
    return _editor(request, login, menu, rows, values, 400, errors)


@studio_page
async def delete_menu(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    menus = _menus(request)
    menu = menus.stored(request.path_params["name"], login.identity)
    await menus.delete(menu["name"], login.identity)
    return redirect_flash(request, "/studio/menus", f"Menu {menu['name']} deleted.")


routes = [
    route("/studio/menus", get=menus_page, post=menus_page, cors=False),
    route("/studio/menus/{name}", get=menu_page, post=menu_page, cors=False),
    route("/studio/menus/{name}/delete", post=delete_menu, cors=False),
]
