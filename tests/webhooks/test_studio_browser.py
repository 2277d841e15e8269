"""Webhooks in a real browser: reached from the sidebar, created with the
keyboard-usable form (labelled fields), the secret shown once, a save
delivered to a local receiver and shown in the delivery log."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.serving import quire_server
from tests.studio.browsing import (
    NARROW,
    Studio,
    assert_clean,
    browser,
    login,
    make_users,
    new_context,
    open_page,
    screenshot,
)
from tests.webhooks.conftest import WEBHOOK_ENV
from tests.webhooks.receiver import Receiver, expected_signature

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    running = Receiver()
    yield running
    running.close()


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Any, receiver: Receiver) -> Iterator[Studio]:
    data = tmp_path_factory.mktemp("webhooks") / "data"
    make_users(data, {"ann": "admin"}, {})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true", **WEBHOOK_ENV}) as (base, key, _log):
        server = Studio(base, key, {"ann": "admin"})
        server.call("PUT", "/api/system/models/posts", {
            "name": "posts", "type": "collection", "fields": [{"name": "title", "type": "text"}]})
        yield server


def test_create_a_webhook_see_its_secret_once_and_its_deliveries(
        studio: Studio, new_context: Callable[..., Any], receiver: Receiver) -> None:
    from playwright.sync_api import expect

    page = open_page(new_context())
    login(page, studio)
    page.get_by_role("navigation").get_by_role("link", name="Webhooks").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Webhooks")
    page.get_by_role("link", name="New webhook").first.click()
    page.get_by_label("Name", exact=True).fill("Rebuild site")
    page.get_by_label("URL", exact=True).fill(receiver.url)
    page.get_by_label("posts", exact=True).check()
    page.get_by_label("Headers", exact=True).fill("Authorization: Bearer build-token")
    page.get_by_role("button", name="Create webhook").click()
    secret = page.get_by_label("Secret", exact=True).input_value()
    assert secret.startswith("whsec_")
    expect(page.get_by_text("it is shown this once")).to_be_visible()
    page.get_by_role("link", name="Done").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Rebuild site")
    assert "whsec_" not in page.content()

    studio.call("POST", "/api/content/item/posts", {"data": {"title": "Hello"}})
    got = receiver.wait_for(1)[0]
    assert got.headers["webhook-signature"] == expected_signature(secret, got)
    assert got.headers["authorization"] == "Bearer build-token"
    hook_id = page.url.rstrip("/").rsplit("/", 1)[1]
    deadline = time.monotonic() + 30
    while studio.call("GET", f"/api/webhooks/{hook_id}/deliveries")["total"] < 1:  # logged just after the answer
        assert time.monotonic() < deadline
        time.sleep(0.05)
    page.reload()
    expect(page.get_by_role("button", name=f"Send {got.id} again")).to_be_visible()
    screenshot(page, "studio-webhook.png")
    page.get_by_role("button", name=f"Send {got.id} again").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#flash")).to_contain_text(f"Sending {got.id} again.")
    assert receiver.wait_for(2)[1].id == got.id
    page.get_by_role("link", name="All webhooks").click()
    expect(page.get_by_role("link", name="Rebuild site")).to_be_visible()
    screenshot(page, "studio-webhooks.png")
    phone = open_page(new_context(NARROW))
    login(phone, studio)
    for path in ("/studio/settings/webhooks", "/studio/settings/webhooks/new"):
        phone.goto(studio.base + path)
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, f"{path} is {width} px wide on a 390 px screen"
    assert_clean(phone)
    assert_clean(page)
