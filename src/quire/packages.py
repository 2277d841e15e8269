"""Modules from installed packages: a Python package adds a module to
Quire through an entry point of the group `quire.modules` naming its
`Module` object (`quire_redirects:module`), with no file of Quire changed.

They are found once per process. Importing them happens before the rest
of the settings are read (`config.load_settings` reads `[modules]` first,
then imports them), so a package may add its own settings section with
`config.register_section` when it is imported. Which of them an instance
uses is the `[modules]` section's choice (`packages`, `skip`, by the
entry point's name, which is its module's): a package turned off or
skipped is not imported at all. They are built after Quire's own
modules, in the order of their names."""

from __future__ import annotations

import functools
import logging
from importlib.metadata import EntryPoint, entry_points

from quire.errors import ConfigError
from quire.modules import Module

GROUP = "quire.modules"
log = logging.getLogger("quire")


def _load(point: EntryPoint) -> Module:
    try:
        module = point.load()
    except Exception as exc:  # any error of a package's import: named, not a traceback
        raise ConfigError(f"module package {point.value!r} ({GROUP} entry point {point.name!r}) "
                          f"cannot be loaded: {type(exc).__name__}: {exc}") from exc
    if not isinstance(module, Module):
        raise ConfigError(f"{GROUP} entry point {point.name!r} names {point.value!r}, "
                          f"which is not a quire.modules.Module")
    if module.name != point.name:
        raise ConfigError(f"{GROUP} entry point {point.name!r} names the module {module.name!r}: "
                          "an entry point is named as its module")
    return module


@functools.cache
def discovered(skip: tuple[str, ...] = ()) -> tuple[Module, ...]:
    """The `Module` of every installed package's `quire.modules` entry
    point but those named in `skip` (never imported), by name; a package
    that cannot be imported, or whose entry point is no module, stops the
    start with a message naming it."""
    found: dict[str, Module] = {}
    for point in sorted(entry_points(group=GROUP), key=lambda p: p.name):
        if point.name in skip:
            continue
        if point.name in found:
            raise ConfigError(f"two installed packages declare a module named {point.name!r}")
        found[point.name] = _load(point)
    return tuple(found.values())


def chosen(enabled: bool, skip: tuple[str, ...], core: list[Module]) -> list[Module]:
    """The package modules an instance builds: all of them unless
    `[modules] packages` is off, but those `[modules] skip` names (not
    even imported, so a broken package can be left out); a name Quire's
    own modules have is refused."""
    if not enabled:
        return []
    taken = {m.name for m in core}
    out = []
    for module in discovered(tuple(sorted(skip))):
        if module.name in taken:
            raise ConfigError(f"the installed module {module.name!r} has the name of one of Quire's own modules")
        out.append(module)
    return out
