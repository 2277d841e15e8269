"""The `json` field type: any JSON value (an object, a list, a text, a
number, true or false) kept as it is. It holds what no other type
describes: a Cockpit `nav` or `layout` field taken in by an import, a
structure a site defines for itself. Nothing inside it is populated or
checked beyond being JSON of bounded depth."""

from __future__ import annotations

from typing import Any

from quire.content.types import FieldError, FieldType

MAX_DEPTH = 64


def check(field: dict[str, Any], value: Any, depth: int) -> Any:
    _check_depth(value, 0)
    return value


def _check_depth(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise FieldError(f"is nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for key, inner in value.items():
            if not isinstance(key, str):
                raise FieldError("must be JSON (object keys are texts)")
            _check_depth(inner, depth + 1)
    elif isinstance(value, list):
        for inner in value:
            _check_depth(inner, depth + 1)
    elif not isinstance(value, str | int | float | bool) and value is not None:
        raise FieldError("must be JSON")


WIDGET = """<textarea id="{{ id }}" name="{{ path }}" rows="6" class="mono" placeholder="{{ placeholder or '[{&quot;title&quot;: &quot;Home&quot;, &quot;url&quot;: &quot;/&quot;}]' }}" {{ described | safe }}>{{ text }}</textarea>
<span class="hint">JSON: any value.</span>"""

JSON_TYPE = FieldType("json", check, label="JSON (any value)", wide=True, widget=WIDGET, example='{"key": "value"}',
                      schema={})
