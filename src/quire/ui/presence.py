"""Who has a document open in the studio, and who holds its edit lock.

Each open editor (a session and a document, its `resource` such as
`content/posts/<id>`) keeps a presence row alive with a heartbeat; a row
not renewed for STALE seconds is gone (a closed laptop). The first editor
to open a document holds its lock; another may take it over, and the one
it was taken from is told. A lock whose holder is gone passes to whoever
is still there, the longest present first.

A lock is advice, shown to editors and to API clients (`GET
/api/content/lock/...`): the `_rev` rule of every save stays the safety
net against lost edits. Changes reach the other editors of the document
through their sessions' event streams (`/system/events`, polled twice a
second by every worker), so presence shows within a second on any worker
or instance."""

from __future__ import annotations

import time
from typing import Any

from quire.auth.sessions import SessionService
from quire.store import Store

PRESENCE = "studio_presence"
LOCKS = "studio_locks"
STALE = 30  # seconds without a heartbeat after which an editor is gone
HEARTBEAT = 10  # seconds between an open editor's heartbeats (editor.js)


class PresenceService:
    def __init__(self, store: Store, sessions: SessionService) -> None:
        self.store = store
        self.sessions = sessions
        self.present = store.collection(PRESENCE)
        self.locks = store.collection(LOCKS)

    def _here(self, resource: str, now: float, forget: bool = False) -> list[dict[str, Any]]:
        rows = self.present.find({"resource": resource}, [(("since",), 1), (("_id",), 1)])
        if forget:  # inside a write: the rows of editors gone go too
            for row in rows:
                if now - row["seen"] > STALE:
                    self.present.delete(row["_id"])
        return [r for r in rows if now - r["seen"] <= STALE]

    async def join(self, resource: str, session: str, user: dict[str, Any]) -> dict[str, Any]:
        """This session has the document open (again: a heartbeat); the
        others are told when that changes who is there or who holds it."""
        now = time.time()
        async with self.store.atomic():
            key = f"{resource}|{session}"
            row = self.present.get(key)
            fresh = row is None or now - row["seen"] > STALE
            since = now if row is None or fresh else row["since"]
            doc = {"_id": key, "resource": resource, "session": session, "user": user["_id"],
                   "name": user.get("name") or user["user"], "since": since, "seen": now}
            self.present.replace(doc) if row is not None else self.present.insert(doc)
            moved = self._settle(resource, now)
            if fresh or moved:
                self._tell(resource, session, now, None)
            return self._state(resource, session, now)

    async def leave(self, resource: str, session: str) -> None:
        now = time.time()
        async with self.store.atomic():
            key = f"{resource}|{session}"
            if self.present.get(key) is None:
                return
            self.present.delete(key)
            lock = self.locks.get(resource)
            if lock is not None and lock["session"] == session:
                self.locks.delete(resource)
            self._settle(resource, now)
            self._tell(resource, session, now, None)

    async def take(self, resource: str, session: str, user: dict[str, Any]) -> dict[str, Any]:
        """This session takes the lock over; its holder is told so."""
        now = time.time()
        await self.join(resource, session, user)
        async with self.store.atomic():
            lock = self.locks.get(resource)
            name = user.get("name") or user["user"]
            if lock is None or lock["session"] != session:
                doc = {"_id": resource, "session": session, "user": user["_id"], "name": name, "since": now}
                self.locks.replace(doc) if lock is not None else self.locks.insert(doc)
                notice = f"{name} took over editing this item."
                self._tell(resource, session, now, notice, only=lock["session"] if lock else None)
                self._tell(resource, session, now, None, skip=lock["session"] if lock else None)
            return self._state(resource, session, now)

    def _settle(self, resource: str, now: float) -> bool:
        """Give the lock to the longest present editor when nobody holds it
        or its holder is gone; whether it moved."""
        here = self._here(resource, now, forget=True)
        lock = self.locks.get(resource)
        if lock is not None and any(r["session"] == lock["session"] for r in here):
            return False
        if not here:
            if lock is not None:
                self.locks.delete(resource)
            return lock is not None
        first = here[0]
        doc = {"_id": resource, "session": first["session"], "user": first["user"], "name": first["name"],
               "since": now}
        self.locks.replace(doc) if lock is not None else self.locks.insert(doc)
        return True

    def _tell(self, resource: str, by: str, now: float, notice: str | None, only: str | None = None,
              skip: str | None = None) -> None:
        """An event for the other sessions that have the document open (or
        only for `only`): their editors ask for the new state."""
        targets = [only] if only else [r["session"] for r in self._here(resource, now)
                                       if r["session"] not in (by, skip)]
        data: dict[str, Any] = {"resource": resource, "at": now}
        if notice:
            data["notice"] = notice
        for session in dict.fromkeys(targets):
            self.sessions.send(session, "presence", data)

    def state(self, resource: str, session: str) -> dict[str, Any]:
        return self._state(resource, session, time.time())

    def _state(self, resource: str, session: str, now: float) -> dict[str, Any]:
        here = self._here(resource, now)
        lock = self.locks.get(resource)
        holder = None
        if lock is not None:
            holder = {"name": lock["name"], "since": int(lock["since"]), "mine": lock["session"] == session}
        others = list(dict.fromkeys(r["name"] for r in here if r["session"] != session))
        return {"holder": holder, "others": others, "heartbeat": HEARTBEAT}

    def lock_of(self, resource: str) -> dict[str, Any] | None:
        """The lock as API clients see it: who holds it and since when."""
        now = time.time()
        lock = self.locks.get(resource)
        if lock is None or not any(r["session"] == lock["session"] for r in self._here(resource, now)):
            return None
        return {"by": lock["name"], "user": lock["user"], "since": int(lock["since"])}
