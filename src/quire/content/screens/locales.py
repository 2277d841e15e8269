"""Locales (`system/manage`): the list, adding one (the API's checks and
messages), removing one after a warning naming how many items and pages
hold values in it, and renaming a code, which runs as a background job
(content/locales.py `LocaleRenamer`) whose progress the page polls."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.locales import DEFAULT, LocaleService, count_in_locale
from quire.content.models import ModelService
from quire.errors import BadRequest, NotFound
from quire.http import quire_of, service
from quire.ui.screens import checked_form, need, redirect_flash, render, studio_page
from quire.ui.web import Login

MANAGE = "system/manage"
MAX_CODE = 40
MAX_NAME = 200
PAGE = "/studio/settings/locales"


@studio_page
async def locales_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return _page(request, login)


def _page(request: Request, login: Login, status: int = 200, errors: dict[str, str] | None = None,
          typed: dict[str, str] | None = None) -> Response:
    locales = service(request, LocaleService)
    return render(request, login, "content/settings_locales.html", status, locales=locales.list(),
                  job=locales.renamer.progress(), errors=errors or {}, typed=typed or {})


@studio_page
async def add_locale(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    code, name = form.get("code").strip(), form.get("name").strip()
    typed = {"code": code[:MAX_CODE], "name": name[:MAX_NAME]}
    locales = service(request, LocaleService)
    errors = {}
    if not code:
        errors["code"] = "A locale needs a code like 'de' or 'pt-BR'"
    elif len(code) > MAX_CODE:
        errors["code"] = f"Locale codes are at most {MAX_CODE} characters"
    elif code in locales.codes() or code == DEFAULT:
        errors["code"] = f"Locale {code} exists already"
    if len(name) > MAX_NAME:
        errors["name"] = f"Names are at most {MAX_NAME} characters"
    if errors:
        return _page(request, login, 400, errors, typed)
    current = [{"i18n": loc["i18n"], "name": loc["name"]} for loc in locales.list() if not loc["default"]]
    try:
        await locales.asave([*current, {"i18n": code, "name": name or code}])
    except BadRequest as exc:
        field = "name" if any(str(f).endswith(".name") for f in exc.extra.get("fields") or []) else "code"
        message = exc.message.replace(f"locales[{len(current)}].i18n", code[:MAX_CODE])
        return _page(request, login, 400, {field: message}, typed)
    return redirect_flash(request, PAGE, f"Added locale {code}.")


def _code(request: Request) -> str:
    code = request.path_params["code"]
    if code not in service(request, LocaleService).codes():
        raise NotFound(f"Locale {code[:MAX_CODE]} not found")
    return str(code)


def _usage(request: Request, login: Login, code: str) -> dict[str, Any]:
    """The items holding values in the locale, by model, and how many
    things of other modules do (pages: `Module.usage` of kind "locale")."""
    models = count_in_locale(service(request, ModelService), code)
    others = quire_of(request).usage(login.identity, "locale", code, 0)
    return {"models": models, "held": sum(models.values()), "pages": others.total}


@studio_page
async def remove_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    code = _code(request)
    return render(request, login, "content/settings_locale_remove.html", code=code, usage=_usage(request, login, code))


@studio_page
async def remove_locale(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    code = _code(request)
    locales = service(request, LocaleService)
    kept = [{"i18n": loc["i18n"], "name": loc["name"]} for loc in locales.list()
            if not loc["default"] and loc["i18n"] != code]
    await locales.asave(kept)
    return redirect_flash(request, PAGE, f"Removed locale {code}.")


@studio_page
async def rename_locale(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    need(login, MANAGE)
    old, new = form.get("from")[:MAX_CODE + 1], form.get("to").strip()[:MAX_CODE + 1]
    renamer = service(request, LocaleService).renamer
    try:
        if len(new) > MAX_CODE:
            raise BadRequest(f"Locale codes are at most {MAX_CODE} characters", fields=["to"])
        await renamer.start(old, new)
    except BadRequest as exc:
        return _page(request, login, 400, {"rename": exc.message}, {"from": old[:MAX_CODE], "to": new[:MAX_CODE]})
    renamer.launch()
    return redirect_flash(request, PAGE, f"Renaming locale {old} to {new}…")


@studio_page
async def job_status(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return render(request, login, "content/settings_locale_job.html", job=service(request, LocaleService).renamer.progress())


@studio_page
async def resume_job(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    renamer = service(request, LocaleService).renamer
    job = renamer.progress()
    if job is None or job["state"] != "running":
        raise BadRequest("No rename is waiting to be finished")
    renamer.launch()
    return redirect_flash(request, PAGE, f"Resumed renaming {job['from']} to {job['to']}…")


@studio_page
async def dismiss_job(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    await service(request, LocaleService).renamer.aforget()
    return redirect_flash(request, PAGE, "Done.")


routes = [
    route(PAGE, get=locales_page, post=add_locale, cors=False),
    route(PAGE + "/rename", post=rename_locale, cors=False),
    route(PAGE + "/job", get=job_status, cors=False),
    route(PAGE + "/job/resume", post=resume_job, cors=False),
    route(PAGE + "/job/dismiss", post=dismiss_job, cors=False),
    route(PAGE + "/{code}/remove", get=remove_page, post=remove_locale, cors=False),
]
