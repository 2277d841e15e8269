"""Each field type is one record (`quire.content.types.FieldType`) with its
own small checker; every list of types is read from the registry."""

from __future__ import annotations

import pytest

from quire.content import types
from quire.content.fields import BUILT_IN, FieldError, check_value
from quire.content.types import FieldType


def test_every_built_in_type_is_registered_once_in_menu_order() -> None:
    names = [t.name for t in types.all_types()]
    assert names[:len(BUILT_IN)] == [t.name for t in BUILT_IN]
    assert len(names) == len(set(names))
    assert {"text", "color", "contentItemLink", "variants"} <= types.names()


def test_the_lists_of_types_are_read_from_the_records() -> None:
    # of Quire's own types (a module's, registered by an app built earlier in
    # this process, may be known too)
    own = {t.name for t in BUILT_IN}
    assert types.plain_types() & own == {"text", "longtext", "wysiwyg", "markdown", "code", "color", "select",
                                         "date", "datetime", "time"}
    assert types.hint_of("number") == "number" and types.hint_of("boolean") == "bool"
    assert types.hint_of("color") == "text" and types.hint_of("tags") is None
    assert "color" in types.sortable_types() and "object" not in types.sortable_types()
    assert types.rich_types() & own == {"wysiwyg", "markdown", "object", "set", "table", "layout"}
    assert types.wide_types() & own == {"longtext", "wysiwyg", "markdown", "code", "object", "set", "table",
                                        "variants", "json", "layout"}


def test_a_second_type_of_a_taken_name_is_refused_naming_both() -> None:
    types.register(types.get("color"))  # the same record again (a second app instance): nothing
    other = FieldType("color", lambda field, value, depth: value)
    with pytest.raises(ValueError, match="field type 'color' of redirects is taken by quire"):
        types.register(other, owner="redirects")
    assert types.get("color") is not other


def test_a_type_without_a_checker_is_named() -> None:
    with pytest.raises(FieldError, match="^has unknown type rating$"):
        check_value({"name": "stars", "type": "rating"}, 3)


@pytest.mark.parametrize(("field", "value", "message"), [
    ({"type": "color"}, "red", "must be a colour like #aabbcc"),
    ({"type": "select", "opts": {"options": ["a", {"value": "b"}]}}, "c", "must be one of a, b"),
    ({"type": "select", "opts": {"options": ["a"]}}, 1, "must be text"),
    ({"type": "number"}, True, "must be a number"),
    ({"type": "time"}, "noon", "must be an ISO time like 12:30"),
    ({"type": "set", "opts": {"fields": [{"name": "n", "type": "number"}]}}, {"n": "1"},
     "field n must be a number"),
])
def test_checkers_keep_their_messages(field: dict[str, object], value: object, message: str) -> None:
    with pytest.raises(FieldError) as caught:
        check_value({"name": "f", **field}, value)
    assert str(caught.value) == message


def test_a_multiple_field_checks_each_value() -> None:
    assert check_value({"name": "f", "type": "color", "multiple": True}, ["#fff", ""]) == ["#fff", ""]
