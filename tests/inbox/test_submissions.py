"""Submissions (`/api/inbox/submissions`, permission inbox/submissions):
list with form/filter/sort/limit/skip/fields and the envelope rule, read,
mark as spam, delete, events, and the CSV export."""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

import pytest

from quire.app import Quire
from quire.events import Events, Reject
from tests.client import TestClient
from tests.conftest import Api, role_key
from tests.inbox.conftest import PDF, inbox_files, make_form, png, stored, submit


@pytest.fixture
def inbox_env() -> dict[str, str]:
    return {"QUIRE_INBOX_RATE_LIMIT": "0"}


def send(client: TestClient, form: dict[str, Any], data: dict[str, Any], **kw: Any) -> dict[str, Any]:
    response = submit(client, form["token"], json={"data": data}, **kw)
    assert response.status_code == 200, response.text
    return response.json()["record"]  # type: ignore[no-any-return]


@pytest.fixture
def three(client: TestClient, form: dict[str, Any]) -> list[dict[str, Any]]:
    """Three submissions to `form`, oldest first."""
    return [send(client, form, {"name": name, "n": n}) for n, name in enumerate(["Ada", "Bob", "Cy"])]


def ids(records: list[dict[str, Any]]) -> list[str]:
    return [r["_id"] for r in records]


# -- list ------------------------------------------------------------------------------


def test_list_of_a_form_newest_first(admin: Api, form: dict[str, Any], three: list[dict[str, Any]],
                                     client: TestClient) -> None:
    other = make_form(admin, name="Other")
    send(client, other, {"name": "elsewhere"})
    response = admin.get("/api/inbox/submissions", params={"form": form["_id"]})
    assert response.status_code == 200
    assert response.json() == three[::-1]


def test_list_without_form_has_every_form(admin: Api, client: TestClient, three: list[dict[str, Any]]) -> None:
    other = make_form(admin, name="Other")
    extra = send(client, other, {"name": "elsewhere"})
    assert ids(admin.get("/api/inbox/submissions").json()) == ids([extra, *three[::-1]])


def test_list_of_an_unknown_form_is_404(admin: Api) -> None:
    response = admin.get("/api/inbox/submissions", params={"form": "0" * 24})
    assert (response.status_code, response.json()) == (404, {"error": "Form not found"})


def test_empty_list(admin: Api, form: dict[str, Any]) -> None:
    assert admin.get("/api/inbox/submissions", params={"form": form["_id"]}).json() == []


@pytest.mark.parametrize("params", [
    {"filter": json.dumps({"data.name": "Bob"})},
    {"filter": "{'data.name': 'Bob'}"},
    {"filter[data.name]": "Bob"},
    {"filter": json.dumps({"data.n": {"$gte": 1, "$lt": 2}})},
])
def test_filter(admin: Api, form: dict[str, Any], three: list[dict[str, Any]], params: dict[str, str]) -> None:
    response = admin.get("/api/inbox/submissions", params={"form": form["_id"], **params})
    assert response.status_code == 200, response.text
    assert response.json() == [three[1]]


def test_filter_cannot_escape_the_form(admin: Api, client: TestClient, form: dict[str, Any],
                                       three: list[dict[str, Any]]) -> None:
    other = make_form(admin, name="Other")
    theirs = send(client, other, {"name": "Ada"})
    spec = json.dumps({"$or": [{"data.name": "Ada"}, {"form": other["_id"]}]})
    listed = admin.get("/api/inbox/submissions", params={"form": form["_id"], "filter": spec}).json()
    assert ids(listed) == [three[0]["_id"]]
    assert theirs["_id"] not in ids(listed)


def test_sort_limit_skip_and_the_envelope(admin: Api, form: dict[str, Any], three: list[dict[str, Any]]) -> None:
    base = {"form": form["_id"]}
    oldest = admin.get("/api/inbox/submissions", params={**base, "sort": json.dumps({"_created": 1, "_id": 1})})
    assert oldest.json() == three
    by_name = admin.get("/api/inbox/submissions", params={**base, "sort": json.dumps({"data.name": -1})})
    assert [r["data"]["name"] for r in by_name.json()] == ["Cy", "Bob", "Ada"]
    assert ids(admin.get("/api/inbox/submissions", params={**base, "limit": 2}).json()) == ids(three[::-1][:2])
    assert ids(admin.get("/api/inbox/submissions", params={**base, "skip": 2}).json()) == [three[0]["_id"]]
    page = admin.get("/api/inbox/submissions", params={**base, "limit": 1, "skip": 1}).json()
    assert page == {"data": [three[1]], "meta": {"total": 3}}
    filtered = admin.get("/api/inbox/submissions", params={
        **base, "limit": 5, "skip": 0, "filter": json.dumps({"data.n": {"$gt": 0}})}).json()
    assert ids(filtered["data"]) == ids(three[:0:-1]) and filtered["meta"] == {"total": 2}



def test_limit_zero_means_no_limit_as_for_content(admin: Api, form: dict[str, Any], three: list[dict[str, Any]]) -> None:
    base = {"form": form["_id"]}
    assert ids(admin.get("/api/inbox/submissions", params={**base, "limit": 0}).json()) == ids(three[::-1])
    page = admin.get("/api/inbox/submissions", params={**base, "limit": 0, "skip": 1}).json()
    assert ids(page["data"]) == ids(three[::-1][1:]) and page["meta"] == {"total": 3}

def test_fields_projection(admin: Api, form: dict[str, Any], three: list[dict[str, Any]]) -> None:
    response = admin.get("/api/inbox/submissions", params={"form": form["_id"], "fields": json.dumps({"data.name": 1})})
    assert response.status_code == 200
    assert [r["data"] for r in response.json()] == [{"name": "Cy"}, {"name": "Bob"}, {"name": "Ada"}]


@pytest.mark.parametrize("params", [
    {"filter": "{not json"}, {"filter": json.dumps({"$where": "1"})}, {"filter": "[1]"},
    {"limit": "x"}, {"skip": "-1"}, {"sort": "{bad"},
])
def test_bad_parameters_are_400(admin: Api, form: dict[str, Any], params: dict[str, str]) -> None:
    response = admin.get("/api/inbox/submissions", params={"form": form["_id"], **params})
    assert response.status_code == 400, response.text
    assert "error" in response.json()


# -- read, spam, delete ---------------------------------------------------------------------


def test_get_one(admin: Api, three: list[dict[str, Any]]) -> None:
    assert admin.get(f"/api/inbox/submissions/{three[1]['_id']}").json() == three[1]
    for bad in ("0" * 24, "nope"):
        response = admin.get(f"/api/inbox/submissions/{bad}")
        assert (response.status_code, response.json()) == (404, {"error": "Submission not found"})


def test_mark_as_spam_and_back(admin: Api, form: dict[str, Any], three: list[dict[str, Any]], quire: Quire) -> None:
    target = three[0]
    response = admin.post(f"/api/inbox/submissions/{target['_id']}", json={"data": {"spam": True}})
    assert response.status_code == 200, response.text
    changed = response.json()
    assert changed["spam"] is True and isinstance(changed["_modified"], int)
    assert {k: v for k, v in changed.items() if k not in ("spam", "_modified")} == {
        k: v for k, v in target.items() if k != "spam"}
    assert admin.get(f"/api/inbox/submissions/{target['_id']}").json() == changed
    spam = admin.get("/api/inbox/submissions", params={"form": form["_id"], "filter": json.dumps({"spam": True})})
    assert ids(spam.json()) == [target["_id"]]
    back = admin.post(f"/api/inbox/submissions/{target['_id']}", json={"data": {"_id": target["_id"], "spam": False}})
    assert back.json()["spam"] is False
    assert quire.store.collection("inbox/submissions").get(target["_id"])["spam"] is False


@pytest.mark.parametrize(("body", "status"), [
    ({"data": {"spam": "yes"}}, 400),
    ({"data": {"spam": 1}}, 400),
    ({"data": {"data": {"name": "forged"}}}, 400),
    ({"data": {"spam": True, "form": "x"}}, 400),
    ({"data": []}, 412),
    ({}, 412),
])
def test_only_the_spam_flag_can_change(admin: Api, three: list[dict[str, Any]], body: dict[str, Any],
                                       status: int) -> None:
    response = admin.post(f"/api/inbox/submissions/{three[0]['_id']}", json=body)
    assert response.status_code == status, response.text
    assert "error" in response.json()
    assert admin.get(f"/api/inbox/submissions/{three[0]['_id']}").json() == three[0]


def test_update_of_an_unknown_submission_is_404(admin: Api) -> None:
    response = admin.post(f"/api/inbox/submissions/{'0' * 24}", json={"data": {"spam": True}})
    assert response.status_code == 404


def test_delete(admin: Api, form: dict[str, Any], three: list[dict[str, Any]], quire: Quire) -> None:
    response = admin.delete(f"/api/inbox/submissions/{three[1]['_id']}")
    assert (response.status_code, response.json()) == (200, {"success": True})
    assert admin.get(f"/api/inbox/submissions/{three[1]['_id']}").status_code == 404
    assert ids(stored(quire, form["_id"])) == ids([three[0], three[2]])
    assert admin.delete(f"/api/inbox/submissions/{three[1]['_id']}").status_code == 404


def test_submission_events(admin: Api, client: TestClient, form: dict[str, Any], events: Events,
                           quire: Quire) -> None:
    record = submit(client, form["token"], data={"data[name]": "x"},
                    files={"data[f]": ("a.png", png(), "image/png")}).json()["record"]

    def no_spam(record: dict[str, Any], identity: Any) -> None:
        if record.get("spam"):
            raise Reject("Spam flags are locked")

    def keep(record: dict[str, Any], identity: Any) -> None:
        raise Reject("Keep all records")

    events.on("inbox.submission.save", no_spam)
    events.on("inbox.submission.remove", keep)
    response = admin.post(f"/api/inbox/submissions/{record['_id']}", json={"data": {"spam": True}})
    assert (response.status_code, response.json()) == (412, {"error": "Spam flags are locked"})
    response = admin.delete(f"/api/inbox/submissions/{record['_id']}")
    assert (response.status_code, response.json()) == (412, {"error": "Keep all records"})
    assert admin.get(f"/api/inbox/submissions/{record['_id']}").json() == record
    assert len(inbox_files(quire)) == 1


# -- permissions -------------------------------------------------------------------------


def test_submissions_need_inbox_submissions(admin: Api, anon: Api, form: dict[str, Any],
                                            three: list[dict[str, Any]]) -> None:
    rid = three[0]["_id"]
    manager = role_key(admin, "manager", {"inbox/manage": True})
    for api, status in ((anon, 401), (manager, 403)):
        for response in (api.get("/api/inbox/submissions"), api.get("/api/inbox/submissions", params={"form": form["_id"]}),
                         api.get(f"/api/inbox/submissions/{rid}"),
                         api.post(f"/api/inbox/submissions/{rid}", json={"data": {"spam": True}}),
                         api.delete(f"/api/inbox/submissions/{rid}"),
                         api.get("/api/inbox/submissions/export.csv", params={"form": form["_id"]})):
            assert response.status_code == status, response.text
            assert "error" in response.json()
    assert admin.get(f"/api/inbox/submissions/{rid}").json() == three[0]
    reader = role_key(admin, "reader", {"inbox/submissions": True})
    assert len(reader.get("/api/inbox/submissions", params={"form": form["_id"]}).json()) == 3
    assert reader.post(f"/api/inbox/submissions/{rid}", json={"data": {"spam": True}}).status_code == 200
    assert reader.get("/api/inbox/submissions/export.csv", params={"form": form["_id"]}).status_code == 200
    assert reader.delete(f"/api/inbox/submissions/{rid}").status_code == 200


# -- CSV export ----------------------------------------------------------------------------


def read_csv(response: Any) -> list[list[str]]:
    assert response.status_code == 200, response.text
    assert response.content.startswith(b"\xef\xbb\xbf")
    return list(csv.reader(io.StringIO(response.content[3:].decode("utf-8"), newline="")))


def test_csv_export(admin: Api, client: TestClient) -> None:
    form = make_form(admin, name="Jobs", fields=["name", "email", "topics", "cv", "unused"])
    first = send(client, form, {"name": "Ada", "email": "ada@example.com", "topics": ["maths", "engines"]})
    second = submit(client, form["token"], data={"data[name]": "Bob, \"the\" builder\nline 2"},
                    files=[("data[cv][]", ("cv.pdf", PDF, "application/pdf")),
                           ("data[cv][]", ("photo.png", png(), "image/png"))]).json()["record"]
    admin.post(f"/api/inbox/submissions/{second['_id']}", json={"data": {"spam": True}})
    response = admin.get("/api/inbox/submissions/export.csv", params={"form": form["_id"]})
    assert response.headers["content-type"].startswith("text/csv")
    assert response.headers["content-disposition"] == f'attachment; filename="submissions-{form["_id"]}.csv"'
    rows = read_csv(response)
    assert rows[0] == ["_id", "created", "spam", "name", "email", "topics", "unused", "cv"]
    assert rows[1][:3] == [first["_id"], rows[1][1], "no"]
    assert rows[1][3:] == ["Ada", "ada@example.com", "maths, engines", "", ""]
    assert rows[2] == [second["_id"], rows[2][1], "yes", 'Bob, "the" builder\nline 2', "", "", "", "cv.pdf; photo.png"]
    assert len(rows) == 3
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", rows[1][1])


def test_csv_cells_that_look_like_formulas_are_defused(admin: Api, client: TestClient,
                                                        form: dict[str, Any]) -> None:
    values = {"a": "=1+1", "b": "+SUM(A1)", "c": "-2+3", "d": "@cmd", "e": "plain", "f": "a=b", "g": 5, "h": True}
    send(client, form, values)
    submit(client, form["token"], files={"data[file]": ("=HYPERLINK(x).png", png(), "image/png")})
    rows = read_csv(admin.get("/api/inbox/submissions/export.csv", params={"form": form["_id"]}))
    header = rows[0]
    cells = dict(zip(header, rows[1], strict=True))
    assert [cells[k] for k in "abcdefgh"] == ["'=1+1", "'+SUM(A1)", "'-2+3", "'@cmd", "plain", "a=b", "5", "yes"]
    assert dict(zip(header, rows[2], strict=True))["file"] == "'=HYPERLINK(x).png"


def test_csv_header_cells_from_field_names_are_defused(admin: Api, client: TestClient,
                                                        form: dict[str, Any]) -> None:
    # names that are not plain field names are dropped at the door, like fields a form does not list
    send(client, form, {"name": "ok", "=HYPERLINK(\"http://evil.example\")": "x", "@SUM(A1)": "y"})
    header = read_csv(admin.get("/api/inbox/submissions/export.csv", params={"form": form["_id"]}))[0]
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in header), header
    assert "name" in header and len(header) == 4, header


def test_csv_filter_and_all_forms(admin: Api, client: TestClient, form: dict[str, Any],
                                  three: list[dict[str, Any]]) -> None:
    other = make_form(admin, name="Other")
    send(client, other, {"city": "Paris"})
    rows = read_csv(admin.get("/api/inbox/submissions/export.csv", params={
        "form": form["_id"], "filter": json.dumps({"data.n": {"$gte": 1}})}))
    assert [r[0] for r in rows[1:]] == ids(three[1:])
    everything = admin.get("/api/inbox/submissions/export.csv")
    assert 'filename="submissions.csv"' in everything.headers["content-disposition"]
    rows = read_csv(everything)
    assert rows[0] == ["_id", "created", "spam", "name", "n", "city"]
    assert len(rows) == 5


def test_csv_of_an_unknown_form_is_404(admin: Api) -> None:
    response = admin.get("/api/inbox/submissions/export.csv", params={"form": "0" * 24})
    assert response.status_code == 404 and "error" in response.json()


def test_csv_of_a_form_without_submissions_is_a_header(admin: Api) -> None:
    form = make_form(admin, fields=["name", "email"])
    rows = read_csv(admin.get("/api/inbox/submissions/export.csv", params={"form": form["_id"]}))
    assert rows == [["_id", "created", "spam", "name", "email"]]
