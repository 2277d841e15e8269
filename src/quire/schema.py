"""Schema between environments: snapshot, diff and apply (docs/moving.md#schema).

A snapshot is the site's schema as stable JSON meant for git: every
module's part (`schemaparts.SchemaPart`: models, locales, roles, page
settings, search indexes, forms, webhooks), entries sorted by name, keys
sorted, no ids, times, secrets or counters. `diff` compares a wanted
snapshot with the site and answers a plan: each entry to add, change or
remove, how many documents each change touches, which lose data and which
cannot be made, and the hash of the site's own snapshot it was made
against. `apply` makes a plan's changes, refused when the site changed
since the plan was made (the hash differs: diff again) or when a change
loses data and that was not allowed; all of it in one transaction.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from quire.errors import ApiError, BadRequest, PreconditionFailed
from quire.schemaparts import Entry, SchemaPart

if TYPE_CHECKING:
    from quire.modules import Services

FORMAT = 1
FORMAT_KEY = "quireSchema"


def parts(quire: Services) -> list[SchemaPart]:
    """Every module's parts, in module order: the order changes are made
    in (removals go in the reverse order)."""
    return [part for module in quire.modules if module.schema is not None for part in module.schema(quire)]


def snapshot(quire: Services) -> dict[str, Any]:
    """The site's schema (a copy: entries may be the services' own values)."""
    out: dict[str, Any] = {FORMAT_KEY: FORMAT}
    for part in parts(quire):
        out[part.key] = sorted(part.entries(), key=lambda e: str(e.get(part.identity)))
    copied: dict[str, Any] = orjson.loads(orjson.dumps(out))
    return copied


def canonical(value: Any) -> bytes:
    """The JSON a snapshot is written and hashed as: keys sorted, indented."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def digest(value: Any) -> str:
    return hashlib.sha256(orjson.dumps(value, option=orjson.OPT_SORT_KEYS)).hexdigest()


@dataclass
class Step:
    part: str
    name: str
    action: str  # add, change, remove
    changes: list[str] = field(default_factory=list)  # the keys that change
    items: int = 0
    loses: str | None = None
    blocked: str | None = None

    def describe(self) -> str:
        sign = {"add": "+", "change": "~", "remove": "-"}[self.action]
        text = f"{sign} {self.part} {self.name}"
        if self.changes:
            text += f" ({', '.join(self.changes)})"
        if self.items:
            text += f": {self.items} documents"
        if self.loses:
            text += f"; LOSES {self.loses}"
        if self.blocked:
            text += f"; CANNOT: {self.blocked}"
        return text


@dataclass
class Plan:
    base: str  # the hash of the site's snapshot the plan was made against
    wanted: dict[str, Any]
    steps: list[Step]

    @property
    def loses_data(self) -> list[Step]:
        return [s for s in self.steps if s.loses]

    def to_json(self) -> dict[str, Any]:
        return {"quireSchemaPlan": FORMAT, "base": self.base, "steps": [asdict(s) for s in self.steps],
                "wanted": self.wanted}

    def describe(self) -> str:
        if not self.steps:
            return "No changes: the site has this schema."
        lines = [step.describe() for step in self.steps]
        lost = len(self.loses_data)
        lines.append(f"{len(self.steps)} changes" + (f", {lost} of them lose data (apply needs --allow-data-loss)"
                                                      if lost else "") + f"; plan made against {self.base[:12]}")
        return "\n".join(lines)


def _checked(wanted: Any, known: list[SchemaPart]) -> dict[str, Any]:
    if not isinstance(wanted, dict) or wanted.get(FORMAT_KEY) != FORMAT:
        raise BadRequest(f'Not a Quire schema snapshot (expected {{"{FORMAT_KEY}": {FORMAT}, ...}})')
    keys = {p.key for p in known}
    unknown = sorted(set(wanted) - keys - {FORMAT_KEY})
    if unknown:
        raise BadRequest(f"Unknown parts in the snapshot: {', '.join(unknown)} (this site has {', '.join(sorted(keys))})")
    for part in known:
        entries = wanted.get(part.key)
        if entries is None:
            continue  # a part the snapshot leaves out is left as it is
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise BadRequest(f"{part.key} must be a list of objects")
        names = [e.get(part.identity) for e in entries]
        if not all(isinstance(n, str) and n for n in names):
            raise BadRequest(f"every entry of {part.key} needs its {part.identity}")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise BadRequest(f"{part.key} names {dupes[0]} twice")
        if part.check is not None:
            for entry in entries:
                try:
                    part.check(entry)
                except ApiError as exc:
                    exc.message = f"{part.key} {entry[part.identity]}: {exc.message}"
                    raise
    return wanted


def diff(quire: Services, wanted: Any) -> Plan:
    """The plan that makes the site's schema `wanted` (parts it leaves out
    stay as they are)."""
    known = parts(quire)
    wanted = _checked(wanted, known)
    current = snapshot(quire)
    steps: list[Step] = []
    for part in known:
        if part.key not in wanted:
            continue
        mine = {str(e[part.identity]): e for e in current[part.key]}
        theirs = {str(e[part.identity]): e for e in wanted[part.key]}
        for name in sorted(theirs.keys() | mine.keys()):
            before, after = mine.get(name), theirs.get(name)
            if before == after:
                continue
            action = "add" if before is None else "remove" if after is None else "change"
            changes = sorted(k for k in (before or {}).keys() | (after or {}).keys()
                             if (before or {}).get(k) != (after or {}).get(k)) if action == "change" else []
            effect = part.effect(before, after)
            steps.append(Step(part.key, name, action, changes, effect.items, effect.loses, effect.blocked))
    return Plan(digest(current), wanted, steps)


def read_plan(value: Any) -> Plan:
    if not isinstance(value, dict) or value.get("quireSchemaPlan") != FORMAT:
        raise BadRequest('Not a Quire schema plan (expected {"quireSchemaPlan": 1, ...}, as `quire schema diff '
                         '--out` writes it)')
    if not isinstance(value.get("base"), str) or not isinstance(value.get("wanted"), dict):
        raise BadRequest("A schema plan needs its base hash and its wanted snapshot")
    return Plan(value["base"], value["wanted"], [])


async def apply(quire: Services, plan: Plan, identity: Any, allow_data_loss: bool = False) -> Plan:
    """Make the plan's changes, in one transaction; the plan made again
    against the site first, which must still be the site it was made
    against (412 otherwise)."""
    now = digest(snapshot(quire))
    fresh = diff(quire, plan.wanted)
    if not fresh.steps:
        return fresh  # the site has this schema already (the plan was applied, or someone made the same change)
    if len(plan.base) < 12 or not now.startswith(plan.base.lower()):  # the hash diff printed, or its first 12 digits
        raise PreconditionFailed(f"The schema of the site changed since the plan was made ({plan.base[:12]}, now "
                                 f"{now[:12]}): someone else changed it; diff again and look at the new plan")
    blocked = [s for s in fresh.steps if s.blocked]
    if blocked:
        raise BadRequest(f"{blocked[0].part} {blocked[0].name}: {blocked[0].blocked}")
    if fresh.loses_data and not allow_data_loss:
        first = fresh.loses_data[0]
        raise BadRequest(f"{len(fresh.loses_data)} changes lose data ({first.part} {first.name}: {first.loses}): "
                         "allow it explicitly (--allow-data-loss, allowDataLoss=1)")
    known = {p.key: p for p in parts(quire)}
    order = list(known)
    current = snapshot(quire)

    def entry(key: str, name: str, source: dict[str, Any]) -> Entry | None:
        part = known[key]
        return next((e for e in source.get(key) or [] if str(e.get(part.identity)) == name), None)

    ahead = sorted((s for s in fresh.steps if s.action != "remove"), key=lambda s: order.index(s.part))
    removals = sorted((s for s in fresh.steps if s.action == "remove"), key=lambda s: -order.index(s.part))
    async with quire.store.atomic(timeout=quire.store.blocking_timeout):
        for step in ahead + removals:
            try:
                await known[step.part].apply(entry(step.part, step.name, current),
                                             entry(step.part, step.name, plan.wanted), identity)
            except ApiError as exc:
                exc.message = f"{step.part} {step.name}: {exc.message}"
                raise
    return fresh
