"""The events of a submission (`inbox.submit.before`, `inbox.submit.after`)
and hook files in `<data>/hooks/` that use them, end to end over HTTP."""

from __future__ import annotations

import asyncio
import logging
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire, build_app
from quire.config import load_settings
from quire.events import Events, Reject
from tests.client import TestClient
from tests.conftest import Api
from tests.inbox.conftest import inbox_files, make_form, png, stored, submit


def test_before_gets_form_and_record_and_may_change_the_record(client: TestClient, form: dict[str, Any],
                                                               events: Events, quire: Quire) -> None:
    seen: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def before(form: dict[str, Any], record: dict[str, Any]) -> None:
        seen.append((dict(form), {**record, "data": dict(record["data"])}))
        record["data"]["source"] = "handler"
        record["data"]["name"] = record["data"]["name"].upper()
        record["spam"] = True

    events.on("inbox.submit.before", before)
    response = submit(client, form["token"], data={"data[name]": "ada"}, files={"data[f]": ("a.png", png(), "image/png")})
    assert response.status_code == 200, response.text
    record = response.json()["record"]
    [(got_form, got_record)] = seen
    assert (got_form["_id"], got_form["name"], got_form["group"]) == (form["_id"], "Contact", "site")
    assert got_record["data"] == {"name": "ada"} and got_record["form"] == form["_id"]
    assert got_record["_id"] == record["_id"]
    # attachments are written before the handler runs: it can see them
    assert got_record["attachments"]["f"][0]["file"] == record["attachments"]["f"][0]["file"]
    assert record["data"] == {"name": "ADA", "source": "handler"} and record["spam"] is True
    assert stored(quire, form["_id"]) == [record]


def test_async_before_handler(client: TestClient, form: dict[str, Any], events: Events) -> None:
    async def before(form: dict[str, Any], record: dict[str, Any]) -> None:
        await asyncio.sleep(0)
        record["data"]["checked"] = True

    events.on("inbox.submit.before", before)
    assert submit(client, form["token"], json={"data": {"a": "1"}}).json()["record"]["data"] == {
        "a": "1", "checked": True}


@pytest.mark.parametrize("async_handler", [False, True])
def test_reject_is_412_with_its_message_and_leaves_nothing(client: TestClient, form: dict[str, Any],
                                                           events: Events, quire: Quire, async_handler: bool) -> None:
    after: list[Any] = []
    if async_handler:
        async def before(form: dict[str, Any], record: dict[str, Any]) -> None:
            raise Reject("Spam detected, sorry")
    else:
        def before(form: dict[str, Any], record: dict[str, Any]) -> None:
            raise Reject("Spam detected, sorry")

    events.on("inbox.submit.before", before)
    events.on("inbox.submit.after", lambda form, record: after.append(record))
    response = submit(client, form["token"], data={"data[name]": "x", "success": "/thanks"},
                      files=[("data[f][]", ("a.png", png(), "image/png")), ("data[f][]", ("b.png", png(), "image/png"))])
    assert (response.status_code, response.json()) == (412, {"error": "Spam detected, sorry"})
    assert stored(quire) == [] and inbox_files(quire) == []
    assert quire.store.collection("system/jobs").find() == []  # no e-mail queued
    assert after == []


def test_other_exception_is_412_submission_rejected_and_logged(client: TestClient, form: dict[str, Any],
                                                               events: Events, quire: Quire,
                                                               caplog: pytest.LogCaptureFixture) -> None:
    def before(form: dict[str, Any], record: dict[str, Any]) -> None:
        raise RuntimeError("spam service down: secret-detail-42")

    events.on("inbox.submit.before", before)
    with caplog.at_level(logging.ERROR):
        response = submit(client, form["token"], data={"data[name]": "x"},
                          files={"data[f]": ("a.png", png(), "image/png")})
    assert (response.status_code, response.json()) == (412, {"error": "Submission rejected"})
    assert "secret-detail-42" not in response.text
    assert stored(quire) == [] and inbox_files(quire) == []
    logged = [r for r in caplog.records if r.exc_info and "secret-detail-42" in str(r.exc_info[1])]
    assert logged, [r.getMessage() for r in caplog.records]
    assert logged[0].levelno >= logging.ERROR and "inbox.submit.before" in logged[0].getMessage()


@pytest.mark.parametrize("change", ["data", "attachments", "delete"])
def test_a_handler_that_breaks_the_record_is_rejected(client: TestClient, form: dict[str, Any], events: Events,
                                                      quire: Quire, change: str) -> None:
    def before(form: dict[str, Any], record: dict[str, Any]) -> None:
        if change == "delete":
            del record["data"]
        else:
            record[change] = "not an object"

    events.on("inbox.submit.before", before)
    response = submit(client, form["token"], data={"data[name]": "x"}, files={"data[f]": ("a.png", png(), "image/png")})
    assert (response.status_code, response.json()) == (412, {"error": "Submission rejected"})
    assert stored(quire) == [] and inbox_files(quire) == []


def test_second_handler_rejecting_undoes_the_first_handlers_work(client: TestClient, form: dict[str, Any],
                                                                  events: Events, quire: Quire) -> None:
    order: list[str] = []
    events.on("inbox.submit.before", lambda form, record: order.append("one"))

    def two(form: dict[str, Any], record: dict[str, Any]) -> None:
        order.append("two")
        raise Reject("No")

    events.on("inbox.submit.before", two)
    events.on("inbox.submit.before", lambda form, record: order.append("three"))
    assert submit(client, form["token"], json={"data": {"a": "1"}}).status_code == 412
    assert order == ["one", "two"] and stored(quire) == []


def test_after_runs_after_the_commit_with_the_saved_record(client: TestClient, form: dict[str, Any],
                                                           events: Events, quire: Quire) -> None:
    seen: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []

    def after(form: dict[str, Any], record: dict[str, Any]) -> None:
        # a store of its own (its own connections): the record must already be committed
        other = quire.store.clone()
        try:
            seen.append((form["_id"], dict(record), other.collection("inbox/submissions").find()))
        finally:
            other.close()

    events.on("inbox.submit.before", lambda form, record: record["data"].update(tag="before"))
    events.on("inbox.submit.after", after)
    record = submit(client, form["token"], json={"data": {"a": "1"}}).json()["record"]
    [(form_id, got, committed)] = seen
    assert form_id == form["_id"] and got == record and got["data"]["tag"] == "before"
    assert committed == [record]


def test_after_handler_reads_and_writes_through_the_store(admin: Api, client: TestClient, form: dict[str, Any],
                                                          events: Events, quire: Quire) -> None:
    counts: list[int] = []

    async def after(form: dict[str, Any], record: dict[str, Any]) -> None:
        submissions = quire.store.collection("inbox/submissions")
        counts.append(submissions.count({"form": form["_id"]}))
        if "casino" in str(record["data"].get("message", "")):
            async with quire.store.atomic():
                submissions.update(record["_id"], {"spam": True})

    events.on("inbox.submit.after", after)
    clean = submit(client, form["token"], json={"data": {"message": "hello"}}).json()["record"]
    dirty = submit(client, form["token"], json={"data": {"message": "online casino"}}).json()["record"]
    assert counts == [1, 2]
    assert admin.get(f"/api/inbox/submissions/{clean['_id']}").json()["spam"] is False
    assert admin.get(f"/api/inbox/submissions/{dirty['_id']}").json()["spam"] is True
    flagged = admin.get("/api/inbox/submissions", params={"form": form["_id"], "filter": '{"spam": true}'}).json()
    assert [r["_id"] for r in flagged] == [dirty["_id"]]


def test_a_failing_after_handler_does_not_fail_the_submission(client: TestClient, form: dict[str, Any],
                                                              events: Events, quire: Quire,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    def after(form: dict[str, Any], record: dict[str, Any]) -> None:
        raise RuntimeError("CRM unreachable")

    events.on("inbox.submit.after", after)
    with caplog.at_level(logging.ERROR):
        response = submit(client, form["token"], json={"data": {"a": "1"}})
    assert response.status_code == 200
    assert len(stored(quire, form["_id"])) == 1
    assert any(r.exc_info and "CRM unreachable" in str(r.exc_info[1]) for r in caplog.records)


def test_after_runs_for_a_form_that_does_not_store(client: TestClient, admin: Api, events: Events,
                                                   quire: Quire) -> None:
    seen: list[dict[str, Any]] = []
    events.on("inbox.submit.after", lambda form, record: seen.append(record))
    form = make_form(admin, store=False)
    record = submit(client, form["token"], json={"data": {"a": "1"}}).json()["record"]
    assert seen == [record] and stored(quire) == []


def test_before_handler_can_reject_by_form_group(client: TestClient, admin: Api, events: Events) -> None:
    def only_newsletter(form: dict[str, Any], record: dict[str, Any]) -> None:
        if form["group"] == "newsletter" and "@" not in str(record["data"].get("email", "")):
            raise Reject("A valid e-mail address is required")

    events.on("inbox.submit.before", only_newsletter)
    news = make_form(admin, name="News", group="newsletter")
    contact = make_form(admin, name="Contact", group="site")
    response = submit(client, news["token"], json={"data": {"email": "nope"}})
    assert response.json() == {"error": "A valid e-mail address is required"}
    assert submit(client, news["token"], json={"data": {"email": "a@example.com"}}).status_code == 200
    assert submit(client, contact["token"], json={"data": {"email": "nope"}}).status_code == 200


# -- hook files end to end -----------------------------------------------------------


ADD_FIELD = '''
def register(events):
    def add_source(form, record):
        record["data"]["source"] = "hook"

    events.on("inbox.submit.before", add_source)
'''

REJECT = '''
from quire.events import Reject


def register(events, quire):
    def no_pills(form, record):
        if "viagra" in str(record["data"].get("message", "")).lower():
            raise Reject("Your message looks like spam")

    events.on("inbox.submit.before", no_pills)
    quire.hooked_reject = True
'''


@pytest.fixture
def hooked_app(data_dir: Path, app_env: dict[str, str]) -> Iterator[Any]:
    """An app built after its data dir received two hook files."""
    hooks = data_dir / "hooks"
    hooks.mkdir(parents=True)
    (hooks / "add_field.py").write_text(textwrap.dedent(ADD_FIELD))
    (hooks / "reject.py").write_text(textwrap.dedent(REJECT))
    application = build_app(load_settings(data_dir, env=app_env))
    yield application
    application.state.quire.close()


def test_hook_files_add_a_field_and_reject_over_http(hooked_app: Any) -> None:
    quire: Quire = hooked_app.state.quire
    assert getattr(quire, "hooked_reject", False) is True  # register(events, quire) got the container
    client = TestClient(hooked_app, raise_server_exceptions=False)
    admin = Api(client, str(quire.auth.create_key("hooks", "admin")["key"]))
    form = make_form(admin, fields=["name", "message"])
    response = submit(client, form["token"], data={"data[name]": "Ada", "data[message]": "Hello there"})
    assert response.status_code == 200, response.text
    record = response.json()["record"]
    assert record["data"] == {"name": "Ada", "message": "Hello there", "source": "hook"}
    assert admin.get(f"/api/inbox/submissions/{record['_id']}").json()["data"]["source"] == "hook"

    response = submit(client, form["token"], data={"data[name]": "Bot", "data[message]": "Cheap VIAGRA here"},
                      files={"data[message]": ("x.png", png(), "image/png")})
    assert (response.status_code, response.json()) == (412, {"error": "Your message looks like spam"})
    assert [r["data"]["name"] for r in stored(quire, form["_id"])] == ["Ada"]
    assert inbox_files(quire) == []
    response = submit(client, form["token"], json={"data": {"name": "Bot", "message": "buy viagra"}})
    assert response.status_code == 412
