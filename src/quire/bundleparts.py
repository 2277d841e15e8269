"""What a module contributes to export/import bundles (see `bundle.py`).

A module's part names its key in the bundle and three callables that live
next to the module's service: `export` (the value as stored here), `check`
(the bundle's value checked before anything is stored: raises an `ApiError`
naming what is wrong, returns the value ready to load) and `load` (store it
through the service, inside the import's transaction, with the events an
API write emits). `bundle.py` only orders the parts and drives them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from quire.errors import ApiError, BadRequest


@dataclass
class Checked:
    """What a part's check knows: the identity the import writes as, and
    the checked values of the parts before it by key (items are checked
    against the bundle's models and locales)."""

    identity: Any  # the importer's auth.service.Identity (this bottom module imports no feature)
    values: dict[str, Any] = field(default_factory=dict)
    # the bundle's files by key (`uploads/...`: the bytes, or None when the
    # bundle has none of that name); None for a bundle without files
    files: Callable[[str], bytes | None] | None = None


@dataclass(frozen=True)
class BundlePart:
    """A part stored in the import's one transaction."""

    key: str  # its key in the bundle document
    counted: str | None  # its name in the import's counts; None: not counted
    export: Callable[..., Any]  # the value to write under `key` (with_files: given the ids wanted, None: all)
    check: Callable[[Any, Checked], Any]  # (the bundle's value or None, earlier parts) -> ready value
    load: Callable[[Any, Any], Awaitable[int]]  # store the ready value; how many were stored
    # only in bundles with files (`quire export --with-files`): records
    # whose files travel with them; `export` then gets the ids wanted (None: all)
    with_files: bool = False


@dataclass(frozen=True)
class BatchedPart:
    """A part of many entries (content items): exported as a stream of JSON
    chunks, loaded one entry at a time in batches of transactions, so a
    long import lets other writers in between batches."""

    key: str
    counted: str
    export: Callable[[], Iterator[bytes]]  # the value as chunks of JSON
    check: Callable[[Any, Checked], list[Any]]  # the entries ready to load
    load_one: Callable[[Any, Any], Awaitable[None]]  # store one entry, inside the caller's transaction
    with_files: bool = False


def as_list(value: Any) -> list[Any]:
    return value or []


def check_list(value: Any, key: str, what: str) -> list[dict[str, Any]]:
    """The bundle's `key`: absent, or a list of objects."""
    value = as_list(value)
    if not isinstance(value, list):
        raise BadRequest(f"{key} must be a list")
    if not all(isinstance(entry, dict) for entry in value):
        raise BadRequest(f"every {what} must be an object")
    return value


def check_named(value: Any, key: str, what: str) -> list[dict[str, Any]]:
    """A list of objects with a string `name` each."""
    value = check_list(value, key, what)
    if not all(isinstance(entry.get("name"), str) for entry in value):
        raise BadRequest(f"every {what} needs a name")
    return value


@contextlib.contextmanager
def naming(prefix: str) -> Iterator[None]:
    """An error about one entry of a part names it: `prefix` goes before
    the message (`posts/<id>: Invalid item data: ...`)."""
    try:
        yield
    except ApiError as exc:
        exc.message = prefix + exc.message
        raise
