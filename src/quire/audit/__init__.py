"""The audit log: who did what to which resource (docs/audit.md).

Every entry comes from an event of the module that made the change,
handled here inside that change's transaction. Which events are recorded,
and as what, each module declares with its events (`spec(..., audit=...)`,
catalogue.py): this module knows none of them by name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from quire.audit import openapi, routes, screens
from quire.audit.routes import READ
from quire.audit.service import AuditService
from quire.auth.service import Identity
from quire.auth.users import UserService
from quire.catalogue import Audit, EventSpec
from quire.modules import Module, NavEntry, Services


def build(services: Services) -> None:
    services.add("audit", AuditService(services.store, services.settings.audit, services.jobs,
                                        services.settings.server.proxy_hops))


def imported(identity: Any) -> bool:
    """Whether a write is one of `quire import`'s (bundle.IMPORTER): its
    items and pages are not recorded one by one. The `import` entry with
    its counts stands for them; an entry per item made a 5,000-item import
    hold the write lock long enough that API reads beside it waited over
    3 s (tests/test_import_faults.py)."""
    return isinstance(identity, Identity) and identity.kind == "system" and identity.key_id == "import"


def updated(payload: dict[str, Any]) -> bool:
    """Whether a write event's payload tells of a change to a document
    that was there (else it made one)."""
    if "previous" in payload:
        return payload["previous"] is not None
    return bool(payload.get("is_update"))


def subscribe(services: Services) -> None:
    """Every event whose declaration says how the log records it (its
    `audit`, catalogue.py) is recorded inside its write's transaction."""
    audit = services.get(AuditService)
    users = services.get(UserService)

    def user_who(user: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "user", "id": user["_id"], "name": user.get("user"), "role": user.get("role")}

    def author(entry: Audit, payload: dict[str, Any]) -> Identity | dict[str, Any]:
        """Who did it: an identity, a user document or a user's id, the
        first of the entry's `author` keys set; none is the public."""
        for key in entry.author:
            value = payload.get(key)
            if isinstance(value, Identity):
                return value
            if isinstance(value, dict):
                return user_who(value)
            if isinstance(value, str):
                user = users.get(value)
                return {"kind": "user", "id": value, "name": None, "role": None} if user is None else user_who(user)
        return {"kind": "public", "id": None, "name": None, "role": "public"}

    def recorder(event: EventSpec, entry: Audit) -> Any:
        def record(**payload: Any) -> None:
            who = author(entry, payload)
            if not entry.one_by_one and imported(who):
                return
            action = entry.action
            if action.endswith(".*"):
                action = action[:-1] + ("update" if updated(payload) else "create")
            detail = entry.detail(payload, services) if entry.detail is not None else {}
            audit.record(action, event.resource_of(payload), event.subject_of(payload), who, detail)
        return record

    for event in services.catalogue.values():
        if event.audit is not None:
            services.events.on(event.name, recorder(event, event.audit))


HERE = Path(__file__).parent

module = Module("audit", build=build, subscribe=subscribe, openapi=openapi.paths,
                routes=[*routes.routes, *screens.routes], templates=HERE / "templates",
                nav=[NavEntry("Audit log", "/studio/settings/audit", "Settings",
                              lambda identity: identity.can("audit/read"), order=92)],
                permissions=(READ,))
