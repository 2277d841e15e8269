"""A space's studio at `/<name>/`: the main site's users and sessions,
a role per space (admin for the main site's admins), every screen reached
by following links from `/<name>/` and every link staying in the space
(or going to what the main site keeps: files, the user's settings, users),
writes landing in the space and never in the main site."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from quire.app import build_app
from quire.config import load_settings
from quire.served import serve_sites
from quire.ui.web import SHARED_PATHS
from tests.admin.conftest import logged_in
from tests.client import TestClient
from tests.conftest import Api
from tests.studio.conftest import post_form
from tests.studio.editorform import EditorForm
from tests.studio.editorform import post as post_editor
from tests.studio.test_models_page import create, row
from tests.studio.test_reachable import _screens, crawl, fill_site


@pytest.fixture
def sites(tmp_path: Path) -> Iterator[Any]:
    app = serve_sites(build_app(load_settings(tmp_path / "data", env={"QUIRE_SERVER_QUIET": "1"})))
    yield app
    app.state.quire.close()


class SpaceApi(Api):
    """An API client of a space: its paths under the space's name."""

    def __init__(self, client: TestClient, key: str, space: str) -> None:
        super().__init__(client, key)
        self.space = space

    def request(self, method: str, url: str, **kw: Any) -> Any:
        return super().request(method, f"/{self.space}{url}", **kw)

    def get(self, url: str, **kw: Any) -> Any:
        return self.request("GET", url, **kw)

    def post(self, url: str, **kw: Any) -> Any:
        return self.request("POST", url, **kw)

    def put(self, url: str, **kw: Any) -> Any:
        return self.request("PUT", url, **kw)

    def delete(self, url: str, **kw: Any) -> Any:
        return self.request("DELETE", url, **kw)


def _key(app: Any) -> dict[str, str]:
    return {"api-key": app.state.quire.auth.create_key("main admin", "admin")["key"]}


def test_every_screen_of_a_space_is_reached_from_its_studio_and_links_stay_in_it(sites: Any) -> None:
    key = _key(sites)
    client = TestClient(sites)
    assert client.post("/api/system/spaces", headers=key, json={"name": "shop", "label": "The shop"}).status_code == 200
    ann = logged_in(sites)  # an admin of the main site: admin in every space
    made = create(ann, "journal", row("f00000001", "title", "text", label="Title"))
    assert made.status_code == 303
    # the form of the main site's studio made a main model; shop's comes through its own
    made = post_form(ann, "/shop/studio/models/new", [("name", "products"), ("label", ""), ("kind", "collection"),
                                                        ("info", ""), ("action", "save"), *row("f00000001", "name")],
                     token_from="/shop/studio/content")
    assert made.status_code == 303 and made.headers["location"].startswith("/shop/studio/models/products")
    form = EditorForm(ann.get("/shop/studio/content/products/item").text)
    assert form.action == "/shop/studio/content/products/item"  # the page's form posts to shop
    item = post_editor(ann, form.set("f.name", "Kettle"))
    assert item.status_code == 303 and item.headers["location"].startswith("/shop/studio/content/products/item/")
    space_key = {"api-key": client.post("/api/system/spaces/shop/keys", headers=key,
                                        json={"name": "site", "role": "admin"}).json()["key"]}
    fill_site(SpaceApi(client, space_key["api-key"], "shop"))

    linked: set[str] = set()
    seen = crawl(ann, start="/shop/", linked=linked)
    errors = {p: s for p, s in seen.items() if s >= 400}
    assert not errors, errors
    outside = {p for p in linked if not p.startswith("/shop/")
               and p not in ("/", "/auth/logout", "/metrics")
               and not any(p == s or p.startswith(s + "/") for s in SHARED_PATHS)}
    assert not outside, f"links of shop's studio that leave it: {outside}"
    shared = {"/studio/me", "/studio/static/{name:path}"}
    missing = [r.path for r in _screens() if r.path not in shared and r.path.startswith("/studio")
               and r.path != "/studio/settings/spaces" and not r.path.startswith("/studio/settings/spaces/")
               and not any(r.regex.match(urlsplit(p).path[len("/shop"):]) for p in seen)]
    assert not missing, f"shop's screens no link leads to: {missing}"
    assert not any(p.startswith("/shop/studio/settings/spaces") for p in linked)  # a space has no spaces

    # what the forms wrote is shop's alone
    listed = client.get("/shop/api/content/items/products", headers=space_key).json()
    assert [i["name"] for i in listed] == ["Kettle"]
    assert client.get("/api/system/models/products", headers=key).status_code == 404
    assert client.get("/shop/api/system/models/journal", headers=space_key).status_code == 404


def test_a_user_opens_a_space_with_the_role_given_there(sites: Any) -> None:
    key = _key(sites)
    client = TestClient(sites)
    for name in ("shop", "blog"):
        assert client.post("/api/system/spaces", headers=key, json={"name": name}).status_code == 200
    bob = logged_in(sites, "bob", role="public")
    bob_id = sites.state.quire.users.by_name("bob")["_id"]

    page = bob.get("/shop/studio/content")
    assert page.status_code == 403 and "no role in the space shop" in page.text
    assert "/shop/" not in bob.get("/studio/me").text  # the switcher offers no space yet

    # only one of the space's own roles can be given
    refused = client.put(f"/api/system/spaces/shop/people/{bob_id}", headers=key, json={"role": "editor"})
    assert refused.status_code == 400 and "no such role" in refused.json()["error"]
    assert client.put("/api/system/spaces/shop/people/nobody", headers=key,
                      json={"role": "admin"}).status_code == 404
    assert client.put(f"/api/system/spaces/shop/people/{bob_id}", headers=key, json={"role": 7}).status_code == 400
    given = client.put(f"/api/system/spaces/shop/people/{bob_id}", headers=key, json={"role": "admin"})
    assert given.status_code == 200 and given.json()["spaces"] == {"shop": "admin"}
    assert client.get("/api/system/spaces/shop/people", headers=key).json()[0]["user"] == "bob"

    page = bob.get("/shop/studio/content")
    assert page.status_code == 200
    assert "(admin)" in page.text  # the role shown is shop's
    assert 'href="/shop/"' in page.text and 'href="/blog/"' not in page.text  # the switcher: shop, not blog
    assert bob.get("/blog/studio/content").status_code == 403
    assert bob.get("/studio/models").status_code == 403  # the main site's role is as it was

    # the session is the main site's: logging out there ends it in every space
    assert client.delete(f"/api/system/spaces/shop/people/{bob_id}", headers=key).status_code == 200
    assert bob.get("/shop/studio/content").status_code == 403
    client.put(f"/api/system/spaces/blog/people/{bob_id}", headers=key, json={"role": "admin"})
    assert client.delete("/api/system/spaces/blog", headers=key).status_code == 200
    assert "spaces" not in sites.state.quire.users.get(bob_id)  # a removed space's roles go with it


def test_a_space_sends_to_the_main_login_and_back(sites: Any) -> None:
    key = _key(sites)
    client = TestClient(sites)
    client.post("/api/system/spaces", headers=key, json={"name": "shop"})
    anonymous = client.get("/shop/studio/models?kind=tree", follow_redirects=False)
    assert anonymous.status_code == 303
    assert anonymous.headers["location"] == "/auth/login?next=/shop/studio/models%3Fkind%3Dtree"
    assert client.get("/shop", follow_redirects=False).headers["location"] == "/shop/"
    assert client.get("/shop/studio/me", follow_redirects=False).headers["location"] == "/studio/me"
    assert client.get("/nospace/studio/models", follow_redirects=False).status_code == 404


def test_the_main_site_gives_roles_on_a_space_page(sites: Any) -> None:
    key = _key(sites)
    client = TestClient(sites)
    client.post("/api/system/spaces", headers=key, json={"name": "shop"})
    ann = logged_in(sites)
    logged_in(sites, "bob", role="public")
    bob_id = sites.state.quire.users.by_name("bob")["_id"]
    page = ann.get("/studio/settings/spaces/shop")
    assert 'href="/shop/"' in page.text and "Nobody but the main site" in page.text
    given = post_form(ann, "/studio/settings/spaces/shop/people", {"user": bob_id, "role": "admin"},
                      token_from="/studio/settings/spaces/shop")
    assert given.status_code == 303
    assert "bob is admin in shop." in ann.get(given.headers["location"]).text
    assert sites.state.quire.users.get(bob_id)["spaces"] == {"shop": "admin"}
    bad = post_form(ann, "/studio/settings/spaces/shop/people", {"user": bob_id, "role": "owner"},
                    token_from="/studio/settings/spaces/shop")
    assert bad.status_code == 400 and "no such role" in bad.text
    taken = post_form(ann, "/studio/settings/spaces/shop/people", {"user": bob_id, "role": ""},
                      token_from="/studio/settings/spaces/shop")
    assert taken.status_code == 303 and "spaces" not in sites.state.quire.users.get(bob_id)
