"""The vendored browser code (src/quire/ui/static/vendor, built by
`make vendor`): the committed files and their licences are there, the
bundle holds nothing the admin's CSP forbids, and in Debian's chromium,
under that CSP, the editors of window.QuireEditors work and htmx and
Sortable load without an error.

The browser part skips when chromium or playwright is missing; with
QUIRE_TESTS_STRICT=1 (CI) it fails instead."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.chromium import TIMEOUT_MS, launched

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

ROOT = Path(__file__).resolve().parents[2]
VENDORED = ROOT / "src" / "quire" / "ui" / "static" / "vendor"
PROJECT = ROOT / "vendor"
# The admin's policy for scripts and styles (scripts only from files).
CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:"

SCRIPTS = ("htmx.min.js", "sortable.min.js", "editors.js")
LICENCES = {"htmx.min.js": "htmx.LICENSE", "sortable.min.js": "sortable.LICENSE",
            "editors.js": "editors.LICENSES.txt"}
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>editors</title>
<link rel="stylesheet" href="/vendor/editors.css">
<script src="/vendor/htmx.min.js"></script>
<script src="/vendor/sortable.min.js"></script>
<script src="/vendor/editors.js"></script>
</head><body>
<p><button type="button" id="before">before</button></p>
<div id="rich"></div>
<div id="code"></div>
<div id="notes"></div>
</body></html>
"""



# -- the committed files ------------------------------------------------------------


def test_the_vendored_files_are_committed_with_their_licences() -> None:
    for script, licence in LICENCES.items():
        assert (VENDORED / script).stat().st_size > 10_000, script
        assert re.search(r"^Permission (is hereby granted|to use, copy)", (VENDORED / licence).read_text(), re.M), licence
    assert (VENDORED / "editors.css").read_text().count(".qe-") > 10
    readme = (VENDORED / "README.md").read_text()
    assert "make vendor" in readme


def test_the_bundle_has_no_eval_and_its_licences_name_every_library() -> None:
    bundle = (VENDORED / "editors.js").read_text()
    assert "eval(" not in bundle
    assert "new Function" not in bundle
    assert "QuireEditors" in bundle
    licences = (VENDORED / "editors.LICENSES.txt").read_text()
    for package in ("@tiptap/core", "@tiptap/starter-kit", "@tiptap/extension-link", "prosemirror-model",
                    "prosemirror-view", "codemirror", "@codemirror/view", "@codemirror/lang-markdown",
                    "@lezer/markdown"):
        assert re.search(rf"^{re.escape(package)}@\d+\.\d+\.\d+ \(MIT\)", licences, re.M), package


def test_versions_are_pinned_and_the_readme_names_them() -> None:
    manifest = json.loads((PROJECT / "package.json").read_text())
    assert manifest["private"] is True
    pinned = {**manifest["dependencies"], **manifest["devDependencies"]}
    assert "esbuild" in manifest["devDependencies"]
    for name, version in pinned.items():
        assert re.fullmatch(r"\d+\.\d+\.\d+", version), f"{name} {version} is a range, not a pinned version"
    lock = json.loads((PROJECT / "package-lock.json").read_text())
    readme = (VENDORED / "README.md").read_text()
    for name in ("htmx.org", "sortablejs", "@tiptap/core", "codemirror", "esbuild"):
        assert lock["packages"][f"node_modules/{name}"]["version"] == pinned[name]
        assert f"{name} {pinned[name]}" in readme, name
    assert pinned["htmx.org"].startswith("2.")
    assert pinned["@tiptap/core"].startswith("2.")


# -- in the browser -----------------------------------------------------------------


@pytest.fixture(scope="module")
def chromium() -> Iterator[Browser]:
    with launched() as browser:
        yield browser


class _Files(BaseHTTPRequestHandler):
    """The test page at / and the vendored files at /vendor/..., every answer
    under the admin's Content-Security-Policy."""

    def do_GET(self) -> None:
        if self.path == "/favicon.ico":
            self.send_response(204)
            self.end_headers()
            return
        if self.path == "/":
            body, kind = PAGE.encode(), "text/html; charset=utf-8"
        else:
            name = self.path.removeprefix("/vendor/")
            target = VENDORED / name
            if "/" in name or not self.path.startswith("/vendor/") or not target.is_file():
                self.send_error(404)
                return
            body = target.read_bytes()
            kind = "text/css" if name.endswith(".css") else "text/javascript"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Files)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def page(chromium: Browser, site: str) -> Iterator[Page]:
    """The test page with the vendored scripts loaded; at the end, no console
    error and no uncaught exception (a CSP violation is a console error)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"pageerror: {e}"))
    page.goto(site)
    page.evaluate("window.changes = []")
    try:
        yield page
        assert errors == []
    finally:
        context.close()


def test_htmx_and_sortable_load(page: Page) -> None:
    assert page.evaluate("typeof htmx.ajax") == "function"
    assert page.evaluate("htmx.version").startswith("2.")
    assert page.evaluate("typeof Sortable.create") == "function"
    assert page.evaluate("Object.keys(QuireEditors).sort()") == ["code", "richText"]


def _rich(page: Page, html: str = "<p>Hello</p>") -> None:
    page.evaluate(
        """html => { window.rich = QuireEditors.richText(document.getElementById('rich'),
              {html, label: 'Body', onChange: h => window.changes.push(h)}); }""",
        html,
    )


def test_rich_text_has_a_labelled_toolbar_and_bold_makes_strong(page: Page) -> None:
    from playwright.sync_api import expect

    _rich(page)
    toolbar = page.get_by_role("toolbar", name="Body: formatting")
    expect(toolbar).to_be_visible()
    labels = ["Bold", "Italic", "Strikethrough", "Heading 2", "Heading 3", "Bullet list", "Numbered list",
              "Blockquote", "Code block", "Link", "Remove link", "Undo", "Redo"]
    buttons = toolbar.get_by_role("button")
    expect(buttons).to_have_count(len(labels))
    for i, label in enumerate(labels):
        button = buttons.nth(i)
        expect(button).to_have_attribute("aria-label", label)
        expect(button).to_have_attribute("type", "button")
        assert button.get_attribute("title", timeout=TIMEOUT_MS)
    for mark in ("Bold", "Italic", "Strikethrough"):
        expect(toolbar.get_by_role("button", name=mark, exact=True)).to_have_attribute("aria-pressed", "false")

    area = page.get_by_role("textbox", name="Body")
    expect(area).to_have_attribute("aria-multiline", "true")
    area.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(" and ")
    bold = toolbar.get_by_role("button", name="Bold", exact=True)
    bold.click()
    expect(bold).to_have_attribute("aria-pressed", "true")
    page.keyboard.type("loud")
    assert page.evaluate("rich.getHTML()") == "<p>Hello and <strong>loud</strong></p>"
    assert page.evaluate("window.changes.at(-1)") == "<p>Hello and <strong>loud</strong></p>"

    # Undo takes the typing back; the toolbar is one tab stop, arrows move in it.
    toolbar.get_by_role("button", name="Undo").click()
    assert "loud" not in page.evaluate("rich.getHTML()")
    bold.focus()
    page.keyboard.press("ArrowRight")
    expect(toolbar.get_by_role("button", name="Italic")).to_be_focused()
    expect(toolbar.get_by_role("button", name="Italic")).to_have_attribute("tabindex", "0")
    expect(bold).to_have_attribute("tabindex", "-1")
    page.keyboard.press("End")
    expect(toolbar.get_by_role("button", name="Redo")).to_be_focused()


def test_rich_text_set_html_round_trips_without_on_change(page: Page) -> None:
    _rich(page)
    html = "<h2>Title</h2><ul><li><p>one</p></li></ul><blockquote><p><em>said</em></p></blockquote>"
    page.evaluate("html => rich.setHTML(html)", html)
    assert page.evaluate("rich.getHTML()") == html
    assert page.evaluate("window.changes") == []
    page.evaluate("rich.setHTML('')")
    assert page.evaluate("rich.getHTML()") == ""
    page.evaluate("rich.destroy()")
    assert page.evaluate("document.getElementById('rich').children.length") == 0


def test_rich_text_link_takes_the_address_in_a_labelled_box(page: Page) -> None:
    from playwright.sync_api import expect

    _rich(page, "<p>Quire</p>")
    page.get_by_role("textbox", name="Body").click()
    page.keyboard.press("Control+A")
    page.get_by_role("button", name="Link", exact=True).click()
    address = page.get_by_label("Link address")
    expect(address).to_be_focused()
    address.fill("javascript:alert(1)")
    address.press("Enter")
    expect(page.get_by_role("alert")).to_contain_text("web address")
    assert "href" not in page.evaluate("rich.getHTML()")
    address.fill("https://example.com/")
    address.press("Enter")
    expect(address).to_be_hidden()
    assert page.evaluate("rich.getHTML()") == (
        '<p><a rel="noopener noreferrer" href="https://example.com/">Quire</a></p>')
    remove = page.get_by_role("button", name="Remove link")
    expect(remove).to_have_attribute("aria-disabled", "false")
    remove.click()
    assert page.evaluate("rich.getHTML()") == "<p>Quire</p>"


def test_code_editor_highlights_numbers_lines_and_reports_typing(page: Page) -> None:
    from playwright.sync_api import expect

    page.evaluate(
        """() => { window.code = QuireEditors.code(document.getElementById('code'),
              {doc: '{"a": 1}', language: 'json', label: 'Data', onChange: t => window.changes.push(t)}); }"""
    )
    box = page.locator("#code .qe-code")
    expect(box).to_have_attribute("data-language", "json")
    expect(box.locator(".cm-lineNumbers")).to_be_visible()
    content = page.get_by_role("textbox", name="Data")
    expect(content).to_be_visible()
    # Highlighting: the JSON's property name and number are styled tokens.
    # (polled: the parser may finish in a later idle slice on a loaded machine)
    expect(box.locator(".cm-line span").nth(1)).to_be_attached()
    content.click()
    page.keyboard.press("Control+End")
    page.keyboard.press("Enter")
    page.keyboard.type("[true]")
    value = page.evaluate("code.getValue()")
    assert value.startswith('{"a": 1}\n')
    assert value.rstrip().endswith("[true]")
    assert page.evaluate("window.changes.at(-1)") == value
    expect(box.locator(".cm-gutterElement", has_text="2")).to_be_visible()

    count = page.evaluate("window.changes.length")
    page.evaluate("code.setValue('[]')")
    assert page.evaluate("code.getValue()") == "[]"
    assert page.evaluate("window.changes.length") == count
    page.evaluate("code.destroy()")
    assert page.evaluate("document.getElementById('code').children.length") == 0


def test_code_editor_wraps_markdown_and_takes_unknown_languages_as_text(page: Page) -> None:
    from playwright.sync_api import expect

    page.evaluate(
        """() => {
          window.md = QuireEditors.code(document.getElementById('code'),
              {doc: '# Title\\n\\nSome *text*', language: 'markdown', label: 'Notes'});
          window.other = QuireEditors.code(document.getElementById('notes'),
              {doc: 'key: value', language: 'yaml', label: 'Other'});
        }"""
    )
    expect(page.locator("#code .qe-code")).to_have_attribute("data-language", "markdown")
    expect(page.get_by_role("textbox", name="Notes")).to_have_class(re.compile(r"\bcm-lineWrapping\b"))
    expect(page.locator("#notes .qe-code")).to_have_attribute("data-language", "text")
    expect(page.get_by_role("textbox", name="Other")).not_to_have_class(re.compile(r"\bcm-lineWrapping\b"))
    assert page.evaluate("other.getValue()") == "key: value"
    page.evaluate("md.focus()")
    expect(page.get_by_role("textbox", name="Notes")).to_be_focused()
