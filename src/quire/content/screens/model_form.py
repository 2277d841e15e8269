"""The model builder's form: a model definition as rows of fields, and back.

Every field row has a key of its own (random, not its position), and its
inputs are named `<key>-name`, `<key>-type`, ... A list of rows is a run of
`<list>=<key>` inputs (`field` for the model's fields, `<key>-fields` for a
set's sub-fields): the form posts them in document order, so the order on
the page is the order of the fields, whether rows were dragged, moved by
keyboard or added by htmx, with no renumbering. A row carries the name the
field had when the page was made (`<key>-was`), which turns a changed name
into a rename the stored items follow."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any, Protocol

from quire.content import types
from quire.content.fields import FieldError, validate_definition_field
from quire.errors import BadRequest
from quire.ui.screens import json_of

CODE_LANGUAGES = ["text", "html", "css", "javascript", "json", "markdown"]
# opts keys the form edits; others are kept as they were (`<key>-opts`)
EDITED_OPTS = ("options", "link", "accept", "language", "fields", "components", "allowedComponents")
# more fields than any model needs (sub-fields counted); the rest of a form is ignored
MAX_ROWS = 1000
MAX_DEPTH = 3  # levels of sets the form offers sub-fields for (a stored deeper one still shows)


class FormLike(Protocol):
    def get(self, name: str, default: str = "") -> str: ...
    def getlist(self, name: str) -> list[str]: ...


def new_key() -> str:
    return "f" + secrets.token_hex(4)


@dataclass
class FieldRow:
    """One field as the form shows it (strings as typed) and where it is wrong."""

    key: str
    was: str = ""  # the name stored items know it by; "" for a new field
    name: str = ""
    type: str = "text"
    label: str = ""
    info: str = ""
    group: str = ""
    required: bool = False
    i18n: bool = False
    multiple: bool = False
    indexed: bool = False
    default: str = ""
    options: str = ""  # select: one per line, `value` or `value = Label`
    link: str = ""
    accept: str = ""
    language: str = ""
    html_tags: str = ""
    extra_opts: str = ""  # JSON of the opts the form does not edit
    allowed: str = ""  # layout: the components it offers, comma-separated (empty: every one)
    components: str = ""  # layout: its own components, JSON
    shared: str = ""  # layout: the shared blocks it offers too (content/library.py), comma-separated
    show_when: str = ""  # JSON Logic: shown only when it holds (content/conditions.py)
    required_when: str = ""  # JSON Logic: required only when it holds
    fields: list[FieldRow] = field(default_factory=list)
    remove: bool = False
    drop: bool = False  # confirmed: delete the stored values with the field
    usage: int | None = None  # items holding a value (stored fields; None: not counted here)
    error: str = ""

    @property
    def label_or_name(self) -> str:
        return self.label or self.name or "new field"


@dataclass
class ModelForm:
    name: str = ""
    label: str = ""
    kind: str = "collection"
    info: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    rows: list[FieldRow] = field(default_factory=list)
    indexes: list[Any] = field(default_factory=list)  # the ones not shown as a field's checkbox
    # preview addresses, one per line: `Name = https://site.example/{slug}?preview={token}`
    preview: str = ""
    error: str = ""
    errors: dict[str, str] = field(default_factory=dict)  # name, label, kind, preview

    def live_rows(self) -> list[FieldRow]:
        return [r for r in self.rows if not r.remove]

    def all_rows(self) -> list[FieldRow]:
        out: list[FieldRow] = []
        stack = list(self.rows)
        while stack:
            row = stack.pop(0)
            out.append(row)
            stack[:0] = row.fields
        return out


# -- from a stored model ------------------------------------------------------


def form_of_model(model: Any) -> ModelForm:
    meta = dict(model.meta or {})
    info = meta.pop("info", "")
    single = {c[0] for c in model.indexes if len(c) == 1}
    rows = [row_of_field(f, indexed=f["name"] in single) for f in model.fields]
    shown = {r.name for r in rows}
    kept = [c if len(c) > 1 else c[0] for c in model.indexes if not (len(c) == 1 and c[0] in shown)]
    label = "" if model.label in (model.name, human_label(model.name)) else model.label
    preview = "\n".join(f"{p['name']} = {p['uri']}" for p in model.preview)
    return ModelForm(model.name, label, model.type, info if isinstance(info, str) else "", meta, rows, kept, preview)


def human_label(name: str) -> str:
    """A label made from a field's or model's name, for who left it empty:
    `publishedAt` and `published_at` read "Published at"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    text = " ".join(w if w.isupper() and len(w) > 1 else w.lower() for w in words)
    return text[:1].upper() + text[1:] if text else name


def row_of_field(f: dict[str, Any], indexed: bool = False) -> FieldRow:
    opts = dict(f.get("opts") or {})
    row = FieldRow(new_key(), was=f["name"], name=f["name"], type=f["type"], label=f.get("label", ""),
                   info=f.get("info", ""), group=f.get("group", ""), required=f.get("required", False),
                   i18n=f.get("i18n", False), multiple=f.get("multiple", False), indexed=indexed)
    row.show_when = json.dumps(f["showWhen"], ensure_ascii=False) if "showWhen" in f else ""
    row.required_when = json.dumps(f["requiredWhen"], ensure_ascii=False) if "requiredWhen" in f else ""
    if row.label in (row.name, human_label(row.name)):  # made from the name: follows a rename
        row.label = ""
    if "default" in f:
        row.default = f["default"] if f["type"] in types.plain_types() and isinstance(f["default"], str) \
            else json.dumps(f["default"], ensure_ascii=False)
    options = opts.pop("options", None) if f["type"] == "select" else None
    if isinstance(options, list):
        row.options = "\n".join(_option_line(o) for o in options)
    elif options is not None:
        opts["options"] = options
    for key in ("link", "accept", "language"):
        if isinstance(opts.get(key), str):
            setattr(row, key, opts.pop(key))
    if f["type"] == "layout":
        if isinstance(opts.get("allowedComponents"), list):
            row.allowed = ", ".join(map(str, opts.pop("allowedComponents")))
        if "components" in opts:
            # the library's copies are shown by name: the save puts the library's current ones back
            listed = opts.pop("components")
            own = [c for c in listed if not (isinstance(c, dict) and c.get("shared"))] if isinstance(listed, list) \
                else listed
            row.shared = ", ".join(c["name"] for c in listed if isinstance(c, dict) and c.get("shared")) \
                if isinstance(listed, list) else ""
            if own:
                row.components = json.dumps(own, ensure_ascii=False, indent=1)
    html = opts.get("html")
    if isinstance(html, dict) and isinstance(html.get("tags"), list):
        row.html_tags = " ".join(map(str, html["tags"]))
        rest = {k: v for k, v in html.items() if k != "tags"}
        if rest:
            opts["html"] = rest
        else:
            del opts["html"]
    subs = opts.get("fields")
    if f["type"] == "set" and isinstance(subs, list) and all(isinstance(s, dict) and "name" in s for s in subs):
        row.fields = [row_of_field(s) for s in subs]
        for sub in row.fields:
            sub.was = ""  # sub-fields are not renamed in stored items: the fit check guards them
        del opts["fields"]
    row.extra_opts = json.dumps(opts, ensure_ascii=False) if opts else ""
    return row


def _option_line(option: Any) -> str:
    if isinstance(option, dict):
        value, label = str(option.get("value", "")), option.get("label")
        return f"{value} = {label}" if label not in (None, "") else value
    return str(option)


# -- from a posted form ---------------------------------------------------------


def parse_form(form: FormLike, fixed_name: str | None = None) -> ModelForm:
    """The rows as typed (nothing checked yet but the shape)."""
    out = ModelForm(
        name=fixed_name if fixed_name is not None else form.get("name").strip(),
        label=form.get("label").strip(), kind=form.get("kind", "collection"), info=form.get("info").strip(),
        preview=form.get("preview").strip())
    try:
        meta = json_of(form.get("meta") or "{}")
        out.meta = meta if isinstance(meta, dict) else {}
        kept = json_of(form.get("indexes") or "[]")
        out.indexes = kept if isinstance(kept, list) else []
    except ValueError as exc:  # hidden inputs the page wrote: changed on the way
        raise BadRequest(f"The form's model settings (meta, indexes) do not read back ({exc}); "
                         "reload the page") from None
    out.rows = _rows(form, "field", 0, set())
    return out


def _rows(form: FormLike, list_name: str, depth: int, seen: set[str]) -> list[FieldRow]:
    """The rows listed under `list_name`, each once: a key listed twice, or
    a set listing itself, would otherwise multiply the rows at every level."""
    rows = []
    for key in form.getlist(list_name):
        if not key.replace("_", "").isalnum() or depth > 8 or key in seen or len(seen) >= MAX_ROWS:
            continue
        seen.add(key)
        p = key + "-"
        row = FieldRow(
            key, was=form.get(p + "was").strip(), name=form.get(p + "name").strip(),
            type=form.get(p + "type", "text"), label=form.get(p + "label").strip(), info=form.get(p + "info").strip(),
            group=form.get(p + "group").strip(), required=bool(form.get(p + "required")),
            i18n=bool(form.get(p + "i18n")), multiple=bool(form.get(p + "multiple")),
            indexed=bool(form.get(p + "indexed")), default=form.get(p + "default"), options=form.get(p + "options"),
            link=form.get(p + "link"), accept=form.get(p + "accept").strip(), language=form.get(p + "language"),
            html_tags=form.get(p + "html_tags").strip(), extra_opts=form.get(p + "opts"),
            allowed=form.get(p + "allowed").strip(), components=form.get(p + "components").strip(),
            show_when=form.get(p + "show_when").strip(), required_when=form.get(p + "required_when").strip(),
            remove=bool(form.get(p + "remove")), drop=bool(form.get(p + "drop")))
        row.fields = _rows(form, p + "fields", depth + 1, seen)
        rows.append(row)
    return rows


def definition_of(form: ModelForm) -> tuple[dict[str, Any], dict[str, str]]:
    """The body a PUT would send, and the renames; a row whose field
    definition is wrong gets its `error` (the API's message) and
    FieldError is raised."""
    fields, renames, indexes = [], {}, []
    bad = False
    for index, row in enumerate(form.live_rows()):
        try:
            fields.append(_field_of(row, index))
        except FieldError as exc:
            row.error, bad = str(exc), True
            continue
        if row.was and row.was != row.name:
            renames[row.was] = row.name
        if row.indexed:
            indexes.append(row.name)
    if bad:
        raise FieldError("Some fields need a change; see the messages next to them")
    names = {f["name"] for f in fields} | set(renames)
    kept = [c for c in form.indexes if all(str(x).split(":")[0] in names or str(x).startswith("_")
                                           for x in (c if isinstance(c, list) else [c]))]
    meta = dict(form.meta)
    meta.pop("info", None)
    if form.info:
        meta["info"] = form.info
    body = {"name": form.name, "label": form.label or human_label(form.name), "type": form.kind, "fields": fields,
            "meta": meta, "indexes": [*indexes, *kept], "preview": _preview_of(form.preview)}
    return body, renames


def _preview_of(text: str) -> list[dict[str, str]]:
    """The preview addresses typed one per line (`Name = address`, or the
    address alone, named "Preview"), checked when the model is."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, uri = line.partition("=")
        if not sep or name.strip().lower().startswith(("http://", "https://")):
            name, uri = "", line  # an address alone (whose query has an =)
        out.append({"name": name.strip() or "Preview", "uri": uri.strip()})
    return out


def _field_of(row: FieldRow, index: int) -> dict[str, Any]:
    """One row as a field definition, checked as the API checks it."""
    raw: dict[str, Any] = {"name": row.name, "type": row.type, "label": row.label or human_label(row.name),
                           "required": row.required, "i18n": row.i18n, "multiple": row.multiple}
    for extra in ("info", "group"):
        if getattr(row, extra):
            raw[extra] = getattr(row, extra)
    raw["opts"] = _opts_of(row)
    for key, text in (("showWhen", row.show_when), ("requiredWhen", row.required_when)):
        if text:
            try:
                raw[key] = json_of(text)
            except ValueError as exc:
                raise FieldError(f"{row.name}: {key} is not JSON ({exc})") from None
    if row.default.strip():
        raw["default"] = _default_of(row)
    return validate_definition_field(raw, index)


def _opts_of(row: FieldRow) -> dict[str, Any]:
    try:
        opts = json_of(row.extra_opts) if row.extra_opts.strip() else {}
    except ValueError:
        opts = {}
    opts = opts if isinstance(opts, dict) else {}
    for key in EDITED_OPTS:
        opts.pop(key, None)
    if row.type == "select":
        opts["options"] = [_option_of(line) for line in row.options.splitlines() if line.strip()]
    elif row.type == "contentItemLink":
        opts["link"] = row.link
    elif row.type == "asset" and row.accept:
        opts["accept"] = ",".join(a.strip() for a in row.accept.split(",") if a.strip())
    elif row.type == "code" and row.language:
        opts["language"] = row.language
    elif row.type == "layout":
        if row.allowed:
            opts["allowedComponents"] = [a.strip() for a in row.allowed.split(",") if a.strip()]
        if row.components:
            try:
                opts["components"] = json_of(row.components)
            except ValueError as exc:
                raise FieldError(f"{row.name}: its components are not JSON ({exc})") from None
    elif row.type == "wysiwyg":
        html = opts.pop("html", None)
        html = dict(html) if isinstance(html, dict) else {}
        html.pop("tags", None)
        if row.html_tags:
            html["tags"] = row.html_tags.replace(",", " ").split()
        if html:
            opts["html"] = html
    elif row.type == "set":
        subs: list[dict[str, Any]] = []
        bad = False
        names = [s.name for s in row.fields if not s.remove]
        for sub in row.fields:
            if sub.remove:
                continue
            try:
                if names.count(sub.name) > 1:
                    raise FieldError(f"Duplicate field names: {sub.name}")
                subs.append(_field_of(sub, len(subs)))
            except FieldError as exc:
                sub.error, bad = str(exc), True
        if bad:
            raise FieldError("a sub-field needs a change; see the message next to it")
        if subs:  # none: a free-form set, as without `fields`
            opts["fields"] = subs
    if row.type != "wysiwyg":
        opts.pop("html", None)
    return opts


def _option_of(line: str) -> str | dict[str, str]:
    value, sep, label = line.partition("=")
    value, label = value.strip(), label.strip()
    return {"value": value, "label": label} if sep and label else value


def _default_of(row: FieldRow) -> Any:
    plain = row.type in types.plain_types()
    text = row.default if plain else row.default.strip()
    if plain and not row.multiple:
        return text
    if row.type == "tags" and not text.startswith("["):
        return [t.strip() for t in text.split(",") if t.strip()]
    try:
        return json_of(text)
    except ValueError:
        raise FieldError(f"default must be JSON for a {row.type} field (like {_example(row.type)})") \
            from None


def _example(name: str) -> str:
    kind = types.get(name)
    return kind.example if kind is not None else "{}"
