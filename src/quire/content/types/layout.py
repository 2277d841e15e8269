"""The `layout` field type: blocks. A value is a list of components, each
a typed block of data, stored and answered as Cockpit's layout field is:

    {"component": "heading", "label": "Intro", "id": "…", "data": {"text": "Hello", "level": "2"}}
    {"component": "section", "data": {"class": "hero"}, "children": [<components>]}
    {"component": "grid", "data": {"colWidth": "1-2"}, "columns": [{"components": [<components>]}, …]}

The core components are Cockpit's (heading, richtext, markdown, html,
image, link, button, spacer, section, grid); a field defines its own in
`opts.components` (`{name, label, group, fields}`, the fields as a model's
are), and limits what may be used with `opts.allowedComponents` (names) or
`opts.allowedGroups`. Each component's data is checked field by field as
an item's fields are (rich text cleaned, numbers numbers, options options);
an instance without an `id` gets one."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from quire.content.types import FieldError, FieldType
from quire.ids import new_id

MAX_LEVELS = 6  # sections and grids inside each other
MAX_OWN = 100  # a field's own components (and as many shared ones: content/library.py)
MAX_COMPONENTS = 500  # in one value, at every level together
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
INSTANCE_KEYS = {"component", "label", "id", "data", "children", "columns"}
# A component's fields are checked as a model's are, by content/fields.py,
# which registers this type and hands its checks over with `use_field_checks`
# (so this file does not import the module that imports it).
_checks: dict[str, Callable[..., Any]] = {}


def use_field_checks(check_value: Callable[[dict[str, Any], Any, int], Any], is_empty: Callable[[Any], bool],
                     validate_field: Callable[[Any, int], dict[str, Any]]) -> None:
    _checks.update(check_value=check_value, is_empty=is_empty, validate_field=validate_field)


TARGETS = [{"value": "_self", "label": "Same window"}, {"value": "_blank", "label": "New window"}]


def _f(name: str, kind: str, label: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "label": label, "i18n": False, "required": False, "multiple": False,
            "opts": extra.pop("opts", {}), **extra}


CORE: list[dict[str, Any]] = [
    {"name": "heading", "label": "Heading", "group": "Core", "fields": [
        _f("text", "text", "Text"), _f("level", "select", "Level", opts={"options": ["1", "2", "3", "4", "5", "6"]})]},
    {"name": "richtext", "label": "Rich text", "group": "Core", "fields": [_f("html", "wysiwyg", "Text")]},
    {"name": "markdown", "label": "Markdown", "group": "Core", "fields": [_f("markdown", "markdown", "Markdown")]},
    {"name": "html", "label": "HTML", "group": "Core", "fields": [
        _f("html", "code", "HTML (as typed, not cleaned)", opts={"language": "html"})]},
    {"name": "image", "label": "Image", "group": "Core", "fields": [
        _f("image", "asset", "Image", opts={"accept": "image/*"}), _f("caption", "text", "Caption")]},
    {"name": "link", "label": "Link", "group": "Core", "fields": [
        _f("url", "text", "Address"), _f("caption", "text", "Text"), _f("target", "select", "Opens in",
                                                                       opts={"options": TARGETS})]},
    {"name": "button", "label": "Button", "group": "Core", "fields": [
        _f("url", "text", "Address"), _f("caption", "text", "Text"), _f("target", "select", "Opens in",
                                                                       opts={"options": TARGETS})]},
    {"name": "spacer", "label": "Spacer", "group": "Core", "fields": [
        _f("size", "select", "Size", opts={"options": ["1", "2", "3", "4", "5"]})]},
    {"name": "section", "label": "Section", "group": "Core", "holds": "children",
     "fields": [_f("class", "text", "CSS class")]},
    {"name": "grid", "label": "Grid", "group": "Core", "holds": "columns", "fields": [
        _f("class", "text", "CSS class"),
        _f("colWidth", "select", "Column width", opts={"options": ["auto", "1-2", "1-3", "2-3", "1-4", "3-4"]})]},
]
CORE_NAMES = {c["name"] for c in CORE}


def components(field: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The components a field may use, core ones first, as the editor
    offers them (`allowedComponents` and `allowedGroups` applied)."""
    opts = field.get("opts") or {}
    own = [c for c in opts.get("components") or [] if isinstance(c, dict)]
    every = [*CORE, *own]
    names, groups = opts.get("allowedComponents"), opts.get("allowedGroups")
    if not names and not groups:
        return every
    return [c for c in every if c["name"] in (names or ()) or c.get("group", "Core") in (groups or ())]


def check(field: dict[str, Any], value: Any, depth: int) -> list[dict[str, Any]]:
    known = {c["name"]: c for c in components(field)}
    count = [0]
    return _list(value, known, 0, count, "")


def _list(value: Any, known: dict[str, dict[str, Any]], level: int, count: list[int], at: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise FieldError(f"{at}must be a list of components" if at else "must be a list of components")
    if level > MAX_LEVELS:
        raise FieldError(f"{at}nests sections and grids deeper than {MAX_LEVELS} levels")
    return [_instance(v, known, level, count, f"{at}[{n}] ") for n, v in enumerate(value)]


def _instance(value: Any, known: dict[str, dict[str, Any]], level: int, count: list[int],
              at: str) -> dict[str, Any]:
    count[0] += 1
    if count[0] > MAX_COMPONENTS:
        raise FieldError(f"holds more than {MAX_COMPONENTS} components")
    if not isinstance(value, dict):
        raise FieldError(f"{at}must be a component: an object with component and data")
    unknown = set(value) - INSTANCE_KEYS
    if unknown:
        raise FieldError(f"{at}has keys a component does not: {', '.join(sorted(unknown)[:5])}")
    name = value.get("component")
    definition = known.get(name) if isinstance(name, str) else None
    if definition is None:
        raise FieldError(f"{at}component {str(name)[:60]!r} is not one this field may use")
    out: dict[str, Any] = {"component": name}
    label = value.get("label")
    if label is not None:
        if not isinstance(label, str) or len(label) > 200:
            raise FieldError(f"{at}label must be a text of up to 200 characters")
        out["label"] = label
    given = value.get("id")
    if given is not None and (not isinstance(given, str) or not 0 < len(given) <= 64):
        raise FieldError(f"{at}id must be a text of up to 64 characters")
    out["id"] = given or new_id()
    out["data"] = _data(value.get("data"), definition, at)
    holds = definition.get("holds")
    if holds == "children":
        out["children"] = _list(value.get("children") or [], known, level + 1, count, f"{at}children")
    elif value.get("children") not in (None, []):
        raise FieldError(f"{at}a {name} holds no children (sections do)")
    if holds == "columns":
        columns = value.get("columns") or []
        if not isinstance(columns, list) or len(columns) > 12:
            raise FieldError(f"{at}columns must be a list of up to 12 columns")
        out["columns"] = []
        for n, column in enumerate(columns):
            if not isinstance(column, dict) or set(column) - {"components"}:
                raise FieldError(f"{at}columns[{n}] must be an object with components")
            inner = _list(column.get("components") or [], known, level + 1, count, f"{at}columns[{n}]")
            out["columns"].append({"components": inner})
    elif value.get("columns") not in (None, []):
        raise FieldError(f"{at}a {name} holds no columns (grids do)")
    return out


def _data(value: Any, definition: dict[str, Any], at: str) -> dict[str, Any]:
    check_value, is_empty = _checks["check_value"], _checks["is_empty"]
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldError(f"{at}data must be an object")
    fields = {f["name"]: f for f in definition["fields"]}
    unknown = set(value) - set(fields)
    if unknown:
        raise FieldError(f"{at}{definition['name']} has no field {sorted(unknown)[0][:60]}")
    out: dict[str, Any] = {}
    for name, field in fields.items():
        inner = value.get(name)
        if is_empty(inner):
            if field.get("required"):
                raise FieldError(f"{at}{definition['name']}.{name} is required")
            if name in value:
                out[name] = inner
            continue
        try:
            out[name] = check_value(field, inner, 1)
        except FieldError as exc:
            raise FieldError(f"{at}{definition['name']}.{name} {exc}") from None
    return out


def check_options(opts: Mapping[str, Any]) -> str | None:
    """What is wrong with a layout field's own components and limits (the
    library's copies, `"shared": true`, are checked as its own are; a
    model's save puts the library's current ones in their place)."""
    validate_definition_field = _checks["validate_field"]
    own = opts.get("components")
    if own is not None:
        if not isinstance(own, list) or len(own) > 2 * MAX_OWN or \
                sum(1 for c in own if not (isinstance(c, dict) and c.get("shared") is True)) > MAX_OWN:
            return f"opts.components must be a list of up to {MAX_OWN} components"
        seen: set[str] = set()
        for n, component in enumerate(own):
            if not isinstance(component, dict):
                return f"opts.components[{n}] must be an object with name, label and fields"
            name = component.get("name")
            if not isinstance(name, str) or not NAME.match(name):
                return f"opts.components[{n}].name must be lowercase letters, digits, - and _"
            if name in CORE_NAMES or name in seen:
                return f"opts.components[{n}]: {name} is taken (by a core component or another of this field)"
            seen.add(name)
            extra = set(component) - {"name", "label", "group", "fields", "shared"}
            if extra:
                return f"opts.components[{n}] ({name}): unknown keys {', '.join(sorted(extra))}"
            if component.get("shared", True) is not True:
                return f"opts.components[{n}] ({name}): shared is true or left out"
            for key in ("label", "group"):
                if key in component and not isinstance(component[key], str):
                    return f"opts.components[{n}] ({name}): {key} must be a text"
            fields = component.get("fields")
            if not isinstance(fields, list) or not fields or len(fields) > 50:
                return f"opts.components[{n}] ({name}): fields must be a list of 1 to 50 fields"
            try:
                checked = [validate_definition_field(f, i) for i, f in enumerate(fields)]
            except FieldError as exc:
                return f"opts.components[{n}] ({name}): {exc}"
            if any(f["type"] == "layout" for f in checked):
                return f"opts.components[{n}] ({name}): a component holds no layout field (use a section)"
            if len({f["name"] for f in checked}) != len(checked):
                return f"opts.components[{n}] ({name}): two fields of the same name"
            component["fields"] = checked
    for key in ("allowedComponents", "allowedGroups"):
        listed = opts.get(key)
        if listed is not None and (not isinstance(listed, list) or not all(isinstance(x, str) for x in listed)):
            return f"opts.{key} must be a list of names"
    return None


def instances(value: Any) -> Iterator[dict[str, Any]]:
    """Every block of a stored layout value, those inside sections and
    grid columns too (a value of another shape holds none)."""
    for block in value if isinstance(value, list) else []:
        if not isinstance(block, dict):
            continue
        yield block
        yield from instances(block.get("children"))
        for column in block.get("columns") or [] if isinstance(block.get("columns"), list) else []:
            if isinstance(column, dict):
                yield from instances(column.get("components"))


def layout_fields(fields: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The layout fields of a definition, also inside sets."""
    for field in fields:
        if field.get("type") == "layout":
            yield field
        inner = (field.get("opts") or {}).get("fields")
        if field.get("type") == "set" and isinstance(inner, list):
            yield from layout_fields(inner)


def share(fields: list[dict[str, Any]], shared: list[dict[str, Any]], where: str = "") -> list[dict[str, Any]]:
    """`fields` with the library's components (content/library.py) in each
    layout field, marked `"shared": true`, in place of the copies it held
    (new dicts; the given ones are not changed). FieldError when a field's
    own component has the name of a shared one."""
    names = {c["name"] for c in shared}
    out = []
    for field in fields:
        opts = field.get("opts") or {}
        if field.get("type") == "layout":
            own = [c for c in opts.get("components") or [] if not c.get("shared")]
            taken = sorted(names & {c["name"] for c in own})
            if taken:
                raise FieldError(f"{where}{field['name']}: its own component {taken[0]} has the name of a shared "
                                 "component; rename one of them")
            components = own + [{**c, "shared": True} for c in shared]
            rest = {k: v for k, v in opts.items() if k != "components"}
            field = {**field, "opts": {**rest, "components": components} if components else rest}
        elif field.get("type") == "set" and isinstance(opts.get("fields"), list):
            field = {**field, "opts": {**opts, "fields": share(opts["fields"], shared, f"{where}{field['name']}.")}}
        out.append(field)
    return out


def short(field: dict[str, Any], value: Any) -> str:
    count = len(value) if isinstance(value, list) else 0
    names = ", ".join(dict.fromkeys(str(c.get("component")) for c in value if isinstance(c, dict)))[:80] \
        if count else ""
    return f"{count} component{'' if count == 1 else 's'}" + (f": {names}" if names else "")


INSTANCE_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["component"],
    "properties": {"component": {"type": "string"}, "label": {"type": "string"}, "id": {"type": "string"},
                   "data": {"type": "object"}, "children": {"type": "array", "items": {"type": "object"}},
                   "columns": {"type": "array", "items": {"type": "object", "properties": {
                       "components": {"type": "array", "items": {"type": "object"}}}}}},
}

# the editor: the value as JSON in a hidden input, which layout-editor.js
# shows as blocks (add, move, remove, edit, preview) and writes back
WIDGET = """<div class="layout-field" data-layout="{{ id }}" data-components="{{ data | tojson | forceescape }}" role="group" aria-label="{{ label }}">
  <input type="hidden" id="{{ id }}" name="{{ path }}" value="{{ text }}">
  <div class="layout-blocks" data-layout-root></div>
  <p class="hint layout-noscript" data-layout-noscript>The blocks need the page's script; their JSON is kept as it is.</p>
</div>"""

LAYOUT_TYPE = FieldType("layout", check, label="layout (blocks)", wide=True, rich=True, widget=WIDGET,
                        example='[{"component": "heading", "data": {"text": "Hello", "level": "2"}}]',
                        check_options=check_options, short=short, widget_data=components,
                        schema={"type": "array", "items": INSTANCE_SCHEMA})
