"""One model's items as CSV, JSON or NDJSON, out and in (docs/content-api.md#import-and-export).

Export streams a list as the API reads it (the same filter, sort and
permissions); in CSV, every field is a column, a localized field has a
column per locale (`title`, `title_de`), links and assets are their ids,
other structured values JSON text, and a text that a spreadsheet would
run as a formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage
return) is written with a leading `'`, which the import takes off again.

Import reads the rows, maps columns to fields (`mapping`; by default a
column names its field), turns each cell into the field's value and
checks every row as an API write checks it. `all`: any bad row refuses
the whole file and nothing is stored; `skip`: the good rows are stored and
the bad ones reported. Each problem names the row (its line in the file)
and the field. Rows are stored in batches (other writers get the lock in
between), with their events; a row with an `_id` replaces that item.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import math
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from quire.auth.service import Identity
from quire.batches import store_in_batches
from quire.content.models import Model
from quire.content.reads import ReadOptions
from quire.content.service import ContentService
from quire.errors import ApiError, BadRequest
from quire.http import check_depth
from quire.ids import is_id
from quire.store.values import unsafe
from quire.trees import MISSING, parent_problem

FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json", "ndjson": "application/x-ndjson"}
FORMULA = ("=", "+", "-", "@", "\t", "\r")
SYSTEM_COLUMNS = ("_id", "_state", "_created", "_modified")
TREE_COLUMNS = ("_pid", "_o")
# what a row may carry besides fields: kept when imported
KEPT = ("_id", "_state", "_pid", "_o", "_publish_at", "_unpublish_at")
# what an export holds that an import does not take: the write stamps these
# (who made or changed the item and when: this import, as an API write
# does), or they are read-only
IGNORED = ("_rev", "_created", "_cby", "_modified", "_mby", "_model", "_children", "_draft")
PREVIEW_ROWS = 20
SHOWN_PROBLEMS = 1000  # problems listed in an answer (all are counted)
MAX_COLUMNS = 1000
IMPORT_BATCH = 500  # rows per transaction
MAX_DEPTH = 64  # nesting a value may have, as in an API write's body


# -- export -----------------------------------------------------------------------


def columns(model: Model, codes: list[str]) -> list[str]:
    """The CSV columns of a model: system columns, then every field (and
    its per-locale columns)."""
    out = list(SYSTEM_COLUMNS) + (list(TREE_COLUMNS) if model.type == "tree" else [])
    for f in model.fields:
        out.append(f["name"])
        if f.get("i18n"):
            out += [f"{f['name']}_{code}" for code in codes]
    return out


def safe_text(text: str) -> str:
    """A text a spreadsheet would run as a formula, made inert with a
    leading `'` (and a text that starts so already, so that the import,
    which takes one off, gives it back as it was)."""
    return "'" + text if text.startswith((*FORMULA, "'")) else text


def cell(kind: str | None, value: Any) -> str:
    """One value as CSV text."""
    if value is None:
        return ""
    if kind in ("asset", "contentItemLink"):
        if isinstance(value, dict):
            return str(value.get("_id", ""))
        if isinstance(value, list):
            return safe_text(orjson.dumps([v.get("_id") if isinstance(v, dict) else v for v in value]).decode())
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str) and kind != "json":
        return safe_text(value)
    return safe_text(orjson.dumps(value).decode())  # (a json field's text too: the import reads JSON)


def export_rows(content: ContentService, model: Model, opts: ReadOptions, identity: Identity,
                fmt: str) -> Generator[bytes, None, None]:
    """The list `opts` selects, as `fmt`, in chunks."""
    if opts.locale:
        raise BadRequest("An export holds every locale's values as stored (title, title_de): leave locale out",
                         fields=["locale"])
    projection = None
    if isinstance(opts.fields, dict) and opts.fields.get("_id", 1) in (0, False):
        raise BadRequest("An export keeps each item's _id (a re-import needs it): leave _id in fields",
                         fields=["fields"])
    if isinstance(opts.fields, dict) and any(v for v in opts.fields.values()):
        projection = {k for k, v in opts.fields.items() if v}
    stream = content.list_stream(model.name, opts, identity)
    try:
        yield from _formatted(content, model, stream, fmt, projection)
    finally:
        stream.close()  # its `finally` closes the database connection


def _formatted(content: ContentService, model: Model, stream: Iterator[list[bytes]], fmt: str,
               projection: set[str] | None = None) -> Iterator[bytes]:
    if fmt == "json":
        yield b"["
        first = True
        for rows in stream:
            if rows:
                yield (b"" if first else b",") + b",".join(rows)
                first = False
        yield b"]\n"
        return
    if fmt == "ndjson":
        for rows in stream:
            if rows:
                yield b"\n".join(rows) + b"\n"
        return
    codes = content.locales.codes()
    names = columns(model, codes)
    if projection:  # the columns asked for (and the id, which a re-import needs); a locale's by its key
        names = [n for n in names if n == "_id" or n in projection]
    kinds = {f["name"]: f["type"] for f in model.fields}
    for f in model.fields:
        if f.get("i18n"):
            kinds.update({f"{f['name']}_{code}": f["type"] for code in codes})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(names)
    yield b"\xef\xbb\xbf" + buffer.getvalue().encode()  # a BOM: spreadsheets then read UTF-8 as UTF-8
    for rows in stream:
        buffer.seek(0)
        buffer.truncate()
        for raw in rows:
            doc = orjson.loads(raw)
            writer.writerow([cell(kinds.get(name), doc.get(name)) for name in names])
        yield buffer.getvalue().encode()


# -- reading a file -------------------------------------------------------------------


def guess_format(data: bytes) -> str:
    """The format of a file sent without one: a JSON list, NDJSON (an
    object a line) or CSV."""
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    return "json" if head == b"[" else "ndjson" if head == b"{" else "csv"


def read_rows(data: bytes, fmt: str) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """The columns and the rows (row number, values) of a file; 400 naming
    the line when it cannot be read. A CSV row's number counts the header
    as row 1, as a spreadsheet numbers rows; a JSON row's is its place in
    the list; an NDJSON row's its line."""
    if data.startswith(b"--") and b"\r\nContent-Disposition: form-data" in data[:2000]:
        raise BadRequest("The body is a form upload: send the file itself as the body "
                         "(curl --data-binary @file), not as a form field")
    if fmt not in FORMATS:
        raise BadRequest(f"format must be one of {', '.join(FORMATS)}", fields=["format"])
    if fmt == "json":
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(f"The file is not valid JSON: {exc}") from None
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise BadRequest("A JSON file holds a list of objects, one per item")
        return _keys(value), iter(enumerate(value, 1))
    text = _text(data)
    if fmt == "ndjson":
        rows = []
        for number, line in enumerate(text.split("\n"), 1):  # (not splitlines: U+2028 may be in a value)
            if not line.strip():
                continue
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise BadRequest(f"line {number}: not a JSON object") from None
            if not isinstance(value, dict):
                raise BadRequest(f"line {number}: not a JSON object")
            rows.append((number, value))
        return _keys([r for _, r in rows]), iter(rows)
    return _csv(text)


def _keys(rows: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(k for row in rows for k in row))


def _text(data: bytes) -> str:
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise BadRequest(f"line {line}: the file holds a NUL byte: not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise BadRequest(f"line {line}: the file is not UTF-8 (save it as UTF-8 CSV)") from None


def _csv(text: str) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    sample = text[:4096]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t") if sample else csv.excel
    except csv.Error:
        dialect = csv.excel
    csv.field_size_limit(max(len(text), 131072))  # a cell may be as long as the file (the file is capped)
    # strict: a quote left open is an error (naming where the file ends), not a
    # cell that swallows the rows after it
    reader = csv.reader(io.StringIO(text, newline=""), dialect, strict=True)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise BadRequest(f"line 1: {exc}") from None
    if not header:
        raise BadRequest("The file is empty: the first line names the columns")
    header = [h.strip() for h in header]
    if len(header) > MAX_COLUMNS:
        raise BadRequest(f"line 1: more than {MAX_COLUMNS} columns")
    if "" in header:
        raise BadRequest(f"line 1: column {header.index('') + 1} has no name")
    twice = [h for h in dict.fromkeys(header) if header.count(h) > 1]
    if twice:
        raise BadRequest(f"line 1: the column {twice[0]} is named twice")

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        number = 1  # the header
        try:
            for values in reader:
                number += 1
                if not any(v.strip() for v in values):
                    continue
                if len(values) > len(header):
                    raise BadRequest(f"row {number} (line {reader.line_num}): {len(values)} cells, the header "
                                     f"names {len(header)}")
                yield number, {h: v for h, v in zip(header, values, strict=False)}
        except csv.Error as exc:
            hint = " (a quote opened and never closed?)" if "unexpected end of data" in str(exc) else ""
            raise BadRequest(f"row {number} (line {reader.line_num}): {exc}{hint}") from None

    return header, rows()


# -- rows as items ----------------------------------------------------------------------


def _number(text: str) -> int | float:
    """A number cell (ValueError: none, or one no store holds: not finite,
    or an integer beyond 64 bits)."""
    cleaned = text.strip()
    try:
        number: int | float = int(cleaned)
    except ValueError:
        number = float(cleaned.replace(",", ".") if cleaned.count(",") == 1 and "." not in cleaned else cleaned)
    if isinstance(number, float) and not math.isfinite(number) or isinstance(number, int) and not -(2**63) <= number < 2**63:
        raise ValueError("not a number a store holds")
    return number


def value_of(kind: str, multiple: bool, text: str) -> Any:
    """A CSV cell as the value of a field of type `kind` (ValueError: it is not one)."""
    if text.startswith("'"):
        text = text[1:]  # the mark `safe_text` puts before a formula-like text (or one starting with ')
    if text == "":
        return None
    if multiple or kind in ("object", "set", "table", "json", "variants"):
        if kind in ("asset", "contentItemLink") and not text.lstrip().startswith("["):
            return [{"_id": t.strip()} for t in text.split(",") if t.strip()]
        return orjson.loads(text)
    if kind == "number":
        return _number(text)
    if kind == "boolean":
        lowered = text.strip().lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise ValueError("must be true or false")
    if kind == "tags":
        if text.lstrip().startswith("["):
            return orjson.loads(text)
        return [t.strip() for t in text.split(",") if t.strip()]
    if kind in ("asset", "contentItemLink"):
        text = text.strip()
        return orjson.loads(text) if text.startswith("{") else {"_id": text}
    return text


@dataclass
class Problem:
    row: int  # the line of the file (CSV, NDJSON) or the position in the list (JSON)
    field: str | None
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"row": self.row, "field": self.field, "error": self.error}


def to_item(model: Model, row: dict[str, Any], mapping: dict[str, str | None], typed: bool,
            codes: list[str]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """A row as item data, and the (field, reason) of each cell that is not
    a value of its field. `typed`: the row's values are JSON already."""
    kinds = {f["name"]: (f["type"], bool(f.get("multiple"))) for f in model.fields}
    for f in model.fields:
        if f.get("i18n"):
            kinds.update({f"{f['name']}_{code}": (f["type"], bool(f.get("multiple"))) for code in codes})
    item: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for column, raw in row.items():
        target = mapping.get(column, column)
        if target is None or target in IGNORED:
            continue
        if target in KEPT:
            value: Any = raw
            if not typed and isinstance(raw, str):
                value = None if raw == "" else _system(target, raw)
            if value is not None:
                item[target] = value
            continue
        if target not in kinds:
            continue  # (the columns were checked against the fields before the rows)
        if typed or not isinstance(raw, str):
            item[target] = raw
            continue
        try:
            item[target] = value_of(*kinds[target], raw)  # None: an empty cell, which clears the field
        except (ValueError, orjson.JSONDecodeError):
            problems.append((target, f"{raw[:40]!r} is not a {kinds[target][0]} value"))
    return item, problems


def _system(key: str, text: str) -> Any:
    if key in ("_state", "_created", "_modified", "_publish_at", "_unpublish_at", "_o"):
        try:
            return _number(text)
        except ValueError:
            return text
    return text


# -- import -----------------------------------------------------------------------------


@dataclass
class Outcome:
    rows: int = 0  # rows read
    created: int = 0
    updated: int = 0
    problems: list[Problem] = field(default_factory=list)
    bad_rows: int = 0
    columns: list[str] = field(default_factory=list)
    preview: list[dict[str, Any]] | None = None  # the first rows, as items, for a preview

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": self.rows, "created": self.created, "updated": self.updated,
                               "skipped": self.bad_rows,
                               "problems": [p.to_json() for p in self.problems[:SHOWN_PROBLEMS]]}
        if len(self.problems) > SHOWN_PROBLEMS:
            out["more_problems"] = len(self.problems) - SHOWN_PROBLEMS
        if self.preview is not None:
            out["columns"] = self.columns
            out["preview"] = self.preview
        return out


@dataclass
class Request:
    data: bytes
    fmt: str
    mapping: dict[str, str | None] = field(default_factory=dict)
    mode: str = "all"  # all: nothing stored when a row is bad; skip: the good rows stored
    preview: bool = False


def check_mapping(value: Any) -> dict[str, str | None]:
    if value in (None, ""):
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and (v is None or isinstance(v, str))
                                              for k, v in value.items()):
        raise BadRequest('mapping must be an object of column -> field name (or null to leave a column out)',
                         fields=["mapping"])
    return value


async def import_rows(content: ContentService, name: str, request: Request, identity: Identity,
                      progress: Callable[[int, int], None] | None = None) -> Outcome:
    """Check every row, then (unless a preview, or `all` with a bad row)
    store the good ones in batches. 400 for a file that cannot be read."""
    if request.mode not in ("all", "skip"):
        raise BadRequest("mode must be all (nothing stored if a row is bad) or skip (bad rows left out)",
                         fields=["mode"])
    model = content.models.get(name)
    identity.require(f"content/{name}/create")
    identity.require(f"content/{name}/read")  # a preview and the problems show stored items
    if model.type == "singleton":
        raise BadRequest(f"{name} is a singleton: it has one item, edited as such; a file of items goes into a "
                         "collection or a tree")
    codes = content.locales.codes()
    header, rows = read_rows(request.data, request.fmt)
    _check_columns(model, header, request.mapping, codes)
    typed = request.fmt != "csv"
    coll = content.collection(model)
    outcome = Outcome(columns=header, preview=[] if request.preview else None)
    ready: list[tuple[int, dict[str, Any], bool]] = []
    seen: dict[str, int] = {}
    for line, row in rows:
        outcome.rows += 1
        if outcome.rows % 500 == 0:
            await asyncio.sleep(0)  # a long file: other requests of this worker get their turn
        item, problems = to_item(model, row, request.mapping, typed, codes)
        hostile = unsafe(item) or _too_deep(item)
        if hostile:  # a value no store holds (a number beyond 64 bits, NaN, nesting too deep)
            outcome.bad_rows += 1
            outcome.problems.append(Problem(line, None, f"the row {hostile}"))
            continue
        if "_id" not in item:
            item["_id"] = row_id(model.name, row, seen)
        exists = False
        try:  # also when a cell was bad: the row's other problems are named too
            current = _permitted(content, coll, model, item, identity)
            exists = current is not None
            item = _merged(item, current)
            checked = content.check_imported(model, item, identity, codes=codes)
        except ApiError as exc:
            problems += [p for p in _named(exc) if p[0] not in {f for f, _ in problems}]
        else:
            item = checked
        if problems:
            outcome.bad_rows += 1
            outcome.problems += [Problem(line, f, e) for f, e in problems]
        elif not request.preview:
            ready.append((line, item, exists))
        if outcome.preview is not None and len(outcome.preview) < PREVIEW_ROWS:
            outcome.preview.append({"row": line, "item": item, "problems": [{"field": f, "error": e}
                                                                               for f, e in problems]})
        if request.preview and outcome.rows >= PREVIEW_ROWS:
            break
    if model.type == "tree" and not request.preview:
        _check_parents(coll, ready, outcome)
        if request.mode == "all" and outcome.problems:
            return outcome
    if request.preview or (request.mode == "all" and outcome.problems) or not ready:
        return outcome
    total = len(ready)
    now = int(time.time())

    async def load(entry: tuple[int, dict[str, Any], bool]) -> None:
        _, item, exists = entry
        item.update(_modified=now, _mby=identity.actor)  # this write's, not the file's
        await content.store_imported(model, coll, item, identity)
        if exists:
            outcome.updated += 1
        else:
            outcome.created += 1

    def committed() -> None:
        if progress is not None:
            progress(outcome.created + outcome.updated, total)

    await store_in_batches(content.store, iter(ready), load, IMPORT_BATCH, committed)
    return outcome


def _too_deep(item: dict[str, Any]) -> str | None:
    try:
        check_depth(item, MAX_DEPTH)
    except BadRequest:
        return f"holds a value nested deeper than {MAX_DEPTH} levels"
    return None


def row_id(model: str, row: dict[str, Any], seen: dict[str, int]) -> str:
    """The id of a row that names none: made from the row's content (and
    how many equal rows came before it), so importing the same file again,
    after a stop half-way or after fixing other rows, replaces what the
    first run stored instead of storing it twice. 24 hex digits, as every
    id."""
    content = hashlib.sha256(model.encode() + b"\0" + orjson.dumps(row, option=orjson.OPT_SORT_KEYS)).hexdigest()
    count = seen.get(content, 0)
    seen[content] = count + 1
    return hashlib.sha256(f"{content}:{count}".encode()).hexdigest()[:24]


def _check_columns(model: Model, header: list[str], mapping: dict[str, str | None], codes: list[str]) -> None:
    """Every column names a field (or a kept system key), through the
    mapping: 400 naming those that do not."""
    known = {f["name"] for f in model.fields} | set(KEPT)
    known |= {f"{f['name']}_{code}" for f in model.fields if f.get("i18n") for code in codes}
    unknown = [c for c in header if mapping.get(c, c) is not None and mapping.get(c, c) not in known | set(IGNORED)]
    if unknown:
        shown = ", ".join(c if mapping.get(c, c) == c else f"{c} (mapped to {mapping[c]})" for c in unknown[:10])
        raise BadRequest(f"Columns that are not fields of {model.name}: {shown} (map them to fields, or leave them "
                         f'out with "mapping": {{"{unknown[0]}": null}})', fields=["mapping"])
    targets = [str(mapping.get(c, c)) for c in header if mapping.get(c, c) is not None]
    twice = sorted({t for t in targets if targets.count(t) > 1})
    if twice:
        raise BadRequest(f"Two columns go to the field {twice[0]}", fields=["mapping"])


def _permitted(content: ContentService, coll: Any, model: Model, item: dict[str, Any],
               identity: Identity) -> dict[str, Any] | None:
    """The permissions a row needs, as an API write of it would; the stored
    item it changes (None: a new item)."""
    item_id = item.get("_id")
    if item_id is not None and not is_id(item_id):
        raise BadRequest("_id must be an item id (24 hex digits)", fields=["_id"])
    current = coll.get(item_id) if item_id is not None else None
    if current is not None:
        identity.require(f"content/{model.name}/update")
    # as an API write: the publish permission for a state or a schedule sent, unless it
    # is the stored one (a re-imported export of unchanged items needs none)
    changes = [k for k in ("_state", "_publish_at", "_unpublish_at")
               if k in item and (current is None or current.get(k) != item[k])]
    if changes:
        identity.require(f"content/{model.name}/publish")
    return current


def _merged(item: dict[str, Any], current: dict[str, Any] | None) -> dict[str, Any]:
    """A row as the item to store: a new item as the row has it; a stored
    one changed by the columns the file has (an empty cell clears its
    field, a column the file lacks leaves it), its creation kept."""
    if current is None:
        return {k: v for k, v in item.items() if v is not None}
    merged = {k: v for k, v in current.items() if k not in ("_rev", "_modified", "_mby", "_created", "_cby")}
    merged.update(item)
    merged.update(_created=current.get("_created"), _cby=current.get("_cby"))
    return {k: v for k, v in merged.items() if v is not None or k == "_cby"}


def _check_parents(coll: Any, ready: list[tuple[int, dict[str, Any], bool]], outcome: Outcome) -> None:
    """A tree's rows: each parent an item of the file or of the site, and
    no row its own ancestor (a bad row is left out, named)."""
    parents = {d["_id"]: d.get("_pid") for d in coll.pick(["_pid"])} if coll.exists() else {}
    parents.update((item["_id"], item.get("_pid")) for _, item, _ in ready)
    bad = set()
    for line, item, _ in ready:
        problem = parent_problem(item["_id"], item.get("_pid"), lambda node: parents.get(node, MISSING))
        if problem:
            outcome.bad_rows += 1
            outcome.problems.append(Problem(line, "_pid", "is not an item of this model (nor of the file)"
                                            if problem == "missing" else "would make the item its own ancestor"))
            bad.add(item["_id"])
    ready[:] = [entry for entry in ready if entry[1]["_id"] not in bad]


def _named(exc: ApiError) -> list[tuple[str, str]]:
    """An API error as (field, reason) pairs: per field when it names them."""
    errors = getattr(exc, "errors", None)
    if isinstance(errors, dict) and errors:
        return [(str(k), str(v)) for k, v in errors.items()]
    fields = getattr(exc, "fields", None) or [None]
    return [(str(fields[0]) if fields[0] else "", exc.message)]


def progress_recorder(store: Any, key: str, identity: Identity) -> Callable[[int, int], None]:
    """How far an import got, kept in the store's marks so that any worker
    can answer; the record names who imports, and only they (or an admin)
    are answered."""
    def record(done: int, total: int) -> None:
        mark = {"done": done, "total": total, "by": identity.actor}
        with store.transaction():
            store.set_meta(f"content/import/{key}", orjson.dumps(mark).decode())
    return record


def progress_of(store: Any, key: str, identity: Identity) -> dict[str, int] | None:
    """`{done, total}` of the import given `key`, if `identity` runs it (or
    is an admin); None for one unknown or someone else's."""
    raw = store.get_meta(f"content/import/{key}")
    if raw is None:
        return None
    mark = orjson.loads(raw)
    if mark.get("by") != identity.actor and not identity.is_admin:
        return None
    return {"done": mark["done"], "total": mark["total"]}
