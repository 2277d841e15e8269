"""Webhooks in the studio (`webhooks/manage`): the list (disabled ones
flagged), a form to create or edit one (URL, events, models, headers), the
secret shown once after a create or a rotation, and the delivery log with
redelivery. Every write goes through `WebhookService`, as the API's do."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.models import ModelService
from quire.errors import ValidationError
from quire.http import quire_of, service
from quire.modules import Notice, Services
from quire.ui.screens import Form, checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login
from quire.webhooks.service import MANAGE, WebhookService, delivered, public

PAGE = "/studio/settings/webhooks"
LOG_ROWS = 50
# The choices offered as boxes; anything else goes in the patterns field.


def _choices(request: Request) -> list[str]:
    return ["*", "content.*", *delivered(quire_of(request).catalogue)]


def notices(services: Services, identity: Any) -> list[Notice]:
    """The disabled webhooks a user who manages them should hear about."""
    if not identity.can(MANAGE):
        return []
    return [Notice(f"Webhook {h['name']} was disabled", "after repeated failures.", f"{PAGE}/{h['_id']}",
                   "Check it and enable it again")
            for h in services.get(WebhookService).all() if not h["enabled"] and h["disabled_reason"]]


@studio_page
async def webhooks_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return render(request, login, "webhooks/settings_webhooks.html", webhooks=service(request, WebhookService).all())


def _edit(request: Request, login: Login, hook: dict[str, Any] | None, typed: dict[str, Any],
          errors: dict[str, str] | None = None, status: int = 200) -> Response:
    models = [m.name for m in service(request, ModelService).all()]
    log: list[dict[str, Any]] = []
    total = 0
    if hook is not None:
        log, total = service(request, WebhookService).delivery_log(hook["_id"], LOG_ROWS, 0)
    choices = _choices(request)
    chosen = [e for e in typed["events"] if e in choices]
    patterns = " ".join(e for e in typed["events"] if e not in choices)
    headers = "\n".join(f"{k}: {v}" for k, v in typed["headers"].items()) if isinstance(typed["headers"], dict) \
        else typed["headers"]
    return render(request, login, "webhooks/settings_webhook.html", status, hook=hook, typed=typed, chosen=chosen,
                  patterns=patterns, headers=headers, models=sorted(set(models) | set(typed["models"])),
                  choices=choices, errors=errors or {}, log=log, total=total)


def _typed(form: Form) -> dict[str, Any]:
    """What the form holds, as the API's fields: events from the boxes and
    the patterns field; headers one `Name: value` a line."""
    events = form.getlist("event") + form.get("patterns").split()
    headers: dict[str, str] | str = {}
    lines = [line for line in form.get("headers").split("\n") if line.strip()]
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon or not name.strip():
            headers = form.get("headers")  # shown again as typed, refused below
            break
        assert isinstance(headers, dict)
        headers[name.strip()] = value.strip()
    return {"name": form.get("name"), "url": form.get("url").strip(), "events": events,
            "models": form.getlist("model"), "headers": headers, "enabled": "enabled" in form}


def _errors(typed: dict[str, Any], exc: ValidationError) -> dict[str, str]:
    errors = dict(exc.errors)
    if isinstance(typed["headers"], str):
        errors["headers"] = "must be one header a line, written Name: value"
    return errors


@studio_page
async def new_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    typed = {"name": "", "url": "", "events": ["content.*"], "models": [], "headers": {}, "enabled": True}
    return _edit(request, login, None, typed)


@studio_page
async def create(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    typed = _typed(form)
    webhooks = service(request, WebhookService)
    try:
        if isinstance(typed["headers"], str):
            raise ValidationError("webhook", {"headers": "must be one header a line, written Name: value"})
        created = await webhooks.create(typed, login.identity)
    except ValidationError as exc:
        return _edit(request, login, None, typed, _errors(typed, exc), 400)
    return render(request, login, "webhooks/settings_webhook_secret.html", hook=created, secret=created["secret"],
                  created=True)


def _hook(request: Request) -> dict[str, Any]:
    return service(request, WebhookService).get(request.path_params["id"])


@studio_page
async def edit_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    hook = public(_hook(request))
    return _edit(request, login, hook, hook)


@studio_page
async def save(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    hook = public(_hook(request))
    typed = _typed(form)
    try:
        if isinstance(typed["headers"], str):
            raise ValidationError("webhook", {"headers": "must be one header a line, written Name: value"})
        await service(request, WebhookService).update(hook["_id"], typed, login.identity)
    except ValidationError as exc:
        return _edit(request, login, hook, typed, _errors(typed, exc), 400)
    return redirect_flash(request, f"{PAGE}/{hook['_id']}", "Saved.")


@studio_page
async def rotate(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    rotated = await service(request, WebhookService).rotate(request.path_params["id"], login.identity)
    return render(request, login, "webhooks/settings_webhook_secret.html", hook=rotated, secret=rotated["secret"],
                  created=False)


@studio_page
async def enable(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    hook = await service(request, WebhookService).enable(request.path_params["id"], login.identity)
    return redirect_flash(request, f"{PAGE}/{hook['_id']}", "Enabled.")


@studio_page
async def delete(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    hook = _hook(request)
    await service(request, WebhookService).delete(hook["_id"], login.identity)
    return redirect_flash(request, PAGE, f"Deleted webhook {hook['name']}.")


@studio_page
async def redeliver(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    hook_id = request.path_params["id"]
    sent = await service(request, WebhookService).redeliver(hook_id, request.path_params["delivery"])
    return redirect_flash(request, f"{PAGE}/{hook_id}", f"Sending {sent['msg']} again.")


routes = [
    route(PAGE, get=webhooks_page, cors=False),
    route(PAGE + "/new", get=new_page, post=create, cors=False),
    route(PAGE + "/{id}", get=edit_page, post=save, cors=False),
    route(PAGE + "/{id}/rotate", post=rotate, cors=False),
    route(PAGE + "/{id}/enable", post=enable, cors=False),
    route(PAGE + "/{id}/delete", post=delete, cors=False),
    route(PAGE + "/{id}/deliveries/{delivery}/redeliver", post=redeliver, cors=False),
]
