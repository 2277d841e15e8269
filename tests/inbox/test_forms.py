"""Forms (`/api/inbox/forms`, permission inbox/manage): create, partial
update, read, list, delete (with the form's submissions and files), token
rotation, validation, and the store collection `inbox/forms`."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from quire.app import Quire
from quire.events import Events, Reject
from quire.ids import new_id
from tests.conftest import Api, role_key
from tests.inbox.conftest import inbox_files, make_form, png, stored, submit

FORM_FIELDS = {"_id", "name", "group", "token", "emails", "domains", "fields", "honeypot", "languages",
               "store", "_created", "_modified"}


def test_create_answers_the_form_with_defaults_and_a_token(admin: Api) -> None:
    before = int(time.time())
    form = make_form(admin, name="  Contact  ")
    assert set(form) == FORM_FIELDS
    assert form["name"] == "Contact"  # trimmed
    assert (form["group"], form["emails"], form["domains"], form["fields"]) == ("", [], [], [])
    assert (form["honeypot"], form["languages"], form["store"]) == (None, [], True)
    assert re.fullmatch(r"[0-9a-f]{24}", form["_id"])
    assert before <= form["_created"] == form["_modified"] <= int(time.time())
    assert isinstance(form["_created"], int)


def test_tokens_are_long_random_and_url_safe(admin: Api) -> None:
    tokens = [make_form(admin, name=f"F{i}")["token"] for i in range(5)]
    assert len(set(tokens)) == 5
    for token in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{32,}", token), token  # >= 192 bits


def test_create_with_every_field(admin: Api) -> None:
    form = make_form(admin, name="Jobs", group="hr", emails=["HR@Example.COM", "boss@example.org"],
                     domains=["Example.com.", "www.example.org"], fields=["name", "email", "cv"],
                     honeypot="website", languages=["EN", "de"], store=False)
    assert form["group"] == "hr"
    assert form["emails"] == ["HR@example.com", "boss@example.org"]  # domain part normalised
    assert form["domains"] == ["example.com", "www.example.org"]  # lower case, no trailing dot
    assert form["fields"] == ["name", "email", "cv"]
    assert (form["honeypot"], form["languages"], form["store"]) == ("website", ["en", "de"], False)


def test_client_cannot_choose_token_or_times(admin: Api) -> None:
    form = make_form(admin, token="chosen-token-xxxxxxxxxxxxxxxxxxxxx", _created=1, _modified=2)
    assert form["token"] != "chosen-token-xxxxxxxxxxxxxxxxxxxxx"
    assert form["_created"] > 1000
    assert admin.post("/api/inbox/submit/chosen-token-xxxxxxxxxxxxxxxxxxxxx",
                      json={"data": {"a": "b"}}).status_code == 404


def test_partial_update_keeps_other_fields_and_the_token(admin: Api) -> None:
    form = make_form(admin, group="g", emails=["a@example.com"], fields=["x"])
    response = admin.post("/api/inbox/forms", json={"data": {"_id": form["_id"], "group": "other"}})
    assert response.status_code == 200, response.text
    changed = response.json()
    assert changed["group"] == "other"
    assert {k: changed[k] for k in ("name", "emails", "fields", "token", "_created")} == {
        k: form[k] for k in ("name", "emails", "fields", "token", "_created")}
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json() == changed
    assert len(admin.get("/api/inbox/forms").json()) == 1  # changed, not added


def test_update_of_an_unknown_form_is_404(admin: Api) -> None:
    response = admin.post("/api/inbox/forms", json={"data": {"_id": new_id(), "group": "x"}})
    assert (response.status_code, response.json()) == (404, {"error": "Form not found"})
    assert admin.get("/api/inbox/forms").json() == []


@pytest.mark.parametrize(("data", "field"), [
    ({}, "name"),
    ({"name": ""}, "name"),
    ({"name": "   "}, "name"),
    ({"name": 5}, "name"),
    ({"name": "x" * 201}, "name"),
    ({"name": "F", "group": 1}, "group"),
    ({"name": "F", "emails": "a@example.com"}, "emails"),
    ({"name": "F", "emails": ["not an address"]}, "emails"),
    ({"name": "F", "domains": ["exa mple.com"]}, "domains"),
    ({"name": "F", "domains": ["https://example.com"]}, "domains"),
    ({"name": "F", "fields": ["ok", "bad name"]}, "fields"),
    ({"name": "F", "fields": [1]}, "fields"),
    ({"name": "F", "honeypot": "a b"}, "honeypot"),
    ({"name": "F", "languages": ["xx"]}, "languages"),
    ({"name": "F", "store": "yes"}, "store"),
    ({"name": "F", "colour": "red"}, "colour"),
])
def test_invalid_forms_are_400_naming_the_field(admin: Api, data: dict[str, Any], field: str) -> None:
    response = admin.post("/api/inbox/forms", json={"data": data})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["error"].startswith("Invalid form") and field in body["error"]
    assert body["fields"] == [field]
    assert admin.get("/api/inbox/forms").json() == []


def test_invalid_update_changes_nothing(admin: Api) -> None:
    form = make_form(admin, emails=["a@example.com"])
    response = admin.post("/api/inbox/forms", json={"data": {"_id": form["_id"], "name": "New",
                                                             "emails": ["nope"]}})
    assert response.status_code == 400
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json() == form


@pytest.mark.parametrize("body", [{}, {"data": []}, {"data": "x"}, None])
def test_form_body_without_data_object_is_412(admin: Api, body: Any) -> None:
    response = admin.post("/api/inbox/forms", json=body)
    assert (response.status_code, response.json()) == (412, {"error": "Item data is missing"})


def test_malformed_json_is_400(admin: Api) -> None:
    response = admin.post("/api/inbox/forms", content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 400 and "error" in response.json()


def test_list_is_sorted_by_name_and_get_reads_one(admin: Api) -> None:
    b = make_form(admin, name="Beta")
    a = make_form(admin, name="Alpha")
    listed = admin.get("/api/inbox/forms")
    assert listed.status_code == 200
    assert listed.headers["content-type"].startswith("application/json")
    assert [f["name"] for f in listed.json()] == ["Alpha", "Beta"]
    assert listed.json() == [a, b]
    assert admin.get(f"/api/inbox/forms/{a['_id']}").json() == a


@pytest.mark.parametrize("form_id", ["nope", "0" * 24, "ZZZZZZZZZZZZZZZZZZZZZZZZ"])
def test_unknown_form_is_404(admin: Api, form_id: str) -> None:
    for response in (admin.get(f"/api/inbox/forms/{form_id}"), admin.delete(f"/api/inbox/forms/{form_id}"),
                     admin.post(f"/api/inbox/forms/{form_id}/token")):
        assert response.status_code == 404
        assert response.json() == {"error": "Form not found"}


def test_rotating_the_token_retires_the_old_one(admin: Api, anon: Api) -> None:
    form = make_form(admin)
    assert submit(anon.client, form["token"], json={"data": {"a": "1"}}).status_code == 200
    response = admin.post(f"/api/inbox/forms/{form['_id']}/token")
    assert response.status_code == 200
    rotated = response.json()
    assert rotated["token"] != form["token"] and len(rotated["token"]) >= 32
    assert {k: v for k, v in rotated.items() if k not in ("token", "_modified")} == {
        k: v for k, v in form.items() if k not in ("token", "_modified")}
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json()["token"] == rotated["token"]
    old = submit(anon.client, form["token"], json={"data": {"a": "2"}})
    assert (old.status_code, old.json()) == (404, {"error": "Form not found"})
    assert submit(anon.client, rotated["token"], json={"data": {"a": "3"}}).status_code == 200


def test_delete_removes_the_form_its_submissions_and_their_files(admin: Api, anon: Api, quire: Quire) -> None:
    doomed = make_form(admin, name="Doomed")
    kept = make_form(admin, name="Kept")
    for form in (doomed, kept):
        response = submit(anon.client, form["token"], data={"data[n]": "1"},
                          files={"data[pic]": ("p.png", png(), "image/png")})
        assert response.status_code == 200, response.text
    assert len(inbox_files(quire)) == 2
    response = admin.delete(f"/api/inbox/forms/{doomed['_id']}")
    assert (response.status_code, response.json()) == (200, {"success": True})
    assert admin.get(f"/api/inbox/forms/{doomed['_id']}").status_code == 404
    assert submit(anon.client, doomed["token"], json={"data": {"a": "1"}}).status_code == 404
    assert stored(quire, doomed["_id"]) == []
    assert len(stored(quire, kept["_id"])) == 1
    left = inbox_files(quire)
    assert len(left) == 1 and kept["_id"] in str(left[0])
    assert admin.get("/api/inbox/submissions", params={"form": doomed["_id"]}).status_code == 404


def test_form_events_can_change_and_refuse(admin: Api, events: Events) -> None:
    seen: list[str] = []

    def on_save(form: dict[str, Any], identity: Any) -> None:
        seen.append(form["name"])
        if form["name"] == "Bad":
            raise Reject("No bad forms")
        form["group"] = "stamped"

    events.on("inbox.form.save", on_save)
    assert make_form(admin, name="Good")["group"] == "stamped"
    response = admin.post("/api/inbox/forms", json={"data": {"name": "Bad"}})
    assert (response.status_code, response.json()) == (412, {"error": "No bad forms"})
    assert [f["name"] for f in admin.get("/api/inbox/forms").json()] == ["Good"]
    assert seen == ["Good", "Bad"]


def test_form_remove_event_can_refuse_and_keeps_everything(admin: Api, anon: Api, events: Events,
                                                            quire: Quire) -> None:
    form = make_form(admin)
    submit(anon.client, form["token"], data={"data[n]": "1"}, files={"data[f]": ("a.png", png(), "image/png")})

    def refuse(form: dict[str, Any], identity: Any) -> None:
        raise Reject("Keep it")

    events.on("inbox.form.remove", refuse)
    response = admin.delete(f"/api/inbox/forms/{form['_id']}")
    assert (response.status_code, response.json()) == (412, {"error": "Keep it"})
    assert admin.get(f"/api/inbox/forms/{form['_id']}").status_code == 200
    assert len(stored(quire, form["_id"])) == 1  # rolled back with the form
    assert len(inbox_files(quire)) == 1


# -- permissions ------------------------------------------------------------------


def test_forms_need_a_key(anon: Api, admin: Api) -> None:
    form = make_form(admin)
    for response in (anon.get("/api/inbox/forms"), anon.get(f"/api/inbox/forms/{form['_id']}"),
                     anon.post("/api/inbox/forms", json={"data": {"name": "X"}}),
                     anon.delete(f"/api/inbox/forms/{form['_id']}"),
                     anon.post(f"/api/inbox/forms/{form['_id']}/token")):
        assert response.status_code == 401, response.text
        assert response.json() == {"error": "Authentication failed"}
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json() == form


def test_forms_need_inbox_manage(admin: Api) -> None:
    form = make_form(admin)
    reader = role_key(admin, "reader", {"inbox/submissions": True, "content/posts/read": True})
    for response in (reader.get("/api/inbox/forms"), reader.get(f"/api/inbox/forms/{form['_id']}"),
                     reader.post("/api/inbox/forms", json={"data": {"name": "X"}}),
                     reader.post("/api/inbox/forms", json={"data": {"_id": form["_id"], "name": "X"}}),
                     reader.delete(f"/api/inbox/forms/{form['_id']}"),
                     reader.post(f"/api/inbox/forms/{form['_id']}/token")):
        assert response.status_code == 403, response.text
        assert "error" in response.json()
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json() == form


def test_inbox_manage_creates_edits_reads_and_rotates(admin: Api) -> None:
    manager = role_key(admin, "formmanager", {"inbox/manage": True})
    form = make_form(manager, name="Mine")
    assert manager.get("/api/inbox/forms").json() == [form]
    assert manager.post("/api/inbox/forms", json={"data": {"_id": form["_id"], "group": "x"}}).status_code == 200
    assert manager.post(f"/api/inbox/forms/{form['_id']}/token").status_code == 200
    # inbox/manage alone does not read submissions
    assert manager.get("/api/inbox/submissions").status_code == 403


def test_a_key_with_both_permissions_deletes_a_form(admin: Api) -> None:
    both = role_key(admin, "inboxadmin", {"inbox/manage": True, "inbox/submissions": True})
    form = make_form(both)
    assert both.delete(f"/api/inbox/forms/{form['_id']}").status_code == 200
    assert admin.get("/api/inbox/forms").json() == []


def test_inbox_manage_alone_deletes_a_form(admin: Api, anon: Api, quire: Quire) -> None:
    manager = role_key(admin, "formmanager", {"inbox/manage": True})
    form = make_form(manager)
    submit(anon.client, form["token"], json={"data": {"a": "1"}})
    response = manager.delete(f"/api/inbox/forms/{form['_id']}")
    assert (response.status_code, response.json()) == (200, {"success": True})
    assert stored(quire) == []


def test_wrong_methods_are_405_with_allow(admin: Api) -> None:
    form = make_form(admin)
    response = admin.get(f"/api/inbox/submit/{form['token']}")
    assert response.status_code == 405
    assert "POST" in response.headers["allow"]
    assert "error" in response.json()
    response = admin.put(f"/api/inbox/forms/{form['_id']}", json={"data": {}})
    assert response.status_code == 405 and "DELETE" in response.headers["allow"]


# -- server-side code ---------------------------------------------------------------


def test_api_forms_and_submissions_are_in_the_store_collections(admin: Api, anon: Api, quire: Quire) -> None:
    form = make_form(admin, fields=["name"])
    record = submit(anon.client, form["token"], json={"data": {"name": "Ada"}}).json()["record"]
    assert quire.store.collection("inbox/forms").find() == [form]
    assert quire.store.collection("inbox/submissions").get(record["_id"]) == record


def test_forms_and_submissions_written_by_server_code_are_served(admin: Api, anon: Api, quire: Quire) -> None:
    now = int(time.time())
    form = {"_id": new_id(), "name": "Imported", "group": "legacy", "token": "imported-token-0123456789abcdefXYZ",
            "emails": [], "domains": [], "fields": [], "honeypot": None, "languages": [], "store": True,
            "_created": now, "_modified": now}
    quire.store.collection("inbox/forms").insert(form)
    record = {"_id": new_id(), "form": form["_id"], "data": {"name": "Old"}, "attachments": {}, "spam": False,
              "_created": now - 10}
    quire.store.collection("inbox/submissions").insert(record)
    assert admin.get(f"/api/inbox/forms/{form['_id']}").json() == form
    assert admin.get("/api/inbox/submissions", params={"form": form["_id"]}).json() == [record]
    response = submit(anon.client, form["token"], json={"data": {"name": "New"}})
    assert response.status_code == 200, response.text
    listed = admin.get("/api/inbox/submissions", params={"form": form["_id"]}).json()
    assert [r["data"]["name"] for r in listed] == ["New", "Old"]
