"""The admin's single sign-on in a real browser (Debian's chromium driven by
Playwright) against the real OpenID provider and a real `quire serve`:
login through the provider, back-channel logout reaching another browser
over the session's event stream, local logout ending at the provider, the
password login with API keys and the API playground. With
QUIRE_SCREENSHOTS=1 they also write the screenshots of docs/img.

Skipped when chromium, the playwright package or the provider (node,
tests/oidc/node_modules) is missing; with QUIRE_TESTS_STRICT=1 (CI) they
fail instead.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn
from urllib.parse import urlsplit

import pytest

from quire.app import Quire
from quire.config import load_settings
from tests.chromium import TIMEOUT_MS, launched, screenshot
from tests.chromium import unavailable as skip_or_fail
from tests.sso.stack import Stack, sso_stack

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Frame, Page, ViewportSize

VIEWPORT: ViewportSize = {"width": 1200, "height": 800}
LOGOUT_MESSAGE = "You have been logged out from another application."
LOGOUT_DELAY = 1.5  # seconds from the message to the login page (api.md, Limits)

Unavailable = Callable[[str], NoReturn]


# -- fixtures -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def unavailable() -> Unavailable:
    """Skip a test whose outside part is missing here, with the reason; fail
    it instead under QUIRE_TESTS_STRICT=1 (CI), where everything must run."""
    return skip_or_fail


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as browser:
        yield browser


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


class Watch:
    """What the admin pages of a browser context do after a back-channel
    logout: `shown` the notices (page, text, when, in the page's clock) and
    `arrived` each move to the login page (page, when), since the last
    `reset()`. Set up before the context's pages open."""

    NOTICE_SCRIPT = """
        document.addEventListener('DOMContentLoaded', () => {
            const notice = document.getElementById('notice');
            if (!notice) return;
            let told = false;
            new MutationObserver(() => {
                if (!notice.hidden && !told) {
                    told = true;
                    window.quireNoticeShown(notice.textContent, Date.now() / 1000);
                }
            }).observe(notice, {attributes: true, childList: true});
        });
    """

    def __init__(self, context: BrowserContext) -> None:
        self.shown: list[tuple[Page, str, float]] = []
        self.arrived: list[tuple[Page, float]] = []
        context.expose_binding("quireNoticeShown", lambda source, text, at: self.shown.append(
            (source["page"], str(text), float(at))))
        context.add_init_script(self.NOTICE_SCRIPT)
        context.on("page", self._page)

    def reset(self) -> None:
        self.shown.clear()
        self.arrived.clear()

    def _page(self, page: Page) -> None:
        def navigated(frame: Frame) -> None:
            if frame == page.main_frame and path_of(frame.url) == "/auth/login":
                self.arrived.append((page, time.time()))

        page.on("framenavigated", navigated)


def with_stream(page: Page, load: Callable[[], object]) -> None:
    """Run `load` (which ends on an admin page) and wait until that page's
    event stream is open: its response headers have arrived, so the server
    accepted the session and polls its events."""
    with page.expect_response(lambda r: path_of(r.url) == "/system/events") as stream:
        load()
    assert stream.value.status == 200
    assert stream.value.headers["content-type"].startswith("text/event-stream")


def provider_logout(page: Page, stack: Stack) -> None:
    """Sign out at the provider's end-session page; it posts the logout token
    to Quire's /sso/logout before it answers."""
    from playwright.sync_api import expect

    page.goto(stack.op.issuer + "/session/end?client_id=quire-admin", wait_until="domcontentloaded")
    page.get_by_role("button", name="Yes, sign me out").click()
    expect(page.get_by_text("Your sign-out was successful.")).to_be_visible()


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

    a = new_context().new_page()
    sso_login(a, stack)
    context_b = new_context()
    watch = Watch(context_b)
    b = context_b.new_page()
    # B on its dashboard with the event stream open: one page, one stream (with
    # two, only one gets the event: test_backchannel_logout_reaches_every_tab...).
    with_stream(b, lambda: sso_login(b, stack))
    watch.reset()  # the login itself passed the login page

    provider_logout(a, stack)

    notice = b.locator("#notice")
    expect(notice).to_have_text(LOGOUT_MESSAGE)
    expect(notice).to_be_visible()
    screenshot(b, "logout-message.png")
    # Still the dashboard after the screenshot: it shows the message, not the login page.
    assert path_of(b.url) == "/" and not watch.arrived, "went to the login page at once"
    expect(notice).to_be_visible()

    b.wait_for_url(stack.app + "/auth/login")
    assert len(watch.shown) == 1 and watch.shown[0][1] == LOGOUT_MESSAGE, watch.shown
    assert watch.arrived, "no navigation to the login page"
    delay = watch.arrived[0][1] - watch.shown[0][2]
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
    # The provider's session ended too: signing in again asks for the password
    # (and the page asked for before the login is where it ends).
    page.goto(stack.app + "/admin/keys")
    assert page.url == stack.app + "/auth/login?next=/admin/keys"
    page.get_by_role("link", name="Login via OAuth").click()
    page.wait_for_url(stack.op.issuer + "/interaction/**", wait_until="domcontentloaded")
    page.locator('input[name="login"]').fill("ann")
    page.locator('input[name="password"]').fill("any password")
    page.get_by_role("button", name="Sign-in").click()
    page.wait_for_url(stack.app + "/admin/keys")
    expect(page.get_by_role("heading", level=1)).to_have_text("API keys")


def test_password_login_keys_and_playground(
    stack: Stack, new_context: Callable[[], BrowserContext]
) -> None:
    from playwright.sync_api import expect

    password = "correct horse battery"
    # Straight into the running server's SQLite file (the CLI's `users create`
    # is tested in tests/test_cli.py; this saves starting another interpreter).
    quire = Quire(load_settings(stack.data, env={}))
    try:
        quire.users.create({"user": "carol", "email": "carol@example.com", "role": "admin",
                            "name": "Carol Local", "password": password})
    finally:
        quire.close()

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
    expect(page.locator(".opblock").nth(10)).to_be_attached()  # more than 10, polled: Swagger UI renders them by script
    screenshot(page, "playground.png")
    allowed = (stack.app + "/", stack.op.issuer + "/")
    assert any(path_of(u) == "/system/api/static/swagger-ui-bundle.js" for u in requests)
    outside = [u for u in requests if not u.startswith(allowed)]
    assert not outside, f"requests left 127.0.0.1: {outside}"
    assert not errors, errors


def test_backchannel_logout_reaches_every_tab_of_the_session(
    stack: Stack, new_context: Callable[[], BrowserContext]
) -> None:
    context = new_context()
    watch = Watch(context)
    first = context.new_page()
    with_stream(first, lambda: sso_login(first, stack))
    second = context.new_page()  # a second tab of the same browser: the same session
    with_stream(second, lambda: second.goto(stack.app + "/"))
    watch.reset()

    # A third tab signs this browser out at the provider.
    provider_logout(context.new_page(), stack)

    # Both tabs poll every 0.5 s and go to the login page 1.5 s after their
    # message: waited for until both are there (the bound only ends a
    # failing test; a loaded machine may take seconds longer).
    deadline = time.monotonic() + LOGOUT_DELAY + 15.0
    while len(watch.arrived) < 2 and time.monotonic() < deadline:
        first.wait_for_timeout(100)  # a poll interval; the browser's events are handled meanwhile
    tabs = {"first": first, "second": second}
    shown = sorted(name for name, tab in tabs.items() if any(p is tab for p, _, _ in watch.shown))
    arrived = sorted(name for name, tab in tabs.items() if any(p is tab for p, _ in watch.arrived))
    assert shown == ["first", "second"], f"tabs that showed the logout message: {shown}"
    assert arrived == ["first", "second"], f"tabs that went to the login page: {arrived}"
