"""Field types of content models and the validation of their values:
Quire's own types (registered here with `quire.content.types`, in the
order the model builder's menu offers them) and the checks of a model's
field definitions and of values."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date, datetime, time
from typing import Any

from quire.content import conditions, richtext, types
from quire.content.types import FieldError, FieldType
from quire.content.types.anyjson import JSON_TYPE
from quire.content.types.color import COLOR_TYPE
from quire.content.types.layout import LAYOUT_TYPE, use_field_checks
from quire.ids import is_id

FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def check_value(field: dict[str, Any], value: Any, depth: int = 0) -> Any:
    """Validate (and lightly normalise) one non-null value of `field`."""
    if field.get("multiple") and field["type"] != "tags":
        if not isinstance(value, list):
            raise FieldError("must be a list")
        single = {**field, "multiple": False}
        return [check_value(single, v, depth) for v in value]
    kind = types.get(field["type"])
    if kind is None:
        raise FieldError(f"has unknown type {field['type']}")
    return kind.check(field, value, depth)


def _check_text(field: dict[str, Any], value: Any, depth: int) -> str:
    if not isinstance(value, str):
        raise FieldError("must be text")
    return value


def _check_wysiwyg(field: dict[str, Any], value: Any, depth: int) -> str:
    """HTML, cleaned by the field's allow-list (content/richtext.py)."""
    return richtext.clean(_check_text(field, value, depth), (field.get("opts") or {}).get("html"))


def _check_select(field: dict[str, Any], value: Any, depth: int) -> str:
    _check_text(field, value, depth)
    options = (field.get("opts") or {}).get("options")
    if isinstance(options, list) and options and value not in _option_values(options):
        raise FieldError(f"must be one of {', '.join(map(str, _option_values(options)))}")
    return value


def _check_number(field: dict[str, Any], value: Any, depth: int) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise FieldError("must be a number")
    return value


def _check_boolean(field: dict[str, Any], value: Any, depth: int) -> bool:
    if not isinstance(value, bool):
        raise FieldError("must be true or false")
    return value


def _check_tags(field: dict[str, Any], value: Any, depth: int) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise FieldError("must be a list of strings")
    return value


def _check_object(field: dict[str, Any], value: Any, depth: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError("must be an object")
    return value


def _check_table(field: dict[str, Any], value: Any, depth: int) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise FieldError("must be a list of rows (objects)")
    return value


def _check_variants(field: dict[str, Any], value: Any, depth: int) -> Any:
    from quire.persona.variants import VariantError, check_container

    try:
        return check_container(value)
    except VariantError as exc:
        raise FieldError(str(exc)) from None


def _check_asset(field: dict[str, Any], value: Any, depth: int) -> dict[str, Any]:
    return {"_id": _check_ref(value, "asset")["_id"]}  # the asset itself is read live


def _check_link(field: dict[str, Any], value: Any, depth: int) -> dict[str, Any]:
    target = (field.get("opts") or {}).get("link")
    ref = _check_ref(value, "item")
    model = ref.get("_model", target)
    if target and model != target:
        raise FieldError(f"must link to an item of {target}")
    return {"_model": model, "_id": ref["_id"]}


def _option_values(options: list[Any]) -> list[Any]:
    return [o.get("value") if isinstance(o, dict) else o for o in options]


def _check_time(field: dict[str, Any], value: Any, depth: int) -> str:
    kind = field["type"]
    if not isinstance(value, str):
        raise FieldError(f"must be a {kind} string")
    try:
        if kind == "date":
            date.fromisoformat(value)
        elif kind == "datetime":
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        else:
            time.fromisoformat(value)
    except ValueError:
        example = {"date": "2026-01-31", "datetime": "2026-01-31T12:00:00Z", "time": "12:30"}[kind]
        raise FieldError(f"must be an ISO {kind} like {example}") from None
    return value


def _check_ref(value: Any, what: str) -> dict[str, Any]:
    if isinstance(value, str):
        value = {"_id": value}
    if not isinstance(value, dict) or not is_id(value.get("_id")):
        raise FieldError(f"must be an {what} reference {{\"_id\": \"<24 hex>\"}}")
    return value


# the per-locale key of a localized field inside a set: `title_de`
SUB_LOCALE_KEY = re.compile(r"^([A-Za-z][A-Za-z0-9_]*?)_([a-zA-Z]{2,3}(?:[_-][a-zA-Z0-9]{2,8})*)$")


def _localized_sub(subfields: dict[str, dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The localized sub-field a per-locale key (`title_de`) belongs to."""
    match = SUB_LOCALE_KEY.match(key)
    if match is None:
        return None
    subfield = subfields.get(match.group(1))
    return subfield if subfield is not None and subfield.get("i18n") else None


def localized_inside(fields: list[dict[str, Any]], depth: int = 0) -> dict[str, Any]:
    """The set fields that hold localized sub-fields, as a tree: `{set
    name: {"fields": [localized sub-field names], "sets": {...}}}` (empty
    when there are none)."""
    out: dict[str, Any] = {}
    if depth > 8:
        return out
    for f in fields:
        if f.get("type") != "set":
            continue
        subs = [s for s in (f.get("opts") or {}).get("fields", []) if isinstance(s, dict) and s.get("name")]
        names = [s["name"] for s in subs if s.get("i18n")]
        inner = localized_inside(subs, depth + 1)
        if names or inner:
            out[f["name"]] = {"fields": names, "sets": inner}
    return out


def _check_set(field: dict[str, Any], value: Any, depth: int) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError("must be an object")
    subfields = {f["name"]: f for f in (field.get("opts") or {}).get("fields", []) if isinstance(f, dict)}
    if not subfields or depth > 8:
        return value
    out: dict[str, Any] = {}
    for key, sub in value.items():
        subfield = subfields.get(key) or _localized_sub(subfields, key)
        if subfield is None:
            raise FieldError(f"has unknown field {key}")
        if sub is None:
            out[key] = None
            continue
        try:
            out[key] = check_value(subfield, sub, depth + 1)
        except FieldError as exc:
            raise FieldError(f"field {key} {exc}") from None
    return out


def _link_options(opts: Mapping[str, Any]) -> str | None:
    link = opts.get("link")
    if not isinstance(link, str) or not FIELD_NAME.match(link):
        return "contentItemLink needs opts.link, the target model"
    return None


def _wysiwyg_options(opts: Mapping[str, Any]) -> str | None:
    return richtext.check_options(opts["html"]) if "html" in opts else None


_STRING = {"type": "string"}
_REF = {"type": "object", "properties": {"_id": {"type": "string"}}}
# Quire's own types, in the order the model builder's menu offers them (the
# common ones first; `color` and `json` are files of their own in types/).
BUILT_IN = [
    FieldType("text", _check_text, hint="text", plain=True, sortable=True, schema=_STRING),
    FieldType("longtext", _check_text, label="long text", hint="text", plain=True, sortable=True, wide=True,
              schema=_STRING),
    FieldType("wysiwyg", _check_wysiwyg, label="rich text (wysiwyg)", hint="text", plain=True, wide=True, rich=True,
              check_options=_wysiwyg_options, schema=_STRING),
    FieldType("markdown", _check_text, hint="text", plain=True, sortable=True, wide=True, rich=True, schema=_STRING),
    FieldType("code", _check_text, hint="text", plain=True, sortable=True, wide=True, schema=_STRING),
    FieldType("number", _check_number, hint="number", sortable=True, example="42", schema={"type": "number"}),
    FieldType("boolean", _check_boolean, hint="bool", sortable=True, example="true", schema={"type": "boolean"}),
    FieldType("date", _check_time, hint="text", plain=True, sortable=True, schema={"type": "string", "format": "date"}),
    FieldType("datetime", _check_time, label="date and time", hint="text", plain=True, sortable=True,
              schema={"type": "string", "format": "date-time"}),
    FieldType("time", _check_time, hint="text", plain=True, sortable=True, schema={"type": "string", "format": "time"}),
    FieldType("select", _check_select, hint="text", plain=True, sortable=True, schema=_STRING),
    FieldType("tags", _check_tags, example="[\"a\", \"b\"]", schema={"type": "array", "items": _STRING}),
    COLOR_TYPE,
    FieldType("object", _check_object, wide=True, rich=True, schema={"type": "object"}),
    JSON_TYPE,
    LAYOUT_TYPE,
    FieldType("set", _check_set, label="set (sub-fields)", wide=True, rich=True, schema={"type": "object"}),
    FieldType("table", _check_table, wide=True, rich=True, example='[{"a": 1}]',
              schema={"type": "array", "items": {"type": "object"}}),
    FieldType("asset", _check_asset, example='"<asset id>"', schema=_REF),
    FieldType("contentItemLink", _check_link, label="content link", example='"<item id>"',
              check_options=_link_options, schema=_REF),
    FieldType("variants", _check_variants, label="variants (persona)", wide=True, schema={}),
]
for _kind in BUILT_IN:
    types.register(_kind)


def is_empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def validate_definition_field(raw: Any, index: int) -> dict[str, Any]:
    """A field of a model definition, checked and normalised."""
    where = f"fields[{index}]"
    if not isinstance(raw, dict):
        raise FieldError(f"{where} must be an object")
    name = raw.get("name")
    if not isinstance(name, str) or not FIELD_NAME.match(name):
        raise FieldError(f"{where}.name must match ^[A-Za-z][A-Za-z0-9_]*$")
    kind = raw.get("type", "text")
    field_type = types.get(kind)  # a list or object is no type
    if field_type is None:
        raise FieldError(f"{where} ({name}): unknown type {kind!r}; use one of {', '.join(sorted(types.names()))}")
    opts = raw.get("opts") or {}
    if not isinstance(opts, dict):
        raise FieldError(f"{where} ({name}): opts must be an object")
    problem = field_type.check_options(opts) if field_type.check_options is not None else None
    if problem:
        raise FieldError(f"{where} ({name}): {problem}")
    for flag in ("i18n", "required", "multiple"):
        if flag in raw and not isinstance(raw[flag], bool):
            raise FieldError(f"{where} ({name}): {flag} must be true or false")
    unknown = set(raw) - {"name", "type", "label", "i18n", "required", "multiple", "opts", "default", "info", "group",
                          *conditions.KEYS}
    if unknown:
        raise FieldError(f"{where} ({name}): unknown keys {', '.join(sorted(unknown))}")
    field = {
        "name": name,
        "type": kind,
        "label": raw.get("label") or name,
        "i18n": bool(raw.get("i18n", False)),
        "required": bool(raw.get("required", False)),
        "multiple": bool(raw.get("multiple", False)),
        "opts": opts,
    }
    for key in conditions.KEYS:  # conditional fields (content/conditions.py)
        if key in raw and raw[key] is not None:
            problem = conditions.check_rule(raw[key])
            if problem:
                raise FieldError(f"{where} ({name}): {key} {problem}")
            field[key] = raw[key]
    for extra in ("info", "group"):  # editor hints, kept as given
        if extra in raw:
            if not isinstance(raw[extra], str):
                raise FieldError(f"{where} ({name}): {extra} must be a string")
            field[extra] = raw[extra]
    if "default" in raw and raw["default"] is not None:
        try:
            field["default"] = check_value(field, raw["default"])
        except FieldError as exc:
            raise FieldError(f"{where} ({name}): default {exc}") from None
    return field


use_field_checks(check_value, is_empty, validate_definition_field)
