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
    from playwright.sync_api import Browser

CHROMIUM = Path("/usr/bin/chromium")
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
        from playwright.sync_api import sync_playwright
    except ImportError:
        unavailable("the playwright Python package is missing (pip install -e '.[dev]')")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
