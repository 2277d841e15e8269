"""The public submit endpoint `POST /api/inbox/submit/{token}`: encodings,
the answer, every row of api.md's error table, the order of the checks
(behaviour.md §6), honeypot, allowed fields, field limits, languages and the
`success` redirect."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import pytest

from quire.app import Quire
from quire.events import Events
from tests.client import TestClient
from tests.conftest import Api
from tests.inbox.conftest import (
    HTML,
    inbox_files,
    make_form,
    multipart,
    png,
    stored,
    submit,
    urlencoded,
)

ENGLISH = "Hello, I would like to know more about your products and the prices for schools, please."
GERMAN = "Guten Tag, ich möchte gerne mehr über Ihre Produkte und die Preise für Schulen erfahren, bitte."
FRENCH = "Bonjour, je voudrais en savoir plus sur vos produits et sur les prix pour les écoles, merci."


def record_of(response: Any) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True and set(body) == {"success", "record"}
    return body["record"]  # type: ignore[no-any-return]


# -- encodings and the answer ---------------------------------------------------------


def test_json_submission_answers_and_stores_the_record(client: TestClient, form: dict[str, Any],
                                                      quire: Quire) -> None:
    before = int(time.time())
    response = submit(client, form["token"], json={"data": {"name": "Ada", "age": 36, "tags": ["a", "b"]}})
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    record = record_of(response)
    assert set(record) == {"_id", "form", "data", "attachments", "spam", "_created"}
    assert record["form"] == form["_id"]
    assert record["data"] == {"name": "Ada", "age": 36, "tags": ["a", "b"]}
    assert record["attachments"] == {} and record["spam"] is False
    assert isinstance(record["_created"], int) and before <= record["_created"] <= int(time.time())
    assert stored(quire, form["_id"]) == [record]


def test_urlencoded_submission(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    body = [("data[name]", "Ada Lovelace"), ("data[topics][]", "maths"), ("data[topics][]", "engines"),
            ("data[one][]", "only"), ("data[twice]", "a"), ("data[twice]", "b"), ("plain", "ignored"),
            ("data", "ignored"), ("data[a][b]", "ignored")]
    content, headers = urlencoded(body)
    record = record_of(submit(client, form["token"], content=content, headers=headers))
    assert record["data"] == {"name": "Ada Lovelace", "topics": ["maths", "engines"], "one": ["only"],
                              "twice": ["a", "b"]}
    assert stored(quire, form["_id"]) == [record]


def test_urlencoded_keeps_unicode_and_newlines(client: TestClient, form: dict[str, Any]) -> None:
    text = "Grüße aus Köln 👋\r\nzweite Zeile & <b>mehr</b>"
    record = record_of(submit(client, form["token"], data={"data[message]": text}))
    assert record["data"]["message"] == text


def test_multipart_text_fields(client: TestClient, form: dict[str, Any]) -> None:
    response = submit(client, form["token"], data={"data[name]": "Ada", "data[tags][]": ["x", "y"]},
                      files={"unrelated": ("u.txt", b"not a data field", "text/plain")})
    record = record_of(response)
    assert record["data"] == {"name": "Ada", "tags": ["x", "y"]}
    assert record["attachments"] == {}


def test_token_is_the_credential_no_key_needed(anon: Api, form: dict[str, Any]) -> None:
    record_of(anon.post(f"/api/inbox/submit/{form['token']}", json={"data": {"a": "1"}}))


def test_preflight_of_a_cross_origin_json_submission(client: TestClient, form: dict[str, Any]) -> None:
    response = client.options(f"/api/inbox/submit/{form['token']}", headers={
        "Origin": "https://site.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    assert response.status_code in (200, 204)
    assert response.headers["access-control-allow-origin"] in ("*", "https://site.example")


# -- the error table -------------------------------------------------------------------


@pytest.mark.parametrize("token", ["unknown-token", "x" * 32, "a"])
def test_unknown_token_is_404_form_not_found(client: TestClient, token: str, form: dict[str, Any]) -> None:
    response = submit(client, token, json={"data": {"a": "1"}})
    assert (response.status_code, response.json()) == (404, {"error": "Form not found"})


@pytest.mark.parametrize("kw", [
    {"json": {}},
    {"json": {"data": {}}},
    {"json": {"data": []}},
    {"json": {"data": "text"}},
    {"json": {"data": None}},
    {"json": ["data"]},
    {"json": {"name": "not wrapped in data"}},
    {"content": b"", "headers": {"content-type": "application/json"}},
    {"data": {}},
    {"data": {"name": "not wrapped", "data": "x"}},
    {"data": {"data[name]": "x"}, "headers": {"content-type": "text/plain"}},
    {"content": b"data[name]=x", "headers": {"content-type": "text/plain"}},
    {"content": b"data[name]=x"},
    {"content": b"<data><name>x</name></data>", "headers": {"content-type": "application/xml"}},
    dict(zip(("content", "headers"), multipart([("data[file]", "", b"", "application/octet-stream")]),
             strict=True)),
    dict(zip(("content", "headers"), multipart([("data[a][]", "", b"", "application/octet-stream"),
                                                ("data[b]", "", b"", "application/octet-stream")]), strict=True)),
])
def test_no_data_is_412_item_data_is_missing(client: TestClient, form: dict[str, Any], quire: Quire,
                                             kw: dict[str, Any]) -> None:
    response = submit(client, form["token"], **kw)
    assert (response.status_code, response.json()) == (412, {"error": "Item data is missing"})
    assert stored(quire) == []


def test_invalid_json_is_400(client: TestClient, form: dict[str, Any]) -> None:
    response = submit(client, form["token"], content=b'{"data": {', headers={"content-type": "application/json"})
    assert response.status_code == 400 and "error" in response.json()


@pytest.mark.parametrize(("headers", "allowed"), [
    ({}, False),
    ({"Origin": "https://example.com"}, True),
    ({"Origin": "https://EXAMPLE.com:8443"}, True),
    ({"Origin": "https://www.example.com"}, True),
    ({"Origin": "https://deep.sub.example.com"}, True),
    ({"Origin": "https://example.com.evil.net"}, False),
    ({"Origin": "https://evilexample.com"}, False),
    ({"Origin": "https://evil.net"}, False),
    ({"Referer": "https://example.com/contact?x=1"}, True),
    ({"Referer": "https://shop.example.com/contact"}, True),
    ({"Referer": "https://evil.net/example.com"}, False),
    ({"Origin": "https://evil.net", "Referer": "https://example.com/contact"}, False),
    ({"Origin": "null", "Referer": "https://example.com/contact"}, True),
    ({"Origin": "null"}, False),
    ({"Referer": "not a url"}, False),
])
def test_domain_restriction_is_412_not_allowed(client: TestClient, admin: Api, quire: Quire,
                                               headers: dict[str, str], allowed: bool) -> None:
    form = make_form(admin, domains=["example.com"])
    response = submit(client, form["token"], json={"data": {"a": "1"}}, headers=headers)
    if allowed:
        record_of(response)
        assert len(stored(quire, form["_id"])) == 1
    else:
        assert (response.status_code, response.json()) == (412, {"error": "Not allowed"})
        assert stored(quire) == []


def test_any_origin_when_the_form_lists_no_domains(client: TestClient, form: dict[str, Any]) -> None:
    record_of(submit(client, form["token"], json={"data": {"a": "1"}}, headers={"Origin": "https://any.net"}))


def test_language_check_is_412_precondition_failed(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, languages=["en"])
    record_of(submit(client, form["token"], data={"data[message]": ENGLISH}))
    for data in ({"data[message]": GERMAN}, {"data[ok]": ENGLISH, "data[message]": FRENCH},
                 {"data[list][]": [ENGLISH, GERMAN]}):
        response = submit(client, form["token"], data=data)
        assert (response.status_code, response.json()) == (412, {"error": "Precondition failed"}), data
    response = submit(client, form["token"], json={"data": {"message": GERMAN}})
    assert (response.status_code, response.json()) == (412, {"error": "Precondition failed"})
    assert [r["data"] for r in stored(quire, form["_id"])] == [{"message": ENGLISH}]


def test_language_check_skips_short_texts_and_other_values(client: TestClient, admin: Api) -> None:
    form = make_form(admin, languages=["en"])
    short = "Guten Tag, ich möchte mehr über Preise erfahren."  # 48 characters: not checked
    assert len(short) <= 50
    record_of(submit(client, form["token"], json={"data": {"message": short, "n": 12345, "ok": True}}))
    record_of(submit(client, form["token"], json={"data": {"message": " " * 80 + "Hallo" + " " * 80}}))


def test_several_languages_allowed(client: TestClient, admin: Api) -> None:
    form = make_form(admin, languages=["en", "de"])
    record_of(submit(client, form["token"], data={"data[a]": GERMAN, "data[b]": ENGLISH}))
    response = submit(client, form["token"], data={"data[a]": FRENCH})
    assert response.status_code == 412


def test_no_language_check_without_languages(client: TestClient, form: dict[str, Any]) -> None:
    record_of(submit(client, form["token"], data={"data[a]": GERMAN, "data[b]": FRENCH}))


def test_upload_error_is_412_upload_failed(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    response = submit(client, form["token"], data={"data[name]": "x"},
                      files={"data[page]": ("page.html", HTML, "text/html")})
    assert response.status_code == 412
    assert response.json()["error"] == "Upload failed"
    assert stored(quire) == [] and inbox_files(quire) == []


# -- the order of the checks ----------------------------------------------------------


def test_token_is_checked_before_data(client: TestClient) -> None:
    response = submit(client, "nope", content=b"", headers={"content-type": "text/plain"})
    assert response.status_code == 404


def test_data_is_checked_before_domains(client: TestClient, admin: Api) -> None:
    form = make_form(admin, domains=["example.com"])
    response = submit(client, form["token"], json={"data": {}}, headers={"Origin": "https://evil.net"})
    assert response.json() == {"error": "Item data is missing"}


def test_domains_are_checked_before_the_honeypot(client: TestClient, admin: Api) -> None:
    form = make_form(admin, domains=["example.com"], honeypot="website")
    response = submit(client, form["token"], json={"data": {"website": "spam.example", "a": "1"}})
    assert (response.status_code, response.json()) == (412, {"error": "Not allowed"})


def test_honeypot_is_checked_before_fields_limits_language_and_uploads(client: TestClient, admin: Api,
                                                                      quire: Quire, events: Events) -> None:
    calls: list[str] = []
    events.on("inbox.submit.before", lambda form, record: calls.append("before"))
    events.on("inbox.submit.after", lambda form, record: calls.append("after"))
    form = make_form(admin, honeypot="website", languages=["en"], fields=["message", "file"])
    response = submit(client, form["token"], data={"data[website]": "http://spam", "data[message]": GERMAN,
                                                   "data[long]": "x" * 20_000},
                      files={"data[file]": ("evil.html", HTML, "text/html")})
    record = record_of(response)
    assert "website" not in record["data"]
    assert stored(quire) == [] and inbox_files(quire) == []
    assert calls == []  # the bot's submission reaches no handler


def test_dropped_fields_are_not_language_checked(client: TestClient, admin: Api) -> None:
    form = make_form(admin, languages=["en"], fields=["message"])
    record = record_of(submit(client, form["token"], data={"data[message]": ENGLISH, "data[other]": GERMAN}))
    assert record["data"] == {"message": ENGLISH}


def test_language_is_checked_before_uploads(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, languages=["en"])
    response = submit(client, form["token"], data={"data[message]": GERMAN},
                      files={"data[file]": ("evil.html", HTML, "text/html")})
    assert response.json() == {"error": "Precondition failed"}
    assert inbox_files(quire) == []


def test_uploads_are_checked_before_the_before_event(client: TestClient, form: dict[str, Any],
                                                     events: Events) -> None:
    calls: list[str] = []
    events.on("inbox.submit.before", lambda form, record: calls.append("before"))
    response = submit(client, form["token"], data={"data[a]": "1"},
                      files={"data[file]": ("evil.html", HTML, "text/html")})
    assert response.status_code == 412 and calls == []


# -- honeypot ----------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["json", "form"])
def test_filled_honeypot_answers_success_and_keeps_nothing(client: TestClient, admin: Api, quire: Quire,
                                                          encoding: str) -> None:
    form = make_form(admin, honeypot="website", emails=["team@example.com"])
    data = {"name": "Bot", "website": "http://spam.example"}
    kw: dict[str, Any] = {"json": {"data": data}} if encoding == "json" else {
        "data": {f"data[{k}]": v for k, v in data.items()},
        "files": {"data[cv]": ("cv.png", png(), "image/png")}}
    record = record_of(submit(client, form["token"], **kw))
    assert record["data"] == {"name": "Bot"} and record["form"] == form["_id"]
    assert stored(quire) == [] and inbox_files(quire) == []
    assert quire.store.collection("system/jobs").find() == []  # no e-mail queued


def test_filled_honeypot_still_redirects_like_a_success(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, honeypot="website")
    response = submit(client, form["token"], data={"data[name]": "Bot", "data[website]": "x", "success": "/thanks"})
    assert (response.status_code, response.headers["location"]) == (303, "/thanks")
    assert stored(quire) == []


@pytest.mark.parametrize("value", ["", [], None])
def test_empty_honeypot_is_a_normal_submission_without_it(client: TestClient, admin: Api, quire: Quire,
                                                         value: Any) -> None:
    form = make_form(admin, honeypot="website")
    record = record_of(submit(client, form["token"], json={"data": {"name": "Human", "website": value}}))
    assert record["data"] == {"name": "Human"}
    assert stored(quire, form["_id"]) == [record]


def test_a_file_in_the_honeypot_field_is_never_kept(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, honeypot="trap")
    response = submit(client, form["token"], data={"data[name]": "Bot"},
                      files={"data[trap]": ("x.png", png(), "image/png")})
    assert response.status_code == 200
    assert stored(quire) == [] or all("trap" not in r["attachments"] for r in stored(quire))
    assert all("trap" not in str(p) for p in inbox_files(quire))


# -- allowed fields --------------------------------------------------------------------


def test_fields_not_listed_are_dropped(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, fields=["name", "email", "cv"])
    record = record_of(submit(client, form["token"], data={"data[name]": "Ada", "data[admin]": "true",
                                                           "data[_id]": "x", "data[form]": "y"},
                              files={"data[cv]": ("cv.png", png(), "image/png"),
                                     "data[other]": ("o.png", png(), "image/png")}))
    assert record["data"] == {"name": "Ada"}
    assert list(record["attachments"]) == ["cv"]
    assert len(inbox_files(quire)) == 1
    assert stored(quire, form["_id"])[0]["data"] == {"name": "Ada"}


def test_record_keys_cannot_be_overridden_by_data(client: TestClient, form: dict[str, Any]) -> None:
    record = record_of(submit(client, form["token"], json={
        "data": {"a": "1"}, "_id": "x", "form": "y", "spam": True, "attachments": {"f": []}}))
    assert record["form"] == form["_id"] and record["spam"] is False and record["attachments"] == {}
    assert len(record["_id"]) == 24


def test_nothing_left_after_dropping_is_412(client: TestClient, admin: Api, quire: Quire) -> None:
    form = make_form(admin, fields=["name"])
    for kw in ({"json": {"data": {"other": "x"}}}, {"data": {"data[other]": "x"}},
               {"data": {"data[x]": "1"}, "files": {"data[file]": ("a.png", png(), "image/png")}}):
        response = submit(client, form["token"], **kw)
        assert (response.status_code, response.json()) == (412, {"error": "Item data is missing"})
    assert stored(quire) == [] and inbox_files(quire) == []


# -- field limits ------------------------------------------------------------------------


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FIELDS": "3"}])
def test_more_than_max_fields_is_400(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    three = {"a": "1", "b": "2", "c": "3"}
    record_of(submit(client, form["token"], json={"data": three}))
    for kw in ({"json": {"data": {**three, "d": "4"}}},
               {"data": {f"data[{k}]": v for k, v in {**three, "d": "4"}.items()}},
               {"data": {f"data[{k}]": v for k, v in three.items()},
                "files": {"data[f]": ("f.png", png(), "image/png")}}):
        response = submit(client, form["token"], **kw)
        assert response.status_code == 400, response.text
        assert "error" in response.json()
    assert len(stored(quire)) == 1 and inbox_files(quire) == []


@pytest.mark.parametrize("encoding", ["urlencoded", "multipart"])
def test_far_more_than_max_fields_is_400_not_500(client: TestClient, form: dict[str, Any], quire: Quire,
                                                 encoding: str) -> None:
    pairs = [(f"data[k{i}]", "v") for i in range(61)]  # default max_fields: 50
    content, headers = urlencoded(pairs) if encoding == "urlencoded" else multipart(pairs)
    response = submit(client, form["token"], content=content, headers=headers)
    assert response.status_code == 400, response.text
    assert stored(quire) == []


def test_multipart_without_boundary_is_400(client: TestClient, form: dict[str, Any]) -> None:
    response = submit(client, form["token"], content=b"data[a]=1", headers={"content-type": "multipart/form-data"})
    assert response.status_code == 400, response.text


def test_broken_multipart_body_is_a_client_error(client: TestClient, form: dict[str, Any], quire: Quire) -> None:
    response = submit(client, form["token"], content=b"--xx\r\ngarbage",
                      headers={"content-type": "multipart/form-data; boundary=xx"})
    assert 400 <= response.status_code < 500 and "error" in response.json()
    assert stored(quire) == []


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FIELD_LENGTH": "20"}])
def test_value_longer_than_max_field_length_is_400_naming_the_field(client: TestClient, form: dict[str, Any],
                                                                   quire: Quire) -> None:
    record_of(submit(client, form["token"], data={"data[message]": "x" * 20, "data[tags][]": ["y" * 20]}))
    for kw in ({"data": {"data[message]": "x" * 21}}, {"json": {"data": {"message": "x" * 21}}},
               {"data": {"data[message][]": ["ok", "x" * 21]}}):
        response = submit(client, form["token"], **kw)
        assert response.status_code == 400, response.text
        body = response.json()
        assert "message" in body["error"] and body["fields"] == ["message"]
    assert len(stored(quire)) == 1


@pytest.mark.parametrize("encoding", ["urlencoded", "multipart"])
def test_a_huge_text_value_is_400_not_500(client: TestClient, form: dict[str, Any], encoding: str) -> None:
    pairs = [("data[message]", "m" * 1_100_000)]
    content, headers = urlencoded(pairs) if encoding == "urlencoded" else multipart(pairs)
    response = submit(client, form["token"], content=content, headers=headers)
    assert response.status_code == 400, response.text
    assert "message" in response.json()["error"]


@pytest.mark.parametrize("inbox_env", [{"QUIRE_INBOX_MAX_FIELD_LENGTH": "20"}])
@pytest.mark.parametrize("value", [{"text": "x" * 1000}, [["x" * 1000]]])
def test_nested_json_values_cannot_bypass_max_field_length(client: TestClient, form: dict[str, Any], quire: Quire,
                                                           value: Any) -> None:
    response = submit(client, form["token"], json={"data": {"message": value}})
    assert response.status_code == 400, response.text
    assert stored(quire) == []


def test_default_field_length_limit_is_10000(client: TestClient, form: dict[str, Any]) -> None:
    record_of(submit(client, form["token"], data={"data[message]": "x" * 10_000}))
    assert submit(client, form["token"], data={"data[message]": "x" * 10_001}).status_code == 400


# -- success redirect ------------------------------------------------------------------


@pytest.mark.parametrize(("success", "redirect"), [
    ("/thanks", True),
    ("/thanks?x=1&y=2#top", True),
    ("/", True),
    ("//evil.net/", False),
    ("/\\evil.net/", False),
    ("https://evil.net/thanks", False),
    ("http://evil.net", False),
    ("javascript:alert(1)", False),
    ("data:text/html,hi", False),
    ("thanks.html", False),
    ("https://example.com/thanks", True),
    ("http://www.example.com/thanks", True),
    ("https://example.com.evil.net/", False),
    ("https://evilexample.com/", False),
    ("ftp://example.com/file", False),
    ("https://user@evil.net/", False),
    ("http://example.com:80@evil.net/", False),
])
def test_success_redirect_only_to_this_site_or_allowed_domains(client: TestClient, admin: Api, quire: Quire,
                                                             success: str, redirect: bool) -> None:
    form = make_form(admin, domains=["example.com"])
    headers = {"Origin": "https://example.com"}
    response = submit(client, form["token"], data={"data[a]": "1"}, params={"success": success}, headers=headers)
    if redirect:
        assert response.status_code == 303, response.text
        assert response.headers["location"] == success
    else:
        record_of(response)
        assert "location" not in response.headers
    assert len(stored(quire, form["_id"])) == 1  # stored either way


def test_success_redirect_with_a_backslash_never_leaves_the_allowed_domain(client: TestClient,
                                                                          admin: Api) -> None:
    form = make_form(admin, domains=["example.com"])
    response = submit(client, form["token"], json={"data": {"a": "1"}, "success": "https://evil.net\\@example.com/"},
                      headers={"Origin": "https://example.com"})
    if response.status_code == 303:
        # a browser reads "\" as "/": the host it goes to must still be allowed
        host = urlsplit(response.headers["location"].replace("\\", "/")).hostname or ""
        assert host == "example.com" or host.endswith(".example.com"), response.headers["location"]
    else:
        record_of(response)


def test_no_redirect_to_other_sites_without_domains(client: TestClient, form: dict[str, Any]) -> None:
    response = submit(client, form["token"], json={"data": {"a": "1"}, "success": "https://anywhere.net/"})
    record_of(response)


@pytest.mark.parametrize("where", ["query", "form", "json", "multipart"])
def test_success_from_query_or_body(client: TestClient, form: dict[str, Any], where: str) -> None:
    url = "/thanks-" + where
    kw: dict[str, Any] = {
        "query": {"json": {"data": {"a": "1"}}, "params": {"success": url}},
        "form": {"data": {"data[a]": "1", "success": url}},
        "json": {"json": {"data": {"a": "1"}, "success": url}},
        "multipart": {"data": {"data[a]": "1", "success": url},
                      "files": {"data[f]": ("f.png", png(), "image/png")}},
    }[where]
    response = submit(client, form["token"], **kw)
    assert (response.status_code, response.headers.get("location")) == (303, url)


def test_a_failed_submission_does_not_redirect(client: TestClient, form: dict[str, Any]) -> None:
    response = submit(client, form["token"], json={"data": {}, "success": "/thanks"})
    assert (response.status_code, response.json()) == (412, {"error": "Item data is missing"})
