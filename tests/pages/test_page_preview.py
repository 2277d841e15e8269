"""Preview links of pages: a signed, expiring token opens one page in any
state without a key; the studio's page editor links to the site's preview."""

from __future__ import annotations

import time
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from tests.client import TestClient
from tests.conftest import Api


def _page(admin: Api, **data: Any) -> dict[str, Any]:
    response = admin.post("/api/pages/page", json={"data": {"type": "layout", "title": "Soon", **data}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_a_preview_token_opens_one_unpublished_page_without_a_key(admin: Api, anon: Api, quire: Quire) -> None:
    page = _page(admin, _state=0, slug="soon")
    other = _page(admin, _state=0, slug="other")
    assert anon.get(f"/api/pages/page/{page['_id']}").status_code in (401, 403, 404)
    link = admin.post(f"/api/pages/preview/{page['_id']}", json={"seconds": 60})
    assert link.status_code == 200 and link.json()["links"] == []  # no [pages] preview_url here
    token = link.json()["token"]
    seen = anon.get(f"/api/pages/page/{page['_id']}", params={"preview": token})
    assert seen.status_code == 200 and seen.json()["title"] == "Soon"
    assert seen.headers["cache-control"] == "no-store"
    assert anon.get(f"/api/pages/page/{other['_id']}", params={"preview": token}).status_code == 403
    content_token = admin.post("/api/content/preview/nothing/x").status_code
    assert content_token in (400, 404)
    for bad in ("", "x", token[:-1], token + "a"):
        assert anon.get(f"/api/pages/page/{page['_id']}", params={"preview": bad}).status_code == 403
    quire.content.previews.clock = lambda: time.time() + 120
    expired = anon.get(f"/api/pages/page/{page['_id']}", params={"preview": token})
    assert expired.status_code == 403 and "expired" in expired.json()["error"]


def test_only_who_manages_pages_gets_tokens_and_bad_values_are_refused(admin: Api, anon: Api) -> None:
    page = _page(admin)
    assert anon.post(f"/api/pages/preview/{page['_id']}").status_code == 401
    assert admin.post("/api/pages/preview/0123456789abcdef01234567").status_code == 404
    for body in ({"seconds": 0}, {"seconds": "9"}, {"seconds": 10**8}, [1]):
        assert admin.post(f"/api/pages/preview/{page['_id']}", json=body).status_code == 400, body


@pytest.fixture
def site(data_dir: Any, app_env: dict[str, str]) -> Any:
    env = {**app_env, "QUIRE_PAGES_PREVIEW_URL": "https://www.example.com/preview{route}?token={token}"}
    return build_app(load_settings(data_dir, env=env))


def test_the_preview_url_setting_is_filled_in(site: Any) -> None:
    quire = site.state.quire
    key = quire.auth.create_key("k", "admin")["key"]
    with TestClient(site) as client:
        admin = Api(client, key)
        page = _page(admin, slug="hello")
        link = admin.post(f"/api/pages/preview/{page['_id']}").json()
        assert link["links"] == [{"name": "Site", "url": f"https://www.example.com/preview/hello?token={link['token']}"}]
