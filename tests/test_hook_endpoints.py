"""API endpoints a site's hooks add under /api/custom/ (docs/hooks.md,
"Endpoints"), as Cockpit serves `config/api/*.php`: each with the
permission a caller needs (which roles can then grant) or public by choice,
plain or async handlers, JSON in and out, in the OpenAPI document, and a
badly declared one stopping the start with a message naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from quire.errors import ConfigError
from tests.client import TestClient
from tests.conftest import Api, create_item, put_model
from tests.test_hooks import admin_of, make_app, write_hook

__all__ = ["make_app"]

STATS = '''
    from quire.errors import BadRequest
    from quire.content.service import ReadOptions

    def count(call):  # plain code: run off the event loop
        model = call.params["model"]
        return {"model": model, "items": call.quire.content.count(model, ReadOptions(), call.identity)}

    async def echo(call):
        body = await call.json()
        if not isinstance(body, dict) or "word" not in body:
            raise BadRequest("send {\\"word\\": ...}")
        return {"echo": body["word"], "by": call.identity.role, "q": call.query.get("q")}

    def ping(call):
        return {"pong": True}

    def register(events, quire):
        quire.add_endpoint("GET", "/api/custom/count/{model}", count, permission="custom/stats",
                           summary="How many items a model holds")
        quire.add_endpoint("POST", "/api/custom/echo", echo, permission="custom/echo")
        quire.add_endpoint("GET", "/api/custom/ping", ping, public=True)
'''


def test_a_hooks_endpoints_answer_with_their_permissions(data_dir: Path, make_app: Any) -> None:
    write_hook(data_dir, "stats.py", STATS)
    app = make_app()
    admin = admin_of(app)
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    create_item(admin, "posts", {"title": "a"})
    assert admin.get("/api/custom/count/posts").json() == {"model": "posts", "items": 1}
    echoed = admin.post("/api/custom/echo?q=x", json={"word": "hi"})
    assert echoed.json() == {"echo": "hi", "by": "admin", "q": "x"}
    refused = admin.post("/api/custom/echo", json={"nothing": 1})
    assert refused.status_code == 400 and refused.json() == {"error": 'send {"word": ...}'}
    client = TestClient(app, raise_server_exceptions=False)
    assert client.get("/api/custom/ping").json() == {"pong": True}  # public: no key
    assert client.get("/api/custom/count/posts").status_code == 401
    # a role granted the endpoint's permission may call it, and nothing else of them;
    # the handler reads with the caller's rights (here: none on posts yet)
    granted = admin.put("/api/system/roles/site", json={"permissions": {"custom/stats": True}})
    assert granted.status_code == 200, granted.text
    key = admin.post("/api/system/keys", json={"name": "site", "role": "site"}).json()["key"]
    site = Api(client, key)
    assert site.get("/api/custom/count/posts").status_code == 403
    admin.put("/api/system/roles/site", json={"permissions": {"custom/stats": True, "content/posts/read": True}})
    assert site.get("/api/custom/count/posts").json() == {"model": "posts", "items": 1}
    assert site.post("/api/custom/echo", json={"word": "x"}).status_code == 403
    assert client.post("/api/custom/ping").status_code == 405
    paths = admin.get("/api/openapi.json").json()["paths"]
    assert paths["/api/custom/count/{model}"]["get"]["summary"].startswith("How many items a model holds")
    assert "security" not in paths["/api/custom/ping"]["get"] or paths["/api/custom/ping"]["get"]["security"] == []


@pytest.mark.parametrize(("call", "message"), [
    ('quire.add_endpoint("GET", "/api/posts", h, permission="custom/x")', "must start with /api/custom/"),
    ('quire.add_endpoint("GET", "/api/custom/x", h)', "name the permission a caller needs"),
    ('quire.add_endpoint("FETCH", "/api/custom/x", h, public=True)', "method must be one of"),
    ('quire.add_endpoint("GET", "/api/custom/x", h, public=True); '
     'quire.add_endpoint("GET", "/api/custom/x", h, public=True)', "GET /api/custom/x is added twice"),
])
def test_a_badly_declared_endpoint_stops_the_start_naming_it(data_dir: Path, make_app: Any, call: str,
                                                             message: str) -> None:
    write_hook(data_dir, "bad.py", f'''
        def h(call):
            return {{}}

        def register(events, quire):
            {call}
    ''')
    with pytest.raises(ConfigError, match=message) as raised:
        make_app()
    assert "bad.py" in str(raised.value)
