"""The demo's own Contact form (as `make run` installs it) submitted from a
plain HTML page of another site, with a file: the submission shows in the
studio's inbox with its attachment, and the unread badge counts it."""

from __future__ import annotations

import html
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.inbox.conftest import PDF
from tests.serving import quire_server
from tests.studio.browsing import (
    PASSWORD,
    Studio,
    assert_clean,
    browser,
    login,
    make_users,
    new_context,
    open_page,
)
from tests.studio.test_inbox_browser import Site, site

__all__ = ["browser", "new_context", "site"]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, browser: Any) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("demo") / "data"
    # as `make run` does (a process of its own: the browser's loop runs in this one)
    subprocess.run([sys.executable, "-m", "quire", "demo", "--data", str(data)], check=True, capture_output=True,
                   timeout=300)
    make_users(data, {"ann": "admin"})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        yield Studio(base, key, {"ann": "admin"})


def test_the_demo_contact_form_posted_from_a_website_reaches_the_inbox(
        demo: Studio, site: Site, tmp_path: Path, new_context: Callable[..., Any]) -> None:
    from playwright.sync_api import expect

    contact = next(f for f in demo.call("GET", "/api/inbox/forms") if f["name"] == "Contact")
    action = html.escape(f"{demo.base}/api/inbox/submit/{contact['token']}")
    site.pages["/contact"] = f"""<!doctype html><html lang="en"><head><title>Contact</title></head><body>
<form method="post" enctype="multipart/form-data" action="{action}">
  <label>Name <input name="data[name]" required></label>
  <label>E-mail <input name="data[email]" type="email" required></label>
  <label>Message <textarea name="data[message]"></textarea></label>
  <label>Attachment <input name="data[attachment]" type="file"></label>
  <button>Send</button>
</form></body></html>"""
    plan = tmp_path / "floor-plan.pdf"
    plan.write_bytes(PDF)
    visitor = open_page(new_context())
    visitor.goto(site.base + "/contact")
    visitor.get_by_label("Name").fill("Hedda Lind")
    visitor.get_by_label("E-mail").fill("hedda@example.org")
    visitor.get_by_label("Message").fill("Is the harbour room free on Friday?")
    visitor.get_by_label("Attachment").set_input_files(str(plan))
    visitor.get_by_role("button", name="Send").click()
    # the demo's form names no allowed domains, so it redirects nowhere: the answer is its JSON
    expect(visitor.locator("body")).to_contain_text('"success":true')

    page = open_page(new_context())
    login(page, demo, "ann", PASSWORD)
    forms = page.get_by_role("navigation", name="Sections").get_by_role("link", name="Forms")
    expect(forms).to_contain_text("1")  # the unread badge
    forms.click()
    page.get_by_role("link", name="Contact", exact=True).click()
    row = page.get_by_role("row").filter(has_text="Hedda Lind")
    expect(row).to_contain_text("Unread")
    row.get_by_role("link").first.click()
    expect(page.get_by_text("Is the harbour room free on Friday?")).to_be_visible()
    with page.expect_download() as info:
        page.get_by_role("link", name="floor-plan.pdf").click()
    assert Path(info.value.path()).read_bytes() == PDF
    expect(page.get_by_role("navigation", name="Sections").get_by_role("link", name="Forms")).not_to_contain_text("1")
    assert_clean(page)
    assert_clean(visitor)
