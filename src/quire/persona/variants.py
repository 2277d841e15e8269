"""Validation of variant containers as editors save them (field type
`variants`): `{"persona:variants": [{id, active, label, audience, data,
meta}]}`. Missing ids are generated; errors name the variant."""

from __future__ import annotations

from typing import Any

from quire.ids import new_id
from quire.persona.resolve import KEY
from quire.persona.schedule import ScheduleError, check

VARIANT_KEYS = {"id", "active", "label", "audience", "data", "meta"}


class VariantError(ValueError):
    pass


def check_container(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) != {KEY} or not isinstance(value[KEY], list):
        raise VariantError(f'must be {{"{KEY}": [variants]}}')
    seen: set[str] = set()
    out = []
    for i, variant in enumerate(value[KEY]):
        at = f"variant {i + 1}"
        if not isinstance(variant, dict):
            raise VariantError(f"{at} must be an object")
        label = variant.get("label")
        if isinstance(label, str) and label:
            at += f" ({label})"
        unknown = sorted(set(variant) - VARIANT_KEYS)
        if unknown:
            raise VariantError(f"{at}: {', '.join(unknown)} is not a variant field")
        variant_id = variant.get("id") or new_id()
        if not isinstance(variant_id, str):
            raise VariantError(f"{at}: id must be a string")
        if variant_id in seen:
            raise VariantError(f"{at}: id {variant_id} is used twice")
        seen.add(variant_id)
        if not isinstance(variant.get("active", True), bool):
            raise VariantError(f"{at}: active must be true or false")
        if label is not None and not isinstance(label, str):
            raise VariantError(f"{at}: label must be a string")
        audience = variant.get("audience", [])
        if not isinstance(audience, list) or not all(isinstance(a, str) for a in audience):
            raise VariantError(f"{at}: audience must be a list of strings")
        if "data" in variant and not isinstance(variant["data"], dict):
            raise VariantError(f"{at}: data must be an object")
        meta = variant.get("meta")
        if meta is not None:
            if not isinstance(meta, dict):
                raise VariantError(f"{at}: meta must be an object")
            if meta.get("schedule") is not None:
                try:
                    check(meta["schedule"])
                except ScheduleError as exc:
                    raise VariantError(f"{at}: schedule {exc}") from None
        out.append({**variant, "id": variant_id, "active": variant.get("active", True), "audience": audience,
                    "data": variant.get("data", {})})
    return {KEY: out}
