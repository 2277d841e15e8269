"""Field types: one record per type (`FieldType`) holding everything Quire
does with a field of that type, from checking a value to showing it in a
list; every list of types (the model builder's menu, store hints, what a
list sorts by, what search strips of markup, ...) is read from here.

Quire's own types are registered by `content/fields.py` (and one, `color`,
by a file of its own in this package, as a module's type would be); a
module adds its types with `Module(field_types=[...])`, registered when an
instance is built, in module order. A name is taken once: a second type of
the same name is refused at start with both modules named."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# A checker gets the field, one non-null value and the nesting depth (sets
# hold fields); it answers the value to store or raises FieldError.
Checker = Callable[[dict[str, Any], Any, int], Any]


class FieldError(Exception):
    """A value that does not fit its field; the message says why."""


@dataclass(frozen=True)
class FieldType:
    """What Quire does with a field of one type.

    - `check(field, value, depth)`: a non-null value checked and normalised
      for storing (`FieldError` says why not).
    - `label`: in the model builder's menu (the name when empty).
    - `hint`: the JSON type of every value of a single-valued field, for
      the store ("text", "number" or "bool"; None: no one type).
    - `plain`: typed as text: an editor's input and a default are the text
      itself (else JSON).
    - `sortable`: a list column can sort by it (stored values compare as
      users expect).
    - `wide`: says little in one line, so a list shows it only when chosen.
    - `rich`: may hold markup: search indexes its text without it.
    - `from_form(field, text)`: the value of an editor's input (None for an
      empty one); by default the text itself for a plain type, else JSON.
    - `short(field, value)`: its text in a list cell; by default the value
      as text, cut.
    - `widget`: the editor's input, Jinja source rendered with `id`,
      `path`, `value`, `text` (the value as its input holds it), `label`,
      `placeholder` and `described` (the input's error reference); by
      default a one-line text input (or the type's own in the editor).
    - `example`: a default's example in the model builder (for JSON).
    - `check_options(opts)`: what is wrong with a definition's `opts`.
    - `schema`: the JSON Schema of one value (for typed schemas of models;
      a module's API may document its own fields with it).
    - `script`: the browser code its widget needs (JavaScript, run once on
      every page that may show the widget, from
      `/studio/static/field-types.js`); it listens on `document`, so inputs added
      later (a repeater's new row) work too.
    - `widget_data(field)`: what the widget's template gets as `data`.
    """

    name: str
    check: Checker
    label: str = ""
    hint: str | None = None
    plain: bool = False
    sortable: bool = False
    wide: bool = False
    rich: bool = False
    from_form: Callable[[dict[str, Any], str], Any] | None = None
    short: Callable[[dict[str, Any], Any], str] | None = None
    widget: str | None = None
    example: str = "{}"
    check_options: Callable[[Mapping[str, Any]], str | None] | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)
    script: str = ""
    # what the widget needs of the field besides its value (`data` in its
    # template), such as the components a layout field offers
    widget_data: Callable[[dict[str, Any]], Any] | None = None


_types: dict[str, FieldType] = {}
_owners: dict[str, str] = {}
# the lists read on every list page and search (made again on each register)
_sets: dict[str, frozenset[str]] = {"plain": frozenset(), "sortable": frozenset(), "wide": frozenset(),
                                    "rich": frozenset()}


def register(kind: FieldType, owner: str = "quire") -> None:
    """Make `kind` known; again for the same record is nothing (a second
    instance of the app), another record of a taken name is refused."""
    known = _types.get(kind.name)
    if known is kind:
        return
    if known is not None:
        raise ValueError(f"field type {kind.name!r} of {owner} is taken by {_owners[kind.name]}")
    _types[kind.name] = kind
    _owners[kind.name] = owner
    for flag in _sets:
        _sets[flag] = frozenset(k.name for k in _types.values() if getattr(k, flag))


def get(name: str) -> FieldType | None:
    return _types.get(name) if isinstance(name, str) else None


def all_types() -> list[FieldType]:
    """Every known type, in the order registered (the builder's menu order)."""
    return list(_types.values())


def names() -> set[str]:
    return set(_types)


def hint_of(name: str) -> str | None:
    kind = _types.get(name)
    return kind.hint if kind is not None else None


def plain_types() -> frozenset[str]:
    return _sets["plain"]


def sortable_types() -> frozenset[str]:
    return _sets["sortable"]


def wide_types() -> frozenset[str]:
    return _sets["wide"]


def rich_types() -> frozenset[str]:
    return _sets["rich"]


def scripts() -> str:
    """The browser code of every type that has some, one block per type."""
    return "\n".join(f"/* {k.name} */\n(function () {{\n{k.script.strip()}\n}})();"
                     for k in _types.values() if k.script)
