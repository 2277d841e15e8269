"""Every write route of the studio, whatever it does, refuses a request
that is not from a logged-in user's page of this site: no session (401), no
or a wrong CSRF token (403), another site's Origin (403); and none of them
answers a server error or changes anything when refused. Every page of the
studio needs a login. New routes are covered as they are added."""

from __future__ import annotations

import re
from typing import Any

import pytest

from quire.app import MODULES
from quire.asgi import Route
from tests.admin.conftest import new_browser
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, page_csrf

# every screen of the studio, whichever module declares it
STUDIO_ROUTES = [r for m in MODULES for r in m.routes if r.path.startswith("/studio")]

PARAM = re.compile(r"{([a-z_]+)(:path)?}")


def _routes(method: str) -> list[Route]:
    return [r for r in STUDIO_ROUTES if method in r.methods and not r.path.startswith("/studio/static/")]


@pytest.fixture
def setup(app: Any, admin: Api) -> dict[str, str]:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "Kept"})
    return {"model": "posts", "name": "posts", "id": item["_id"]}


def _path(route: Route, values: dict[str, str]) -> str:
    return PARAM.sub(lambda m: values.get(m.group(1), "x"), route.path)


def _snapshot(admin: Api) -> Any:
    return (admin.get("/api/system/models").json(), admin.get("/api/content/items/posts").json())


@pytest.mark.parametrize("route", _routes("POST"), ids=lambda r: r.path)
def test_writes_need_session_token_and_origin(route: Route, app: Any, admin: Api, setup: dict[str, str]) -> None:
    path = _path(route, setup)
    before = _snapshot(admin)
    form = {"content-type": "application/x-www-form-urlencoded"}
    anonymous = new_browser(app).post(path, content="title=x", headers=form)
    assert anonymous.status_code in (401, 303), anonymous.text
    ann = logged_in(app)
    token = page_csrf(ann.get("/studio/content").text)
    no_token = ann.post(path, content="title=x", headers=form)
    assert no_token.status_code == 403, (path, no_token.status_code)
    wrong = ann.post(path, content="csrf=nope&title=x", headers=form)
    assert wrong.status_code == 403, (path, wrong.status_code)
    elsewhere = ann.post(path, content=f"csrf={token}&title=x", headers={**form, "origin": "https://evil.example"})
    assert elsewhere.status_code == 403, (path, elsewhere.status_code)
    header_elsewhere = ann.post(path, content="title=x",
                                headers={**form, "x-csrf-token": token, "origin": "https://evil.example"})
    assert header_elsewhere.status_code == 403, (path, header_elsewhere.status_code)
    assert _snapshot(admin) == before


@pytest.mark.parametrize("route", _routes("GET"), ids=lambda r: r.path)
def test_pages_need_a_login(route: Route, app: Any, setup: dict[str, str]) -> None:
    response = new_browser(app).get(_path(route, setup))
    assert response.status_code in (303, 401), (route.path, response.status_code)
    if response.status_code == 303:
        assert response.headers["location"].startswith("/auth/login")
