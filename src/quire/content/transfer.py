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

import csv
import hashlib
import io
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
from quire.ids import is_id

FORMATS = {"csv": "text/csv; charset=utf-8", "json": "application/json", "ndjson": "application/x-ndjson"}
FORMULA = ("=", "+", "-", "@", "\t", "\r")
SYSTEM_COLUMNS = ("_id", "_state", "_created", "_modified")
TREE_COLUMNS = ("_pid", "_o")
# what a row may carry besides fields: kept when imported (as a bundle's items are)
KEPT = ("_id", "_state", "_created", "_modified", "_cby", "_mby", "_pid", "_o", "_publish_at", "_unpublish_at")
PREVIEW_ROWS = 20
SHOWN_PROBLEMS = 1000  # problems listed in an answer (all are counted)
MAX_COLUMNS = 1000
IMPORT_BATCH = 500  # rows per transaction


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
    """A text a spreadsheet would run as a formula, made inert."""
    return "'" + text if text.startswith(FORMULA) else text


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
    if isinstance(value, str):
        return safe_text(value)
    return safe_text(orjson.dumps(value).decode())


def export_rows(content: ContentService, model: Model, opts: ReadOptions, identity: Identity,
                fmt: str) -> Generator[bytes, None, None]:
    """The list `opts` selects, as `fmt`, in chunks."""
    stream = content.list_stream(model.name, opts, identity)
    try:
        yield from _formatted(content, model, stream, fmt)
    finally:
        stream.close()  # its `finally` closes the database connection


def _formatted(content: ContentService, model: Model, stream: Iterator[list[bytes]], fmt: str) -> Iterator[bytes]:
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


def read_rows(data: bytes, fmt: str) -> tuple[list[str], Iterator[tuple[int, dict[str, Any]]]]:
    """The columns and the rows (line, values) of a file; 400 naming the
    line when it cannot be read."""
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
        for number, line in enumerate(text.splitlines(), 1):
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
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise BadRequest(f"line 1: {exc}") from None
    if not header:
        raise BadRequest("The file is empty: the first line names the columns")
    header = [h.strip() for h in header]
    if len(header) > MAX_COLUMNS or len(set(header)) != len(header) or "" in header:
        raise BadRequest("line 1: the columns need names, each once (at most 1000)")

    def rows() -> Iterator[tuple[int, dict[str, Any]]]:
        try:
            for values in reader:
                if not any(v.strip() for v in values):
                    continue
                if len(values) > len(header):
                    raise BadRequest(f"line {reader.line_num}: {len(values)} cells, the header names {len(header)}")
                yield reader.line_num, {h: v for h, v in zip(header, values, strict=False)}
        except csv.Error as exc:
            raise BadRequest(f"line {reader.line_num}: {exc}") from None

    return header, rows()


# -- rows as items ----------------------------------------------------------------------


def _number(text: str) -> int | float:
    cleaned = text.strip()
    try:
        return int(cleaned)
    except ValueError:
        return float(cleaned.replace(",", ".") if cleaned.count(",") == 1 and "." not in cleaned else cleaned)


def value_of(kind: str, multiple: bool, text: str) -> Any:
    """A CSV cell as the value of a field of type `kind` (ValueError: it is not one)."""
    if text.startswith("'") and text[1:].startswith(FORMULA):
        text = text[1:]  # the mark of an exported formula-like text
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
        if target is None:
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
            if raw is not None:
                item[target] = raw
            continue
        try:
            value = value_of(*kinds[target], raw)
        except (ValueError, orjson.JSONDecodeError):
            problems.append((target, f"{raw[:40]!r} is not a {kinds[target][0]} value"))
            continue
        if value is not None:
            item[target] = value
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
        item, problems = to_item(model, row, request.mapping, typed, codes)
        if "_id" not in item:
            item["_id"] = row_id(model.name, row, seen)
        exists = False
        try:  # also when a cell was bad: the row's other problems are named too
            exists = _permitted(content, coll, model, item, identity)
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
    if request.preview or (request.mode == "all" and outcome.problems) or not ready:
        return outcome
    total = len(ready)

    async def load(entry: tuple[int, dict[str, Any], bool]) -> None:
        _, item, exists = entry
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
    unknown = [c for c in header if mapping.get(c, c) is not None and mapping.get(c, c) not in known]
    if unknown:
        shown = ", ".join(unknown[:10])
        raise BadRequest(f"Columns that are not fields of {model.name}: {shown} (map them to fields, or leave them "
                         f'out with "mapping": {{"{unknown[0]}": null}})', fields=["mapping"])
    targets = [str(mapping.get(c, c)) for c in header if mapping.get(c, c) is not None]
    twice = sorted({t for t in targets if targets.count(t) > 1})
    if twice:
        raise BadRequest(f"Two columns go to the field {twice[0]}", fields=["mapping"])


def _permitted(content: ContentService, coll: Any, model: Model, item: dict[str, Any],
               identity: Identity) -> bool:
    """The permissions a row needs, as an API write of it would; whether it
    replaces a stored item."""
    item_id = item.get("_id")
    if item_id is not None and not is_id(item_id):
        raise BadRequest("_id must be an item id (24 hex digits)", fields=["_id"])
    exists = item_id is not None and coll.get(item_id) is not None
    if exists:
        identity.require(f"content/{model.name}/update")
    if any(k in item for k in ("_state", "_publish_at", "_unpublish_at")):
        identity.require(f"content/{model.name}/publish")
    return exists


def _named(exc: ApiError) -> list[tuple[str, str]]:
    """An API error as (field, reason) pairs: per field when it names them."""
    errors = getattr(exc, "errors", None)
    if isinstance(errors, dict) and errors:
        return [(str(k), str(v)) for k, v in errors.items()]
    fields = getattr(exc, "fields", None) or [None]
    return [(str(fields[0]) if fields[0] else "", exc.message)]
