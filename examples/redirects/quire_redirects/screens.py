"""Site → Redirects in the studio: the rules, a form to add one, and one
rule's form to change or delete it. Writes go through `RedirectService`,
as the API's do; a refused write shows the form again with the reason
next to the field it names."""

from __future__ import annotations

from typing import Any

from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.screens.widgets import widget
from quire.content.types.color import COLOR_TYPE
from quire.errors import ApiError
from quire.http import service
from quire.ui.screens import Form, checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login
from quire_redirects.fieldtype import URL_PATH
from quire_redirects.routes import MANAGE, READ
from quire_redirects.service import STATUSES, RedirectService

PAGE = "/studio/redirects"


def may_see(identity: Any) -> bool:
    return bool(identity.can(READ) or identity.can(MANAGE))


def path_input(typed: dict[str, Any], field: str) -> Markup:
    """The rule's `from` input: the urlPath field type's own editor input,
    rendered as the item editor renders it."""
    described = 'aria-invalid="true" aria-describedby="rule-error"' if field == "from" else ""
    return widget({"type": URL_PATH.name}, id="rule-from", path="from", value=typed.get("from") or "",
                  label="From", placeholder="", described=described)


def color_input(typed: dict[str, Any], field: str) -> Markup:
    """The rule's colour: Quire's `color` field type's own editor input
    (a text box and the browser's picker, kept in step by the type's
    script, /studio/static/field-types.js)."""
    described = 'aria-invalid="true" aria-describedby="rule-error"' if field == "color" else ""
    return widget({"type": COLOR_TYPE.name}, id="rule-color", path="color", value=typed.get("color") or "",
                  label="Colour", placeholder="", described=described)


def _typed(form: Form) -> dict[str, Any]:
    status = form.get("status", "301")
    return {"from": form.get("from").strip(), "to": form.get("to").strip(),
            "status": int(status) if status.isdigit() else status, "note": form.get("note"),
            "color": form.get("color").strip(), "enabled": form.get("enabled") == "1"}


def _page(request: Request, login: Login, status: int = 200, typed: dict[str, Any] | None = None,
          error: str | None = None, field: str = "") -> Response:
    if not may_see(login.identity):
        need(login, READ)
    return render(request, login, "redirects/rules.html", status, rules=service(request, RedirectService).all(),
                  statuses=STATUSES, typed=typed or {"status": 301, "enabled": True}, error=error, field=field,
                  can_manage=login.can(MANAGE), path_input=path_input, color_input=color_input)


@studio_page
async def rules_page(request: Request, login: Login) -> Response:
    return _page(request, login)


@studio_page
async def add_rule(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    typed = _typed(form)
    try:
        rule = await service(request, RedirectService).create(typed, login.identity)
    except ApiError as exc:
        named = exc.extra.get("fields") or [""]
        return _page(request, login, exc.status, typed, exc.message, named[0])
    return redirect_flash(request, PAGE, f"Redirect from {rule['from']} added.")


@studio_page
async def rule_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    rule = service(request, RedirectService).get(request.path_params["id"])
    return render(request, login, "redirects/rule.html", rule=rule, typed=rule, statuses=STATUSES, error=None,
                  field="", path_input=path_input, color_input=color_input)


@studio_page
async def save_rule(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    redirects = service(request, RedirectService)
    rule = redirects.get(request.path_params["id"])
    typed = _typed(form)
    try:
        await redirects.update(rule["_id"], typed, login.identity)
    except ApiError as exc:
        named = exc.extra.get("fields") or [""]
        return render(request, login, "redirects/rule.html", exc.status, rule=rule, typed=typed,
                      statuses=STATUSES, error=exc.message, field=named[0], path_input=path_input,
                      color_input=color_input)
    return redirect_flash(request, PAGE, f"Redirect from {typed['from']} saved.")


@studio_page
async def delete_rule(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    redirects = service(request, RedirectService)
    rule = redirects.get(request.path_params["id"])
    await redirects.delete(rule["_id"], login.identity)
    return redirect_flash(request, PAGE, f"Redirect from {rule['from']} deleted.")


routes = [
    route(PAGE, get=rules_page, post=add_rule, cors=False),
    route(PAGE + "/{id}", get=rule_page, post=save_rule, cors=False),
    route(PAGE + "/{id}/delete", post=delete_rule, cors=False),
]
