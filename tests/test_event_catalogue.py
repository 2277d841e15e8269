"""The event catalogue (quire/catalogue.py): every event the code sends is
declared once by its module, with the payload keys its sends pass and a
phase docs/hooks.md agrees with; webhooks follow the events declared as
delivered, and the handlers of synchronous events must be plain functions."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import quire as quire_src
from quire.app import MODULES, Quire
from quire.catalogue import AFTER, BEFORE, INSIDE, WRITE, Audit, catalogue, matching, spec
from quire.config import load_settings
from quire.events import Events
from quire.searchmod.service import SearchService
from tests.test_hooks import documented_events, emitted_events

CATALOGUE = catalogue(e for m in MODULES for e in m.events)


def test_every_event_sent_is_declared_with_the_keys_its_sends_pass() -> None:
    events, _ = emitted_events()
    assert sorted(set(events) - set(CATALOGUE)) == [], "sent but not declared by any module"
    assert sorted(set(CATALOGUE) - set(events)) == [], "declared but never sent"
    for name, keys in events.items():
        if keys:  # a send that spreads a dict (**payload) shows no keys to the scan
            assert keys == set(CATALOGUE[name].payload), name


def test_every_declared_event_is_documented_in_its_phase() -> None:
    rows = documented_events()
    for name, event in CATALOGUE.items():
        when = [c.strip() for c in rows[name].split("|")][3]
        after = when.startswith("After the") or "of its own after" in when
        before = re.search(r"\bbefore the [\w ]+? (is|are) (stored|saved|removed)\b", when) is not None
        if event.phase == AFTER:
            assert after, (name, when)
        elif event.phase == BEFORE:
            assert before and not after, (name, when)
        else:
            assert event.phase == INSIDE and not before and when.startswith("In "), (name, when)
        for key in event.payload:
            assert f"`{key}`" in rows[name], f"{name}: payload key {key} not in its row of docs/hooks.md"


def test_a_module_declares_each_event_once() -> None:
    declared = [e.name for m in MODULES for e in m.events]
    assert len(declared) == len(set(declared))
    with pytest.raises(ValueError, match="declared twice"):
        catalogue([spec("x.y", INSIDE, "a"), spec("x.y", AFTER, "a")])
    assert [e.name for e in matching(CATALOGUE, "pages.page.*")] == [
        "pages.page.save.before", "pages.page.saved", "pages.page.save.after", "pages.page.remove"]


def test_webhooks_follow_the_events_declared_as_delivered(quire: Quire) -> None:
    delivered = {name for name, e in quire.catalogue.items() if e.delivered}
    followed = {name for name in quire.catalogue if any(
        getattr(h, "__qualname__", "").startswith("subscribe.<locals>.follower")
        for h in quire.events._handlers.get(name, []))}
    assert followed == delivered
    assert "content.item.saved" in delivered and "inbox.submit.after" in delivered
    assert "content.item.save.before" not in delivered


def test_the_handlers_of_synchronous_events_are_plain_functions(data_dir: Any) -> None:
    quire = Quire(load_settings(data_dir, env={"QUIRE_MODULES_PACKAGES": "false"}), Events())
    try:
        assert {name for name, e in quire.catalogue.items() if e.sync} >= {
            "content.model.save", "auth.login", "bundle.import"}

        async def handler(**payload: Any) -> None:
            return None

        with pytest.raises(TypeError, match="must be a plain function"):
            quire.events.on("content.model.save", handler)
        quire.events.on("content.item.saved", handler)  # an async write's event takes one
    finally:
        quire.close()


def test_a_write_event_declares_what_it_wrote_and_its_audit_entry_is_checked() -> None:
    written = spec("x.thing.saved", INSIDE, "thing", "previous", "identity", resource="things/{kind}",
                   subject="thing", change=WRITE, versioned=True, audit="thing.*")
    assert written.audit == Audit("thing.*")
    assert written.subject_of({"thing": {"_id": "a1", "name": "n"}}) == "a1"
    assert written.subject_of({"thing": {"name": "n"}}) == "n"
    assert written.resource_of({"kind": "big"}) == "things/big"
    with pytest.raises(ValueError, match="not a key of its payload"):
        spec("x.thing.saved", INSIDE, "thing", resource="things", subject="item", change=WRITE)
    with pytest.raises(ValueError, match="names its resource, subject and change"):
        spec("x.thing.saved", INSIDE, "thing", versioned=True)
    with pytest.raises(ValueError, match="carries the `previous` document"):
        spec("x.thing.saved", INSIDE, "thing", resource="things", subject="thing", change=WRITE, versioned=True)
    with pytest.raises(ValueError, match="change must be"):
        spec("x.thing.saved", INSIDE, "thing", resource="things", subject="thing", change="moved")
    with pytest.raises(ValueError, match="user is not a key"):
        spec("x.login", INSIDE, "who", audit=Audit("login", author=("user",)))


def test_audit_revisions_and_search_follow_the_declarations_not_names(quire: Quire) -> None:
    """Each follows every event whose declaration asks for it, and their
    code names none of the events it records (only the content models'
    lifecycle, which the revisions and indexes of a model follow)."""
    def followers(prefix: str) -> set[str]:
        return {name for name in quire.catalogue if any(
            getattr(h, "__qualname__", "").startswith(prefix) for h in quire.events._handlers.get(name, []))}

    assert followers("subscribe.<locals>.recorder.<locals>.record") == {
        name for name, e in quire.catalogue.items() if e.audit is not None or e.versioned}
    assert {n for n, e in quire.catalogue.items() if e.versioned} == {
        "content.item.saved", "content.item.remove", "pages.page.saved", "pages.page.remove", "pages.settings.saved"}
    assert {n for n, e in quire.catalogue.items() if e.audit} >= {
        "content.item.saved", "auth.login.failed", "bundle.import", "webhooks.webhook.rotate"}
    search = quire.get(SearchService)
    indexed = {n for n in quire.catalogue if any(getattr(h, "__self__", None) is search
                                                 for h in quire.events._handlers.get(n, []))}
    assert indexed == {"content.item.saved", "content.item.remove", "content.model.remove", "content.model.rename"}
    source = (Path(quire_src.__file__).parent / "audit" / "__init__.py").read_text()
    assert re.findall(r'"(?:content|pages|assets|inbox|l10n|auth|bundle|webhooks)\.[a-z.]+"', source) == []
