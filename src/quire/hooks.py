"""Loading hooks: Python code of the site that subscribes handlers to the
service's events (see docs/hooks.md).

Hooks come from three places, loaded in this order:

1. installed packages, through the entry-point group `quire.hooks`;
2. the modules named in quire.toml, `[hooks] modules = [...]`;
3. every `*.py` file directly in `<data>/hooks/`, sorted by file name
   (names starting with `_` or `.` are skipped).

Each exposes `register(events)`, or `register(events, quire)` to be handed
the `Services` container as well. Anything that goes wrong while loading or
registering stops the start with a `ConfigError` naming the hook.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

from quire.errors import ConfigError
from quire.events import Events

if TYPE_CHECKING:
    from quire.modules import Services

ENTRY_POINT_GROUP = "quire.hooks"
HOOKS_DIR = "hooks"
# Hook files are loaded as modules of this (never imported) package name.
FILE_MODULE_PREFIX = "quire_hooks"

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def load_hooks(events: Events, modules: list[str], data_dir: Path, quire: Services) -> None:
    """Load every hook and let it subscribe its handlers to `events`."""
    for ep in installed_hooks():
        _load_entry_point(ep, events, quire)
    for name in modules:
        _load_module(name, events, quire)
    for path in hook_files(data_dir):
        _load_file(path, events, quire)


@functools.cache
def installed_hooks() -> tuple[EntryPoint, ...]:
    """The hooks installed as entry points of packages, looked up once a
    process: the lookup reads every installed package's metadata (tens of
    milliseconds), and what is installed does not change while Quire runs."""
    return tuple(entry_points(group=ENTRY_POINT_GROUP))


def hook_files(data_dir: Path) -> list[Path]:
    """The hook files of a data directory, in the order they are loaded."""
    folder = Path(data_dir) / HOOKS_DIR
    if not folder.is_dir():
        return []
    return sorted(
        (p for p in folder.glob("*.py") if p.is_file() and not p.name.startswith(("_", "."))),
        key=lambda p: p.name,
    )


# -- the three sources ------------------------------------------------------


def _load_entry_point(ep: EntryPoint, events: Events, quire: Services) -> None:
    label = f"entry point '{ep.name}' ({ep.value}) of group {ENTRY_POINT_GROUP}"
    try:
        target = ep.load()
    except Exception as exc:
        raise ConfigError(f"{label}: cannot load: {_describe(exc)}") from None
    _register(label, target, events, quire)


def _load_module(name: str, events: Events, quire: Services) -> None:
    label = f"setting 'hooks.modules': {name}"
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        # the message configuration.md documents
        raise ConfigError(f"setting 'hooks.modules': cannot import {name}: {exc}") from None
    except Exception as exc:
        raise ConfigError(f"setting 'hooks.modules': cannot import {name}: {_describe(exc)}") from None
    _register(label, module, events, quire)


def _load_file(path: Path, events: Events, quire: Services) -> None:
    label = f"hook file {path}"
    # A fresh module object on every load: another app in this process (or a
    # restart) must run the file's current code, not a cached module.
    module_name = f"{FILE_MODULE_PREFIX}.{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None:
        raise ConfigError(f"{label}: cannot load: not a Python source file")
    module = importlib.util.module_from_spec(spec)
    # Registered while it runs, as an import would, so that dataclasses and
    # typing can find the module by name.
    sys.modules[module_name] = module
    try:
        # Compiled from the source each time rather than through the loader:
        # bytecode cached in <data>/hooks/__pycache__ is validated by mtime
        # (whole seconds) and size, so a quick same-size edit could run stale
        # code, and the data directory need not be writable.
        code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
        exec(code, module.__dict__)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        raise ConfigError(f"{label}: cannot load: {_describe(exc, path)}") from None
    try:
        _register(label, module, events, quire)
    except ConfigError:
        sys.modules.pop(module_name, None)
        raise


# -- registering ------------------------------------------------------------


def _register(label: str, target: Any, events: Events, quire: Services) -> None:
    register = _register_function(label, target)
    takes_quire = _takes_quire(label, register)
    if inspect.iscoroutinefunction(register):
        raise ConfigError(f"{label}: register must be a plain function, not async")
    try:
        if takes_quire:
            register(events, quire)
        else:
            register(events)
    except Exception as exc:
        raise ConfigError(f"{label}: register failed: {_describe(exc, _source_path(register))}") from None


def _register_function(label: str, target: Any) -> Callable[..., Any]:
    """A module (or object) with a `register` attribute, or, for an entry
    point that names it directly, the callable itself."""
    register = getattr(target, "register", None)
    if register is None and not inspect.ismodule(target) and callable(target):
        register = target
    if register is None:
        raise ConfigError(f"{label}: has no register(events) function")
    if not callable(register):
        raise ConfigError(f"{label}: register is not a function")
    return register


def _takes_quire(label: str, register: Callable[..., Any]) -> bool:
    """True for `register(events, quire)`, False for `register(events)`."""
    try:
        signature = inspect.signature(register)
    except (TypeError, ValueError):  # a callable without a readable signature
        return False
    params = signature.parameters.values()
    positional = [p for p in params if p.kind in _POSITIONAL]
    takes_any = any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params)
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
    if not (positional or takes_any) or len(required) > 2 or any(p not in positional for p in required):
        raise ConfigError(f"{label}: register must take (events) or (events, quire), not {signature}")
    return len(positional) >= 2


def _source_path(func: Callable[..., Any]) -> Path | None:
    try:
        source = inspect.getsourcefile(func)
    except TypeError:  # a builtin or a C function
        return None
    return Path(source) if source else None


def _describe(exc: BaseException, path: Path | None = None) -> str:
    """`Type: message`, and the line of `path` where it happened when the
    traceback passes through that file (a SyntaxError names its line itself)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if path is None or isinstance(exc, SyntaxError):
        return text
    resolved = str(path.resolve())
    lines = [
        frame.lineno
        for frame in traceback.extract_tb(exc.__traceback__)
        if frame.filename and str(Path(frame.filename).resolve()) == resolved
    ]
    return f"{text} (line {lines[-1]})" if lines else text
