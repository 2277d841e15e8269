"""Admin sessions, kept server-side so they can be listed and destroyed.

The browser holds a random token in a cookie; the store keeps only its
SHA-256 (a stolen database does not log anyone in). A session ends when it
is idle longer than `[admin] session_idle_seconds`, when it is older than
`session_max_seconds`, on logout, when its user is deactivated or deleted,
and when the OpenID provider sends a back-channel logout for its subject or
provider session.

Events for a session (the back-channel logout notice) are rows of
`system/session_events`: every worker's event streams poll them, so the
worker that received the logout need not be the one holding the stream, and
every tab of the session gets them. They are removed after ten minutes.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import TYPE_CHECKING, Any

from quire.errors import StoreBusy
from quire.events import Events
from quire.ids import new_id
from quire.store import Store

if TYPE_CHECKING:
    from quire.auth.service import Identity

SESSIONS = "system/sessions"
SESSION_EVENTS = "system/session_events"
SEEN_EVERY = 60  # seconds between writes of `seen`: not one write per page view
SEEN_WAIT = 0.5  # seconds a page waits for the write lock to note a visit, then skips it
EVENTS_KEPT = 600  # seconds an undelivered event is kept


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class SessionService:
    def __init__(self, store: Store, idle: int, absolute: int, bus: Events | None = None) -> None:
        self.store = store
        # `auth.login`, `auth.login.failed` and `auth.logout` go out on it,
        # inside the transaction that starts or ends the session
        self.bus = bus or Events()
        self.idle = idle
        self.absolute = absolute
        self.sessions = store.collection(SESSIONS)
        self.events = store.collection(SESSION_EVENTS)
        store.ensure_indexes(SESSIONS, [[("user",)], [("sso", "sub")], [("sso", "sid")]])
        store.ensure_indexes(SESSION_EVENTS, [[("session",)]])

    def start(self, user: dict[str, Any], *, sso: dict[str, Any] | None = None, id_token: str | None = None,
              address: str = "", agent: str = "") -> tuple[str, dict[str, Any]]:
        """A new session of `user`: (the cookie token, the stored session)."""
        token = secrets.token_urlsafe(32)
        now = int(time.time())
        doc: dict[str, Any] = {
            "_id": token_hash(token), "user": user["_id"], "created": now, "seen": now,
            "csrf": secrets.token_urlsafe(24), "address": address[:64], "agent": agent[:200],
        }
        if sso is not None:
            doc["sso"] = sso
        if id_token is not None:
            doc["id_token"] = id_token  # the hint for RP-initiated logout at the provider
        with self.store.transaction():
            self._forget_expired(now)
            self.sessions.insert(doc)
            # the user as lists show it: never its password hash
            self.bus.notify("auth.login", user={k: user.get(k) for k in ("_id", "user", "name", "role")},
                            method="sso" if sso is not None else "password")
        return token, doc

    async def astart(self, user: dict[str, Any], *, sso: dict[str, Any] | None = None,
                     id_token: str | None = None, address: str = "", agent: str = "") -> tuple[str, dict[str, Any]]:
        """`start` for a request: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.start(user, sso=sso, id_token=id_token, address=address, agent=agent)

    def login_failed(self, user_name: str, method: str, reason: str) -> None:
        """Tell `auth.login.failed` handlers of a refused login: the name
        tried (never the password) and why, in a transaction of its own so
        they can write (the audit log)."""
        with self.store.transaction():
            self.bus.notify("auth.login.failed", user_name=user_name[:200], method=method, reason=reason)

    async def alogin_failed(self, user_name: str, method: str, reason: str) -> None:
        """`login_failed` for a request: waits for the write lock off the event loop."""
        if not self.bus.has("auth.login.failed"):
            return  # nobody listens: no transaction for nothing
        async with self.store.atomic():
            self.login_failed(user_name, method, reason)

    def lookup(self, token: str | None, now: float | None = None) -> dict[str, Any] | None:
        """The live session of a cookie token, else None (an expired one is
        removed). For code off the event loop; async code uses `alookup`."""
        doc, write = self._examine(token, now)
        if doc is None or write is None:
            return doc
        if write == "expired":
            with self.store.transaction():
                self.sessions.delete(doc["_id"])
            return None
        try:
            with self.store.transaction():
                self.sessions.update(doc["_id"], {"seen": doc["seen"]})
        except StoreBusy:
            pass  # another writer holds the lock: noting the visit can wait for the next one
        return doc

    async def alookup(self, token: str | None) -> dict[str, Any] | None:
        """`lookup` for a request: the writes it may need (removing an expired
        session, noting the visit) wait for the write lock off the event
        loop, so a long import elsewhere delays them instead of failing."""
        doc, write = self._examine(token, None)
        if doc is None or write is None:
            return doc
        if write == "expired":
            async with self.store.atomic():
                self.sessions.delete(doc["_id"])
            return None
        try:
            async with self.store.atomic(timeout=SEEN_WAIT):
                self.sessions.update(doc["_id"], {"seen": doc["seen"]})
        except StoreBusy:
            pass  # the page need not wait for a note of the visit
        return doc

    def _examine(self, token: str | None, now: float | None) -> tuple[dict[str, Any] | None, str | None]:
        """(the live session of a cookie token or None, the write it needs:
        "expired" to remove it, "seen" to note the visit, or None). For
        "seen", the returned session's `seen` is already `now`."""
        if not token or len(token) > 100:
            return None, None
        now = int(time.time() if now is None else now)
        doc = self.sessions.get(token_hash(token))
        if doc is None:
            return None, None
        if now - doc["seen"] > self.idle or now - doc["created"] > self.absolute:
            return doc, "expired"
        if now - doc["seen"] >= SEEN_EVERY:
            return {**doc, "seen": now}, "seen"
        return doc, None

    def end(self, session_id: str, reason: str = "logout", identity: Identity | None = None) -> bool:
        """End a session: `reason` says why (`logout`: its user asked;
        `ended`: `identity`, an administrator, ended it; `deactivated`: its
        user was), for `auth.logout` handlers. False when there was none."""
        with self.store.transaction():
            doc = self.sessions.get(session_id)
            if doc is None or not self.sessions.delete(session_id):
                return False
            self.bus.notify("auth.logout", user_id=doc["user"], reason=reason, identity=identity)
            return True

    async def aend(self, session_id: str, reason: str = "logout", identity: Identity | None = None) -> bool:
        """`end` for a request: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.end(session_id, reason, identity)

    def end_token(self, token: str | None) -> dict[str, Any] | None:
        """Log out the session of a cookie token; the session it was, if any."""
        if not token:
            return None
        doc = self.sessions.get(token_hash(token))
        if doc is not None:
            self.end(doc["_id"])
        return doc

    async def aend_token(self, token: str | None) -> dict[str, Any] | None:
        """`end_token` for a request: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.end_token(token)

    def end_user(self, user_id: str) -> int:
        with self.store.transaction():
            return self.sessions.delete_many({"user": user_id})

    def end_sso(self, issuer: str, subject: str | None, sid: str | None,
                event: dict[str, Any] | None = None) -> list[str]:
        """Destroy every session of this provider matching the subject or the
        provider session id, and leave `event` for each of them; their ids."""
        matches: list[dict[str, Any]] = []
        if subject:
            matches.append({"sso.sub": subject})
        if sid:
            matches.append({"sso.sid": sid})
        if not matches:
            return []
        with self.store.transaction():
            found = self.sessions.find({"sso.iss": issuer, "$or": matches})
            ids = [doc["_id"] for doc in found]
            for doc in found:
                session_id = doc["_id"]
                self.sessions.delete(session_id)
                self.bus.notify("auth.logout", user_id=doc["user"], reason="backchannel", identity=None)
                if event is not None:
                    self.events.insert({"_id": new_id(), "session": session_id, "at": int(time.time()), **event})
        return ids

    def list_all(self, user_id: str | None = None) -> list[dict[str, Any]]:
        now = int(time.time())
        query = None if user_id is None else {"user": user_id}
        return [d for d in self.sessions.find(query, [(("created",), -1)])
                if now - d["seen"] <= self.idle and now - d["created"] <= self.absolute]

    # -- events -----------------------------------------------------------

    def send(self, session_id: str, kind: str, data: dict[str, Any]) -> None:
        """An event for the streams of a session (inside the caller's
        transaction): `{"type": kind, "data": data}` reaches its open tabs."""
        self.events.insert({"_id": new_id(), "session": session_id, "at": int(time.time()), "type": kind,
                            "data": data})

    def events_of(self, session_id: str) -> list[dict[str, Any]]:
        """The events waiting for a session, oldest first. They are not
        removed when read: every open tab of the session has a stream and
        each must see them (they expire with the session's other rows)."""
        return self.events.find({"session": session_id}, [(("at",), 1), (("_id",), 1)])

    def has_stream(self, session_id: str) -> bool:
        """Whether an event stream of this session has a reason to go on: the
        session lives, or an event waits for it."""
        return (self.sessions.get(session_id) is not None
                or self.events.find_one({"session": session_id}) is not None)

    def _forget_expired(self, now: int) -> None:
        self.sessions.delete_many({"$or": [{"seen": {"$lt": now - self.idle}},
                                           {"created": {"$lt": now - self.absolute}}]})
        self.events.delete_many({"at": {"$lt": now - EVENTS_KEPT}})
