"""Cockpit model definitions as Quire's.

Every Cockpit field type has a Quire type (`TYPES`); a type Quire lacks
(`nav`, the Pro addons' `layout`, a custom one) becomes `json`, which keeps
any value as it is, and the report names it. A name Quire does not accept
is renamed (and reported). What the items hold can change the mapping:
`Facts` gathered from every item before anything is stored say which
required fields some items leave empty (imported as not required), which
select values are not among the options (added to them) and which fields
hold mostly values their type refuses (imported as `json`, values kept; a
few such values are left out of their items and kept in the report).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from quire.cockpit.condition import to_rule
from quire.cockpit.report import Report

NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
# Cockpit's core field types and the Quire type each becomes.
TYPES = {
    "text": "text", "wysiwyg": "wysiwyg", "code": "code", "color": "color", "date": "date",
    "datetime": "datetime", "time": "time", "number": "number", "boolean": "boolean", "select": "select",
    "tags": "tags", "set": "set", "table": "table", "object": "object", "asset": "asset",
    "contentItemLink": "contentItemLink", "markdown": "markdown",
    # the Layout addon's: blocks of Cockpit's core components come over as
    # blocks; a site with its own components (defined in the addon's
    # storage, which is not public) keeps them as json
    "layout": "layout",
}
KINDS = ("collection", "singleton", "tree")
# the keys of a Cockpit model definition the mapping reads
MODEL_KEYS = {"name", "label", "info", "type", "fields", "preview", "group", "meta", "color", "icon", "revisions",
              "_created", "_modified", "_id"}
# the keys of a Cockpit field definition the mapping reads
FIELD_KEYS = {"name", "type", "label", "info", "group", "i18n", "required", "multiple", "meta", "opts"}


def quire_name(name: Any) -> str:
    """A name Quire accepts: letters, digits and `_`, a letter first."""
    text = re.sub(r"[^A-Za-z0-9_]", "_", str(name or "")) or "field"
    return text if text[0].isalpha() else f"f_{text}"


def as_dict(value: Any) -> dict[str, Any]:
    """PHP writes an empty array as `[]` where an object is meant."""
    return value if isinstance(value, dict) else {}


@dataclass
class FieldFacts:
    """What the items of a model showed about one field (by its path)."""

    empty_required: int = 0
    present: int = 0  # values held
    refused: int = 0  # values its type refuses
    example: Any = None  # one such value, for the report
    extra_options: list[Any] = field(default_factory=list)


@dataclass
class Facts:
    """Per model, per field path (`seo.title` inside a set)."""

    fields: dict[str, dict[str, FieldFacts]] = field(default_factory=dict)

    def of(self, model: str, path: str) -> FieldFacts:
        return self.fields.setdefault(model, {}).setdefault(path, FieldFacts())


@dataclass
class MappedModel:
    """A Cockpit model as Quire takes it."""

    source: str  # Cockpit's name
    name: str  # Quire's
    definition: dict[str, Any]  # a Quire model definition (PUT body)
    renamed_fields: dict[str, str]  # Cockpit's field name -> Quire's, where they differ

    @property
    def kind(self) -> str:
        return str(self.definition["type"])


def map_model(raw: dict[str, Any], report: Report, facts: Facts | None = None) -> MappedModel:
    """A Quire model definition from Cockpit's; what changes on the way is
    reported (against the model's name)."""
    source = str(raw.get("name") or "")
    name = quire_name(source)
    if name != source:
        report.note("model", source, f"renamed to {name}: Quire names are letters, digits and _")
    kind = raw.get("type", "collection")
    if kind not in KINDS:
        report.note("model", source, f"type {kind!r} is not one of {', '.join(KINDS)}; imported as a collection")
        kind = "collection"
    renamed: dict[str, str] = {}
    fields = _map_fields(raw.get("fields"), f"{source}", name, report, facts, renamed)
    meta: dict[str, Any] = {}
    for key in ("info", "group", "color", "icon"):
        if raw.get(key):
            meta[key] = raw[key]
    if raw.get("meta"):
        meta["cockpit"] = raw["meta"]
    definition: dict[str, Any] = {"name": name, "label": raw.get("label") or source, "type": kind,
                                  "fields": fields, "meta": meta}
    preview = _preview(raw.get("preview"), source, report)
    if preview:
        definition["preview"] = preview
    for stamp in ("_created", "_modified"):
        if isinstance(raw.get(stamp), int):
            definition[stamp] = raw[stamp]
    for key in sorted(set(raw) - MODEL_KEYS):
        if raw[key] not in (None, "", [], {}):
            report.note("model", source, f"its {key!r} is not a Quire model setting: left out", raw[key])
    if raw.get("revisions"):
        report.note("model", source, "Cockpit kept revisions of this model; Quire keeps revisions of every "
                    "model, starting with the imported items")
    return MappedModel(source, name, definition, renamed)


def _map_fields(raw_fields: Any, where: str, model: str, report: Report, facts: Facts | None,
                renamed: dict[str, str], prefix: str = "") -> list[dict[str, Any]]:
    if not isinstance(raw_fields, list):
        raw_fields = list(raw_fields.values()) if isinstance(raw_fields, dict) else []
    out: list[dict[str, Any]] = []
    taken: set[str] = set()
    for raw in raw_fields:
        if not isinstance(raw, dict) or not raw.get("name"):
            report.note("field", where, f"a field without a name was left out: {raw!r:.200}")
            continue
        mapped = map_field(raw, where, model, report, facts, renamed, prefix)
        while mapped["name"] in taken:
            mapped["name"] += "_"
        if mapped["name"] != str(raw["name"]) and not prefix:
            renamed[str(raw["name"])] = mapped["name"]
        taken.add(mapped["name"])
        out.append(mapped)
    return out


def map_field(raw: dict[str, Any], where: str, model: str, report: Report, facts: Facts | None,
              renamed: dict[str, str], prefix: str = "") -> dict[str, Any]:
    source = str(raw["name"])
    path = f"{prefix}{source}"
    here = f"{where}.{source}"
    name = quire_name(source)
    if name != source:
        report.note("field", here, f"renamed to {name}: Quire field names are letters, digits and _")
    kind = str(raw.get("type") or "text")
    opts = dict(as_dict(raw.get("opts")))
    seen = facts.of(model, path) if facts is not None else FieldFacts()
    target = TYPES.get(kind)
    if target is None:
        report.note("type", here, f"type {kind!r} is not one of Quire's; imported as json (values kept as they are)")
        target = "json"
    if target == "text" and opts.get("multiline"):
        target = "longtext"
    if target == "contentItemLink" and not (isinstance(opts.get("link"), str) and NAME.match(opts["link"])):
        report.note("field", here, "a content link without a target model (opts.link); imported as json")
        target = "json"
    if target == "select":
        opts["options"] = _options(opts.get("options")) + seen.extra_options
        if seen.extra_options:
            report.note("field", here, f"values not among its options were found in items and added to them: "
                        f"{', '.join(map(str, seen.extra_options[:10]))}")
    if target == "layout" and seen.refused:
        report.note("field", here, f"{seen.refused} of {seen.present} values are not blocks Quire reads (Cockpit's "
                    f"core components with their data, e.g. not {seen.example!r:.100}); imported as json, values "
                    "kept as they are")
        target = "json"
    if seen.refused * 2 > seen.present and target not in ("json", "set"):
        # most values do not fit: the type is not what the items hold
        report.note("field", here, f"{seen.refused} of {seen.present} values do not fit a {target} field (e.g. "
                    f"{seen.example!r:.100}); imported as json, values kept as they are")
        target = "json"
    if target == "set":
        opts["fields"] = _map_fields(opts.get("fields"), here, model, report, facts, renamed, f"{path}.")
    required = bool(raw.get("required"))
    if required and seen.empty_required:
        report.note("field", here, f"required, but {seen.empty_required} items leave it empty; imported as not "
                    "required (fill them in, then make it required again)")
        required = False
    field_def: dict[str, Any] = {
        "name": name, "type": target, "label": raw.get("label") or source,
        "i18n": bool(raw.get("i18n")), "required": required,
        # Cockpit's select takes several values with its own opts.multiple
        "multiple": (bool(raw.get("multiple")) or (kind == "select" and opts.get("multiple") is True))
        and target != "tags", "opts": opts,
    }
    for extra in ("info", "group"):
        if isinstance(raw.get(extra), str) and raw[extra]:
            field_def[extra] = raw[extra]
    default = opts.get("default")
    if default is not None and target not in ("json", "set"):
        field_def["default"] = default  # Cockpit fills it in on create, as Quire does with a field's default
    if raw.get("condition"):
        rule = to_rule(raw["condition"])
        if rule is not None:
            field_def["showWhen"] = rule  # shown only when it holds, as in Cockpit's admin
        else:
            report.note("field", here, "its condition is JavaScript Quire does not translate (only data.<field> "
                        "compared with a value, joined by && or ||): left out; set showWhen as JSON Logic",
                        raw["condition"])
    if raw.get("meta"):
        report.note("field", here, "its Cockpit meta is not used by Quire", raw["meta"])
    for key in sorted(set(raw) - FIELD_KEYS - {"condition"}):
        if raw[key] not in (None, "", [], {}):
            report.note("field", here, f"its {key!r} is not a Quire field setting: left out", raw[key])
    return field_def


def _options(raw: Any) -> list[Any]:
    """Select options: Cockpit takes a list or a comma-separated text."""
    if isinstance(raw, str):
        return [part.strip() for part in raw.split(",") if part.strip()]
    if isinstance(raw, dict):
        return list(raw.values())
    return list(raw) if isinstance(raw, list) else []


def _preview(raw: Any, model: str, report: Report) -> list[dict[str, str]]:
    out = []
    for entry in raw if isinstance(raw, list) else []:
        if not isinstance(entry, dict):
            continue
        uri = entry.get("uri") or entry.get("url")
        if isinstance(uri, str) and uri.startswith(("http://", "https://")):
            out.append({"name": str(entry.get("name") or "Preview")[:100], "uri": uri})
        else:
            report.note("model", model, f"preview address {uri!r} is not an http(s) address; left out")
    return out
