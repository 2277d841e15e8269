"""The editor's publishing panel: a published item's draft, publishing it,
discarding it, unpublishing, the schedule (`_publish_at`,
`_unpublish_at`) and preview links (opened in a new tab, or beside the
editor in a frame the page's CSP allows for the model's preview origins
only)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.models import Model, ModelService
from quire.content.preview import origin
from quire.content.schedule import SCHEDULE
from quire.content.service import ContentService
from quire.errors import NotFound
from quire.http import service
from quire.ui import zones
from quire.ui.screens import Form, checked_form, need, redirect_flash, studio_page
from quire.ui.web import CSP, Login


def lifecycle(request: Request, login: Login, model: Model, item: dict[str, Any], live: dict[str, Any],
              is_new: bool) -> dict[str, Any]:
    """What the editor's publishing panel shows (the schedule in the
    user's time zone)."""
    zone = zones.zone_name(request, login.user["_id"])
    published = not is_new and live.get("_state") == 1
    is_draft = "_base" in item
    may_update = login.can(f"content/{model.name}/update")
    links: list[dict[str, str]] = []
    if model.preview and may_update and not is_new and item.get("_id"):
        item_id = None if model.type == "singleton" else item["_id"]
        links = service(request, ContentService).preview_link(model.name, item_id, login.identity, 3600)["links"]
    return {
        "published": published, "is_draft": is_draft,
        "stale": is_draft and item.get("_base") != live.get("_rev"),
        "schedule": {key: zones.to_input(live.get(key), zone) for key in SCHEDULE},
        "zone": zones.label(zone),
        "links": links, "show": bool(links) and request.query_params.get("preview") == "1",
        "origins": sorted({o for o in (origin(link["url"]) for link in links) if o}),
    }


def allow_frames(response: Response, life: dict[str, Any]) -> Response:
    """The editor with a preview beside it may frame the model's preview
    origins, and no others."""
    if life["origins"]:
        response.headers["content-security-policy"] = f"{CSP}; frame-src {' '.join(life['origins'])}"
    return response


def schedule_data(form: Form, live: dict[str, Any], data: dict[str, Any], zone: str) -> dict[str, str]:
    """The schedule typed in the form (minutes in the user's time zone,
    stored as UTC) into `data` when it differs from the stored one;
    problems by field."""
    problems: dict[str, str] = {}
    for key in SCHEDULE:
        if key not in form:
            continue
        text = form.get(key).strip()
        value: int | None = None
        if text:
            try:
                value = zones.from_input(text, zone)
            except ValueError:
                problems[key] = f"must be a date and time ({zones.label(zone)}), like 2030-01-31T09:30"
                continue
        if value != live.get(key):
            data[key] = value
    return problems


def _target(request: Request, login: Login, form: Form) -> tuple[Model, str | None]:
    name = request.path_params["model"]
    need(login, f"content/{name}/read")
    model = service(request, ModelService).get(name)
    item_id = form.get("_id") or None
    if model.type != "singleton" and item_id is None:
        raise NotFound("Item not found")
    return model, None if model.type == "singleton" else item_id


def _editor(model: Model, item_id: str | None) -> str:
    base = f"/studio/content/{model.name}/item"
    return base if item_id is None else f"{base}/{item_id}"


@studio_page
async def discard(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model, item_id = _target(request, login, form)
    dropped = await service(request, ContentService).discard_draft(model.name, item_id, login.identity)
    message = "Draft discarded: the published version is shown." if dropped else "There was no draft."
    return redirect_flash(request, _editor(model, item_id), message)


@studio_page
async def unpublish(request: Request, login: Login) -> Response:
    form = await checked_form(request, login)
    model, item_id = _target(request, login, form)
    await service(request, ContentService).unpublish(model.name, item_id, login.identity)
    return redirect_flash(request, _editor(model, item_id), "Unpublished: the item is a draft now.")


routes = [
    route("/studio/content/{model}/discard", post=discard, cors=False),
    route("/studio/content/{model}/unpublish", post=unpublish, cors=False),
]
