"""Webhooks in the studio: permissions and CSRF, creating one (the secret
shown once), the API's checks shown by field, the delivery log with a
redelivery, and the notice of a disabled webhook on the list and the
dashboard."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlencode

from tests.admin.conftest import new_browser
from tests.conftest import Api, create_item, put_model
from tests.studio.conftest import logged_in, post_form
from tests.webhooks.receiver import Receiver, expected_signature
from tests.webhooks.test_delivery import log_of

PAGE = "/studio/settings/webhooks"


def _form(receiver_url: str, **extra: Any) -> list[tuple[str, str]]:
    fields = {"name": "Build", "url": receiver_url, "patterns": "", "headers": "X-Site: blog", "enabled": "1",
              **extra}
    return [*fields.items(), ("event", "content.*")]


def test_only_managers_reach_the_screens_and_forms_need_the_token(app: Any, admin: Api) -> None:
    assert new_browser(app).get(PAGE).headers["location"] == f"/auth/login?next={PAGE}"
    admin.put("/api/system/roles/editor", json={"permissions": {"content/*/read": True}})
    eddie = logged_in(app, "eddie", "editor")
    assert eddie.get(PAGE).status_code == 403
    assert eddie.get(PAGE + "/new").status_code == 403
    assert post_form(eddie, PAGE + "/new", _form("https://build.example/")).status_code == 403
    assert 'href="/studio/settings/webhooks"' not in eddie.get("/studio/content").text
    ann = logged_in(app)
    assert 'href="/studio/settings/webhooks"' in ann.get("/studio/content").text
    bare = ann.post(PAGE + "/new", content=urlencode(_form("https://build.example/")),
                    headers={"content-type": "application/x-www-form-urlencoded"})
    assert bare.status_code == 403 and admin.get("/api/webhooks").json() == []


def test_create_shows_the_secret_once_then_the_log_and_a_redelivery(app: Any, admin: Api,
                                                                     receiver: Receiver) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    ann = logged_in(app)
    created = post_form(ann, PAGE + "/new", [*_form(receiver.url), ("model", "posts")])
    assert created.status_code == 200, created.text
    secret = re.search(r'value="(whsec_[^"]+)"', created.text)
    assert secret and "shown this once" in created.text
    hook = admin.get("/api/webhooks").json()[0]
    assert (hook["events"], hook["models"], hook["headers"]) == (["content.*"], ["posts"], {"X-Site": "blog"})
    edit = ann.get(f"{PAGE}/{hook['_id']}").text
    assert "whsec_" not in edit and "Nothing delivered yet" in edit
    create_item(admin, "posts", {"title": "x"})
    got = receiver.wait_for(1)[0]
    assert got.headers["webhook-signature"] == expected_signature(secret.group(1), got)
    entry = log_of(admin, hook["_id"], 1)[0]
    edit = ann.get(f"{PAGE}/{hook['_id']}").text
    assert entry["msg"] in edit and "Send again" in edit
    again = post_form(ann, f"{PAGE}/{hook['_id']}/deliveries/{entry['_id']}/redeliver", {}, follow_redirects=False)
    assert again.status_code == 303
    assert receiver.wait_for(2)[1].id == got.id
    rotated = post_form(ann, f"{PAGE}/{hook['_id']}/rotate", {})
    new_secret = re.search(r'value="(whsec_[^"]+)"', rotated.text)
    assert new_secret and new_secret.group(1) != secret.group(1)


def test_bad_fields_are_shown_by_field_and_nothing_is_stored(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    refused = post_form(ann, PAGE + "/new", _form("ftp://build.example/", name=""))
    assert refused.status_code == 400
    assert 'id="webhook-url-error"' in refused.text and "http:// or https://" in refused.text
    assert 'id="webhook-name-error"' in refused.text
    bad_header = post_form(ann, PAGE + "/new", _form("https://build.example/", headers="no colon here"))
    assert bad_header.status_code == 400 and 'id="webhook-headers-error"' in bad_header.text
    private = post_form(ann, PAGE + "/new", _form("http://10.0.0.5/hook"))
    assert private.status_code == 400 and "refused" in private.text
    assert admin.get("/api/webhooks").json() == []


def test_a_disabled_webhook_is_flagged_on_its_list_and_the_dashboard(app: Any, admin: Api) -> None:
    put_model(admin, "posts", type="collection", fields=[{"name": "title", "type": "text"}])
    failing = Receiver(lambda _: 500)
    try:
        hook = admin.post("/api/webhooks", json={"name": "Flaky", "url": failing.url, "events": ["*"]}).json()
        create_item(admin, "posts", {"title": "x"})
        log_of(admin, hook["_id"], 4)
    finally:
        failing.close()
    ann = logged_in(app)
    listed = ann.get(PAGE).text
    assert "Flaky was disabled" in listed and "disabled after failures" in listed
    assert "Webhook Flaky was disabled" in ann.get("/studio/content").text
    page = ann.get(f"{PAGE}/{hook['_id']}").text
    assert "Enable again" in page
    enabled = post_form(ann, f"{PAGE}/{hook['_id']}/enable", {}, follow_redirects=False)
    assert enabled.status_code == 303
    assert "was disabled" not in ann.get("/studio/content").text
    deleted = post_form(ann, f"{PAGE}/{hook['_id']}/delete", {}, follow_redirects=False)
    assert deleted.status_code == 303 and admin.get("/api/webhooks").json() == []
