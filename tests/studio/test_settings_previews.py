"""Settings → Preview links: managers only, a form with its token, and the
button that ends every preview link given out so far."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from tests.admin.conftest import new_browser
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form

PAGE = "/studio/settings/previews"


def test_only_managers_reach_it_and_the_form_needs_its_token(app: Any, admin: Api) -> None:
    assert new_browser(app).get(PAGE).headers["location"] == f"/auth/login?next={PAGE}"
    admin.put("/api/system/roles/editor", json={"permissions": {"content/*/read": True, "content/*/update": True}})
    eddie = logged_in(app, "eddie", "editor")
    assert eddie.get(PAGE).status_code == 403
    assert post_form(eddie, PAGE + "/end", {}).status_code == 403
    assert f'href="{PAGE}"' not in eddie.get("/studio/content").text
    ann = logged_in(app)
    assert f'href="{PAGE}"' in ann.get("/studio/content").text
    bare = ann.post(PAGE + "/end", content=urlencode({}), headers={"content-type": "application/x-www-form-urlencoded"})
    assert bare.status_code == 403


def test_the_button_ends_every_link_given_out(app: Any, admin: Api, anon: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    item = create_item(admin, "posts", {"title": "Live"})
    token = admin.post(f"/api/content/preview/posts/{item['_id']}").json()["token"]
    assert anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token}).status_code == 200
    ann = logged_in(app)
    page = ann.get(PAGE)
    assert page.status_code == 200 and "End every preview link" in page.text
    done = post_form(ann, PAGE + "/end", {}, follow_redirects=True)
    assert done.status_code == 200 and "has stopped working" in done.text
    assert anon.get(f"/api/content/item/posts/{item['_id']}", params={"preview": token}).status_code == 403
    [entry] = admin.get("/api/audit", params={"action": "previews.end"}).json()["data"]
    assert entry["who"]["kind"] == "user" and entry["who"]["name"] == "ann"
