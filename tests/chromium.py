"""Debian's chromium driven by Playwright, as every browser test starts it
(the SSO journeys, the vendored editors, the studio). A missing browser or
playwright package skips those tests with the reason, or fails them under
QUIRE_TESTS_STRICT=1 (CI), where everything must run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

CHROMIUM = Path("/usr/bin/chromium")
DOCS_IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
# How long a browser step or an `expect(...)` may wait for its condition: far
# more than any takes on an idle machine, so that a loaded one (a full test
# run on two cores beside other work) is only slower, not failing. Playwright's
# own default for `expect` is 5 s, and a context's default timeout does not
# change it: `launched()` sets it for every browser test.
TIMEOUT_MS = 10_000
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def unavailable(reason: str) -> NoReturn:
    if os.environ.get("QUIRE_TESTS_STRICT") == "1":
        pytest.fail(f"{reason} (QUIRE_TESTS_STRICT=1: required here)", pytrace=False)
    pytest.skip(reason)


@contextmanager
def launched() -> Iterator[Browser]:
    if not CHROMIUM.is_file():
        unavailable(f"{CHROMIUM} is missing (Debian's chromium runs the browser tests)")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        unavailable("the playwright Python package is missing (pip install -e '.[dev]')")
    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def screenshot(page: Page, name: str, full_page: bool = True) -> None:
    """Written to docs/img with QUIRE_SCREENSHOTS=1 (`QUIRE_SCREENSHOTS=1
    make test` renews the pictures of the docs); not taken otherwise: a
    picture costs a test about half a second, and some pages show a port
    the tests chose, so a plain run would change tracked files."""
    if os.environ.get("QUIRE_SCREENSHOTS") != "1":
        return
    shot = page.screenshot(full_page=full_page)
    assert shot.startswith(b"\x89PNG")
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    (DOCS_IMG / name).write_bytes(shot)
