"""Spaces in the main site's studio (`system/spaces`): the spaces and
aliases with their forms (create, fork, remove, point, switch back), the
forks and merges under way, and a space's page: for a fork, its diff
against its origin and the merge plan, applied by its name. Every write
goes through `SpaceService`, as the API's do."""

from __future__ import annotations

import asyncio
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.errors import ApiError
from quire.http import service
from quire.spaces.routes import PERMISSION
from quire.spaces.service import SpaceService
from quire.ui.screens import checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

PAGE = "/studio/settings/spaces"
RUNNING = ("pending", "running")


def _overview(request: Request, login: Login, status: int = 200, error: str | None = None,
              typed: dict[str, str] | None = None) -> Response:
    spaces = service(request, SpaceService)
    listed = spaces.list_tasks()
    return render(request, login, "spaces/settings_spaces.html", status, spaces=spaces.all(),
                  aliases=spaces.list_aliases(), tasks=listed[:20], busy=any(t["state"] in RUNNING for t in listed),
                  error=error, typed=typed or {"name": "", "label": "", "from": ""})


@studio_page
async def spaces_page(request: Request, login: Login) -> Response:
    need(login, PERMISSION)
    return _overview(request, login)


@studio_page
async def tasks_part(request: Request, login: Login) -> Response:
    """The forks and merges table alone: htmx refreshes it while one runs."""
    need(login, PERMISSION)
    listed = service(request, SpaceService).list_tasks()
    return render(request, login, "spaces/tasks.html", tasks=listed[:20], busy=any(t["state"] in RUNNING for t in listed))


@studio_page
async def create(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, PERMISSION)
    typed = {"name": form.get("name").strip(), "label": form.get("label").strip(), "from": form.get("from")}
    body: dict[str, Any] = {"name": typed["name"], "label": typed["label"] or typed["name"]}
    spaces = service(request, SpaceService)
    try:
        if typed["from"]:
            await spaces.fork_later({**body, "from": typed["from"]}, login.identity)
            return redirect_flash(request, PAGE, f"Forking {typed['from']} into {typed['name']}: it is listed "
                                                 "under Forks and merges until it is done.")
        made = await spaces.create(body, login.identity)
    except ApiError as exc:
        return _overview(request, login, exc.status, exc.message, typed)
    return redirect_flash(request, f"{PAGE}/{made['name']}", f"Created space {made['name']}.")


@studio_page
async def space_page(request: Request, login: Login) -> Response:
    need(login, PERMISSION)
    return await _space(request, login)


async def _space(request: Request, login: Login, status: int = 200, new_key: dict[str, Any] | None = None,
                 key_error: str | None = None, typed: dict[str, str] | None = None,
                 person_error: str | None = None) -> Response:
    spaces = service(request, SpaceService)
    space = spaces.get(request.path_params["name"])
    # a space's keys are its own services' (quire.served); an app built
    # without them (a library's, a test's) shows the command line instead
    keys = await asyncio.to_thread(spaces.environments.keys, space["name"]) if spaces.environments else None
    take = request.query_params.get("take", "origin")
    take = take if take in ("origin", "fork") else "origin"
    diff = plan = None
    problem = None
    if space["origin"] and spaces.environments is not None:
        try:
            environments = spaces.compare()
            diff = await asyncio.to_thread(environments.diff, space["name"])
            plan = await asyncio.to_thread(environments.plan, space["name"], take)
        except ApiError as exc:  # its origin removed since, say
            problem = exc.message
    serving = [a for a in spaces.list_aliases() if a["space"] == space["name"]]
    people = spaces.people(space["name"])
    others = [u for u in spaces.users.list_all() if u.get("role") != "admin" and u["_id"] not in {p["_id"] for p in people}]
    return render(request, login, "spaces/settings_space.html", status, space=space, diff=diff, plan=plan, take=take,
                  problem=problem, serving=serving, keys=keys["keys"] if keys else None,
                  roles=keys["roles"] if keys else [], new_key=new_key, people=people, others=others,
                  key_error=key_error, person_error=person_error, typed=typed or {"name": "", "role": ""})


@studio_page
async def create_key(request: Request, login: Login) -> Response:
    """A new key of the space, shown once on its page."""
    form = await checked_form(request, login)
    need(login, PERMISSION)
    spaces = service(request, SpaceService)
    name = spaces.get(request.path_params["name"])["name"]
    typed = {"name": form.get("name").strip(), "role": form.get("role")}
    by = login.identity.key_name or login.identity.key_id or "a user"
    try:
        made = await asyncio.to_thread(spaces.compare().create_key, name, typed["name"], typed["role"], by)
    except ApiError as exc:
        return await _space(request, login, exc.status, key_error=exc.message, typed=typed)
    return await _space(request, login, new_key=made)


@studio_page
async def give_role(request: Request, login: Login) -> Response:
    """A user's role in the space: given, changed, or (no role) taken away."""
    form = await checked_form(request, login)
    need(login, PERMISSION)
    spaces = service(request, SpaceService)
    name = spaces.get(request.path_params["name"])["name"]
    role = form.get("role") or None
    try:
        user = await asyncio.to_thread(spaces.give_role, name, form.get("user"), {"role": role}, login.identity)
    except ApiError as exc:
        return await _space(request, login, exc.status, person_error=exc.message)
    said = f"{user['user']} is {role} in {name}." if role else f"{user['user']} has no role in {name} any more."
    return redirect_flash(request, f"{PAGE}/{name}", said)


@studio_page
async def merge(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, PERMISSION)
    name = request.path_params["name"]
    await service(request, SpaceService).merge_later(name, {"plan": form.get("plan"), "take": form.get("take")},
                                                     login.identity)
    return redirect_flash(request, PAGE, f"Merging {name} into its origin: it is listed under Forks and merges "
                                         "until it is done.")


@studio_page
async def remove(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, PERMISSION)
    name = request.path_params["name"]
    if form.get("confirm").strip() != name:
        return redirect_flash(request, f"{PAGE}/{name}", f"Not removed: type {name} to say which space goes.")
    await service(request, SpaceService).remove(name)
    return redirect_flash(request, PAGE, f"Removed space {name} and everything in it.")


@studio_page
async def point(request: Request, login: Login) -> Response:
    """Make an alias serve a space, or switch it (back)."""
    form = await checked_form(request, login)
    need(login, PERMISSION)
    name = form.get("alias").strip()
    try:
        pointed = await service(request, SpaceService).point(name, {"space": form.get("space")}, login.identity)
    except ApiError as exc:
        return _overview(request, login, exc.status, exc.message)
    was = f" (it served {pointed['previous']})" if pointed["previous"] else ""
    return redirect_flash(request, PAGE, f"/{pointed['name']}/ now serves {pointed['space']}{was}.")


@studio_page
async def unalias(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, PERMISSION)
    name = request.path_params["name"]
    await service(request, SpaceService).unalias(name)
    return redirect_flash(request, PAGE, f"Removed alias {name}.")


routes = [
    route(PAGE, get=spaces_page, post=create, cors=False),
    route(PAGE + "/tasks", get=tasks_part, cors=False),
    route(PAGE + "/aliases", post=point, cors=False),
    route(PAGE + "/aliases/{name}/remove", post=unalias, cors=False),
    route(PAGE + "/{name}", get=space_page, cors=False),
    route(PAGE + "/{name}/merge", post=merge, cors=False),
    route(PAGE + "/{name}/keys", post=create_key, cors=False),
    route(PAGE + "/{name}/people", post=give_role, cors=False),
    route(PAGE + "/{name}/remove", post=remove, cors=False),
]
