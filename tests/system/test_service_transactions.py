"""Services open their own write transactions: routes call a service's
async method, which waits for the write lock off the event loop and joins
a transaction that is already open."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from quire.app import Quire
from quire.content.models import parse_model
from tests.conftest import hold_write_lock

SRC = Path(__file__).resolve().parents[2] / "src" / "quire"


def test_no_route_opens_a_transaction() -> None:
    # the routes, the screens and the studio's request helpers
    # (accounts/actions.py is the users screen's service)
    files = [*SRC.glob("*/routes.py"), *SRC.glob("*/screens.py"), *SRC.glob("*/screens/*.py"),
             *SRC.glob("ui/web.py"), *SRC.glob("ui/screens.py"), *SRC.glob("studio/*.py")]
    assert files
    opened = [f"{f.relative_to(SRC)}:{n}" for f in files
              for n, line in enumerate(f.read_text().splitlines(), 1) if re.search(r"\.atomic\(", line)]
    assert opened == []



@pytest.mark.sqlite_only
@pytest.mark.anyio
async def test_a_service_write_waits_for_the_lock_off_the_event_loop(quire: Quire) -> None:
    held = hold_write_lock(quire, 0.4)  # longer than a sync write may block a loop
    try:
        created = await quire.auth.acreate_key("late", "admin")
        await quire.models.asave(parse_model("notes", {"fields": [{"name": "title", "type": "text"}]}))
        await quire.locales.asave([{"i18n": "de", "name": "Deutsch"}])
    finally:
        held.join()
    assert created["_id"] in [k["_id"] for k in quire.auth.list_keys()]
    assert quire.models.get("notes").name == "notes"
    assert quire.locales.codes() == ["de"]


@pytest.mark.anyio
async def test_a_service_write_joins_an_open_transaction(quire: Quire) -> None:
    class Undo(Exception):
        pass

    before = quire.auth.list_keys()
    with pytest.raises(Undo):
        async with quire.store.atomic():
            await quire.auth.acreate_key("joined", "admin")
            await quire.auth.asave_role("editor", {"permissions": {}})
            raise Undo  # the outer transaction rolls back: the joined writes with it
    assert quire.auth.list_keys() == before
    assert "editor" not in [r["name"] for r in quire.auth.list_roles()]


def test_the_users_page_ends_sessions_in_the_same_commit(quire: Quire, monkeypatch: Any) -> None:
    import asyncio

    from quire.accounts.actions import user_action

    admin = quire.users.create({"user": "ann", "email": "ann@example.com", "role": "admin", "password": "pw-123456789"})
    bob = quire.users.create({"user": "bob", "email": "bob@example.com", "role": "admin", "password": "pw-123456789"})
    quire.sessions.start(quire.users.get(bob["_id"]) or {})
    login: Any = type("L", (), {"user": quire.users.get(admin["_id"]),
                                "identity": quire.auth.role_identity("admin", admin["_id"], "ann")})()

    def refuse(user_id: str) -> int:
        raise RuntimeError("ending the sessions failed")

    monkeypatch.setattr(quire.sessions, "end_user", refuse)
    with pytest.raises(RuntimeError):
        asyncio.run(user_action(quire, login, "delete", {"id": bob["_id"]}))
    assert quire.users.get(bob["_id"]) is not None  # the deletion rolled back with it
