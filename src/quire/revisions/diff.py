"""What changed between two versions of a document, as a list of changes
that can be applied again: `diff(old, new)` and `apply(old, changes) == new`.

A change is `{"op": "add" | "remove" | "replace", "path": <JSON Pointer>,
"old": <value before>, "new": <value after>}` ("add" has no `old`, "remove"
no `new`). Objects are compared key by key, at every depth; any other value
(a list, a string, a number) that differs is replaced whole, so a change to
a list names the list."""

from __future__ import annotations

import copy
from typing import Any

Change = dict[str, Any]


def diff(old: dict[str, Any] | None, new: dict[str, Any] | None) -> list[Change]:
    """The changes that make `old` into `new` (None: no document)."""
    changes: list[Change] = []
    _walk(old or {}, new or {}, "", changes)
    return changes


def _walk(old: dict[str, Any], new: dict[str, Any], at: str, out: list[Change]) -> None:
    for key, value in old.items():
        if key not in new:
            out.append({"op": "remove", "path": at + "/" + _escape(key), "old": value})
    for key, value in new.items():
        path = at + "/" + _escape(key)
        if key not in old:
            out.append({"op": "add", "path": path, "new": value})
            continue
        before = old[key]
        if isinstance(before, dict) and isinstance(value, dict):
            _walk(before, value, path, out)
        elif not _same(before, value):  # 1, 1.0 and true are equal in Python, not in a document
            out.append({"op": "replace", "path": path, "old": before, "new": value})


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def apply(doc: dict[str, Any] | None, changes: list[Change]) -> dict[str, Any]:
    """`doc` with `changes` made (a copy; `doc` is left as it is)."""
    out = copy.deepcopy(doc) if doc else {}
    for change in changes:
        keys = [_unescape(k) for k in change["path"].split("/")[1:]]
        parent = out
        for key in keys[:-1]:
            parent = parent.setdefault(key, {})
        if change["op"] == "remove":
            parent.pop(keys[-1], None)
        else:
            parent[keys[-1]] = copy.deepcopy(change["new"])
    return out


def renamed(doc: dict[str, Any] | None, changes: list[Change], keys: dict[str, str]
            ) -> tuple[dict[str, Any] | None, list[Change]]:
    """A document and its changes with top-level keys renamed (`keys`:
    old name -> new name), as a field rename moves stored items."""
    doc = {keys.get(k, k): v for k, v in doc.items()} if doc is not None else None
    moved = []
    for change in changes:
        top, sep, rest = change["path"][1:].partition("/")
        name = keys.get(_unescape(top))
        moved.append({**change, "path": "/" + _escape(name) + sep + rest} if name is not None else change)
    return doc, moved


def changed_fields(changes: list[Change]) -> list[str]:
    """The top-level fields a list of changes touches, in order, once each."""
    return list(dict.fromkeys(_unescape(c["path"].split("/")[1]) for c in changes))


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unescape(key: str) -> str:
    return key.replace("~1", "/").replace("~0", "~")
