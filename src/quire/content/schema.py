"""Content's parts of schema snapshots (quire.schema): the shared blocks,
the locales and the models, as their API shows them (no times). A model change's effect is
what saving it would do: values of removed fields are lost (kept unless
data loss is allowed, as `dropValues` does), a change stored values do
not fit cannot be made."""

from __future__ import annotations

from typing import Any

from quire.content.library import ComponentLibrary, parse_component
from quire.content.locales import LocaleService
from quire.content.models import ModelService, parse_model
from quire.errors import ApiError, BadRequest
from quire.schemaparts import Effect, Entry, SchemaPart, without


def model_part(models: ModelService) -> SchemaPart:
    def entries() -> list[Entry]:
        return [without(m.to_json(), "_created", "_modified") for m in models.all()]

    def effect(current: Entry | None, wanted: Entry | None) -> Effect:
        if current is None:
            return Effect()
        name = str(current["name"])
        coll = models.store.collection(models.get(name).collection)
        count = coll.count() if coll.exists() else 0
        if wanted is None:
            return Effect(count, f"the model and its {count} items" if count else None)
        kept = {f["name"] for f in wanted.get("fields") or [] if isinstance(f, dict)}
        usage = models.field_usage(name)
        gone = {f: n for f, n in usage.fields.items() if f not in kept and n}
        try:
            models.check_change(parse_model(name, wanted))
        except ApiError as exc:
            return Effect(count, blocked=exc.message)
        if gone:
            lost = ", ".join(f"{f} ({n} items)" for f, n in sorted(gone.items()))
            return Effect(max(gone.values()), f"the values of {lost}")
        return Effect(count if _fitting_changed(current, wanted) else 0)

    async def apply(current: Entry | None, wanted: Entry | None, identity: Any) -> None:
        if wanted is None:
            models.delete(str(current["name"]) if current else "", identity)
        else:
            models.save(parse_model(str(wanted["name"]), wanted), drop_values=True, identity=identity)

    def check(wanted: Entry) -> None:
        parse_model(str(wanted.get("name")), wanted)

    return SchemaPart("models", entries, effect, apply, check=check)


def _fitting_changed(current: Entry, wanted: Entry) -> bool:
    """Whether a field's definition changed in a way its stored values are
    checked against (the items a change touches)."""
    before = {f["name"]: f for f in current.get("fields") or []}
    keys = ("type", "multiple", "opts", "i18n")
    return any(f["name"] in before and any(before[f["name"]].get(k) != f.get(k) for k in keys)
               for f in wanted.get("fields") or [] if isinstance(f, dict))


def component_part(library: ComponentLibrary) -> SchemaPart:
    """Shared blocks, before the models (a model's save copies them in)."""
    def effect(current: Entry | None, wanted: Entry | None) -> Effect:
        if current is not None and wanted is None:
            used = library.usage(str(current["name"]))
            if used:
                return Effect(sum(used.values()), blocked=f"blocks of it are stored in items of {', '.join(sorted(used))}")
        return Effect()

    async def apply(current: Entry | None, wanted: Entry | None, identity: Any) -> None:
        if wanted is None:
            library.remove(str(current["name"]) if current else "", identity)
        else:
            library.save(str(wanted["name"]), wanted, identity)

    def check(wanted: Entry) -> None:
        parse_component(str(wanted.get("name")), wanted)

    return SchemaPart("components", library.components, effect, apply, check=check)


def locale_part(locales: LocaleService) -> SchemaPart:
    def entries() -> list[Entry]:
        return [{"i18n": loc["i18n"], "name": loc["name"]} for loc in locales.list() if not loc.get("default")]

    def effect(current: Entry | None, wanted: Entry | None) -> Effect:
        return Effect()  # values in a removed locale stay stored (a locale added back shows them again)

    async def apply(current: Entry | None, wanted: Entry | None, identity: Any) -> None:
        code = (wanted or current or {}).get("i18n")
        listed = [e for e in entries() if e["i18n"] != code]
        if wanted is not None:
            listed.append({"i18n": wanted["i18n"], "name": wanted.get("name") or wanted["i18n"]})
        locales.save(listed)

    def check(wanted: Entry) -> None:
        extra = sorted(set(wanted) - {"i18n", "name"})
        if extra:
            raise BadRequest(f"unknown keys {', '.join(extra)} (a locale has i18n and name)")
        locales._checked([wanted])

    return SchemaPart("locales", entries, effect, apply, identity="i18n", check=check)

