"""The searchable text of a field value: rich text without its markup,
arrays and objects flattened to their strings and numbers."""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

_BLOCKS = {"p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "section",
           "article", "blockquote", "pre", "ul", "ol", "table", "hr"}
_SKIP = {"script", "style", "template", "noscript"}


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIP:
            self.skipping += 1
        elif tag in _BLOCKS:
            self.parts.append(" ")
        for name, value in attrs:  # words people see: image descriptions and titles
            if name in ("alt", "title") and value and not self.skipping:
                self.parts.append(f" {value} ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP and self.skipping:
            self.skipping -= 1
        elif tag in _BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def strip_html(markup: str) -> str:
    if "<" not in markup and "&" not in markup:
        return markup
    parser = _Text()
    parser.feed(markup)
    parser.close()
    return " ".join("".join(parser.parts).split())


def searchable(value: Any, html: bool = True) -> str:
    """All the text in `value`, one space between parts; markup removed
    when `html` (rich text), else taken as written (`a <b> tag` in a plain
    text field is those words)."""
    parts: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(strip_html(item) if html else item)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            parts.append(str(item))
        elif isinstance(item, dict):
            stack.extend(reversed([v for k, v in item.items() if not str(k).startswith("_")]))
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return " ".join(p for p in parts if p)
