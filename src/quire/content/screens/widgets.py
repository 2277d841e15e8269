"""What the editor's widgets (content/widgets/field.html) need besides the
field and its value: the value as the text an input holds, ids, the
options of a select, the field groups, and a short form of any value for
the conflict screen. Passed to the templates as `w`."""

from __future__ import annotations

import functools
import hashlib
from typing import Any

import orjson
from jinja2 import Template
from markupsafe import Markup

from quire.content import types
from quire.content.screens.formdata import PREFIX, VARIANTS_KEY
from quire.ui.web import templates

CODE_LANGUAGES = {"markdown", "html", "css", "javascript", "json", "text"}
ENTRY_KEY = "k"  # rendered repeater entries are k0, k1, ...; new ones get a key of the page's script


def dom_id(path: str) -> str:
    """The id of a path's input: `f.seo.title` -> `f-seo-title`."""
    return path.replace(".", "-").replace("~", "mark")


def placeholder(path: str) -> str:
    """The key a repeater's blank entry (its <template>) carries until the
    script replaces it by a fresh one; one per depth, so that a repeater in
    a repeater's entry keeps its own."""
    return f"__K{path.count('.')}__"


def text(field: dict[str, Any], value: Any) -> str:
    """A single value as the text its input holds."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    kind = field["type"]
    if kind == "tags":
        return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    if kind in ("asset", "contentItemLink"):
        return str(value.get("_id", "")) if isinstance(value, dict) else str(value)
    if kind == "number" and isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    if isinstance(value, bool | int | float):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return json_text(value)


def json_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value  # what was typed, kept after an error
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


def options(field: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for option in (field.get("opts") or {}).get("options") or []:
        if isinstance(option, dict):
            value = str(option.get("value", ""))
            out.append((value, str(option.get("label") or value)))
        else:
            out.append((str(option), str(option)))
    return out


def language(field: dict[str, Any]) -> str:
    if field["type"] == "markdown":
        return "markdown"
    wanted = (field.get("opts") or {}).get("language")
    return wanted if wanted in CODE_LANGUAGES else "text"


def entries(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def variants(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict) and isinstance(value.get(VARIANTS_KEY), list):
        return [v for v in value[VARIANTS_KEY] if isinstance(v, dict)]
    return []


def variant_meta(variant: dict[str, Any]) -> str:
    """A variant's meta without its schedule (edited on its own), kept."""
    meta = variant.get("meta")
    if not isinstance(meta, dict):
        return ""
    rest = {k: v for k, v in meta.items() if k != "schedule"}
    return json_text(rest) if rest else ""


def schedule(variant: dict[str, Any]) -> str:
    meta = variant.get("meta")
    return json_text(meta.get("schedule")) if isinstance(meta, dict) else ""


def subfields(field: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"label": f.get("name"), "i18n": False, "required": False, "multiple": False, "opts": {}, **f}
            for f in (field.get("opts") or {}).get("fields", []) if isinstance(f, dict) and f.get("name")]


def ref_id(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("_id") or "")
    return value if isinstance(value, str) else ""


def groups(fields: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """The fields by their `group`, in the order the groups first appear;
    fields without a group come first, under "Content"."""
    out: dict[str, list[dict[str, Any]]] = {}
    for field in fields:
        out.setdefault(field.get("group") or "", []).append(field)
    return [(name or "Content", members) for name, members in out.items()]


def keys_of(field: dict[str, Any], codes: list[str]) -> list[str]:
    """The item keys a field's values live under: its name, and one per
    other locale when it is localized."""
    return [field["name"]] + ([f"{field['name']}_{c}" for c in codes] if field.get("i18n") else [])


def normal(value: Any) -> Any:
    """A value as stored, whatever a read added: an asset answered as the
    whole asset is compared by its id."""
    if isinstance(value, dict):
        if "_id" in value and "mime" in value and "path" in value:
            return {"_id": value["_id"]}
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def digest(value: Any) -> str:
    """A short fingerprint of a value, to see later whether it changed."""
    if value is None or value == "" or value == []:
        return "-"
    encoded = orjson.dumps(normal(value), option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(encoded, digest_size=6).hexdigest()


def digests(fields: list[dict[str, Any]], codes: list[str], item: dict[str, Any]) -> str:
    """`key=fingerprint;...` of every key the form edits: the form carries
    it, so that a refused save can say which fields moved on since."""
    return ";".join(f"{k}={digest(item.get(k))}" for f in fields for k in keys_of(f, codes))


def parse_digests(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(";"):
        key, eq, value = part.partition("=")
        if eq:
            out[key] = value
    return out


def short(value: Any, limit: int = 160) -> str:
    """Any value in a line, for the conflict screen."""
    if value is None or value == "" or value == []:
        return "(empty)"
    shown = value if isinstance(value, str) else orjson.dumps(normal(value)).decode()
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def path(*parts: str) -> str:
    return PREFIX + ".".join(parts)


def has_widget(kind: str) -> bool:
    """Whether the field type brings its own editor input (`FieldType.widget`)."""
    field_type = types.get(kind)
    return field_type is not None and field_type.widget is not None


def widget(field: dict[str, Any], **context: Any) -> Markup:
    """A type's own editor input, rendered with the input's id, path,
    value, label, placeholder and error reference, and `text` (the value
    as its input holds it)."""
    kind = types.get(field["type"])
    assert kind is not None and kind.widget is not None  # has_widget said so
    data = kind.widget_data(field) if kind.widget_data is not None else None
    return Markup(_compiled(kind.widget).render(text=text(field, context.get("value")), data=data, **context))


@functools.cache
def _compiled(source: str) -> Template:
    return templates.from_string(source)
