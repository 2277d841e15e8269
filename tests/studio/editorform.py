"""The item editor's form as a browser sends it, read from a page: for the
editor's tests and its benchmark (bench/studio_editor.py)."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode


class EditorForm(HTMLParser):
    """The inputs of the page's item form, in document order, as a browser
    sends them (checked boxes only, the selected option, no <template>)."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.pairs: list[tuple[str, str]] = []
        self.action = ""
        self._in_form = False
        self._template = 0
        self._textarea: str | None = None
        self._select: str | None = None
        self._text = ""
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and "data-editor" in a:
            self._in_form, self.action = True, a["action"]
        if not self._in_form:
            return
        if tag == "template":
            self._template += 1
        if self._template:
            return
        if tag == "input" and a.get("name") and a.get("type") != "file":
            if a.get("type") in ("checkbox", "radio") and "checked" not in a:
                return
            self.pairs.append((a["name"], a.get("value", "")))
        elif tag == "textarea" and a.get("name"):
            self._textarea, self._text = a["name"], ""
        elif tag == "select" and a.get("name"):
            self._select = a["name"]
            self.pairs.append((a["name"], ""))
            self._select_at = len(self.pairs) - 1
        elif tag == "option" and self._select and "selected" in a:
            self.pairs[self._select_at] = (self._select, a.get("value", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._in_form = False
        elif tag == "template":
            self._template -= 1
        elif tag == "textarea" and self._textarea:
            self.pairs.append((self._textarea, self._text.removeprefix("\n")))
            self._textarea = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data: str) -> None:
        if self._textarea:
            self._text += data

    def get(self, name: str) -> str:
        return dict(self.pairs)[name]

    def set(self, name: str, value: str) -> EditorForm:
        """Change an input's value (or add it, as a new entry would)."""
        if any(k == name for k, _ in self.pairs):
            self.pairs = [(k, value if k == name else v) for k, v in self.pairs]
        else:
            self.pairs.append((name, value))
        return self

    def drop(self, prefix: str) -> EditorForm:
        self.pairs = [(k, v) for k, v in self.pairs if not k.startswith(prefix)]
        return self


def post(browser: Any, form: EditorForm, path: str | None = None, intent: str | None = None) -> Any:
    """Submit the form (to its action, or `path`) as the browser would:
    by Enter (the first button), or by the button of `intent` ("publish":
    a published item's "Publish" rather than "Save draft")."""
    pairs = form.pairs if intent is None else [*form.pairs, ("intent", intent)]
    return browser.post(path or form.action, content=urlencode(pairs),
                        headers={"content-type": "application/x-www-form-urlencoded"})
