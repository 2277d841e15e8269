"""The forms inbox in a real browser: a website's plain HTML form (served
by the test on another port: another origin) posts a submission with a
file, which appears in the studio with its file; a token is rotated; the
submissions are exported as CSV; the sidebar's unread badge counts down as
submissions are opened."""

from __future__ import annotations

import csv
import html
import io
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.inbox.conftest import PDF
from tests.studio.browsing import (
    Studio,
    assert_clean,
    browser,
    login,
    new_context,
    open_page,
    screenshot,
    section,
    studio,
)

__all__ = ["browser", "new_context", "studio"]


class Site:
    """A website on 127.0.0.1 (its own port, so its own origin) serving pages given by path."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (the stdlib's name)
                body = pages.get(self.path.split("?")[0])
                self.send_response(200 if body is not None else 404)
                self.send_header("content-type", "text/html; charset=utf-8")
                self.end_headers()
                self.wfile.write((body or "not found").encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def site() -> Iterator[Site]:
    served = Site()
    yield served
    served.server.shutdown()
    served.server.server_close()


def _submit(studio: Studio, token: str, data: dict[str, Any]) -> None:
    request = urllib.request.Request(f"{studio.base}/api/inbox/submit/{token}", method="POST",
                                     data=json.dumps({"data": data}).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200


def _badge(page: Any) -> int:
    link = page.get_by_role("navigation", name="Sections").get_by_role("link", name="Forms")
    text = link.inner_text().replace("Forms", "").strip()
    return int(text or 0)


def test_a_website_form_posts_a_file_that_shows_in_the_inbox(studio: Studio, site: Site, tmp_path: Path,
                                                              new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    form = studio.call("POST", "/api/inbox/forms", {"data": {
        "name": "Applications", "fields": ["name", "email", "message", "cv"], "honeypot": "website",
        "domains": ["127.0.0.1"]}})
    action = html.escape(f"{studio.base}/api/inbox/submit/{form['token']}?success={site.base}/thanks")
    site.pages["/apply"] = f"""<!doctype html><html lang="en"><head><title>Apply</title></head><body>
<form method="post" enctype="multipart/form-data" action="{action}">
  <label>Name <input name="data[name]" required></label>
  <label>E-mail <input name="data[email]" type="email" required></label>
  <label>Message <textarea name="data[message]"></textarea></label>
  <label>CV <input name="data[cv][]" type="file"></label>
  <input name="data[website]" tabindex="-1" autocomplete="off" aria-hidden="true" style="position:absolute;left:-9999px">
  <button>Send</button>
</form></body></html>"""
    site.pages["/thanks"] = "<!doctype html><title>Thanks</title><h1>Thank you</h1>"
    cv = tmp_path / "lebenslauf.pdf"
    cv.write_bytes(PDF)
    visitor = open_page(new_context())
    visitor.goto(site.base + "/apply")
    visitor.get_by_label("Name").fill("Grete Müller")
    visitor.get_by_label("E-mail").fill("grete@example.org")
    visitor.get_by_label("Message").fill("I would like to apply.")
    visitor.get_by_label("CV").set_input_files(str(cv))
    visitor.get_by_role("button", name="Send").click()
    visitor.wait_for_url(site.base + "/thanks")
    expect(visitor.get_by_role("heading", name="Thank you")).to_be_visible()

    page = open_page(new_context())
    login(page, studio)
    assert _badge(page) >= 1
    section(page, "Forms").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Forms")
    screenshot(page, "studio-inbox-forms.png")
    page.get_by_role("link", name="Applications", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Submissions to Applications")
    row = page.get_by_role("row").filter(has_text="Grete Müller")
    expect(row).to_contain_text("Unread")
    screenshot(page, "studio-inbox-submissions.png")
    row.get_by_role("link").first.click()
    expect(page.get_by_text("I would like to apply.")).to_be_visible()
    with page.expect_download() as info:
        page.get_by_role("link", name="lebenslauf.pdf").click()
    download = info.value
    assert download.suggested_filename == "lebenslauf.pdf"
    assert Path(download.path()).read_bytes() == PDF
    screenshot(page, "studio-inbox-submission.png")
    assert_clean(page)
    assert_clean(visitor)


def test_rotating_a_token_retires_the_old_address(studio: Studio, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    form = studio.call("POST", "/api/inbox/forms", {"data": {"name": "Newsletter", "group": "Marketing",
                                                             "emails": ["team@example.com"]}})
    page = open_page(new_context())
    login(page, studio)
    section(page, "Forms").click()
    page.get_by_role("link", name="Settings of Newsletter").click()
    expect(page.locator("#form-token")).to_have_text(form["token"])
    screenshot(page, "studio-inbox-form.png")
    page.get_by_role("link", name="Rotate token…").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Give Newsletter a new token?")
    screenshot(page, "studio-inbox-rotate.png")
    page.get_by_role("button", name="Rotate token").click()
    expect(page.get_by_role("status")).to_contain_text("the old submit URL no longer works")
    new = page.locator("#form-token").inner_text()
    assert new and new != form["token"]
    expect(page.get_by_label("Submit URL")).to_have_value(f"{studio.base}/api/inbox/submit/{new}")
    with pytest.raises(urllib.error.HTTPError) as refused:
        _submit(studio, form["token"], {"email": "a@example.org"})
    assert refused.value.code == 404
    refused.value.close()  # the refusal holds the connection's answer open until closed
    _submit(studio, new, {"email": "a@example.org"})
    # a change is validated with the API's message, shown at the field
    page.get_by_label("Notification e-mail").fill("team@example.com\nnot-an-address")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#emails-error")).to_have_text("emails has invalid addresses: not-an-address")
    assert_clean(page)


def test_submissions_export_as_csv(studio: Studio, new_context: Callable[..., Any]) -> None:
    form = studio.call("POST", "/api/inbox/forms", {"data": {"name": "Survey", "fields": ["name", "answer"]}})
    _submit(studio, form["token"], {"name": "Ann", "answer": "=1+1"})
    _submit(studio, form["token"], {"name": "Bob", "answer": "yes"})
    page = open_page(new_context())
    login(page, studio)
    section(page, "Forms").click()
    page.get_by_role("link", name="Survey", exact=True).click()
    with page.expect_download() as info:
        page.get_by_role("link", name="Export CSV").click()
    download = info.value
    assert download.suggested_filename == "submissions-Survey.csv"
    rows = list(csv.reader(io.StringIO(Path(download.path()).read_text("utf-8-sig"))))
    assert rows[0] == ["_id", "created", "spam", "name", "answer"]
    # oldest first; two posts in one second to two workers have no defined order
    assert sorted(r[3:] for r in rows[1:]) == [["Ann", "'=1+1"], ["Bob", "yes"]]
    assert_clean(page)


def test_the_unread_badge_counts_down_as_submissions_are_opened(studio: Studio,
                                                                new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    form = studio.call("POST", "/api/inbox/forms", {"data": {"name": "Feedback"}})
    for n in range(3):
        _submit(studio, form["token"], {"name": f"Reader {n}", "message": f"Note {n}"})
    page = open_page(new_context())
    login(page, studio)
    start = _badge(page)
    assert start >= 3
    section(page, "Forms").click()
    for opened in range(1, 3):
        page.get_by_role("link", name="Feedback", exact=True).click()
        page.get_by_role("row").filter(has_text="Unread").first.get_by_role("link").first.click()
        expect(page.get_by_role("heading", level=1)).to_have_text("Submission to Feedback")
        assert _badge(page) == start - opened
        section(page, "Forms").click()
    expect(page.get_by_role("row").filter(has_text="Feedback")).to_contain_text("1")
    assert _badge(page) == start - 2
    assert_clean(page)
