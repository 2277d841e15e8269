"""Admin users: `{_id, user, email, name, role, active, password, spaces, _sso}`.

`role` is the user's role on the main site; `spaces` maps a space's name
to the user's role in that space (docs/spaces.md#people).

Passwords are stored as argon2 hashes. A user that came through single
sign-on carries `_sso: {iss, sub, sid}` and is found again by (iss, sub);
such a user has no password unless an administrator sets one.
"""

from __future__ import annotations

import functools
import re
import time
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from quire.auth.service import SYSTEM, USERS, AuthService, Identity
from quire.emails import normal_email
from quire.errors import BadRequest, NotFound
from quire.events import refusals_as_412
from quire.ids import new_id
from quire.store import Store

BLOCKED_USER_CHARS = "<>\"'"
MIN_PASSWORD = 8
PUBLIC_FIELDS = ("_id", "user", "email", "name", "role", "active", "spaces", "_sso", "_created", "_modified")
MAX_NAME = 64  # of a role or a space in `spaces`


def valid_user_name(value: Any) -> bool:
    return (isinstance(value, str) and 0 < len(value.strip()) <= 128
            and not any(c in value for c in BLOCKED_USER_CHARS))


def public(doc: dict[str, Any]) -> dict[str, Any]:
    """A user as shown: never the password hash."""
    return {k: doc[k] for k in PUBLIC_FIELDS if k in doc}


class UserService:
    def __init__(self, store: Store, auth: AuthService) -> None:
        self.store = store
        self.auth = auth
        self.users = store.collection(USERS)
        self._hasher = PasswordHasher()
        store.ensure_indexes(USERS, [[("user",)], [("email",)], [("_sso", "iss"), ("_sso", "sub")]])

    # -- reading ----------------------------------------------------------

    def list_all(self) -> list[dict[str, Any]]:
        return [public(d) for d in self.users.find(None, [(("user",), 1)])]

    def get(self, user_id: str) -> dict[str, Any] | None:
        return self.users.get(user_id)

    def by_name(self, user: str) -> dict[str, Any] | None:
        return self.users.find_one({"user": user})

    def by_sso(self, issuer: str, subject: str) -> dict[str, Any] | None:
        return self.users.find_one({"_sso.iss": issuer, "_sso.sub": subject})

    def verify_password(self, user: str, password: str) -> dict[str, Any] | None:
        """The active user with this name and password, else None."""
        doc = self.by_name(user)
        stored = doc.get("password") if doc else None
        try:
            self._hasher.verify(stored or _dummy_hash(self._hasher), password)
        except (VerificationError, InvalidHashError):
            return None
        if doc is None or not stored or not doc.get("active", True):
            return None
        return doc

    # -- writing ----------------------------------------------------------

    def create(self, body: dict[str, Any], identity: Identity | None = None) -> dict[str, Any]:
        """A new user; `identity` is who adds it (the command line when None)."""
        doc = self._checked({"active": True, **body}, None)
        doc["_id"] = new_id()
        doc["_created"] = doc["_modified"] = int(time.time())
        with self.store.transaction():
            self._unique(doc, None)
            self.users.insert(doc)
            self._saved(doc, None, identity or SYSTEM)
        return public(doc)

    def update(self, user_id: str, body: dict[str, Any], identity: Identity | None = None) -> dict[str, Any]:
        """Changes to a user; an empty password leaves the password as it is."""
        if body.get("password") in ("", None):
            body = {k: v for k, v in body.items() if k != "password"}
        with self.store.transaction():
            current = self.users.get(user_id)
            if current is None:
                raise NotFound("User not found")
            doc = self._checked({**current, **body}, current)
            doc["_modified"] = int(time.time())
            self._unique(doc, user_id)
            self.users.replace(doc)
            self._saved(doc, current, identity or SYSTEM)
        return public(doc)

    def delete(self, user_id: str, identity: Identity | None = None) -> None:
        with self.store.transaction():
            doc = self.users.get(user_id)
            if doc is None or not self.users.delete(user_id):
                raise NotFound("User not found")
            with refusals_as_412():
                self.auth.events.notify("auth.user.remove", user=public(doc), identity=identity or SYSTEM)

    def set_space_role(self, user_id: str, space: str, role: str | None, identity: Identity) -> dict[str, Any]:
        """The user's role in `space` (None: none), read and written in one
        transaction so that two spaces' changes never lose each other."""
        with self.store.transaction():
            current = self.users.get(user_id)
            if current is None:
                raise NotFound("User not found")
            spaces = {k: v for k, v in (current.get("spaces") or {}).items() if k != space}
            if role is not None:
                spaces[space] = role
            doc = {**current, "spaces": spaces, "_modified": int(time.time())}
            if not spaces:
                doc.pop("spaces")
            self.users.replace(doc)
            self._saved(doc, current, identity)
        return public(doc)

    def forget_space(self, space: str) -> None:
        """No user has a role in `space` any more (it was removed: one made
        again under its name is another site)."""
        for user in self.users.find():
            if space in (user.get("spaces") or {}):
                self.set_space_role(user["_id"], space, None, SYSTEM)

    def _saved(self, doc: dict[str, Any], current: dict[str, Any] | None, identity: Identity) -> None:
        """`auth.user.save`, in the write's transaction: the user without its
        password hash, and the names of the fields that changed (`password`
        among them when it did: the name, never a value)."""
        changed = sorted(k for k in {*doc, *(current or {})}
                         if not k.startswith("_") and (current or {}).get(k) != doc.get(k))
        with refusals_as_412():
            self.auth.events.notify("auth.user.save", user=public(doc), changed=changed,
                                    is_update=current is not None, identity=identity)

    def save_sso(self, issuer: str, subject: str, sid: str | None, fields: dict[str, Any]) -> dict[str, Any]:
        """The user of (issuer, subject), created or updated with the mapped
        fields (which the caller has validated)."""
        sso = {"iss": issuer, "sub": subject, "sid": sid}
        with self.store.transaction():
            current = self.by_sso(issuer, subject)
            now = int(time.time())
            if current is None:
                doc = {"_id": new_id(), "active": True, "_created": now, **fields, "_sso": sso, "_modified": now}
                self._unique(doc, None)
                self.users.insert(doc)
            else:
                doc = {**current, **fields, "_sso": sso, "_modified": now}
                self._unique(doc, current["_id"])
                self.users.replace(doc)
            if current is None or any(current.get(k) != v for k, v in fields.items()):
                # made or changed by the provider's claims at sign-on: the user is its own author
                self._saved(doc, current, Identity(doc.get("role", "public"), key_id=doc["_id"],
                                                   key_name=doc.get("user"), kind="user"))
        return doc

    def _checked(self, doc: dict[str, Any], current: dict[str, Any] | None) -> dict[str, Any]:
        allowed = {"user", "email", "name", "role", "active", "password", "spaces"}
        unknown = sorted(k for k in doc if k not in allowed and (current is None or k not in current))
        if unknown:
            raise BadRequest(f"Unknown user fields: {', '.join(unknown)}", fields=unknown)
        if not valid_user_name(doc.get("user")):
            raise BadRequest("User name is required and may not contain < > \" '", fields=["user"])
        doc["user"] = doc["user"].strip()
        if normal_email(doc.get("email")) is None:
            raise BadRequest("Invalid email format", fields=["email"])
        role = doc.get("role")
        if not isinstance(role, str) or not self.auth.role_exists(role):
            raise BadRequest("Role does not exist", fields=["role"])
        if not isinstance(doc.get("active"), bool):
            raise BadRequest("active must be true or false", fields=["active"])
        spaces = doc.get("spaces")
        if spaces is not None and not (isinstance(spaces, dict) and all(
                isinstance(v, str) and 0 < len(k) <= MAX_NAME and 0 < len(v) <= MAX_NAME for k, v in spaces.items())):
            raise BadRequest("spaces maps a space's name to the user's role there: {\"shop\": \"editor\"}",
                             fields=["spaces"])
        name = doc.get("name")
        if name is not None and not isinstance(name, str):
            raise BadRequest("name must be text", fields=["name"])
        doc["name"] = strip_name(name or doc["user"])
        password = doc.get("password")
        if current is None or password != current.get("password"):
            if password in (None, ""):
                doc.pop("password", None)  # no password: the user signs in through SSO only
            elif not isinstance(password, str) or len(password) < MIN_PASSWORD:
                raise BadRequest(f"Password must have at least {MIN_PASSWORD} characters", fields=["password"])
            else:
                doc["password"] = self._hasher.hash(password)
        return doc

    def _unique(self, doc: dict[str, Any], own_id: str | None) -> None:
        for field in ("user", "email"):
            other = self.users.find_one({field: doc[field]})
            if other is not None and other["_id"] != own_id:
                raise BadRequest(f"Another user has this {'name' if field == 'user' else 'e-mail'}",
                                 fields=[field])


@functools.cache
def _dummy_hash(hasher: PasswordHasher) -> str:
    """A hash to verify against when the user does not exist (or has no
    password), so that a wrong name costs as long as a wrong password.
    Made once per process, on the first such login: not at every start."""
    return hasher.hash("not a password of anyone")


_DANGEROUS = re.compile(r"[<>\"'`\\\x00-\x1f\x7f]")


def strip_name(name: str) -> str:
    """A display name without characters that could break out of markup."""
    return _DANGEROUS.sub("", name).strip()[:200]
