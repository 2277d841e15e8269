"""The list's visual filter: conditions of a field, an operator and a
value, chosen per field type, turned into the API's Mongo filter. They
travel in the list's address as repeated `w` (field), `o` (operator) and
`v` (value) parameters, so that a filtered list is a link to keep.

A condition that cannot hold a value ("ten" for a number, a day that is
not a date) is explained beside it and left out: the list still shows
what the other conditions find, never an empty list for a typo."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from starlette.datastructures import QueryParams

from quire.content.models import Model
from quire.ids import is_id
from quire.ui import zones

MAX_CONDITIONS = 20
MAX_VALUE = 500
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")

# operator -> (label, takes a value); the menus offer them per kind of field
OPERATORS: dict[str, tuple[str, bool]] = {
    "contains": ("contains", True), "is": ("is", True), "is_not": ("is not", True),
    "starts": ("starts with", True), "gt": ("is more than", True), "gte": ("is at least", True),
    "lt": ("is less than", True), "lte": ("is at most", True), "on": ("is on the day", True),
    "before": ("is before the day", True), "after": ("is after the day", True), "has": ("has", True),
    "links": ("links to the id", True), "true": ("is yes", False), "false": ("is no", False),
    "empty": ("is empty", False), "filled": ("is not empty", False),
}
KIND_OPERATORS: dict[str, tuple[str, ...]] = {
    "text": ("contains", "is", "is_not", "starts", "empty", "filled"),
    "choice": ("is", "is_not", "empty", "filled"),
    "number": ("is", "is_not", "gt", "gte", "lt", "lte", "empty", "filled"),
    "boolean": ("true", "false", "empty"),
    "date": ("on", "before", "after", "empty", "filled"),
    "stamp": ("on", "before", "after"),
    "tags": ("has", "empty", "filled"),
    "link": ("links", "empty", "filled"),
    "state": ("is", "is_not"),
    "other": ("empty", "filled"),
}
STATE_VALUES = {"published": 1, "draft": 0, "archived": -1}


@dataclass(frozen=True)
class Field:
    """A field the builder offers: its name, label, kind and (for a choice)
    the values to pick from."""

    name: str
    label: str
    kind: str
    options: tuple[str, ...] = ()

    @property
    def operators(self) -> list[tuple[str, str]]:
        return [(op, OPERATORS[op][0]) for op in KIND_OPERATORS[self.kind]]


@dataclass(frozen=True)
class Condition:
    field: str
    op: str
    value: str
    error: str | None = None


def fields_of(model: Model, drafts: bool) -> list[Field]:
    """The fields of `model` a condition may name, then the item's state
    (for who sees drafts) and times."""
    out: list[Field] = []
    for f in model.fields:
        kind = _kind(f)
        listed = (f.get("opts") or {}).get("options") or ()
        options = tuple(str(o.get("value") if isinstance(o, dict) else o) for o in listed
                        if isinstance(o, str | int | float) or isinstance(o, dict) and o.get("value") is not None)
        if kind == "text" and f["type"] == "select" and options:
            kind = "choice"
        out.append(Field(f["name"], f.get("label") or f["name"], kind, options if kind == "choice" else ()))
    if drafts:
        out.append(Field("_state", "State", "state", tuple(STATE_VALUES)))
    out += [Field("_created", "Created", "stamp"), Field("_modified", "Modified", "stamp")]
    return out


def _kind(field: dict[str, Any]) -> str:
    kind = field["type"]
    if field.get("multiple") and kind != "tags":
        return "other"
    if kind in ("text", "longtext", "wysiwyg", "markdown", "code", "select", "color", "time"):
        return "text"
    if kind in ("date", "datetime"):
        return "date"
    if kind in ("number", "boolean", "tags"):
        return kind
    if kind == "contentItemLink":
        return "link"
    return "other"


def parse(params: QueryParams) -> list[Condition]:
    """The conditions in the list's address; rows without a field or an
    operator (the empty row of the form) are left out."""
    names, ops, values = params.getlist("w"), params.getlist("o"), params.getlist("v")
    out: list[Condition] = []
    for i, name in enumerate(names[:MAX_CONDITIONS]):
        op = ops[i] if i < len(ops) else ""
        value = (values[i] if i < len(values) else "").strip()[:MAX_VALUE]
        if name and op:
            out.append(Condition(name, op, value))
    return out


def to_filter(conditions: list[Condition], fields: list[Field], zone: str
              ) -> tuple[dict[str, Any] | None, list[Condition]]:
    """The Mongo filter of the conditions that make sense (all must hold),
    and every condition with its error, if it has one."""
    known = {f.name: f for f in fields}
    parts: list[dict[str, Any]] = []
    checked: list[Condition] = []
    for c in conditions:
        field = known.get(c.field)
        try:
            if field is None:
                raise ValueError("is not a field of this model")
            if c.op not in KIND_OPERATORS[field.kind]:
                raise ValueError(f"“{OPERATORS.get(c.op, (c.op,))[0]}” does not apply to this field")
            if OPERATORS[c.op][1] and not c.value:
                raise ValueError("needs a value")
            parts.append(_condition(field, c.op, c.value, zone))
            checked.append(c)
        except ValueError as exc:
            checked.append(Condition(c.field, c.op, c.value, str(exc)))
    spec = None if not parts else parts[0] if len(parts) == 1 else {"$and": parts}
    return spec, checked


def _condition(field: Field, op: str, value: str, zone: str) -> dict[str, Any]:
    name = field.name
    if op == "empty":
        return {"$or": [{name: {"$exists": False}}, {name: None}, {name: ""}, {name: {"$size": 0}}]}
    if op == "filled":
        return {"$and": [{name: {"$exists": True}}, {name: {"$nin": [None, ""]}}, {name: {"$not": {"$size": 0}}}]}
    if op in ("true", "false"):
        return {name: op == "true"}
    if field.kind == "number":
        target: Any = _number(value)
    elif field.kind == "state":
        if value not in STATE_VALUES:
            raise ValueError("must be published, draft or archived")
        target = STATE_VALUES[value]
    else:
        target = value
    if op == "contains":
        return {name: {"$regex": re.escape(value), "$options": "i"}}
    if op == "starts":
        return {name: {"$regex": "^" + re.escape(value), "$options": "i"}}
    if op == "has":
        return {name: value}
    if op == "links":
        if not is_id(value):
            raise ValueError("must be an item id (24 hex digits)")
        return {f"{name}._id": value}
    if op in ("on", "before", "after"):
        return _day(field, op, value, zone)
    if op in ("gt", "gte", "lt", "lte"):
        return {name: {f"${op}": target}}
    if field.kind == "state" and target == 1:  # items stored before states were kept have none
        return {name: {"$nin": [0, -1]}} if op == "is" else {name: {"$in": [0, -1]}}
    return {name: target} if op == "is" else {name: {"$ne": target}}


def _number(text: str) -> int | float:
    try:
        number = float(text.replace(",", ".")) if not re.fullmatch(r"-?\d+", text) else int(text)
    except ValueError:
        raise ValueError(f"“{text}” is not a number") from None
    if isinstance(number, float) and number != number or number in (float("inf"), float("-inf")):
        raise ValueError(f"“{text}” is not a number")
    return number


def _day(field: Field, op: str, value: str, zone: str) -> dict[str, Any]:
    if not DATE.match(value):
        raise ValueError(f"“{value}” is not a day (YYYY-MM-DD)")
    try:
        first, last = zones.day_bounds(value, zone)
    except ValueError:
        raise ValueError(f"“{value}” is not a day (YYYY-MM-DD)") from None
    name = field.name
    if field.kind == "stamp":  # unix seconds: the day in the user's time zone
        bounds = {"on": {"$gte": first, "$lte": last}, "before": {"$lt": first}, "after": {"$gt": last}}
        return {name: bounds[op]}
    # dates and date-times are stored as text (2030-01-31, 2030-01-31T09:30): they sort as they read
    after = value + "\uffff"
    return {name: {"on": {"$gte": value, "$lt": after}, "before": {"$lt": value}, "after": {"$gte": after}}[op]}
