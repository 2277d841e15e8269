"""A posted item form -> item data, field type by field type: the inverse
of the editor's widgets (widgets.py and content/widgets/field.html).

Every input of a field is named after its path below `f.`: `f.title`,
`f.title_de` (a locale), `f.seo.keywords` (a sub-field of a set),
`f.links.k3` (an entry of a repeater: `k3` is any key; the entries' order
is the order the browser sends them in, so reordering in the page needs no
renumbering), `f.hero.k0.label` (a field of a variant). A repeater or set
also sends `<path>.~` so that one left with no entries is still seen (and
saved as empty) rather than taken for a field the form did not show.

Decoding checks only what the form itself can get wrong (a number that is
not one, JSON that does not parse); everything else is checked by
ContentService.save, with the API's messages."""

from __future__ import annotations

import re
from typing import Any

from quire.content import types
from quire.content.types import FieldError
from quire.ui.screens import Form, json_of

PREFIX = "f."
MARK = "~"  # "this repeater or set was in the form"
VARIANTS_KEY = "persona:variants"
_INT = re.compile(r"^[+-]?\d{1,15}$")

Tree = dict[str, Any]  # path part -> str (an input) or Tree


class Problem(Exception):
    """A value the form cannot turn into data; the message says why, as the
    API would ("must be a number")."""


def tree_of(form: Form) -> Tree:
    """The `f.` inputs as nested dicts, in the order they were sent; a name
    sent twice keeps its last value (a checkbox after its hidden "off")."""
    root: Tree = {}
    for name, value in form.pairs:
        if not name.startswith(PREFIX):
            continue
        parts = name[len(PREFIX):].split(".")
        node = root
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[parts[-1]] = value
    return root


def item_data(fields: list[dict[str, Any]], tree: Tree, codes: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The item data of the fields the form showed, and the problems found
    (key -> reason). A value with a problem keeps what was typed in its
    place (also deep in a set or a repeater), so the form shows it again."""
    data: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for field in fields:
        keys = [field["name"]] + ([f"{field['name']}_{code}" for code in codes] if field.get("i18n") else [])
        for key in keys:
            if key not in tree:
                continue
            problems: list[str] = []
            data[key] = value_of(field, tree[key], problems)
            if problems:
                errors[key] = "; ".join(problems)
    return data, errors


def value_of(field: dict[str, Any], node: Any, problems: list[str]) -> Any:
    if field.get("multiple") and field["type"] != "tags":
        single = {**field, "multiple": False}
        values = [single_value(single, entry, problems) for key, entry in _entries(node)]
        return [v for v in values if v is not None]
    return single_value(field, node, problems)


def _entries(node: Any) -> list[tuple[str, Any]]:
    if not isinstance(node, dict):
        return []
    return [(k, v) for k, v in node.items() if k != MARK]


def single_value(field: dict[str, Any], node: Any, problems: list[str]) -> Any:
    kind = field["type"]
    if kind == "set":
        return _set(field, node, problems)
    if kind == "variants":
        return _variants(node, problems)
    text = node if isinstance(node, str) else ""
    try:
        return _leaf(field, kind, text)
    except Problem as exc:
        problems.append(str(exc))
        return text


def _leaf(field: dict[str, Any], kind: str, text: str) -> Any:
    field_type = types.get(kind)
    if field_type is not None and field_type.from_form is not None:  # a type's own reading
        try:
            return field_type.from_form(field, text)
        except FieldError as exc:
            raise Problem(str(exc)) from None
    if field_type is not None and field_type.plain:
        return text if text.strip() else None
    if kind == "number":
        return _number(text)
    if kind == "boolean":
        return text in ("1", "on", "true")
    if kind == "tags":
        return [t.strip() for t in text.split(",") if t.strip()]
    if kind in ("object", "table"):
        return _json(text)
    if kind == "asset":
        return {"_id": text.strip()} if text.strip() else None
    if kind == "contentItemLink":
        target = (field.get("opts") or {}).get("link")
        return {"_model": target, "_id": text.strip()} if text.strip() else None
    if field_type is not None:  # a type of a module: JSON, as the API takes it
        return _json(text)
    return text or None


def _number(text: str) -> int | float | None:
    text = text.strip().replace(",", ".") if text.count(",") == 1 and "." not in text else text.strip()
    if not text:
        return None
    if _INT.match(text):
        return int(text)
    try:
        value = float(text)
    except ValueError:
        raise Problem("must be a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise Problem("must be a number")
    return value


def _json(text: str) -> Any:
    if not text.strip():
        return None
    try:
        return json_of(text)
    except ValueError as exc:
        raise Problem(f"must be valid JSON ({exc})") from None


def _set(field: dict[str, Any], node: Any, problems: list[str]) -> Any:
    subfields = [f for f in (field.get("opts") or {}).get("fields", []) if isinstance(f, dict)]
    if not subfields:  # a set without sub-fields takes any object: edited as JSON
        return single_value({"type": "object"}, node, problems)
    if not isinstance(node, dict):
        return None
    out: dict[str, Any] = {}
    for sub in subfields:
        if sub["name"] in node:
            found: list[str] = []
            out[sub["name"]] = value_of({"multiple": False, **sub}, node[sub["name"]], found)
            problems.extend(f"field {sub['name']} {p}" for p in found)
    if all(v is None or v == [] for v in out.values()):
        return None
    return out


def _variants(node: Any, problems: list[str]) -> Any:
    """A variants container: each entry's id, label, active flag, audience
    tags, schedule and data (the last two as JSON)."""
    variants = []
    for number, (_key, entry) in enumerate(_entries(node), 1):
        if not isinstance(entry, dict):
            continue
        # each part is one input; a crafted name nesting below it is not ours
        entry = {k: v for k, v in entry.items() if isinstance(v, str)}
        variant: dict[str, Any] = {}
        if entry.get("id"):
            variant["id"] = entry["id"]
        if entry.get("label", "").strip():
            variant["label"] = entry["label"].strip()
        variant["active"] = entry.get("active") in ("1", "on", "true")
        variant["audience"] = [t.strip() for t in entry.get("audience", "").split(",") if t.strip()]
        parts: dict[str, Any] = {}
        for part in ("data", "meta", "schedule"):
            text = entry.get(part, "")
            try:
                parts[part] = _json(text)
            except Problem as exc:
                problems.append(f"variant {number}: {part} {exc}")
                parts[part] = text  # kept as typed; the form shows it again
        variant["data"] = {} if parts["data"] is None else parts["data"]
        meta = parts["meta"] or {}
        if isinstance(meta, dict):
            meta = dict(meta)
            if parts["schedule"] is not None:
                meta["schedule"] = parts["schedule"]
            else:
                meta.pop("schedule", None)
        if meta:
            variant["meta"] = meta
        variants.append(variant)
    return {VARIANTS_KEY: variants} if variants else None
