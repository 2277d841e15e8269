"""The `color` field type: a colour as `#rgb`, `#rgba`, `#rrggbb` or
`#rrggbbaa`. Everything Quire does with it is here; a module's own type
is a file like this one, listed in its `Module(field_types=[...])`."""

from __future__ import annotations

import re
from typing import Any

from quire.content.types import FieldError, FieldType

COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3,4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$")


def check(field: dict[str, Any], value: Any, depth: int) -> str:
    if not isinstance(value, str):
        raise FieldError("must be text")
    if value and not COLOR.match(value):
        raise FieldError("must be a colour like #aabbcc")
    return value


# a text input and the browser's colour picker beside it (SCRIPT keeps the
# two in step)
WIDGET = """<span class="color">
  <input type="text" id="{{ id }}" name="{{ path }}" value="{{ text }}" placeholder="{{ placeholder or '#aabbcc' }}" class="short" data-color {{ described | safe }}>
  <input type="color" aria-label="{{ label }}: pick a colour" data-color-for="{{ id }}" value="{{ value if value and value | length == 7 else '#000000' }}">
</span>"""

# the picker fills the text; a full #rrggbb typed moves the picker
SCRIPT = """
document.addEventListener("input", function (e) {
  var target = e.target;
  if (!(target instanceof HTMLInputElement)) return;
  if (target.matches("input[data-color-for]")) {
    var text = document.getElementById(target.getAttribute("data-color-for"));
    if (text) text.value = target.value;
  } else if (target.matches("input[data-color]") && /^#[0-9a-fA-F]{6}$/.test(target.value)) {
    var swatch = target.parentNode.querySelector("input[data-color-for]");
    if (swatch) swatch.value = target.value;
  }
});
"""

COLOR_TYPE = FieldType("color", check, hint="text", plain=True, sortable=True, widget=WIDGET, script=SCRIPT,
                       schema={"type": "string", "pattern": COLOR.pattern})
