"""Live preview of unsaved edits: the editor sends its form here as the
editor types; the answer is the item as the form holds it (what a save
would store, not stored), which the editor posts to the site's preview
page in the frame beside it (`postMessage`, to that page's origin only).
A page that does not listen keeps showing the saved draft its preview
token reads.

`/demo/preview` is a small site page that does both, for the
demo and as a working example of the client snippet (docs/studio.md)."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from quire.asgi import route
from quire.content.locales import LocaleService
from quire.content.models import ModelService
from quire.content.screens import formdata
from quire.content.screens.editor import _load
from quire.errors import NotFound
from quire.http import json_response, service
from quire.ids import is_id
from quire.ui.screens import checked_form, need, studio_page
from quire.ui.web import Login, templates

# the example page may be framed by the studio (same origin) and talks to this origin only
EXAMPLE_HEADERS = {
    "content-security-policy": "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                               "img-src 'self' data:; connect-src 'self'; frame-ancestors 'self'; base-uri 'none'; "
                               "object-src 'none'",
    "x-frame-options": "SAMEORIGIN", "x-content-type-options": "nosniff", "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


@studio_page
async def live_item(request: Request, login: Login) -> Response:
    """The item as the posted editor form holds it, unsaved: the stored
    item (its draft, when it has one) with the form's values over it."""
    form = await checked_form(request, login)
    model = service(request, ModelService).get(request.path_params["model"])
    need(login, f"content/{model.name}/update")
    item_id = request.path_params.get("id")
    if model.type != "singleton" and not is_id(item_id):
        raise NotFound("Item not found")
    item, _, _ = _load(request, login, model, None if model.type == "singleton" else item_id)
    codes = service(request, LocaleService).codes()
    data, _problems = formdata.item_data(model.fields, formdata.tree_of(form), codes)
    shown: dict[str, Any] = {**item, **data}  # a value with a problem shows as typed, as the form does
    for key in ("_base", "_draft"):
        shown.pop(key, None)
    return json_response({"type": "quire:preview", "model": model.name, "id": shown.get("_id"), "item": shown})


async def preview_example(request: Request) -> Response:
    """A site's preview page in miniature (no login: it reads what its
    preview token allows, through the API, as a site would)."""
    html = templates.get_template("content/preview_example.html").render(request=request, base=request.scope.get("root_path", ""))
    return HTMLResponse(html, headers=EXAMPLE_HEADERS)


routes = [
    route("/studio/content/{model}/item/live", post=live_item, cors=False),
    route("/studio/content/{model}/item/{id}/live", post=live_item, cors=False),
    route("/demo/preview", get=preview_example, cors=False),
]
