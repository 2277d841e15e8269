"""Typed settings: one frozen dataclass per `[section]` of quire.toml.

A section class (a `Section` dataclass) declares each setting as a field:
the annotation is the setting's type, the field's default its default. The
few things the TOML file needs beyond that come from `setting()`: a key
that is not a Python name (`[smtp] from`), the allowed range of an integer,
the wording of a type without a plain name, a deprecation. The loader
(`quire.config`) reads the types from here to check the file and to parse
environment variables; `Section.__post_init__` checks ranges and the
section's own rules, so a section object is valid however it was built
(by the loader, or by `dataclasses.replace` in a test).

The types a setting may have: `str`, `int`, `bool`, `tuple[str, ...]`
(a TOML list of strings), `dict[str, X]` (a TOML table) and `bool | str`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import types
import typing
from typing import Any, ClassVar

from quire.errors import ConfigError

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off", "")


def setting(default: Any, *, key: str | None = None, between: tuple[int, int] | None = None,
            describe: str | None = None, deprecated: bool = False, secret: bool = False) -> Any:
    """A settings field with what the file needs beyond type and default:
    `key` when the TOML key is not the attribute name, `between` the
    inclusive range of an integer, `describe` the type as error messages
    name it ("must be <describe>") when it has no plain name, `secret` to
    leave the value out of the object's repr (which may reach a log)."""
    metadata = {"key": key, "between": between, "describe": describe, "deprecated": deprecated}
    if isinstance(default, dict):  # a table: every object gets its own copy
        return dataclasses.field(default_factory=lambda: copy.deepcopy(default), metadata=metadata,
                                 repr=not secret)
    return dataclasses.field(default=default, metadata=metadata, repr=not secret)


@dataclasses.dataclass(frozen=True)
class Spec:
    """One setting as quire.toml and the environment see it."""

    section: str
    key: str  # in the file: `from`, `loginText`
    attr: str  # on the section object: `from_address`, `login_text`
    hint: Any  # the field's type
    default: Any
    between: tuple[int, int] | None
    deprecated: bool
    describe: str  # "an integer", "a list of strings", ...

    @property
    def name(self) -> str:
        return f"{self.section}.{self.key}"

    @property
    def env(self) -> str:
        return f"QUIRE_{self.section}_{self.key}".upper()


class Section:
    """Base of the section classes. A subclass is a frozen dataclass with
    `NAME` (the TOML section) and, where needed, `check()` for rules that
    span settings."""

    NAME: ClassVar[str]

    def __post_init__(self) -> None:
        for spec in specs(type(self)):
            if spec.between is not None:
                low, high = spec.between
                if not low <= getattr(self, spec.attr) <= high:
                    raise ConfigError(f"setting '{spec.name}' must be between {low} and {high}")
        self.check()

    def check(self) -> None:
        """Rules beyond type and range; ConfigError naming the setting."""

    @classmethod
    def specs(cls) -> tuple[Spec, ...]:
        return specs(cls)

    def as_values(self) -> dict[str, Any]:
        """The settings by TOML key, as plain data (lists, dicts): what
        `Settings.values` shows."""
        return {spec.key: _plain(getattr(self, spec.attr)) for spec in specs(type(self))}


def specs(cls: type[Section]) -> tuple[Spec, ...]:
    """The settings of a section class, in declaration order."""
    known = _SPECS.get(cls)
    if known is None:
        known = _SPECS[cls] = _read_specs(cls)
    return known


_SPECS: dict[type[Section], tuple[Spec, ...]] = {}


def _read_specs(cls: type[Section]) -> tuple[Spec, ...]:
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        hint = hints[f.name]
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            raise TypeError(f"setting {cls.NAME}.{f.name} has no default")
        if not conforms(default, hint):  # also refuses a type the loader cannot read
            raise TypeError(f"setting {cls.NAME}.{f.name}: the default {default!r} is not a {hint!r}")
        meta = f.metadata
        describe = meta.get("describe") or _plain_name(hint)
        if describe is None:
            raise TypeError(f"setting {cls.NAME}.{f.name}: describe its type {hint!r}")
        out.append(Spec(cls.NAME, meta.get("key") or f.name, f.name, hint, default, meta.get("between"),
                        bool(meta.get("deprecated")), describe))
    return tuple(out)


def conforms(value: Any, hint: Any) -> bool:
    """Whether a value from the file (or an override) has the type `hint`."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin in (types.UnionType, typing.Union):
        return any(conforms(value, arg) for arg in typing.get_args(hint))
    if origin is tuple:  # tuple[X, ...]: a TOML list
        return isinstance(value, list | tuple) and all(conforms(v, typing.get_args(hint)[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(conforms(v, typing.get_args(hint)[1]) for v in value.values())
    raise TypeError(f"settings cannot have the type {hint!r}")


def coerce(value: Any, spec: Spec) -> Any:
    """A conforming value as the section object holds it: lists become
    tuples; a table is merged into the default table (keys not given keep
    their default)."""
    if typing.get_origin(spec.hint) is tuple:
        return tuple(value)
    if typing.get_origin(spec.hint) is dict:
        return {**spec.default, **value}
    return value


def from_env(raw: str, spec: Spec) -> Any:
    """The value of an environment variable, read by the setting's type."""
    hint, name = spec.hint, spec.env
    origin = typing.get_origin(hint)
    if origin is dict:  # a table: JSON in the variable
        try:
            return json.loads(raw)
        except ValueError:
            raise ConfigError(f"{name} must be a JSON object") from None
    if origin in (types.UnionType, typing.Union):  # bool | str: a boolean word, else the text
        if raw.lower() not in TRUE_WORDS + FALSE_WORDS:
            return raw
        hint = bool
    if hint is bool:
        if raw.lower() in TRUE_WORDS:
            return True
        if raw.lower() in FALSE_WORDS:
            return False
        raise ConfigError(f"{name} must be true or false")
    if hint is int:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{name} must be an integer") from None
    if origin is tuple:
        return [part.strip() for part in raw.split(",") if part.strip()]
    return raw


def _plain_name(hint: Any) -> str | None:
    if hint is bool:
        return "true or false"
    if hint is int:
        return "an integer"
    if hint is str:
        return "a string"
    if typing.get_origin(hint) is tuple and typing.get_args(hint)[0] is str:
        return "a list of strings"
    return None


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, dict):
        return copy.deepcopy(value)
    return value
