"""Redirect rules: from a path of the site to a path or an http(s)
address, with a status (301, 302, 307 or 308) and a colour that tells
groups of rules apart on the screen (Quire's `color` field type). One collection of the
store; every write in a transaction of its own, with its event."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from quire.bundleparts import BundlePart, Checked, check_list
from quire.content.types import FieldError
from quire.content.types.color import COLOR_TYPE
from quire.errors import BadRequest, Conflict, NotFound
from quire.events import Events
from quire.ids import is_id, new_id
from quire.store import Store
from quire_redirects.fieldtype import MAX_PATH
from quire_redirects.fieldtype import check as check_path

RULES = "redirects"
HINTS = {"from": "text", "status": "number", "_created": "number"}
STATUSES = (301, 302, 307, 308)
FIELDS = ("from", "to", "status", "note", "enabled", "color")
MAX_NOTE = 500
SHOWN_UNKNOWN = 5  # unknown fields an error names


class RedirectService:
    def __init__(self, store: Store, events: Events, max_rules: int) -> None:
        self.store = store
        self.events = events
        self.max_rules = max_rules
        self.rules = store.collection(RULES, HINTS)
        store.ensure_indexes(RULES, [[("from",)]], HINTS)

    def all(self) -> list[dict[str, Any]]:
        return self.rules.find(None, [(("from",), 1)])

    def get(self, rule_id: str) -> dict[str, Any]:
        rule = self.rules.get(rule_id) if is_id(rule_id) else None
        if rule is None:
            raise NotFound("Redirect rule not found")
        return rule

    def resolve(self, path: str) -> dict[str, Any]:
        """Where an enabled rule sends `path`: {"to", "status"}; 404 when
        none does, 400 for what is no path of the site (NUL, spaces, ...)."""
        try:
            check_path({}, path, 0)
        except FieldError as exc:
            raise BadRequest(f"<path> {exc}") from None
        rule = self.rules.find_one({"from": path, "enabled": True})
        if rule is None:
            raise NotFound(f"No redirect for {path}")
        return {"from": rule["from"], "to": rule["to"], "status": rule["status"]}

    async def create(self, body: Any, identity: Any) -> dict[str, Any]:
        clean = checked(body, partial=False)
        async with self.store.atomic():
            if self.rules.count() >= self.max_rules:
                raise BadRequest(f"At most {self.max_rules:,} redirect rules ([redirects] max_rules)")
            self._free(clean["from"], None)
            now = int(time.time())
            rule = self.rules.insert({"_id": new_id(), **clean, "_created": now, "_modified": now})
            await self.events.emit("redirects.rule.save", rule=rule, identity=identity)
        return rule

    async def update(self, rule_id: str, body: Any, identity: Any) -> dict[str, Any]:
        clean = checked(body, partial=True)
        async with self.store.atomic():
            rule = self.get(rule_id)
            if "from" in clean:
                self._free(clean["from"], rule["_id"])
            rule.update(clean, _modified=int(time.time()))
            self.rules.replace(rule)
            await self.events.emit("redirects.rule.save", rule=rule, identity=identity)
        return rule

    async def delete(self, rule_id: str, identity: Any) -> None:
        async with self.store.atomic():
            rule = self.get(rule_id)
            self.rules.delete(rule["_id"])
            await self.events.emit("redirects.rule.remove", rule=rule, identity=identity)

    def _free(self, path: str, own: str | None) -> None:
        taken = self.rules.find_one({"from": path})
        if taken is not None and taken["_id"] != own:
            raise Conflict(f"A rule for {path} exists already")

    # -- export and import --------------------------------------------------

    def bundle_part(self) -> BundlePart:
        return BundlePart("redirects", "redirects", self.all, self._check_bundle, self._load_bundle)

    def _check_bundle(self, value: Any, checked_parts: Checked) -> list[dict[str, Any]]:
        rules = check_list(value, "redirects", "redirect rule")
        out = []
        for rule in rules:
            clean = checked(rule, partial=False)
            rule_id = rule.get("_id")
            out.append({"_id": rule_id if is_id(rule_id) else new_id(), **clean,
                        "_created": rule.get("_created") if isinstance(rule.get("_created"), int) else 0})
        return out

    async def _load_bundle(self, rules: list[dict[str, Any]], identity: Any) -> int:
        """Inside the import's transaction: a rule replaces the one of its
        id, or of its path."""
        now = int(time.time())
        for rule in rules:
            same = self.rules.find_one({"from": rule["from"]})
            if same is not None and same["_id"] != rule["_id"]:
                self.rules.delete(same["_id"])
            doc = {**rule, "_modified": now}
            if self.rules.get(rule["_id"]) is None:
                self.rules.insert(doc)
            else:
                self.rules.replace(doc)
        return len(rules)


def checked(body: Any, partial: bool) -> dict[str, Any]:
    """The fields of a rule as sent, checked: 400 naming the first wrong one."""
    if not isinstance(body, dict):
        raise BadRequest('Body must be a rule: {"from": "/old", "to": "/new", "status": 301}')
    unknown = sorted(set(body) - set(FIELDS) - {"_id", "_created", "_modified"})
    if unknown:  # named, at most a few of them: a body may hold thousands of keys
        shown = ", ".join(k[:40] for k in unknown[:SHOWN_UNKNOWN])
        more = f" and {len(unknown) - SHOWN_UNKNOWN:,} more" if len(unknown) > SHOWN_UNKNOWN else ""
        raise BadRequest(f"Unknown fields: {shown}{more}; a rule has {', '.join(FIELDS)}",
                         fields=unknown[:SHOWN_UNKNOWN])
    clean: dict[str, Any] = {}
    if "from" in body or not partial:
        try:
            clean["from"] = check_path({}, body.get("from"), 0)
        except FieldError as exc:
            raise BadRequest(f"from {exc}", fields=["from"]) from None
    if "to" in body or not partial:
        clean["to"] = _target(body.get("to"))
    if "status" in body or not partial:
        status = body.get("status", 301)
        if isinstance(status, bool) or status not in STATUSES:
            raise BadRequest(f"status must be one of {', '.join(map(str, STATUSES))}", fields=["status"])
        clean["status"] = status
    if "note" in body or not partial:
        note = body.get("note") or ""
        if not isinstance(note, str) or len(note) > MAX_NOTE:
            raise BadRequest(f"note must be text of at most {MAX_NOTE} characters", fields=["note"])
        clean["note"] = note
    if "color" in body or not partial:
        color = body.get("color") or ""
        try:  # Quire's own `color` field type checks it, as it does an item's
            clean["color"] = COLOR_TYPE.check({}, color, 0)
        except FieldError as exc:
            raise BadRequest(f"color {exc}", fields=["color"]) from None
    if "enabled" in body or not partial:
        enabled = body.get("enabled", True)
        if not isinstance(enabled, bool):
            raise BadRequest("enabled must be true or false", fields=["enabled"])
        clean["enabled"] = enabled
    if clean.get("from") is not None and clean.get("from") == clean.get("to"):
        raise BadRequest("A rule cannot send a path to itself", fields=["to"])
    return clean


def _target(value: Any) -> str:
    """A path of the site, or an http(s) address."""
    if isinstance(value, str) and value.startswith("/") and not value.startswith("//"):
        try:
            return check_path({}, value, 0)
        except FieldError as exc:
            raise BadRequest(f"to {exc}", fields=["to"]) from None
    if not isinstance(value, str) or len(value) > MAX_PATH or not value.isprintable() or " " in value:
        raise BadRequest("to must be a path of the site (/new) or an http(s) address", fields=["to"])
    try:
        parts = urlsplit(value)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadRequest("to must be a path of the site (/new) or an http(s) address", fields=["to"])
    return value
