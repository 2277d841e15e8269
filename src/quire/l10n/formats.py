"""Translation files: gettext PO and i18next JSON, and the nesting of dotted
keys. Pure functions over plain data; the service decides what is stored.

Every problem with a file raises `FormatError`, whose message is meant for
the person who sent the file (the service turns it into a 400).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from io import BytesIO
from typing import Any

import orjson
from babel.messages import pofile
from babel.messages.catalog import Catalog

FORMATS = ("json", "po", "i18next")
PO_TYPE = "text/x-gettext-translation; charset=utf-8"
JSON_TYPE = "application/json; charset=utf-8"
# orjson refuses to write objects nested deeper than 254 levels; keys with
# more segments than this stay flat so an answer can always be written.
MAX_NEST = 100


class FormatError(ValueError):
    """A file or value that cannot be read; the message says why."""


class _Branch(dict[str, Any]):
    """An object made by nesting, as opposed to a leaf value (in the full
    form the leaves are objects too, so the type tells them apart)."""


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Dotted keys as nested objects: `{"a.b": 1}` -> `{"a": {"b": 1}}`.

    Keys are placed shortest (fewest segments) first, then in key order, so
    the outcome does not depend on the order of `flat`. A key stays flat at
    the top level, under its full name, when it has an empty segment
    (`"Loading..."`, `".x"`), more than MAX_NEST segments, or would land on
    a place already taken by a leaf or a branch (`"a.b"` after `"a"`).
    Members of every object come out sorted by name.
    """
    out: dict[str, Any] = {}
    for key in sorted(flat, key=lambda k: (k.count("."), k)):
        parts = key.split(".")
        if len(parts) == 1 or "" in parts or len(parts) > MAX_NEST or not _place(out, parts, flat[key]):
            out[key] = flat[key]
    return _sorted(out)


def _place(root: dict[str, Any], parts: list[str], value: Any) -> bool:
    """Put `value` at `parts` under `root`; False (nothing changed) when a
    leaf is in the way or the place is taken."""
    node = root
    depth = 0
    # walk the branches that exist; check the rest is free before creating any
    while depth < len(parts) - 1:
        if parts[depth] not in node:  # not .get(): a leaf may be None (a missing value)
            break
        child = node[parts[depth]]
        if not isinstance(child, _Branch):
            return False
        node = child
        depth += 1
    if depth == len(parts) - 1 and parts[-1] in node:
        return False
    for part in parts[depth:-1]:
        branch = _Branch()
        node[part] = branch
        node = branch
    node[parts[-1]] = value
    return True


def _sorted(node: dict[str, Any]) -> dict[str, Any]:
    return {k: _sorted(v) if isinstance(v, _Branch) else v for k, v in sorted(node.items())}


def flatten(tree: Any) -> dict[str, str]:
    """An i18next resource (nested or flat) as `{dotted key: string}`."""
    if not isinstance(tree, dict):
        raise FormatError("An i18next file must hold a JSON object")
    out: dict[str, str] = {}
    stack: list[tuple[str, dict[str, Any]]] = [("", tree)]
    # a stack, not recursion: a deep file must not exhaust Python's stack
    while stack:
        prefix, node = stack.pop()
        for name, value in node.items():
            key = prefix + name
            if isinstance(value, dict):
                stack.append((key + ".", value))
            elif not isinstance(value, str):
                raise FormatError(f"Value of '{key}' must be a string")
            elif key in out:
                raise FormatError(f"Key '{key}' appears twice (once nested, once with dots)")
            else:
                out[key] = value
    return out


def write_i18next(values: dict[str, str | None]) -> bytes:
    """One locale as an i18next resource: nested by dots, missing values
    left out so that i18next falls back to its fallback language."""
    present = {k: v for k, v in values.items() if v}
    return orjson.dumps(nest(present), option=orjson.OPT_INDENT_2) + b"\n"


def read_i18next(raw: bytes) -> dict[str, str]:
    return flatten(read_json_file(raw))


def read_json_file(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise FormatError(f"File is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None


def babel_code(locale: str) -> str:
    """`pt-BR` -> `pt_BR`, the form gettext headers use."""
    return locale.replace("-", "_")


def write_po(project: str, locale: str, values: dict[str, str | None], modified: int) -> bytes:
    """One locale as a gettext PO file: msgid = key, msgstr = the value
    ("" when missing). The dates are the project's last change, so the same
    project always exports the same bytes."""
    when = datetime.datetime.fromtimestamp(modified, datetime.UTC)
    catalog = Catalog(
        locale=babel_code(locale),
        project=project,
        version="",
        header_comment=f"# Translations of project {project} for {locale}, exported by Quire.\n#",
        creation_date=when,
        revision_date=when,
        fuzzy=False,
    )
    for key, value in values.items():
        catalog.add(key, value or "")
    out = BytesIO()
    pofile.write_po(out, catalog, width=0)  # no wrapping: one line per message is easier to diff
    return out.getvalue()


@dataclass
class PoFile:
    """What a PO file says: its header Language (as written, may be None)
    and `{msgid: msgstr or None}` (None: not translated in this file)."""

    language: str | None
    entries: dict[str, str | None]


def read_po(raw: bytes) -> PoFile:
    """Parse a PO file. Fuzzy entries are skipped (a translator marked them
    as unchecked), as are obsolete ones (`#~`); plural entries and entries
    with a context (`msgctxt`) are refused, since a key holds one string."""
    try:
        catalog = _read_catalog(raw)
    except FormatError:
        raise
    except pofile.PoFileError as exc:  # Babel counts lines from 0
        reason = str(exc).removesuffix(f" on {exc.lineno}")
        raise FormatError(f"File is not a valid PO file: line {exc.lineno + 1}: {reason}: {exc.line.strip()[:80]!r}") from None
    except (ValueError, LookupError, TypeError, IndexError) as exc:
        raise FormatError(f"File is not a valid PO file: {exc}") from None
    entries: dict[str, str | None] = {}
    for message in catalog:
        if message.id == "":  # the header
            continue
        if isinstance(message.id, tuple | list) or isinstance(message.string, tuple | list):
            first = message.id[0] if isinstance(message.id, tuple | list) else message.id
            raise FormatError(f"PO entry '{first}': plural entries are not supported")
        if message.context:
            raise FormatError(f"PO entry '{message.id}': entries with msgctxt are not supported")
        if message.fuzzy:
            continue
        entries[str(message.id)] = str(message.string) or None
    return PoFile(catalog.locale_identifier or None, entries)


def _read_catalog(raw: bytes) -> Catalog:
    # Babel decodes with the charset of the header; without one it assumes
    # UTF-8 and would fail late, so a file that is not text is caught here
    if b"\x00" in raw:
        raise FormatError("File is not a valid PO file: it holds NUL bytes")
    check_po_lines(raw)
    return pofile.read_po(BytesIO(raw), abort_invalid=True)


_PO_LINE = re.compile(r'^(?:(msgctxt|msgid|msgid_plural|msgstr(?:\[\d+\])?)[ \t]+)?("(?:[^"\\]|\\.)*")[ \t]*$')


def check_po_lines(raw: bytes) -> None:
    """What Babel's reader lets through without a word, refused with the
    line at fault: a line that is neither a comment, a keyword with its
    quoted string nor a continuation string (an unclosed quote, a string
    without quotes: Babel drops the entry, or the rest of the file), and an
    entry whose msgid (with its msgctxt) came before (Babel keeps one of
    them). Obsolete entries (`#~`) are comments. Only quotes, backslashes
    and keywords are looked at, all ASCII, so the file's charset does not
    matter here."""
    seen: dict[tuple[str | None, str], int] = {}
    context: list[str] | None = None  # the msgctxt of the entry being read
    msgid: list[str] | None = None  # its msgid, while continuation lines may follow
    msgid_line = 0
    target: list[str] | None = None  # what a continuation line adds to (None: a msgstr, not kept)
    started = False

    def close() -> None:
        nonlocal msgid, context
        if msgid is not None:
            text = "".join(msgid)
            if text:  # "" is the header
                key = (None if context is None else "".join(context), text)
                first = seen.setdefault(key, msgid_line)
                if first != msgid_line:
                    raise FormatError(f"PO entry '{text[:80]}' appears twice (lines {first} and {msgid_line})")
        msgid = None
        context = None

    for number, line in enumerate(raw.decode("latin-1").splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        found = _PO_LINE.match(stripped)
        if found is None or (found.group(1) is None and not started):
            raise FormatError(f"File is not a valid PO file: line {number}: not a keyword with a quoted string: "
                              f"{stripped[:80]!r}")
        started = True
        keyword, value = found.group(1), found.group(2)[1:-1]
        if keyword is None:
            if target is not None:
                target.append(value)
        elif keyword == "msgctxt":
            close()
            context = target = [value]
        elif keyword == "msgid":
            kept = context
            close()
            context = kept
            msgid = target = [value]
            msgid_line = number
        else:  # msgstr, msgstr[n], msgid_plural: the msgid is complete
            close()
            target = None
    close()
