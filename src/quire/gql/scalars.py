"""The two scalars of Cockpit's schema: `JsonType` (any JSON value, as it
is) and `NumericType` (a number, integer or not)."""

from __future__ import annotations

import math
from typing import Any

from graphql import (
    BooleanValueNode,
    EnumValueNode,
    FloatValueNode,
    GraphQLError,
    GraphQLScalarType,
    IntValueNode,
    ListValueNode,
    NullValueNode,
    ObjectValueNode,
    StringValueNode,
    ValueNode,
    VariableNode,
)


def literal(node: ValueNode, variables: dict[str, Any] | None = None) -> Any:
    """A literal of the query as the JSON value it writes (`{rating: {$gt:
    2}}` is the object it looks like; `$gt` is a name GraphQL does not
    allow, so a filter is written with quoted keys in a string, or as a
    variable)."""
    if isinstance(node, NullValueNode):
        return None
    if isinstance(node, (StringValueNode, EnumValueNode)):
        return node.value
    if isinstance(node, BooleanValueNode):
        return node.value
    if isinstance(node, IntValueNode):
        return int(node.value)
    if isinstance(node, FloatValueNode):
        return float(node.value)
    if isinstance(node, ListValueNode):
        return [literal(v, variables) for v in node.values]
    if isinstance(node, ObjectValueNode):
        return {f.name.value: literal(f.value, variables) for f in node.fields}
    if isinstance(node, VariableNode):
        return (variables or {}).get(node.name.value)
    raise GraphQLError(f"{type(node).__name__} is not a JSON value")


def _json_value(value: Any) -> Any:
    return value


JSON_TYPE = GraphQLScalarType(
    "JsonType", serialize=_json_value, parse_value=_json_value, parse_literal=literal,
    description="Any JSON value: an object, a list, a text, a number, true, false or null.")


def _number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                number = float(value)
            except ValueError:
                raise GraphQLError(f"NumericType cannot represent {value!r}") from None
            return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() else number
        raise GraphQLError(f"NumericType cannot represent {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise GraphQLError("NumericType cannot represent a number that is not finite")
    return value


def _number_literal(node: ValueNode, variables: dict[str, Any] | None = None) -> int | float:
    if isinstance(node, IntValueNode):
        return int(node.value)
    if isinstance(node, FloatValueNode):
        return float(node.value)
    raise GraphQLError("NumericType takes a number")


NUMERIC_TYPE = GraphQLScalarType(
    "NumericType", serialize=_number, parse_value=_number, parse_literal=_number_literal,
    description="A number, with or without a fraction.")
