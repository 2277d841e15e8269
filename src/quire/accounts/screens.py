"""The settings screens of accounts: API keys, users and their sessions
(`system/manage`)."""

from __future__ import annotations

from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from quire.accounts.actions import user_action
from quire.asgi import route
from quire.auth.service import AuthService
from quire.auth.sessions import SessionService
from quire.auth.users import UserService
from quire.errors import ApiError
from quire.http import quire_of, service
from quire.ui.web import Login, manager_page, render, small_checked_form

TEMPLATES = Path(__file__).parent / "templates"


@manager_page
async def keys_page(request: Request, login: Login) -> Response:
    return render(request, "accounts/keys.html", login=login, keys=service(request, AuthService).list_keys(),
                  roles=[r["name"] for r in service(request, AuthService).list_roles()], created=None, error=None)


@manager_page
async def keys_submit(request: Request, login: Login) -> Response:
    form = await small_checked_form(request, login)
    created, error = None, None
    try:
        if form.get("action") == "revoke":
            await service(request, AuthService).adelete_key(form.get("id", ""), login.identity)
        elif form.get("action") == "assistants-publish":  # docs/ai.md: an admin's explicit choice
            await service(request, AuthService).aset_assistants_publish(form.get("id", ""), form.get("allow") == "1",
                                                                        login.identity)
        else:
            created = await service(request, AuthService).acreate_key(form.get("name", ""), form.get("role", ""),
                                                                      login.identity)
    except ApiError as exc:
        error = exc.message
    status = 400 if error else 200
    return render(request, "accounts/keys.html", status, login=login, keys=service(request, AuthService).list_keys(),
                  roles=[r["name"] for r in service(request, AuthService).list_roles()], created=created, error=error)


@manager_page
async def users_page(request: Request, login: Login) -> Response:
    return _users(request, login, None, None)


NEW_USER_FIELDS = ("user", "email", "name", "role", "password")


def _users(request: Request, login: Login, error: str | None, done: str | None, status: int = 200,
           typed: dict[str, str] | None = None, field_errors: dict[str, str] | None = None) -> Response:
    names = {u["_id"]: u["user"] for u in service(request, UserService).list_all()}
    sessions = [{**s, "user_name": names.get(s["user"], "?"), "current": s["_id"] == login.session["_id"]}
                for s in service(request, SessionService).list_all()]
    return render(request, "accounts/users.html", status, login=login, users=service(request, UserService).list_all(), sessions=sessions,
                  roles=service(request, AuthService).list_roles(), error=error, done=done,
                  typed=typed or {}, field_errors=field_errors or {})


@manager_page
async def users_submit(request: Request, login: Login) -> Response:
    form = await small_checked_form(request, login)
    quire = quire_of(request)
    action = form.get("action", "")
    try:
        done = await user_action(quire, login, action, form)
    except ApiError as exc:
        if action != "create":
            return _users(request, login, exc.message, None, 400)
        # A refused new user: the reason next to the field it names (at the
        # top when it names none of the form's), and what was typed kept.
        named = [f for f in exc.extra.get("fields", []) if f in NEW_USER_FIELDS]
        typed = {k: form.get(k, "").strip() for k in NEW_USER_FIELDS if k != "password"}
        return _users(request, login, exc.message, None, 400, typed, {f: exc.message for f in named[:1]})
    return _users(request, login, None, done)


routes = [
    route("/admin/keys", get=keys_page, post=keys_submit, cors=False),
    route("/admin/users", get=users_page, post=users_submit, cors=False),
]
