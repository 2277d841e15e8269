"""Settings → Shared blocks (`system/manage`): the library of layout
components every layout field offers (content/library.py). A block's
fields are typed as JSON, as a field's own blocks are in the model
builder; a refused save shows the form as typed with the service's
message; a block stored items use is not removed (the message names
where)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.content.library import ComponentLibrary
from quire.content.types.layout import CORE_NAMES, NAME
from quire.errors import ApiError, Conflict
from quire.http import service
from quire.ui.screens import checked_form, json_of, need, redirect_flash, render, studio_page
from quire.ui.web import Login

PAGE = "/studio/blocks"
MANAGE = "system/manage"
EXAMPLE = '[{"name": "text", "type": "text", "label": "Quote", "required": true}, {"name": "by", "type": "text"}]'


def _form(component: dict[str, Any] | None = None) -> dict[str, str]:
    component = component or {}
    fields = component.get("fields")
    return {"name": component.get("name", ""), "label": component.get("label", ""),
            "group": component.get("group", ""),
            "fields": json.dumps(fields, ensure_ascii=False, indent=1) if fields else ""}


@studio_page
async def library_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    library = service(request, ComponentLibrary)
    return render(request, login, "content/library.html", components=library.all(), core=sorted(CORE_NAMES))


@studio_page
async def new_block_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    return render(request, login, "content/library_edit.html", form=_form(), new=True, error=None,
                  example=EXAMPLE)


@studio_page
async def edit_block_page(request: Request, login: Login) -> Response:
    need(login, MANAGE)
    component = service(request, ComponentLibrary).get(request.path_params["name"])
    return render(request, login, "content/library_edit.html", form=_form(component), new=False, error=None,
                  example=EXAMPLE)


async def _save(request: Request, login: Login, name: str | None) -> Response:
    posted = await checked_form(request, login)
    need(login, MANAGE)
    library = service(request, ComponentLibrary)
    new = name is None
    if name is not None:
        library.get(name)  # 404 for a block that is not there
    form = {key: posted.get(key).strip() for key in ("name", "label", "group", "fields")}
    if not new:
        form["name"] = name or ""
    error, at = None, "fields"  # `at`: the input the message is about (it takes the focus)
    if not NAME.match(form["name"]):
        error, at = "The name is lowercase letters, digits, - and _, starting with a letter", "name"
    elif new and any(c["name"] == form["name"] for c in library.all()):
        error, at = f"A shared block {form['name']} exists already; pick another name", "name"
    else:
        try:
            fields = json_of(form["fields"] or "[]")
        except ValueError as exc:
            error = f"The fields are not JSON ({exc})"
        else:
            body = {"fields": fields, **{k: form[k] for k in ("label", "group") if form[k]}}
            try:
                await library.asave(form["name"], body, login.identity)
            except ApiError as exc:
                error = exc.message
    if error:
        return render(request, login, "content/library_edit.html", status=400, form=form, new=new, error=error,
                      error_at=at, example=EXAMPLE)
    verb = "Added" if new else "Saved"
    return redirect_flash(request, PAGE, f"{verb} the shared block {form['name']}; every layout field offers it.")


@studio_page
async def create_block(request: Request, login: Login) -> Response:
    return await _save(request, login, None)


@studio_page
async def save_block(request: Request, login: Login) -> Response:
    return await _save(request, login, request.path_params["name"])


@studio_page
async def remove_block(request: Request, login: Login) -> Response:
    await checked_form(request, login)
    need(login, MANAGE)
    name = request.path_params["name"]
    try:
        await service(request, ComponentLibrary).aremove(name, login.identity)
    except Conflict as exc:  # stored blocks use it: said on its page
        return redirect_flash(request, f"{PAGE}/{name}", exc.message)
    return redirect_flash(request, PAGE, f"Removed the shared block {name}.")


routes = [
    route(PAGE, get=library_page, cors=False),
    route(PAGE + "/new", get=new_block_page, post=create_block, cors=False),
    route(PAGE + "/{name}", get=edit_block_page, post=save_block, cors=False),
    route(PAGE + "/{name}/delete", post=remove_block, cors=False),
]
