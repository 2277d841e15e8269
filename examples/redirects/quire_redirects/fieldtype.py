"""The `urlPath` field type: a path of the site, such as `/blog/old-post`
(no scheme, no host, no query). One file, as every field type: Quire's
model builder, the API's checks, the editor and lists read this record."""

from __future__ import annotations

import re
from typing import Any

from quire.content.types import FieldError, FieldType

MAX_PATH = 2000
# a path of this site: starts with one slash, printable, no spaces, no query or fragment
PATH = re.compile(r"^/(?!/)[^\s?#\\]*$")


def check(field: dict[str, Any], value: Any, depth: int) -> str:
    if not isinstance(value, str):
        raise FieldError("must be text")
    if len(value) > MAX_PATH or not value.isprintable() or not PATH.match(value):
        raise FieldError("must be a path of the site like /blog/old-post (one leading /, no spaces, "
                         "no ? or #)")
    return value


def from_form(field: dict[str, Any], text: str) -> str | None:
    """What the editor's input holds, trimmed; empty is no value."""
    return text.strip() or None


WIDGET = """<input type="text" id="{{ id }}" name="{{ path }}" value="{{ text }}" placeholder="{{ placeholder or '/blog/old-post' }}" spellcheck="false" autocomplete="off" pattern="/[^\\s?#]*" {{ described | safe }}>
<span class="hint">A path of the site, starting with /.</span>"""

URL_PATH = FieldType("urlPath", check, label="URL path", hint="text", plain=True, sortable=True,
                     from_form=from_form, widget=WIDGET,
                     schema={"type": "string", "pattern": PATH.pattern, "maxLength": MAX_PATH})
