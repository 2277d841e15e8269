"""Content lists: a collection's items as a table (columns the user
chooses, sort by a column, search, the API's Mongo filter, pages with the
total, batch publish, unpublish and delete), a tree's items as a nested
list to reorder by drag and drop or by keyboard, and a singleton straight
to its editor. Every read and write goes through `ContentService`, with
the user's identity, as the API's do."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.service import AuthService
from quire.content.models import Model, ModelService
from quire.content.screens import conditions
from quire.content.screens.list_cells import (
    SYSTEM_COLUMNS,
    available_columns,
    cell,
    chosen_columns,
    title_column,
)
from quire.content.screens.list_query import (
    LIMITS,
    ListQuery,
    parse_filter_text,
    parse_query,
    read_options,
    sortable_fields,
    text_filter,
)
from quire.content.screens.pickers import column_links
from quire.content.screens.titles import title_of
from quire.content.service import ContentService, ReadOptions
from quire.errors import ApiError, BadRequest, NotFound
from quire.http import quire_of, service
from quire.ids import is_id
from quire.modules import Services
from quire.ui import tree as trees
from quire.ui import zones
from quire.ui.prefs import PrefsService, columns_key
from quire.ui.screens import back_to, checked_form, need, redirect_flash, render, studio_page
from quire.ui.views import ViewService, canonical
from quire.ui.web import Login, redirect

MAX_BATCH = 500
# ids of search hits a list filter names at most (a filter has at most 500 conditions)
SEARCH_MATCHES = 400
ACTIONS = {"publish": ("Published", 1), "unpublish": ("Unpublished", 0), "delete": ("Deleted", None)}


def _model(request: Request, login: Login) -> Model:
    name = request.path_params["model"]
    model = service(request, ModelService).get(name)  # 404 for an unknown model
    need(login, f"content/{name}/read")
    return model


def _is_htmx(request: Request) -> bool:
    return bool(request.headers.get("hx-request")) and not request.headers.get("hx-boosted")


@studio_page
async def content_list(request: Request, login: Login) -> Response:
    model = _model(request, login)
    if model.type == "singleton":
        return redirect(f"/studio/content/{model.name}/item")
    drafts = login.can(f"content/{model.name}/update")
    if model.type == "tree":
        return _tree_page(request, login, model, drafts)
    query = parse_query(request.query_params, sortable_fields(model, drafts))
    content = service(request, ContentService)
    error = search_note = None
    items: list[dict[str, Any]] = []
    total = 0
    cond_fields = conditions.fields_of(model, drafts)
    built, checked, spec, filter_error = list_filters(request, login, query, cond_fields)
    try:
        found = search_found(quire_of(request), model, query.q)
        search_note = found.note
        try:
            items, total = _read(content, model, query, both(spec, built), drafts, found, login)
        except BadRequest as exc:
            if spec is None:
                raise
            # the typed filter is refused when read (an unknown operator):
            # explained beside it, and the list shown as the rest finds it
            filter_error = exc.message
            items, total = _read(content, model, query, built, drafts, found, login)
    except BadRequest as exc:
        error = exc.message
    prefs = service(request, PrefsService)
    saved_columns = list(query.columns) if query.columns is not None else \
        prefs.get(login.user["_id"], columns_key(model.name))
    columns = chosen_columns(saved_columns, model, drafts)
    views = service(request, ViewService).visible(model.name, login.user["_id"], login.user.get("role", ""))
    kept = canonical(request.query_params.multi_items())
    first = title_column(model)
    context = {
        "title_column": first, "title_label": model.by_name.get(first, {}).get("label") or first
        if first != "_id" else SYSTEM_COLUMNS["_id"], "fragment": _is_htmx(request),
        "model": model, "query": query, "search_note": search_note, "items": items, "total": total, "error": error,
        "columns": columns, "available": available_columns(model, drafts),
        "sortable": set(sortable_fields(model, drafts)), "limits": LIMITS,
        "pages": _pages(query, total), "cell": cell, "title_of": title_of,
        "link_titles": column_links(request, login, model, columns, items),
        "filter_example": filter_example(model), "filter_error": filter_error,
        "cond_fields": cond_fields, "cond_by_name": {f.name: f for f in cond_fields},
        "condition_rows": [*checked, conditions.Condition("", "", "")],
        "all_operators": [(op, label) for op, (label, _) in conditions.OPERATORS.items()],
        "kind_operators": {kind: [[op, conditions.OPERATORS[op][0], conditions.OPERATORS[op][1]] for op in ops]
                           for kind, ops in conditions.KIND_OPERATORS.items()},
        "active_filters": len([c for c in checked if not c.error]) + bool(query.filter_text and not filter_error),
        "open_filters": bool(query.conditions or query.filter_text),
        "search_published_only": drafts and _searched_by_index(request, model),
        "can_create": login.can(f"content/{model.name}/create"),
        "can_publish": drafts and login.can(f"content/{model.name}/publish"),
        "can_delete": login.can(f"content/{model.name}/delete"),
        "can_update": drafts,
        "here": request.url.path + query.params(),
        "views": views, "current_view": next((v for v in views if v["query"] == kept and kept), None),
        "view_query": kept, "share_roles": [r["name"] for r in service(request, AuthService).list_roles()
                                            if r["name"] != "public"],
    }
    status = 400 if error else 200
    template = "content/list_results.html" if _is_htmx(request) else "content/list.html"
    return render(request, login, template, status, **context)


def list_filters(request: Request, login: Login, query: ListQuery, fields: list[conditions.Field]
                 ) -> tuple[dict[str, Any] | None, list[conditions.Condition], dict[str, Any] | None, str | None]:
    """The list's two filters: the conditions' (and each condition with its
    problem), and the typed JSON one (None with its problem when it is not
    a filter)."""
    wanted = [conditions.Condition(*c) for c in query.conditions]
    built, checked = conditions.to_filter(wanted, fields, zones.zone_name(request, login.user["_id"]))
    try:
        return built, checked, parse_filter_text(query.filter_text), None
    except BadRequest as exc:
        return built, checked, None, exc.message


def both(one: dict[str, Any] | None, other: dict[str, Any] | None) -> dict[str, Any] | None:
    """A filter that holds where both hold (None: no filter)."""
    if one and other:
        return {"$and": [one, other]}
    return one or other


def _read(content: ContentService, model: Model, query: ListQuery, spec: dict[str, Any] | None, drafts: bool,
          found: Found, login: Login) -> tuple[list[dict[str, Any]], int]:
    opts = read_options(query, spec, drafts, found.condition)
    if found.ranked is not None and query.sort is None:
        return _by_rank(content, model, opts, found.ranked, query, login)
    page = content.list_page(model.name, opts, login.identity)
    return [orjson.loads(row) for row in page.rows], page.total or 0


@dataclass
class Found:
    """What the search box adds to a list: a condition, and with a search
    index the ids it found best first, and a note when there were more
    than a list filter can name."""

    condition: dict[str, Any] | None = None
    ranked: list[str] | None = None
    note: str | None = None


def search_found(services: Services, model: Model, q: str) -> Found:
    """The search box: the ids the model's search index finds when one
    covers it (it holds published items only: finding drafts too by a
    text filter would read every draft, hundreds of milliseconds on a big
    model), else a text filter on the title-like fields."""
    if not q:
        return Found()
    search = services.item_search  # None: the search module is not in the app
    if search is None or not search.covers(model.name):
        return Found(text_filter(model, q))
    ids, total = search.matching(model.name, q, SEARCH_MATCHES)
    note = (f"The search shows the best {len(ids):,} of {total:,} matches; add words to narrow it down."
            if total > len(ids) else None)
    return Found({"_id": {"$in": ids}}, ids, note)


def _searched_by_index(request: Request, model: Model) -> bool:
    search = quire_of(request).item_search
    return search is not None and search.covers(model.name)


def filter_example(model: Model) -> str:
    """An example for the filter box in this model's own terms."""
    for field in model.fields:
        if field["type"] == "number" and not field.get("multiple"):
            return f'{{"{field["name"]}": {{"$gt": 10}}}}'
    for field in model.fields:
        if field["type"] in ("text", "select") and not field.get("multiple"):
            return f'{{"{field["name"]}": {{"$regex": "^A"}}}}'
    return '{"_state": 0}'


def _by_rank(content: ContentService, model: Model, opts: ReadOptions, ranked: list[str], query: ListQuery,
             login: Login) -> tuple[list[dict[str, Any]], int]:
    """A page of search results best first (no column chosen to sort by):
    every found item that passes the filter (at most SEARCH_MATCHES), put
    in the index's order, then the page cut out."""
    opts.limit, opts.skip = max(len(ranked), 1), 0
    page = content.list_page(model.name, opts, login.identity)
    rank = {item_id: n for n, item_id in enumerate(ranked)}
    docs = sorted((orjson.loads(row) for row in page.rows), key=lambda d: rank.get(d["_id"], len(rank)))
    return docs[query.skip:query.skip + query.limit], page.total or 0


def _pages(query: ListQuery, total: int) -> dict[str, Any]:
    """The pager: `previous` and `next` are query strings (page 1 of an
    unsorted list is the empty one), None where there is no such page."""
    first = query.skip + 1 if total else 0
    last = min(query.skip + query.limit, total)
    return {
        "first": first, "last": last,
        "previous": query.params(page=query.page - 1) if query.page > 1 else None,
        "next": query.params(page=query.page + 1) if last < total else None,
        "count": max(1, -(-total // query.limit)),
    }


def _back(form_value: str, model: Model) -> str:
    """Where a list's form returns to: that list (with its query), never
    another site or page."""
    return back_to(form_value, f"/studio/content/{model.name}")


@studio_page
async def save_columns(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model = _model(request, login)
    drafts = login.can(f"content/{model.name}/update")
    available = available_columns(model, drafts)
    chosen = [name for name in available if name in form.getlist("columns")]
    await service(request, PrefsService).aset(login.user["_id"], columns_key(model.name), chosen or None)
    return redirect_flash(request, _back(form.get("back"), model),
                          "Columns saved." if chosen else "Columns reset to the defaults.")


@studio_page
async def save_view(request: Request, login: Login) -> Response:
    """The list as it is shown (its filter, sort, page size and columns)
    kept under a name, for the user or shared with a role."""
    form = await checked_form(request, login)
    model = _model(request, login)
    shared = form.get("shared") or None
    roles = {r["name"] for r in service(request, AuthService).list_roles()}
    if shared is not None and shared != "*" and shared not in roles:
        raise BadRequest(f"Role {shared[:60]} not found", fields=["shared"])
    query = form.get("query")
    if "cols=" not in query:  # the columns shown now: the user's own choice, kept with the view
        drafts = login.can(f"content/{model.name}/update")
        chosen = service(request, PrefsService).get(login.user["_id"], columns_key(model.name))
        query = (query + "&" if query else "") + urlencode({"cols": ",".join(chosen_columns(chosen, model, drafts))})
    view = await service(request, ViewService).save(model.name, form.get("name"), query, shared, login.user)
    return redirect_flash(request, f"/studio/content/{model.name}?{view['query']}",
                          f"Saved the view “{view['name']}”.")


@studio_page
async def delete_view(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    model = _model(request, login)
    view = await service(request, ViewService).delete(request.path_params["view"], login.user["_id"],
                                                      login.manager)
    return redirect_flash(request, f"/studio/content/{model.name}", f"Deleted the view “{view['name']}”.")


@studio_page
async def batch(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model = _model(request, login)
    name = model.name
    action = form.get("action")
    if action not in ACTIONS:
        raise BadRequest("Choose publish, unpublish or delete")
    if action == "delete":
        need(login, f"content/{name}/delete")
    else:  # what the API asks of a save that changes `_state`
        need(login, f"content/{name}/update")
        need(login, f"content/{name}/publish")
    back = _back(form.get("back"), model)
    ids = list(dict.fromkeys(i for i in form.getlist("ids") if is_id(i)))[:MAX_BATCH]
    if not ids:
        return redirect_flash(request, back, "Select the items first.")
    content = service(request, ContentService)
    # the selected items as the user sees them (a role that may delete but
    # not update sees published items only, and deletes only those)
    drafts = login.can(f"content/{name}/update")
    found = content.list_page(name, ReadOptions(filter={"_id": {"$in": ids}}, limit=len(ids), skip=0,
                                                drafts=drafts), login.identity)
    items = [orjson.loads(row) for row in found.rows]
    if action == "delete" and form.get("confirm") != "yes":
        return render(request, login, "content/list_confirm.html", model=model, items=items, back=back,
                      title_of=title_of)
    done, refused = await _apply(content, model, action, items, login)
    verb, _ = ACTIONS[action]
    message = f"{verb} {done} item{'' if done == 1 else 's'}."
    if refused:
        message += f" {len(refused)} refused: {refused[0]}"
    return redirect_flash(request, back, message)


async def _apply(content: ContentService, model: Model, action: str, items: list[dict[str, Any]],
                 login: Login) -> tuple[int, list[str]]:
    """Each item is its own write, as through the API (its events, hooks
    and search indexing); one refused (a hook, an item deleted meanwhile)
    does not undo the others, and is reported."""
    _, state = ACTIONS[action]
    name = model.name
    done = 0
    refused: list[str] = []
    for item in items:
        try:
            if state is None:
                await content.delete(name, item["_id"], login.identity)
            elif item.get("_state") != state:
                await content.save(name, {"_id": item["_id"], "_state": state}, login.identity)
            done += 1
        except NotFound:
            done += action == "delete"  # under a tree item deleted just before: gone with it
        except ApiError as exc:
            refused.append(f"{title_of(model, item)}: {exc.message}")
    return done, refused


# -- trees ------------------------------------------------------------------


def _tree_page(request: Request, login: Login, model: Model, drafts: bool) -> Response:
    nodes = service(request, ContentService).tree(model.name, None, ReadOptions(drafts=drafts), login.identity)
    template = "content/tree_nodes.html" if _is_htmx(request) else "content/tree.html"
    return render(request, login, template, model=model, nodes=nodes, total=trees.count(nodes),
                  title_of=title_of, can_move=drafts, drafts=drafts,
                  can_create=login.can(f"content/{model.name}/create"))


@studio_page
async def move(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model = _model(request, login)
    need(login, f"content/{model.name}/update")
    content = service(request, ContentService)
    item_id = form.get("id")
    direction = form.get("dir")
    if direction:
        if direction not in trees.MOVES:
            raise BadRequest("Move up, down, indent or outdent")
        nodes = content.tree(model.name, None, ReadOptions(drafts=True), login.identity)
        if trees.find(nodes, item_id) is None:
            raise NotFound("Item not found")
        place = trees.target(nodes, item_id, direction)
    else:
        position = form.get("position")
        if not (position.isascii() and position.isdigit()) or len(position) > 6:
            raise BadRequest("position must be a whole number (0: first)")
        place = (form.get("parent") or None, int(position))
    if place is not None:
        await content.move(model.name, item_id, place[0], place[1], login.identity)
    if _is_htmx(request):
        return _tree_page(request, login, model, True)
    return redirect_flash(request, f"/studio/content/{model.name}", "Moved." if place else "Not moved.")


routes = [
    route("/studio/content/{model}", get=content_list, cors=False),
    route("/studio/content/{model}/columns", post=save_columns, cors=False),
    route("/studio/content/{model}/views", post=save_view, cors=False),
    route("/studio/content/{model}/views/{view}/delete", post=delete_view, cors=False),
    route("/studio/content/{model}/batch", post=batch, cors=False),
    route("/studio/content/{model}/move", post=move, cors=False),
]
