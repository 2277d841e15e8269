"""`make run` as a new user meets it, in a real browser at 1280 px and on a
390 px phone: the login printed last opens the studio from the printed
address, and `make login` prints the same login again."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.ports import free_port
from tests.studio.browsing import (
    NARROW,
    WIDE,
    assert_clean,
    browser,
    new_context,
    open_page,
    section,
)

__all__ = ["browser", "new_context"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """What `make run` runs (`quire demo --serve --make`), on a free port;
    its terminal output as the user sees it."""
    data = tmp_path_factory.mktemp("make-run") / "data"
    log = data.parent / "terminal.log"
    port = free_port()
    with open(log, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "quire", "demo", "--data", str(data), "--serve", "--make",
                                 "--port", str(port)], stdout=sink, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 120
        while "These again: make login" not in log.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        yield log.read_text(), data
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.mark.parametrize("viewport", [WIDE, NARROW], ids=["wide", "phone"])
def test_the_printed_login_opens_the_studio_from_the_printed_address(
        served: tuple[str, Path], new_context: Callable[..., Any], viewport: dict[str, int]) -> None:
    from playwright.sync_api import expect

    terminal, data = served
    tail = terminal[terminal.index("The demo is ready at"):]
    address = re.search(r"Admin interface: open (\S+) and log in as user (\S+), password (\S+)", tail)
    assert address, tail
    url, user, password = address.groups()
    assert tail.strip().splitlines()[-1].startswith("These again: make login")
    assert not re.search(r'"(GET|POST) /', tail)  # no request lines after the login
    page = open_page(new_context(viewport))
    page.goto(url)  # the address as printed: the login page comes first
    page.get_by_label("User name").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("link", name="Log out")).to_be_visible()  # logged in, on the dashboard
    section(page, "Content").click()
    expect(page.get_by_role("link", name=re.compile("Posts"))).to_be_visible()
    again = subprocess.run([sys.executable, "-m", "quire", "demo", "--login", "--data", str(data)],
                           capture_output=True, text=True, timeout=60)
    assert f"password {password}" in again.stdout  # `make login` says the same
    assert_clean(page)
