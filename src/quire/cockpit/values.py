"""Cockpit items as Quire items.

The shapes differ in a few places: an asset field holds a copy of the
asset object in Cockpit and a reference `{"_id"}` in Quire (answers carry
the live asset); a singleton's document carries `_model`; a value of a
field no longer in the model stays in Cockpit's document, unseen. Values
are converted here and then checked by Quire's own field checks; what does
not fit is gathered as `Facts` first (so the model can be mapped to take
it) and reported when left out.
"""

from __future__ import annotations

from typing import Any

from quire.cockpit.models import Facts, FieldFacts, MappedModel, as_dict, quire_name
from quire.cockpit.report import Report
from quire.content.fields import SUB_LOCALE_KEY, check_value, is_empty
from quire.content.types import FieldError
from quire.ids import is_id

SYSTEM = ("_id", "_state", "_created", "_modified", "_cby", "_mby")
TREE = ("_pid", "_o")
STATES = (1, 0, -1)


class ItemConverter:
    """Turns one model's Cockpit documents into Quire items."""

    def __init__(self, raw: dict[str, Any], mapped: MappedModel, codes: list[str], report: Report) -> None:
        self.mapped = mapped
        self.codes = codes
        self.report = report
        quire_fields = {f["name"]: f for f in mapped.definition["fields"]}
        # Cockpit's name -> (Quire's field, Cockpit's raw field)
        self.fields: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        for raw_field in raw.get("fields") or []:
            if isinstance(raw_field, dict) and raw_field.get("name"):
                source = str(raw_field["name"])
                name = mapped.renamed_fields.get(source, source)
                if name in quire_fields:
                    self.fields[source] = (quire_fields[name], raw_field)

    def convert(self, doc: dict[str, Any], facts: Facts | None = None, check: bool = True) -> dict[str, Any] | None:
        """The Quire item of a Cockpit document (None: it has no usable id,
        reported). With `facts`, what the values show is gathered there and
        nothing is reported; without, a value that does not fit is left out
        and reported with the value. `check=False` only shapes the values
        (the caller checks the item whole, and converts again with checks
        when that fails)."""
        model = self.mapped.source
        doc_id = doc.get("_id")
        if isinstance(doc_id, dict) and isinstance(doc_id.get("$oid"), str):  # MongoDB's extended JSON
            doc_id = doc_id["$oid"]
        if not is_id(doc_id):
            if facts is None:
                self.report.note("item", model, f"an item without a 24-hex-digit _id ({doc_id!r:.40}) was left out",
                                 doc)
            return None
        where = f"{model}/{doc_id}"
        item: dict[str, Any] = {"_id": doc_id}
        state = doc.get("_state", 0)
        item["_state"] = state if state in STATES and not isinstance(state, bool) else 0
        for key in ("_created", "_modified"):
            if isinstance(doc.get(key), int | float) and not isinstance(doc.get(key), bool):
                item[key] = int(doc[key])
        for key in ("_cby", "_mby"):
            value = doc.get(key)
            if isinstance(value, dict) and isinstance(value.get("$oid"), str):
                value = value["$oid"]
            if isinstance(value, str) or value is None:
                item[key] = value
        if self.mapped.kind == "tree":
            parent = doc.get("_pid")
            item["_pid"] = parent if is_id(parent) else None
            order = doc.get("_o", 0)
            item["_o"] = order if isinstance(order, int | float) and not isinstance(order, bool) else 0
        used = {*SYSTEM, *TREE, "_model"}
        for source, (quire_field, raw_field) in self.fields.items():
            keys = [(source, quire_field["name"])]
            if quire_field.get("i18n"):
                keys += [(f"{source}_{code}", f"{quire_field['name']}_{code}") for code in self.codes]
            for index, (from_key, to_key) in enumerate(keys):
                used.add(from_key)
                if from_key not in doc:
                    if index == 0 and facts is not None and raw_field.get("required"):
                        facts.of(model, source).empty_required += 1
                    continue
                value = self._value(doc[from_key], quire_field, raw_field, source, f"{where} {from_key}", facts, check)
                if index == 0 and facts is not None and raw_field.get("required") and is_empty(value):
                    facts.of(model, source).empty_required += 1
                if value is not _LEFT_OUT and value is not None:
                    item[to_key] = value  # an empty list or text too: Cockpit answers it as stored
        for key in doc.keys() - used:
            if facts is None and doc[key] is not None:
                self.report.note("item", f"{where} {key}", "not a field of the model: left out", doc[key])
        return item

    def _value(self, value: Any, field: dict[str, Any], raw: dict[str, Any], path: str, where: str,
               facts: Facts | None, check: bool = True) -> Any:
        if value is None:
            return None
        shaped = _shape(value, field, raw, where, self.report if facts is None else None)
        if not check:
            return shaped
        seen = facts.of(self.mapped.source, path) if facts is not None else None
        if seen is not None:
            seen.present += 1
        if field["type"] == "select" and seen is not None:
            options = field["opts"].get("options") or []
            values = shaped if isinstance(shaped, list) else [shaped]
            known = [o.get("value") if isinstance(o, dict) else o for o in options]
            for one in values:
                if isinstance(one, str) and options and one not in known and one not in seen.extra_options:
                    seen.extra_options.append(one)
            return shaped
        try:
            return check_value(field, shaped)
        except FieldError as exc:
            if seen is not None:
                _refused(seen, shaped)
            else:
                self.report.note("item", where, f"value left out: it {exc}", value)
            return _LEFT_OUT


class _LeftOut:
    pass


_LEFT_OUT = _LeftOut()


def _refused(seen: FieldFacts, value: Any) -> None:
    seen.refused += 1
    if seen.example is None:
        seen.example = value


def _shape(value: Any, field: dict[str, Any], raw: dict[str, Any], where: str, report: Report | None) -> Any:
    """Cockpit's stored shape of a value as Quire's (before the check)."""
    kind = field["type"]
    if field.get("multiple") and kind != "tags" and isinstance(value, list):
        single = {**field, "multiple": False}
        return [_shape(one, single, raw, where, report) for one in value]
    if kind == "asset":
        return _reference(value)
    if kind == "contentItemLink":
        if isinstance(value, dict) and "_id" in value:
            ref = {"_id": _oid(value["_id"])}
            if isinstance(value.get("_model"), str):
                ref["_model"] = value["_model"]
            return ref
        return value
    if kind == "set" and isinstance(value, dict):
        subfields = {str(f.get("name")): f for f in field["opts"].get("fields") or [] if isinstance(f, dict)}
        raw_subs = {str(f.get("name")): f for f in as_dict(raw.get("opts")).get("fields") or []
                    if isinstance(f, dict)}
        out: dict[str, Any] = {}
        for key, sub in value.items():
            found = _sub_field(key, raw_subs, subfields)
            if found is None:
                if report is not None and sub is not None:
                    report.note("item", f"{where}.{key}", "not a field of the set: left out", sub)
                continue
            target, subfield, raw_sub = found
            out[target] = None if sub is None else _shape(sub, subfield, raw_sub, f"{where}.{key}", report)
        return out
    return value


def _sub_field(key: str, raw_subs: dict[str, Any],
               subfields: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(Quire's key, Quire's sub-field, Cockpit's) of a key of a set's
    value: a sub-field's name, or a localized one's per-locale key."""
    suffix = ""
    name = key
    if key not in raw_subs and key not in subfields:
        match = SUB_LOCALE_KEY.match(key)
        if match is None:
            return None
        name, suffix = match.group(1), "_" + match.group(2)
    target = name if name in subfields else quire_name(name)
    subfield = subfields.get(target)
    if subfield is None or (suffix and not subfield.get("i18n")):
        return None
    return target + suffix, subfield, raw_subs.get(name, {})


def _oid(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("$oid"), str):
        return value["$oid"]
    return value


def _reference(value: Any) -> Any:
    """An asset as Cockpit stores it in an item (a copy of the asset
    object, or its id) as Quire's reference."""
    if isinstance(value, dict) and "_id" in value:
        return {"_id": _oid(value["_id"])}
    if isinstance(value, str):
        return {"_id": value}
    return value
