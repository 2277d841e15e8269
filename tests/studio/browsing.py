"""The studio in a real browser: Debian's chromium driven by Playwright
against a real `quire serve` (two workers) on 127.0.0.1. Fixtures for the
browser tests of tests/studio; skipped when chromium or the playwright
package is missing, failed instead under QUIRE_TESTS_STRICT=1 (CI).

A page that logs a console error (a script error, or a CSP refusal of an
inline script or style) fails its test: `open_page` watches for them."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from quire.app import Quire
from quire.config import load_settings
from tests.chromium import TIMEOUT_MS, launched, screenshot  # noqa: F401 (the studio tests import it from here)
from tests.serving import quire_server

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

PASSWORD = "correct horse battery"
WIDE = {"width": 1280, "height": 900}
NARROW = {"width": 390, "height": 844}


@dataclass
class Studio:
    """A running server: its URL, an admin API key (for setting up data
    through the API) and the users that exist (name -> role)."""

    base: str
    key: str
    users: dict[str, str] = field(default_factory=dict)

    def call(self, method: str, path: str, body: Any = None) -> Any:
        """An API request with the admin key; the decoded answer (raises on 4xx/5xx)."""
        request = urllib.request.Request(
            self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"api-key": self.key, "content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read() or b"null")


def make_users(data: Path, users: dict[str, str], roles: dict[str, dict[str, bool]] | None = None) -> None:
    """Users (name -> role, password PASSWORD) and roles, written before the server starts."""
    quire = Quire(load_settings(data, env={"QUIRE_SERVER_QUIET": "true"}))
    try:
        for name, permissions in (roles or {}).items():
            quire.auth.save_role(name, {"permissions": permissions})
        for name, role in users.items():
            quire.users.create({"user": name, "email": f"{name}@example.org", "role": role, "password": PASSWORD})
    finally:
        quire.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as chromium:
        yield chromium


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory, browser: Browser) -> Iterator[Studio]:
    """One server per test module, with the admin `ann`; a module that needs
    more users or roles adds them through the API (`studio.api()`)."""
    data = tmp_path_factory.mktemp("studio") / "data"
    make_users(data, {"ann": "admin"})
    with quire_server(data, env={"QUIRE_SERVER_QUIET": "true"}) as (base, key, _log):
        yield Studio(base, key, {"ann": "admin"})


@pytest.fixture
def new_context(browser: Browser) -> Iterator[Callable[..., BrowserContext]]:
    """Fresh browser profiles (own cookies): `new_context()` is 1280 px wide,
    `new_context(NARROW)` a 390 px phone."""
    contexts: list[BrowserContext] = []

    def make(viewport: Any = None) -> BrowserContext:
        context = browser.new_context(viewport=viewport or WIDE, device_scale_factor=1, locale="en-US",
                                      timezone_id="Europe/Berlin", color_scheme="light")
        context.set_default_timeout(TIMEOUT_MS)
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


def open_page(context: BrowserContext) -> Page:
    """A page whose console errors and uncaught exceptions fail the test
    (checked by `assert_clean`)."""
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.quire_errors = errors  # type: ignore[attr-defined]
    return page


def assert_clean(page: Page) -> None:
    errors = [e for e in page.quire_errors if not re.search(r"status of 4\d\d", e)]  # type: ignore[attr-defined]
    assert not errors, f"the page logged errors: {errors}"


def scripts_ran(page: Page) -> None:
    """Wait until the page now shown has run its scripts (its `load` event).
    Playwright waits for it after `goto` and `reload`, not after a click or
    a key that navigates: there the next step may find the new page's
    controls before its scripts (htmx, Sortable, the studio's own) have set
    them up. Call it once something proves the new page is shown (an
    `expect` on it), else it may see the old page's `load`."""
    page.wait_for_load_state("load")


def wait_until(page: Page, expression: str, timeout: float = 10.0) -> None:
    """Wait until the JavaScript `expression` is true on the page.
    Playwright's own `wait_for_function` polls through `eval`, which the
    studio's Content-Security-Policy refuses: it failed whenever the first
    look was false (a busy machine), so this looks with `evaluate`."""
    deadline = time.monotonic() + timeout
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"not true within {timeout:g} s: {expression}"
        time.sleep(0.05)


def next_frames(page: Page) -> None:
    """Two animation frames of the page: what a pointer move queued (Sortable
    reorders on frames) is handled before the next step."""
    page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")


def login(page: Page, studio: Studio, user: str = "ann", password: str = PASSWORD) -> None:
    """Log in through the form; lands on the dashboard."""
    page.goto(studio.base + "/auth/login")
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(studio.base + "/")


def section(page: Page, name: str) -> Any:
    """The sidebar's link `name`, shown first: on a phone the sections
    sit behind the menu button, which this opens."""
    menu = page.get_by_role("button", name="Menu")
    if menu.is_visible() and menu.get_attribute("aria-expanded") != "true":
        menu.click()
    # a badge may follow the name ("Forms 2")
    return page.get_by_role("navigation", name="Sections").get_by_role("link", name=re.compile(rf"^{re.escape(name)}\b"))
