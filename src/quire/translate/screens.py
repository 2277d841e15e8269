"""Machine translation in the studio (`/studio/translate`,
docs/ai.md#machine-translation): translate what is missing of one item, a
model's items or a translation project into the locales chosen, follow the
tasks (the table refreshes itself while one runs), and find what a machine
translated and nobody reviewed yet. Every request goes through
`TranslateService`, as the API's do."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.locales import LocaleService
from quire.errors import ApiError
from quire.http import service
from quire.l10n.service import MANAGE as L10N_MANAGE
from quire.l10n.service import L10nService
from quire.translate.service import TranslateService
from quire.ui.screens import checked_form, redirect_flash, render, studio_page
from quire.ui.web import Login

PAGE = "/studio/translate"
RUNNING = ("pending", "running")


def may_use(identity: Any) -> bool:
    return bool(identity.can("content/*/update") or identity.can(L10N_MANAGE))


def _page(request: Request, login: Login, status: int = 200, error: str | None = None) -> Response:
    translate = service(request, TranslateService)
    models = translate.translatable(login.identity)
    unreviewed = []
    for model in models:
        items, total = translate.unreviewed(model["name"], login.identity)
        if total:
            unreviewed.append({**model, "items": items, "total": total})
    projects = []
    if login.can(L10N_MANAGE):
        for project in service(request, L10nService).list_projects(login.identity):
            marks = translate.project_marks(project["name"], login.identity)
            projects.append({**project, "unreviewed": sum(len(v) for v in marks.values())})
    tasks = translate.list_tasks()[:20]
    return render(request, login, "translate/translate.html", status, ready=translate.ready, models=models,
                  projects=projects, locales=service(request, LocaleService).list()[1:], tasks=tasks,
                  busy=any(t["state"] in RUNNING for t in tasks), unreviewed=unreviewed, error=error,
                  chosen={"model": request.query_params.get("model", ""), "item": request.query_params.get("item", "")},
                  may_pages=login.can("pages/manage") and translate.pages is not None,
                  provider={"deepl": "DeepL", "libretranslate": "LibreTranslate"}.get(translate.settings.provider, ""))


@studio_page
async def page(request: Request, login: Login) -> Response:
    return _page(request, login)


@studio_page
async def tasks_part(request: Request, login: Login) -> Response:
    """The tasks table alone: htmx refreshes it while one runs."""
    tasks = service(request, TranslateService).list_tasks()[:20]
    return render(request, login, "translate/tasks.html", tasks=tasks, busy=any(t["state"] in RUNNING for t in tasks))


@studio_page
async def ask(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    kind = form.get("kind")
    name, item = form.get("name"), form.get("item").strip() or None
    body = {"locales": form.getlist("locale")} if form.getlist("locale") else {}
    if kind == "pages":
        name = "pages"
    if kind not in ("item", "model", "project", "pages") or (kind == "item" and item is None):
        return _page(request, login, 400, "Choose what to translate: an item (its id), a model or a project.")
    try:
        task = await service(request, TranslateService).ask(kind, name, item, body, login.identity)
    except ApiError as exc:
        return _page(request, login, exc.status, exc.message)
    what = {"item": f"item {item} of {name}", "model": f"the items of {name}", "project": f"project {name}",
            "pages": "the pages"}[kind]
    return redirect_flash(request, PAGE, f"Translating what is missing of {what} into "
                                         f"{', '.join(task['locales'])}: it is listed below until it is done.")


routes = [
    route(PAGE, get=page, post=ask, cors=False),
    route(PAGE + "/tasks", get=tasks_part, cors=False),
]
