"""A revision's values as an editor reads them, side by side: linked items
by their titles (links to them), pictures as thumbnails, rich text and
long texts as readable text with the words that changed marked, other
values as text. Everything the document holds is escaped here; the page
shows the Markup as it is."""

from __future__ import annotations

import difflib
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from markupsafe import Markup, escape

from quire.content.screens import widgets

WORDY = {"text", "longtext", "markdown", "code", "wysiwyg"}
MAX_TEXT = 20_000  # characters of a text compared word by word (longer: cut, said so)
BLOCKS = re.compile(r"</(p|div|li|h[1-6]|blockquote|pre|tr)>|<br\s*/?>", re.I)
TAGS = re.compile(r"<[^>]*>")
WORDS = re.compile(r"\s+|[^\s]+")


@dataclass
class Refs:
    """What the values name, looked up once for the page: item titles by
    id, assets by id ({title, image}); an id missing is gone (or not the
    reader's to see)."""

    items: dict[str, str] = field(default_factory=dict)
    assets: dict[str, dict[str, Any]] = field(default_factory=dict)
    item_url: Callable[[str, str], str] = lambda model, item_id: ""


def refs_in(values: list[Any], kind: str) -> list[tuple[str, str]]:
    """(model, id) of each link (kind "link") or ("", id) of each asset in
    the values of a field."""
    out: list[tuple[str, str]] = []
    for value in values:
        for ref in value if isinstance(value, list) else [value]:
            if isinstance(ref, dict) and isinstance(ref.get("_id"), str):
                out.append((str(ref.get("_model") or "") if kind == "link" else "", ref["_id"]))
            elif isinstance(ref, str):
                out.append(("", ref))
    return out


def side_by_side(kind: str | None, before: Any, after: Any, missing_before: bool, missing_after: bool,
                 refs: Refs, plain: Callable[[Any], str]) -> tuple[Markup, Markup]:
    """The two cells of a changed field: (before, after)."""
    if kind in WORDY and isinstance(before, str | None) and isinstance(after, str | None):
        return _words(_readable(before or "", kind), _readable(after or "", kind))
    cells = []
    for value, missing, mark in ((before, missing_before, "del"), (after, missing_after, "ins")):
        if missing or value is None or value == "" or value == []:
            cells.append(Markup('<span class="hint">(none)</span>'))
        elif kind == "link":
            cells.append(Markup(f"<{mark}>") + _links(value, refs) + Markup(f"</{mark}>"))
        elif kind == "asset":
            cells.append(Markup(f"<{mark}>") + _assets(value, refs) + Markup(f"</{mark}>"))
        else:
            cells.append(Markup(f"<{mark}>") + escape(plain(value)) + Markup(f"</{mark}>"))
    return cells[0], cells[1]


def _readable(text: str, kind: str) -> str:
    """Rich text as the words a reader sees (tags gone, one line a block)."""
    if kind != "wysiwyg":
        return text[:MAX_TEXT]
    text = BLOCKS.sub(lambda m: m.group(0) + "\n", text)
    return html.unescape(TAGS.sub("", text)).strip()[:MAX_TEXT]


def _words(before: str, after: str) -> tuple[Markup, Markup]:
    """Both texts whole, the words only one of them has marked."""
    old, new = WORDS.findall(before), WORDS.findall(after)
    left, right = Markup(), Markup()
    for op, a1, a2, b1, b2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        gone, came = escape("".join(old[a1:a2])), escape("".join(new[b1:b2]))
        if op == "equal":
            left += gone
            right += came
            continue
        if gone:
            left += Markup("<del>") + gone + Markup("</del>")
        if came:
            right += Markup("<ins>") + came + Markup("</ins>")
    empty = Markup('<span class="hint">(none)</span>')
    return left or empty, right or empty


def _links(value: Any, refs: Refs) -> Markup:
    out = []
    for model, item_id in refs_in([value], "link"):
        title = refs.items.get(item_id)
        if title is None:
            out.append(Markup('<span class="gone">an item no longer there ({0})</span>').format(item_id))
        else:
            out.append(Markup('<a href="{0}">{1}</a>').format(refs.item_url(model, item_id), title))
    return Markup(", ").join(out)


def _assets(value: Any, refs: Refs) -> Markup:
    out = []
    for _, asset_id in refs_in([value], "asset"):
        asset = refs.assets.get(asset_id)
        if asset is None:
            out.append(Markup('<span class="gone">an asset no longer there ({0})</span>').format(asset_id))
            continue
        title = asset.get("title") or asset_id
        if asset.get("type") == "image":
            out.append(Markup('<span class="asset-thumb"><img src="/studio/assets/thumb/{0}" alt="" width="64" '
                              'height="64" loading="lazy"> {1}</span>').format(asset_id, title))
        else:
            out.append(Markup('<span class="asset-thumb">{0}</span>').format(title))
    return Markup(" ").join(out)


def plain_text(value: Any) -> str:
    return widgets.short(value, 4000)
