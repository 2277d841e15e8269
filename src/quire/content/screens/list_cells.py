"""A content list's columns and cells: which columns a model offers, which
are shown by default, and a short, safe rendering of a value per field
type (a list shows what an item is, the editor shows all of it)."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

from markupsafe import Markup, escape

from quire.content import types
from quire.content.models import Model
from quire.content.screens.titles import title_fields

MAX_TEXT = 80
# system columns every list offers (the state only to who sees drafts)
SYSTEM_COLUMNS = {"_created": "Created", "_modified": "Modified", "_state": "State", "_id": "ID"}
STATES = {1: "published", 0: "draft", -1: "archived"}
TAG = re.compile(r"<[^>]*>")


def title_column(model: Model) -> str:
    """The first column, always shown: the item's title (its title-like
    field, or its id), linked to the editor."""
    return (title_fields(model) or ["_id"])[0]


def available_columns(model: Model, drafts: bool) -> dict[str, str]:
    """name -> label of every column the list of `model` can show besides
    the title column."""
    first = title_column(model)
    out = {f["name"]: f.get("label") or f["name"] for f in model.fields if f["name"] != first}
    out.update((k, v) for k, v in SYSTEM_COLUMNS.items() if (drafts or k != "_state") and k != first)
    return out


def default_columns(model: Model, drafts: bool) -> list[str]:
    """After the title: up to three other short fields, the state (to who
    sees drafts) and the time of the last change."""
    first = title_column(model)
    others = [f["name"] for f in model.fields if f["name"] != first and f["type"] not in types.wide_types()][:3]
    return others + (["_state"] if drafts else []) + ["_modified"]


def chosen_columns(saved: Any, model: Model, drafts: bool) -> list[str]:
    """The columns a user chose (kept per user), those the model still
    has, in the model's order; the defaults when none is left."""
    available = available_columns(model, drafts)
    if isinstance(saved, list):
        names = [n for n in available if n in saved]
        if names:
            return names
    return default_columns(model, drafts)


def cell(model: Model, name: str, item: dict[str, Any], titles: dict[str, str] | None = None) -> Markup:
    """One value of `item` as list cell HTML (escaped); `titles` names the
    linked items (id -> title)."""
    value = item.get(name)
    if name in ("_created", "_modified"):
        return Markup('<time data-unix="{0}">{0}</time>').format(value) if isinstance(value, int) else Markup("")
    if name == "_state":
        state = STATES.get(value if isinstance(value, int) else 1, "published")
        out = Markup('<span class="state state-{0}">{0}</span>').format(state)
        for key, what in (("_publish_at", "publishes"), ("_unpublish_at", "unpublishes")):
            at = item.get(key)
            if isinstance(at, int) and not isinstance(at, bool):  # the schedule, in the viewer's time
                out += Markup(' <span class="hint scheduled">{0} <time data-unix="{1}">{1}</time></span>').format(
                    what, at)
        return out
    if name == "_id":
        return Markup("<code>{}</code>").format(value)
    definition = model.by_name.get(name, {"type": "text"})
    return escape(_short(definition, value, titles or {}))


def _short(definition: dict[str, Any], value: Any, titles: dict[str, str]) -> str:
    kind = definition["type"]
    if value is None or value == "" or value == []:
        return ""
    if isinstance(value, list) and kind not in ("set", "table", "variants", "object"):
        return _cut(", ".join(_short({**definition, "multiple": False}, v, titles) for v in value))
    field_type = types.get(kind)
    if field_type is not None and field_type.short is not None:  # a type's own short form
        return _cut(field_type.short(definition, value))
    if kind == "boolean":
        return "yes" if value else "no"
    if kind == "wysiwyg" and isinstance(value, str):
        return _cut(" ".join(unescape(TAG.sub(" ", value)).split()))
    if kind == "asset" and isinstance(value, dict):
        return _cut(str(value.get("title") or value.get("path") or value.get("_id") or "asset"))
    if kind == "contentItemLink" and isinstance(value, dict):
        label = titles.get(str(value.get("_id"))) or next(
            (value[k] for k in ("title", "name", "label") if isinstance(value.get(k), str)), None)
        return _cut(label or f"{value.get('_model', 'item')} {str(value.get('_id', ''))[-6:]}")
    if kind in ("set", "table", "variants") and isinstance(value, list):
        return f"{len(value)} entr{'y' if len(value) == 1 else 'ies'}"
    if isinstance(value, dict):
        return f"{len(value)} key{'' if len(value) == 1 else 's'}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return _cut(str(value))


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT - 1].rstrip() + "…"
