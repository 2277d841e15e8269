"""Each field type has its own small checker, found in one table."""

from __future__ import annotations

import pytest

from quire.content.fields import CHECKERS, FIELD_TYPES, FieldError, check_value


def test_every_field_type_has_a_checker() -> None:
    assert set(CHECKERS) == FIELD_TYPES


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
