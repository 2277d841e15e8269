"""The forms inbox of the studio (`/studio/forms`): permissions of every
route, CSRF, the form editor's validation, read state per user and the
sidebar's unread badge, spam, downloads, search, CSV export, deletes."""

from __future__ import annotations

import csv
import io
import re
from typing import Any

import pytest

from quire.ids import new_id
from tests.admin.conftest import new_browser
from tests.conftest import Api
from tests.inbox.conftest import PDF, multipart
from tests.studio.conftest import logged_in, post_form


def _form(admin: Api, **data: Any) -> dict[str, Any]:
    response = admin.post("/api/inbox/forms", json={"data": {"name": "Contact", **data}})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _submit(anon: Api, form: dict[str, Any], **data: Any) -> dict[str, Any]:
    response = anon.post(f"/api/inbox/submit/{form['token']}", json={"data": data})
    assert response.status_code == 200, response.text
    return response.json()["record"]  # type: ignore[no-any-return]


def _badge(html: str) -> int:
    side = html[html.index('<nav class="side"'):html.index("</nav>")]
    found = re.search(r'href="/studio/forms"[^>]*>Forms(?: <span class="badge" aria-label="(\d+) unread">)?', side)
    assert found, "no Forms link in the sidebar"
    return int(found.group(1) or 0)


def _roles(admin: Api) -> None:
    admin.put("/api/system/roles/clerk", json={"permissions": {"inbox/submissions": True}})
    admin.put("/api/system/roles/formsadmin", json={"permissions": {"inbox/manage": True}})
    admin.put("/api/system/roles/writer", json={"permissions": {"content/*/read": True}})


def test_permissions_of_every_route(app: Any, admin: Api, anon: Api) -> None:
    _roles(admin)
    form = _form(admin)
    record = _submit(anon, form, name="Ann")
    base = f"/studio/forms/{form['_id']}"
    reading = ["/studio/forms", f"{base}/submissions", f"{base}/submissions.csv", f"{base}/submissions/{record['_id']}",
               f"{base}/submissions/{record['_id']}/delete"]
    managing = ["/studio/forms/new", base, f"{base}/token", f"{base}/delete"]
    logged_out = new_browser(app)
    for path in reading + managing:
        response = logged_out.get(path, follow_redirects=False)
        assert response.status_code == 303 and "/auth/login" in response.headers["location"], path
    writer = logged_in(app, "wes", "writer")
    for path in reading + managing:
        assert writer.get(path).status_code == 403, path
    assert 'href="/studio/forms"' not in writer.get("/").text
    clerk = logged_in(app, "cleo", "clerk")
    for path in reading:
        assert clerk.get(path).status_code == 200, path
    for path in managing:
        assert clerk.get(path).status_code == 403, path
    assert "New form" not in clerk.get("/studio/forms").text
    assert form["token"] not in clerk.get("/studio/forms").text
    manager = logged_in(app, "mia", "formsadmin")  # managers read their forms' submissions too
    for path in reading + managing:
        assert manager.get(path).status_code == 200, path
    # posts are refused on the server whatever the page showed
    assert post_form(clerk, f"{base}/token", {}).status_code == 403
    assert post_form(clerk, base, {"name": "Hacked"}).status_code == 403
    assert post_form(writer, f"{base}/submissions/{record['_id']}/spam", {"spam": "yes"}).status_code == 403
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json()["name"] == "Contact"
    assert admin.get(f"/api/inbox/submissions/{record['_id']}").json()["spam"] is False


def test_writes_need_the_csrf_token(app: Any, admin: Api, anon: Api) -> None:
    form = _form(admin)
    record = _submit(anon, form, name="Ann")
    ann = logged_in(app)
    base = f"/studio/forms/{form['_id']}"
    form_headers = {"content-type": "application/x-www-form-urlencoded"}
    for path, body in [("/studio/forms/new", "name=Other"), (base, "name=Other"), (f"{base}/token", ""),
                       (f"{base}/submissions/{record['_id']}/spam", "spam=yes"),
                       (f"{base}/submissions/{record['_id']}/delete", ""), (f"{base}/delete", "")]:
        assert ann.post(path, content=body, headers=form_headers).status_code == 403, path
    after = admin.get(f"/api/inbox/forms/{form['_id']}").json()
    assert after["token"] == form["token"] and after["name"] == "Contact"
    assert admin.get("/api/inbox/forms").json() == [after]
    assert admin.get(f"/api/inbox/submissions/{record['_id']}").json()["spam"] is False


def test_create_and_edit_a_form_with_the_apis_messages(app: Any, admin: Api) -> None:
    ann = logged_in(app)
    bad = post_form(ann, "/studio/forms/new", {"name": "Jobs", "emails": "team@example.com\nnot-an-address",
                                               "domains": "example.com", "languages": "en, xx"})
    assert bad.status_code == 400
    assert "emails has invalid addresses: not-an-address" in bad.text
    assert "languages has codes the language detector does not know: xx" in bad.text
    assert "not-an-address" in bad.text and 'aria-invalid="true"' in bad.text
    assert admin.get("/api/inbox/forms").json() == []  # nothing stored half-way
    empty = post_form(ann, "/studio/forms/new", {"name": "  "})
    assert empty.status_code == 400 and "name must be a non-empty string" in empty.text
    made = post_form(ann, "/studio/forms/new", {
        "name": "Jobs", "group": "HR", "emails": "team@example.com", "domains": "Example.com\nshop.example.org",
        "fields": "name\nemail\ncv", "honeypot": "website", "languages": "en, de", "store": "yes"},
        follow_redirects=False)
    assert made.status_code == 303
    form = admin.get("/api/inbox/forms").json()[0]
    assert made.headers["location"] == f"/studio/forms/{form['_id']}"
    assert form["domains"] == ["example.com", "shop.example.org"] and form["fields"] == ["name", "email", "cv"]
    assert form["honeypot"] == "website" and form["languages"] == ["en", "de"] and form["store"] is True
    page = ann.get(f"/studio/forms/{form['_id']}").text
    assert form["token"] in page and f"/api/inbox/submit/{form['token']}" in page and "Saved the form Jobs." in page
    changed = post_form(ann, f"/studio/forms/{form['_id']}", {"name": "Jobs", "honeypot": ""}, follow_redirects=False)
    assert changed.status_code == 303
    after = admin.get(f"/api/inbox/forms/{form['_id']}").json()
    assert after["store"] is False and after["honeypot"] is None and after["fields"] == [] and after["token"] == form["token"]


def test_rotating_the_token_retires_the_old_submit_url(app: Any, admin: Api, anon: Api) -> None:
    form = _form(admin)
    ann = logged_in(app)
    confirm = ann.get(f"/studio/forms/{form['_id']}/token").text
    assert "stops working" in confirm
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json()["token"] == form["token"]  # asking changes nothing
    done = post_form(ann, f"/studio/forms/{form['_id']}/token", {}, follow_redirects=False)
    assert done.status_code == 303
    new = admin.get(f"/api/inbox/forms/{form['_id']}").json()["token"]
    assert new != form["token"]
    assert anon.post(f"/api/inbox/submit/{form['token']}", json={"data": {"a": "b"}}).status_code == 404
    assert anon.post(f"/api/inbox/submit/{new}", json={"data": {"a": "b"}}).status_code == 200


def test_read_state_is_per_user_and_the_badge_counts_down(app: Any, admin: Api, anon: Api) -> None:
    _roles(admin)
    form = _form(admin)
    other = _form(admin, name="Newsletter")
    records = [_submit(anon, form, name=f"N{n}") for n in range(3)]
    _submit(anon, other, email="x@example.org")
    ann = logged_in(app)
    cleo = logged_in(app, "cleo", "clerk")
    assert _badge(ann.get("/").text) == 4 and _badge(cleo.get("/").text) == 4
    listing = ann.get("/studio/forms").text
    assert 'aria-label="3 unread"' in listing and 'aria-label="1 unread"' in listing
    base = f"/studio/forms/{form['_id']}"
    page = ann.get(f"{base}/submissions").text
    assert page.count("Unread</span>") == 3 and "3 unread" in page
    opened = ann.get(f"{base}/submissions/{records[0]['_id']}")
    assert opened.status_code == 200 and "N0" in opened.text
    assert _badge(opened.text) == 3  # the page that opens it already counts it read
    ann.get(f"{base}/submissions/{records[0]['_id']}")  # opening again changes nothing
    assert _badge(ann.get("/").text) == 3 and _badge(cleo.get("/").text) == 4  # only for ann
    assert ann.get(f"{base}/submissions").text.count("Unread</span>") == 2
    # spam is not counted as unread; marking it back brings it again
    assert post_form(ann, f"{base}/submissions/{records[1]['_id']}/spam", {"spam": "yes"}).status_code == 303
    assert _badge(ann.get("/").text) == 2 and _badge(cleo.get("/").text) == 3
    post_form(ann, f"{base}/submissions/{records[1]['_id']}/spam", {"spam": "no"})
    assert _badge(ann.get("/").text) == 3 and _badge(cleo.get("/").text) == 4
    ann.get(f"{base}/submissions/{records[1]['_id']}")
    assert _badge(ann.get("/").text) == 2
    post_form(ann, f"{base}/submissions/{records[0]['_id']}/unread", {})
    assert _badge(ann.get("/").text) == 3
    # a deleted submission leaves no read behind
    post_form(ann, f"{base}/submissions/{records[1]['_id']}/delete", {})
    assert _badge(ann.get("/").text) == 3 and _badge(cleo.get("/").text) == 3
    assert app.state.quire.store.collection("inbox/reads").count({"submission": records[1]["_id"]}) == 0
    # the form goes with its reads
    post_form(ann, f"/studio/forms/{form['_id']}/delete", {})
    assert _badge(ann.get("/").text) == 1
    assert app.state.quire.store.collection("inbox/reads").count({"form": form["_id"]}) == 0


def test_attachments_download_through_the_studio_only(app: Any, admin: Api, client: Any) -> None:
    form = _form(admin)
    body, headers = multipart([("data[name]", "Ann"), ("data[cv]", "lebenslauf \"2026\".pdf", PDF, "application/pdf")])
    record = client.post(f"/api/inbox/submit/{form['token']}", content=body, headers=headers).json()["record"]
    ann = logged_in(app)
    base = f"/studio/forms/{form['_id']}/submissions/{record['_id']}"
    page = ann.get(base).text
    link = f"{base}/files/cv/0"
    assert f'href="{link}"' in page and "/storage/" not in page
    got = ann.get(link)
    assert got.status_code == 200 and got.content == PDF
    assert got.headers["content-disposition"].startswith("attachment;")
    assert "filename*=UTF-8''lebenslauf%202026.pdf" in got.headers["content-disposition"]
    assert got.headers["x-content-type-options"] == "nosniff"
    assert "sandbox" in got.headers["content-security-policy"]
    for bad in (f"{base}/files/cv/1", f"{base}/files/cv/-1", f"{base}/files/nope/0", f"{base}/files/cv/%C2%B2"):
        assert ann.get(bad).status_code == 404, bad
    other = _form(admin, name="Other")
    assert ann.get(f"/studio/forms/{other['_id']}/submissions/{record['_id']}/files/cv/0").status_code == 404
    assert client.get(f"/storage/uploads/{record['attachments']['cv'][0]['file']}").status_code == 404


def test_search_paging_and_newest_first(app: Any, admin: Api, anon: Api) -> None:
    form = _form(admin, fields=["name", "message"])
    store = app.state.quire.store
    with store.transaction():  # past the rate limit of one client
        for n in range(30):
            store.collection("inbox/submissions").insert({
                "_id": new_id(), "form": form["_id"], "data": {"name": f"Person {n}", "message": "about boats" if n % 10 == 0 else "hello"},
                "attachments": {}, "spam": False, "_created": 1_800_000_000 + n})
    ann = logged_in(app)
    base = f"/studio/forms/{form['_id']}/submissions"
    first = ann.get(base).text
    assert "1–25 of 30" in first and "Page 1 of 2" in first and 'rel="next"' in first
    assert first.index("Person 29") < first.index("Person 28")
    second = ann.get(base, params={"page": 2}).text
    assert "26–30 of 30" in second and "Person 0<" in second
    found = ann.get(base, params={"q": "BOATS"}).text
    assert "1–3 of 3" in found
    assert "No submissions match" in ann.get(base, params={"q": "(zz[*"}).text


def test_csv_export_is_whole_filtered_and_safe(app: Any, admin: Api, anon: Api) -> None:
    form = _form(admin, fields=["name", "message"])
    _submit(anon, form, name="=HYPERLINK(\"http://evil\")", message="+1 call me")
    _submit(anon, form, name="Bob", message="@home -ok")
    _submit(anon, form, name="Carl", message="plain")
    ann = logged_in(app)
    got = ann.get(f"/studio/forms/{form['_id']}/submissions.csv")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    assert got.headers["content-disposition"] == 'attachment; filename="submissions-Contact.csv"'
    assert got.headers["x-content-type-options"] == "nosniff"
    rows = list(csv.reader(io.StringIO(got.content.decode("utf-8-sig"))))
    assert rows[0] == ["_id", "created", "spam", "name", "message"]
    assert [r[3:] for r in rows[1:]] == [["'=HYPERLINK(\"http://evil\")", "'+1 call me"], ["Bob", "'@home -ok"],
                                         ["Carl", "plain"]]
    only = ann.get(f"/studio/forms/{form['_id']}/submissions.csv", params={"q": "carl"}).content.decode("utf-8-sig")
    assert len(list(csv.reader(io.StringIO(only)))) == 2


@pytest.mark.parametrize("path", [
    "/studio/forms/nope", "/studio/forms/0123456789abcdef01234567", "/studio/forms/{form}/submissions/nope",
    "/studio/forms/{form}/submissions/0123456789abcdef01234567",
])
def test_unknown_ids_are_404_pages(app: Any, admin: Api, path: str) -> None:
    form = _form(admin)
    response = logged_in(app).get(path.replace("{form}", form["_id"]))
    assert response.status_code in (400, 404) and "text/html" in response.headers["content-type"]


def test_hostile_input_gets_a_4xx_page(app: Any, admin: Api, anon: Api) -> None:
    form = _form(admin)
    _submit(anon, form, name="Ann")
    ann = logged_in(app)
    base = f"/studio/forms/{form['_id']}"
    for params in ({"page": "0"}, {"page": "x"}, {"page": "9" * 40}, {"page": "²"}):
        assert ann.get(f"{base}/submissions", params=params).status_code == 400, params
    assert "past the end" in ann.get(f"{base}/submissions", params={"page": "999"}).text
    assert ann.get(f"{base}/submissions", params={"q": "a\x00" + "x" * 5000}).status_code == 200
    for data in ({"name": "x" * 5000}, {"name": "a\x00b", "emails": "\x00"}, {"name": "A", "honeypot": "bad name!"},
                 {"name": "A", "fields": "ok\nnot ok!"}, {"name": "A", "domains": "-bad-.com"}):
        response = post_form(ann, base, data)
        assert response.status_code == 400, (data, response.status_code)
        assert "Invalid form" in response.text
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json()["name"] == "Contact"


def test_a_form_without_a_field_list_is_searched_in_the_fields_it_received(app: Any, admin: Api, anon: Api) -> None:
    form = _form(admin)
    _submit(anon, form, topic="Boats", note="kept")
    other = _submit(anon, form, topic="Cars", nested={"a": 1}, many=["x", "y"])
    ann = logged_in(app)
    base = f"/studio/forms/{form['_id']}/submissions"
    listing = ann.get(base).text
    assert "Boats" in listing and "Cars" in listing
    found = ann.get(base, params={"q": "boat"}).text
    assert "1–1 of 1" in found and "Boats" in found and "Cars" not in found
    assert "1–1 of 1" in ann.get(base, params={"q": other["_id"]}).text  # by id
    page = ann.get(f"{base}/{other['_id']}").text
    assert "<dd>x, y</dd>" in page and '<dd><code>{"a": 1}</code></dd>' in page
