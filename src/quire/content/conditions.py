"""Conditional fields: a field of a model may be shown (`showWhen`) or
required (`requiredWhen`) only when a condition on the item's other fields
holds. A condition is a JSON Logic rule (jsonlogic.com), evaluated on the
item (its top-level keys: `{"var": "kind"}`, `{"var": "title_de"}`) by
the studio's editor in the browser (json-logic-js) and here, by every
save, for `required`: a field that is not shown is never required.

A rule is checked when its model is saved: known operations only, at most
MAX_RULE characters of JSON, so that no stored rule fails or runs long."""

from __future__ import annotations

from typing import Any

import orjson
from json_logic import jsonLogic
from json_logic.builtins import BUILTINS, to_bool

KEYS = ("showWhen", "requiredWhen")
MAX_RULE = 4000
SPECIAL = {"if", "?:", "and", "or", "filter", "reduce", "map", "all", "some", "none"}
KNOWN = SPECIAL | set(BUILTINS) - {"log"}  # `log` prints: not in a server's rules


def check_rule(rule: Any) -> str | None:
    """What is wrong with a rule (None: nothing)."""
    if isinstance(rule, bool):
        return None
    if not isinstance(rule, dict) or len(rule) != 1:
        return "must be a JSON Logic rule: an object with one operation, like {\"==\": [{\"var\": \"kind\"}, \"event\"]}"
    if len(orjson.dumps(rule)) > MAX_RULE:
        return f"is longer than {MAX_RULE} characters of JSON"
    unknown = sorted(_operations(rule) - KNOWN)
    if unknown:
        return f"uses an operation JSON Logic does not have here: {', '.join(unknown[:5])}"
    return None


def _operations(value: Any) -> set[str]:
    found: set[str] = set()
    stack = [value]
    while stack:
        here = stack.pop()
        if isinstance(here, list):
            stack.extend(here)
        elif isinstance(here, dict) and len(here) == 1:  # an operation; a longer object is a value
            op, args = next(iter(here.items()))
            found.add(op)
            stack.append(args)
    return found


def holds(rule: Any, item: dict[str, Any]) -> bool:
    """Whether a stored rule holds for the item (a rule that cannot be
    evaluated on these values, say a number compared with a list, does not)."""
    if isinstance(rule, bool):
        return rule
    try:
        return bool(to_bool(jsonLogic(rule, item)))
    except (TypeError, ValueError, ReferenceError, ArithmeticError, RecursionError):
        return False


def shown(field: dict[str, Any], item: dict[str, Any]) -> bool:
    return "showWhen" not in field or holds(field["showWhen"], item)


def required(field: dict[str, Any], item: dict[str, Any]) -> bool:
    """Whether the field must hold a value in this item."""
    if not shown(field, item):
        return False
    if "requiredWhen" in field:
        return holds(field["requiredWhen"], item)
    return bool(field.get("required"))
