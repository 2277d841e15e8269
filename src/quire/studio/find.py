"""The search box of the studio's sidebar: what each module finds for the
words (`Module.find`: models and items, pages, assets, ...), as far as the
user may see them; one thing found goes straight to its page."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from quire.asgi import route
from quire.http import quire_of
from quire.modules import FindSection
from quire.ui.screens import render, studio_page
from quire.ui.web import Login, redirect

MAX_WORDS = 200  # characters of the box that count


@studio_page
async def find(request: Request, login: Login) -> Response:
    q = " ".join(request.query_params.get("q", "").split())[:MAX_WORDS]
    if not q:
        return render(request, login, "studio/find.html", q=q, sections=[])
    sections = [s for s in quire_of(request).find(login.identity, q) if s.found]
    only = _only_target(sections)
    if only is not None:  # one thing found: the box jumps to it
        return redirect(only)
    return render(request, login, "studio/find.html", q=q, find_q=q, sections=sections)


def _only_target(sections: list[FindSection]) -> str | None:
    """The address of the one thing found, if exactly one was."""
    targets = [f.href for s in sections for f in s.found]
    return targets[0] if len(targets) == 1 else None


routes = [route("/studio/find", get=find, cors=False)]
