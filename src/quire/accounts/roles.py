"""Roles and their permissions as a checkbox matrix (`system/manage`).

One row per content model (and the `content/*` wildcard row) × the
content actions, then every permission the modules declare, grouped by
module. Saving merges what the matrix shows into the stored set: a
permission the matrix has no box for (a model deleted since, a name set
through the API) is kept as it was. Writes go through `AuthService`
exactly as `PUT /api/system/roles/{name}` does, with its messages."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.auth.permissions import CONTENT_ACTIONS, ROLE_NAME
from quire.auth.service import AuthService
from quire.content.models import ModelService
from quire.errors import BadRequest, NotFound
from quire.http import quire_of, service
from quire.ui.screens import checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

MANAGE = "system/manage"
MAX_NAME = 64


def _models(request: Request) -> list[dict[str, str]]:
    return [{"name": m.name, "label": m.label or m.name}
            for m in sorted(service(request, ModelService).all(), key=lambda m: m.name)]


def _modules(request: Request) -> list[tuple[str, list[str]]]:
    """Module permissions grouped by their module (the part before `/`)."""
    groups: dict[str, list[str]] = {}
    for name in sorted(quire_of(request).permissions):
        groups.setdefault(name.partition("/")[0], []).append(name)
    return sorted(groups.items())


def shown_permissions(models: list[dict[str, str]], modules: list[tuple[str, list[str]]]) -> set[str]:
    """Every permission the matrix has a box for."""
    shown = {f"content/{m}/{a}" for m in ["*", *(m["name"] for m in models)] for a in CONTENT_ACTIONS}
    for _, names in modules:
        shown.update(names)
    return shown


def merged(stored: dict[str, Any], shown: set[str], ticked: set[str]) -> dict[str, bool]:
    """The stored permissions with the matrix's boxes applied: a shown
    permission is granted when ticked and removed otherwise; the rest stays."""
    out = {p: v for p, v in stored.items() if p not in shown and isinstance(v, bool)}
    out.update({p: True for p in sorted(ticked & shown)})
    return out


@studio_page
async def roles_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return _roles(request, login)


def _roles(request: Request, login: Login, status: int = 200, error: str | None = None, typed: str = "") -> Response:
    roles = service(request, AuthService).list_roles()
    for role in roles:
        role["granted"] = sum(1 for v in role["permissions"].values() if v is True)
    return render(request, login, "accounts/settings_roles.html", status, roles=roles, error=error, typed=typed)


@studio_page
async def create_role(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    name = form.get("name").strip()[:MAX_NAME + 1]
    auth = service(request, AuthService)
    if not name:
        return _roles(request, login, 400, "A role needs a name", name)
    if len(name) > MAX_NAME:
        return _roles(request, login, 400, f"Role names are at most {MAX_NAME} characters", name[:MAX_NAME])
    if not ROLE_NAME.match(name):
        return _roles(request, login, 400, "Role name must match ^[a-zA-Z0-9_-]+$", name)
    if auth.role_exists(name):
        return _roles(request, login, 400, f"Role {name} exists already; pick another name", name)
    await auth.asave_role(name, {"permissions": {}}, login.identity)
    return redirect_flash(request, f"/studio/settings/roles/{name}", f"Created role {name}; tick what it may do.")


def _role(request: Request) -> dict[str, Any]:
    name = request.path_params["name"]
    if len(name) > MAX_NAME or not ROLE_NAME.match(name):
        raise NotFound(f"Role {name[:MAX_NAME]} not found")
    return service(request, AuthService).get_role(name)


@studio_page
async def role_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return _matrix(request, login, _role(request))


def _matrix(request: Request, login: Login, role: dict[str, Any], status: int = 200,
            error: str | None = None) -> Response:
    models, modules = _models(request), _modules(request)
    shown = shown_permissions(models, modules)
    granted = {p for p, v in role["permissions"].items() if v is True}
    hidden = sorted(p for p in role["permissions"] if p not in shown)
    return render(request, login, "accounts/settings_role.html", status, role=role, models=models, modules=modules,
                  actions=CONTENT_ACTIONS, granted=granted, hidden=hidden, error=error)


@studio_page
async def save_role(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    role = _role(request)
    if role["name"] == "admin":
        raise BadRequest("The admin role is built in and has every permission")
    shown = shown_permissions(_models(request), _modules(request))
    ticked = set(form.getlist("perm"))
    strange = ticked - shown
    if strange:
        return _matrix(request, login, role, 400,
                       f"Unknown permissions: {', '.join(sorted(p[:80] for p in strange)[:5])}")
    permissions = merged(role["permissions"], shown, ticked)
    try:
        await service(request, AuthService).asave_role(role["name"], {"permissions": permissions}, login.identity)
    except BadRequest as exc:
        return _matrix(request, login, role, 400, exc.message)
    return redirect_flash(request, f"/studio/settings/roles/{role['name']}", f"Saved role {role['name']}.")


@studio_page
async def delete_role(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    role = _role(request)
    if role["builtin"]:
        raise BadRequest(f"The {role['name']} role is built in and cannot be deleted")
    try:
        await service(request, AuthService).adelete_role(role["name"], login.identity)
    except BadRequest as exc:
        return _matrix(request, login, role, 400, exc.message)
    return redirect_flash(request, "/studio/settings/roles", f"Deleted role {role['name']}.")


routes = [
    route("/studio/settings/roles", get=roles_page, post=create_role, cors=False),
    route("/studio/settings/roles/{name}", get=role_page, post=save_role, cors=False),
    route("/studio/settings/roles/{name}/delete", post=delete_role, cors=False),
]
