"""The admin's single sign-on in a real browser (Debian's chromium driven by
Playwright) against the real OpenID provider and a real `quire serve`:
login through the provider, back-channel logout reaching another browser
over the session's event stream, local logout ending at the provider, the
password login with API keys and the API playground. The tests also write
the screenshots of docs/img.

Skipped when chromium, the playwright package or the provider (node,
tests/oidc/node_modules) is missing; with QUIRE_TESTS_STRICT=1 (CI) they
fail instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import pytest

from tests.sso.stack import Stack, sso_stack

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1200, "height": 800}
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
LOGOUT_MESSAGE = "You have been logged out from another application."
LOGOUT_DELAY = 1.5  # seconds from the message to the login page (api.md, Limits)
TIMEOUT_MS = 10_000  # any single browser step; the flows themselves take well under a second

Unavailable = Callable[[str], NoReturn]


# -- fixtures -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def unavailable() -> Unavailable:
    """Skip a test whose outside part is missing here, with the reason; fail
    it instead under QUIRE_TESTS_STRICT=1 (CI), where everything must run."""

    def missing(reason: str) -> NoReturn:
        if os.environ.get("QUIRE_TESTS_STRICT") == "1":
            pytest.fail(f"{reason} (QUIRE_TESTS_STRICT=1: required here)", pytrace=False)
        pytest.skip(reason)

    return missing


@pytest.fixture(scope="module")
def browser(unavailable: Unavailable) -> Iterator[Browser]:
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


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, unavailable: Unavailable,
          browser: Browser) -> Iterator[Stack]:
    """One provider and server for the module (per xdist worker): every test
    uses fresh browser contexts, so they share no cookies."""
    try:
        with sso_stack(tmp_path_factory.mktemp("sso-browser")) as s:
            yield s
    except pytest.skip.Exception as exc:  # the harness's own skip (node, node_modules)
        unavailable(str(exc.msg))


@pytest.fixture
def new_context(browser: Browser) -> Iterator[Callable[[], BrowserContext]]:
    """Fresh, isolated browser profiles (own cookie jars), closed afterwards."""
    contexts: list[BrowserContext] = []

    def make() -> BrowserContext:
        context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1, locale="en-US",
                                      timezone_id="UTC", color_scheme="light")
        context.set_default_timeout(TIMEOUT_MS)
        # The provider's dev login page @imports Google Fonts: never wait on the net.
        context.route(re.compile(r"^https://fonts\.(googleapis|gstatic)\.com/"), lambda route: route.abort())
        contexts.append(context)
        return context

    yield make
    for context in contexts:
        context.close()


# -- helpers ------------------------------------------------------------------------


def path_of(url: str) -> str:
    return urlsplit(url).path


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def screenshot(page: Page, name: str) -> None:
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(DOCS_IMG / name))


def sso_login(page: Page, stack: Stack, username: str = "ann") -> None:
    """From Quire's login page through the provider's login form back to the
    dashboard."""
    from playwright.sync_api import expect

    page.goto(stack.app + "/auth/login")
    page.get_by_role("link", name="Login via OAuth").click()
    page.wait_for_url(stack.op.issuer + "/interaction/**", wait_until="domcontentloaded")
    page.locator('input[name="login"]').fill(username)
    page.locator('input[name="password"]').fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.wait_for_url(stack.app + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ann Example")


def session_cookie(context: BrowserContext, stack: Stack) -> dict[str, Any] | None:
    found = [c for c in context.cookies(stack.app) if c["name"] == "quire_session"]
    return dict(found[0]) if found else None


def assert_logged_out(page: Page, stack: Stack) -> None:
    """Quire's dashboard sends this browser to the login page."""
    page.goto(stack.app + "/")
    assert path_of(page.url) == "/auth/login", page.url


# -- the tests ------------------------------------------------------------------------


def test_login_through_the_provider(stack: Stack, new_context: Callable[[], BrowserContext]) -> None:
    from playwright.sync_api import expect

    context = new_context()
    page = context.new_page()
    page.goto(stack.app + "/")
    assert path_of(page.url) == "/auth/login"
    button = page.get_by_role("link", name="Login via OAuth")
    expect(button).to_be_visible()
    assert button.get_attribute("href") == "/sso/authenticate"
    screenshot(page, "login.png")

    button.click()
    page.wait_for_url(stack.op.issuer + "/interaction/**", wait_until="domcontentloaded")
    page.locator('input[name="login"]').fill("ann")
    page.locator('input[name="password"]').fill("any password")
    page.get_by_role("button", name="Sign-in").click()

    page.wait_for_url(stack.app + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Ann Example")
    expect(page.locator("header .who")).to_contain_text("(admin)")
    cookie = session_cookie(context, stack)
    assert cookie is not None
    assert cookie["httpOnly"] is True
    assert cookie["sameSite"] == "Lax"
    assert cookie["path"] == "/"
    # The login state cookie (state/PKCE binding) is gone once the login is done.
    assert "quire_sso" not in {c["name"] for c in context.cookies(stack.app + "/sso/")}


def test_backchannel_logout_ends_another_browsers_session(
    stack: Stack, new_context: Callable[[], BrowserContext]
) -> None:
    from playwright.sync_api import expect

    a, b = new_context().new_page(), new_context().new_page()
    sso_login(a, stack)
    sso_login(b, stack)

    # B on the dashboard with its event stream open: the response headers of
    # /system/events have arrived, so the server accepted the session and is
    # polling its events.
    with b.expect_response(lambda r: path_of(r.url) == "/system/events") as stream:
        b.goto(stack.app + "/")
    assert stream.value.status == 200
    assert stream.value.headers["content-type"].startswith("text/event-stream")
    # When the message appears, in the page's clock (the redirect is timed from it).
    b.evaluate("""() => {
        const notice = document.getElementById('notice');
        new MutationObserver(() => {
            if (!notice.hidden && !window.__noticeShownAt) window.__noticeShownAt = Date.now();
        }).observe(notice, {attributes: true, childList: true});
    }""")
    arrived: list[float] = []
    b.on("framenavigated", lambda frame: arrived.append(time.time())
         if frame == b.main_frame and path_of(frame.url) == "/auth/login" else None)

    # A signs out at the provider, which posts the logout token to /sso/logout
    # before it answers.
    a.goto(stack.op.issuer + "/session/end?client_id=quire-admin", wait_until="domcontentloaded")
    a.get_by_role("button", name="Yes, sign me out").click()
    a.wait_for_load_state("domcontentloaded")
    expect(a.get_by_text("Your sign-out was successful.")).to_be_visible()

    notice = b.locator("#notice")
    expect(notice).to_be_visible(timeout=5_000)
    expect(notice).to_have_text(LOGOUT_MESSAGE)
    shown_at = b.evaluate("() => window.__noticeShownAt") / 1000
    screenshot(b, "logout-message.png")
    # Still the dashboard after the screenshot: it shows the message, not the login page.
    assert path_of(b.url) == "/" and not arrived, "went to the login page at once"
    expect(notice).to_be_visible()

    b.wait_for_url(stack.app + "/auth/login", timeout=5_000)
    assert arrived, "no navigation to the login page"
    delay = arrived[0] - shown_at
    assert LOGOUT_DELAY - 0.1 <= delay <= LOGOUT_DELAY + 2.5, f"login page {delay:.2f} s after the message"

    # Destroyed server-side, not just told: the dashboard sends B to the login
    # page, and A's Quire session (same subject) is gone as well.
    assert_logged_out(b, stack)
    assert_logged_out(a, stack)


def test_local_logout_ends_at_the_provider(stack: Stack, new_context: Callable[[], BrowserContext]) -> None:
    from playwright.sync_api import expect

    context = new_context()
    page = context.new_page()
    sso_login(page, stack)

    page.get_by_role("link", name="Log out").click()
    assert path_of(page.url) == "/auth/logout"
    expect(page.locator("main")).to_contain_text("here and at the identity provider")
    page.get_by_role("button", name="Log out").click()

    # RP-initiated logout: the provider asks, then comes back to Quire's login page.
    page.wait_for_url(stack.op.issuer + "/session/end**", wait_until="domcontentloaded")
    assert "id_token_hint=" in page.url
    page.get_by_role("button", name="Yes, sign me out").click()
    page.wait_for_url(stack.app + "/auth/login")
    expect(page.get_by_role("link", name="Login via OAuth")).to_be_visible()

    assert session_cookie(context, stack) is None
    assert_logged_out(page, stack)
    # The provider's session ended too: signing in again asks for the password.
    page.get_by_role("link", name="Login via OAuth").click()
    page.wait_for_url(stack.op.issuer + "/interaction/**", wait_until="domcontentloaded")
    expect(page.locator('input[name="password"]')).to_be_visible()


def test_password_login_keys_and_playground(
    stack: Stack, new_context: Callable[[], BrowserContext]
) -> None:
    from playwright.sync_api import expect

    password = "correct horse battery"
    created = subprocess.run(
        [sys.executable, "-m", "quire", "users", "create", "--data", str(stack.data), "--user", "carol",
         "--email", "carol@example.com", "--role", "admin", "--name", "Carol Local"],
        input=password + "\n", capture_output=True, text=True, timeout=60,
    )
    assert created.returncode == 0, created.stderr

    context = new_context()
    page = context.new_page()
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))

    page.goto(stack.app + "/")
    page.locator('input[name="user"]').fill("carol")
    page.locator('input[name="password"]').fill(password)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(stack.app + "/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Welcome, Carol Local")

    # A key: shown once, works, and stops working once revoked.
    page.get_by_role("link", name="API keys").click()
    page.locator('input[name="name"]').fill("browser-test")
    page.locator('select[name="role"]').select_option("admin")
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").inner_text().strip()
    assert key.startswith("qk_")
    api = context.request
    assert api.get(stack.app + "/api/system/roles", headers={"api-key": key}).status == 200
    page.goto(stack.app + "/admin/keys")
    row = page.locator("tr", has_text="browser-test")
    expect(row).to_have_count(1)
    assert key not in page.content()
    expect(row).to_contain_text(key[-4:])
    row.get_by_role("button", name="Revoke").click()
    expect(page.locator("tr", has_text="browser-test")).to_have_count(0)
    assert api.get(stack.app + "/api/system/roles", headers={"api-key": key}).status == 401

    # The playground: Swagger UI over /api/openapi.json, all from this server.
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    with page.expect_response(lambda r: path_of(r.url) == "/api/openapi.json") as spec:
        page.get_by_role("link", name="API playground").click()
    assert spec.value.status == 200
    expect(page.locator(".opblock").first).to_be_visible()
    assert page.locator(".opblock").count() > 10
    screenshot(page, "playground.png")
    allowed = (stack.app + "/", stack.op.issuer + "/")
    outside = [u for u in requests if not u.startswith(allowed)]
    assert not outside, f"requests left 127.0.0.1: {outside}"
    assert not errors, errors
