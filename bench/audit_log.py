"""Time the audit log's reads on 100,000 entries (SQLite, in process): the
studio's pages, each filter, and the API's page with its total, first call
and then the mean of repeats. Run: `PYTHONPATH=src python bench/audit_log.py`
(the numbers are in docs/audit.md)."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from quire.app import Quire
from quire.audit.service import AuditQuery, AuditService
from quire.auth.service import Identity
from quire.config import load_settings

ENTRIES = 100_000
ACTIONS = ["item.create", "item.update", "item.update", "item.update", "item.delete", "login", "key.create",
           "model.save"]


def main() -> None:
    quire = Quire(load_settings(Path(tempfile.mkdtemp()), env={"QUIRE_SERVER_QUIET": "true"}))
    audit = quire.get(AuditService)
    rnd = random.Random(1)
    people = [Identity("editor", key_id=f"{n:024x}", key_name=f"user{n}", kind="user") for n in range(50)]
    now = [1.7e9]

    def tick() -> float:
        now[0] += 30
        return now[0]

    audit.clock = tick
    started = time.perf_counter()
    for _ in range(ENTRIES // 1000):
        with quire.store.transaction():
            for _ in range(1000):
                action = rnd.choice(ACTIONS)
                resource = f"content/m{rnd.randrange(20)}" if action.startswith("item") else "keys"
                audit.record(action, resource, f"{rnd.getrandbits(96):024x}", rnd.choice(people), {"fields": ["title"]})
    print(f"recorded {ENTRIES:,} entries in {time.perf_counter() - started:.1f} s")

    def timed(label: str, read: Callable[[], Any], repeats: int = 10) -> None:
        quire.store.touch()  # a write elsewhere: nothing kept from before
        start = time.perf_counter()
        read()
        first = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        for _ in range(repeats):
            read()
        print(f"{label}: first {first:.2f} ms, then {(time.perf_counter() - start) / repeats * 1000:.2f} ms")

    middle = 1.7e9 + ENTRIES // 2 * 30
    timed("studio page 1, no filter", lambda: audit.page(AuditQuery(), 50))
    timed("studio page 40", lambda: audit.page(AuditQuery(), 50, 1950))
    timed("action=item.delete", lambda: audit.page(AuditQuery(action="item.delete"), 50))
    timed("action=key.* (a prefix)", lambda: audit.page(AuditQuery(action="key.*"), 50))
    timed("action=item.* (a prefix)", lambda: audit.page(AuditQuery(action="item.*"), 50))
    timed("resource=content/m3", lambda: audit.page(AuditQuery(resource="content/m3"), 50))
    timed("resource=content/* (a prefix)", lambda: audit.page(AuditQuery(resource="content/*"), 50))
    timed("who", lambda: audit.page(AuditQuery(who=people[7].key_id), 50))
    timed("one day", lambda: audit.page(AuditQuery(start=middle, end=middle + 86_400), 50))
    timed("API page and total, no filter", lambda: audit.find(AuditQuery(), 50))
    timed("API page and total, action=item.delete", lambda: audit.find(AuditQuery(action="item.delete"), 50))
    quire.close()


if __name__ == "__main__":
    main()
