"""Roles, API keys and users, and resolving a request's key to an Identity."""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from quire.auth.permissions import BUILTIN_ROLES, ROLE_NAME, is_known
from quire.bundleparts import BundlePart, Checked, check_named
from quire.cache import Cache, SystemValue
from quire.errors import BadRequest, Forbidden, NotFound, Unauthorized
from quire.events import Events, refusals_as_412
from quire.ids import new_id
from quire.schemaparts import Effect, SchemaPart
from quire.store import Store

KEYS = "system/keys"
ROLES = "system/roles"
USERS = "system/users"
KEY_PREFIX = "qk_"
IDENTITIES_KEPT = 1024  # identities of keys kept per app for the store's generation


def hash_key(key: str) -> str:
    # Keys carry 256 random bits, so a fast hash is safe and keeps each
    # request's lookup cheap; passwords (low entropy) use argon2 instead.
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class Identity:
    """Who is calling: an API key's role, or the public role (no key)."""

    role: str
    permissions: frozenset[str] = field(default_factory=frozenset)
    key_id: str | None = None
    key_name: str | None = None
    # what `key_id` names: "key" (an API key), "user" (a logged-in user of
    # the studio), "hook" (a hook's own writes), "system" (the command
    # line, an import, the demo); revisions and the audit log record it
    kind: str = "key"
    # actions this caller never has, whatever its role says: an assistant's
    # calls (quire.assistants) never publish unless its key's settings allow it
    withheld: frozenset[str] = frozenset()

    @property
    def anonymous(self) -> bool:
        return self.key_id is None

    @property
    def is_admin(self) -> bool:
        return self.role == "admin"

    def can(self, permission: str) -> bool:
        if self.withheld and permission.rpartition("/")[2] in self.withheld:
            return False
        if self.is_admin or permission in self.permissions:
            return True
        if permission.startswith("content/"):
            _, _, action = permission.rpartition("/")
            return f"content/*/{action}" in self.permissions
        return False

    def require(self, permission: str) -> None:
        if not self.can(permission):
            raise Unauthorized("Authentication failed") if self.anonymous else Forbidden(
                "Permission denied"
            )

    @property
    def actor(self) -> str | None:
        return self.key_id


# Who changes keys, roles and users when no caller is named: the command
# line (`quire keys`, `quire users`), the demo, an import.
SYSTEM = Identity("admin", key_id="system", key_name="system", kind="system")


def who(identity: Identity) -> dict[str, Any]:
    """The author of a write as revisions and the audit log record it."""
    kind = "public" if identity.anonymous else identity.kind
    return {"kind": kind, "id": identity.key_id, "name": identity.key_name, "role": identity.role}


class AuthService:
    def __init__(self, store: Store, cache: Cache, permissions: Collection[str] = (),
                 events: Events | None = None) -> None:
        self.store = store
        self.cache = cache
        # `auth.key.*` and `auth.role.*` are sent on it inside each change's transaction
        self.events = events or Events()
        # the names the modules declare (the app's set; modules built later add theirs)
        self.permissions = permissions
        self.keys = store.collection(KEYS)
        self.roles = store.collection(ROLES)
        self._key_index: SystemValue[dict[str, dict[str, Any]]] = cache.system(self._load_keys)
        self._role_index: SystemValue[dict[str, frozenset[str]]] = cache.system(self._load_roles)
        self._identities = cache.region("auth.identities", IDENTITIES_KEPT)

    # -- identity ---------------------------------------------------------

    def identify(self, key: str | None) -> Identity:
        """The Identity of a request's key; 401 for a key that is not known.
        Every request asks: a known key's Identity (immutable) is kept for
        the store's generation, which any change of keys or roles moves."""
        hashed = hash_key(key) if key else None  # kept by the hash: no key text is kept in memory
        kept = self._identities.get(hashed)
        if kept is not None:
            return kept
        generation = self.cache.generation
        if hashed is None:
            identity = Identity("public", self._role_index.get().get("public", frozenset()))
        else:
            record = self._key_index.get().get(hashed)
            if record is None:
                raise Unauthorized("Authentication failed")  # not kept: a flood of wrong keys keeps nothing
            role = record["role"]
            identity = Identity(role, self._role_index.get().get(role, frozenset()), record["_id"], record["name"])
        self._identities.put(hashed, identity, generation)
        return identity

    def role_identity(self, role: str, actor_id: str, actor_name: str) -> Identity:
        """The Identity of a logged-in admin user: the permissions of its role."""
        return Identity(role, self._role_index.get().get(role, frozenset()), actor_id, actor_name, kind="user")

    def _load_keys(self) -> dict[str, dict[str, Any]]:
        return {doc["hash"]: doc for doc in self.keys.find()}

    def _load_roles(self) -> dict[str, frozenset[str]]:
        return {
            doc["_id"]: frozenset(p for p, on in doc.get("permissions", {}).items() if on)
            for doc in self.roles.find()
        }

    # -- roles ------------------------------------------------------------

    def list_roles(self) -> list[dict[str, Any]]:
        stored = {doc["_id"]: doc for doc in self.roles.find()}
        out = [{"name": "admin", "permissions": {}, "builtin": True, "all": True}]
        public = stored.pop("public", {"permissions": {}})
        out.append({"name": "public", "permissions": public.get("permissions", {}), "builtin": True})
        out += [{"name": n, "permissions": d.get("permissions", {}), "builtin": False} for n, d in sorted(stored.items())]
        return out

    def role_exists(self, name: str) -> bool:
        return name in BUILTIN_ROLES or self.roles.get(name) is not None

    def roles_part(self) -> BundlePart:
        """Roles in export/import bundles (not `admin`, which is built in);
        API keys are secrets of one instance and stay out."""
        return BundlePart("roles", "roles", lambda: [r for r in self.list_roles() if r["name"] != "admin"],
                          self._check_bundle_roles, self._load_bundle_roles)

    def _check_bundle_roles(self, value: Any, checked: Checked) -> list[dict[str, Any]]:
        return check_named(value, "roles", "role")

    async def _load_bundle_roles(self, roles: list[dict[str, Any]], identity: Any) -> int:
        for role in roles:
            self.save_role(role["name"], {"permissions": role.get("permissions", {})}, identity)
        return len(roles)

    def roles_schema_part(self) -> SchemaPart:
        """Roles in schema snapshots (not `admin`, which is built in): a
        role keys or users have cannot be removed."""
        def entries() -> list[dict[str, Any]]:
            return [{"name": r["name"], "permissions": r["permissions"]} for r in self.list_roles()
                    if r["name"] != "admin"]

        def effect(current: dict[str, Any] | None, wanted: dict[str, Any] | None) -> Effect:
            if wanted is not None or current is None or current["name"] == "public":
                return Effect()
            name = current["name"]
            used = self.keys.count({"role": name}) + self.store.collection(USERS).count({"role": name})
            return Effect(used, blocked=f"{used} keys or users have this role" if used else None)

        async def apply(current: dict[str, Any] | None, wanted: dict[str, Any] | None, identity: Any) -> None:
            if wanted is None:
                self.delete_role(str((current or {}).get("name")), identity)
            else:
                self.save_role(str(wanted["name"]), {"permissions": wanted.get("permissions") or {}}, identity)

        def check(wanted: dict[str, Any]) -> None:
            extra = sorted(set(wanted) - {"name", "permissions"})
            if extra:
                raise BadRequest(f"unknown keys {', '.join(extra)} (a role has name and permissions)")
            permissions = wanted.get("permissions")
            if not isinstance(permissions, dict) or not all(v in (True, False) for v in permissions.values()):
                raise BadRequest('permissions must be an object of permission -> true or false')
            unknown = sorted(p for p in permissions if not is_known(p, self.permissions))
            if unknown:
                raise BadRequest(f"Unknown permissions: {', '.join(unknown)}")

        return SchemaPart("roles", entries, effect, apply, check=check)

    def get_role(self, name: str) -> dict[str, Any]:
        for role in self.list_roles():
            if role["name"] == name:
                return role
        raise NotFound(f"Role {name} not found")

    def save_role(self, name: str, body: Any, identity: Identity | None = None) -> dict[str, Any]:
        """Create or change role `name`; `identity` is who does it (the
        command line when None), for the `auth.role.save` event."""
        if not ROLE_NAME.match(name):
            raise BadRequest("Role name must match ^[a-zA-Z0-9_-]+$")
        if name == "admin":
            raise BadRequest("The admin role is built in and has every permission")
        if not isinstance(body, dict) or not isinstance(body.get("permissions"), dict):
            raise BadRequest("Body must be {\"permissions\": {\"<permission>\": true, ...}}")
        perms = body["permissions"]
        unknown = [p for p in perms if not is_known(p, self.permissions)]
        if unknown:
            raise BadRequest(f"Unknown permissions: {', '.join(sorted(unknown))}", fields=unknown)
        bad = [p for p, v in perms.items() if not isinstance(v, bool)]
        if bad:
            raise BadRequest(f"Permission values must be true or false: {', '.join(bad)}", fields=bad)
        with self.store.transaction():
            previous = self.roles.get(name)
            self.roles.replace({"_id": name, "permissions": perms, "_modified": int(time.time())})
            self.cache.bump_system()
            with refusals_as_412():
                self.events.notify("auth.role.save", role=name, permissions=perms,
                                   previous=(previous or {}).get("permissions"), is_update=previous is not None,
                                   identity=identity or SYSTEM)
        return self.get_role(name)

    async def asave_role(self, name: str, body: Any, identity: Identity | None = None) -> dict[str, Any]:
        """`save_role` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.save_role(name, body, identity)

    def delete_role(self, name: str, identity: Identity | None = None) -> None:
        if name == "admin":
            raise BadRequest("The admin role is built in")
        used = [k["name"] for k in self.keys.find({"role": name})]
        if used:
            raise BadRequest(f"Role {name} is used by keys: {', '.join(used)}")
        users = [u["user"] for u in self.store.collection(USERS).find({"role": name})]
        if users:
            raise BadRequest(f"Role {name} is used by users: {', '.join(users)}")
        with self.store.transaction():
            if not self.roles.delete(name) and name != "public":
                raise NotFound(f"Role {name} not found")
            self.cache.bump_system()
            with refusals_as_412():
                self.events.notify("auth.role.remove", role=name, identity=identity or SYSTEM)

    async def adelete_role(self, name: str, identity: Identity | None = None) -> None:
        """`delete_role` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            self.delete_role(name, identity)

    # -- keys -------------------------------------------------------------

    def create_key(self, name: Any, role: Any, identity: Identity | None = None) -> dict[str, Any]:
        """A new key (its text answered once, only its hash stored);
        `identity` is who makes it (the command line when None)."""
        if not isinstance(name, str) or not name.strip():
            raise BadRequest("Key name is required", fields=["name"])
        if role is None or role == "":
            raise BadRequest("A key needs a role: choose one", fields=["role"])
        if not isinstance(role, str) or not self.role_exists(role):
            raise BadRequest(f"Role {role} does not exist", fields=["role"])
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        doc = {
            "_id": new_id(),
            "name": name.strip(),
            "role": role,
            "hash": hash_key(key),
            "hint": key[-4:],
            "_created": int(time.time()),
        }
        with self.store.transaction():
            self.keys.insert(doc)
            self.cache.bump_system()
            # never the key's text or hash: handlers get what a list shows
            with refusals_as_412():
                self.events.notify("auth.key.save", key=_listed(doc), is_update=False, identity=identity or SYSTEM)
        return {"_id": doc["_id"], "name": doc["name"], "role": role, "key": key}

    def import_key(self, key_id: str, name: str, role: str, text: str, created: int | None = None,
                   identity: Identity | None = None) -> dict[str, Any]:
        """A key brought from another system (Cockpit's keys are texts of its
        own form): stored hashed under its id, so sites keep working with the
        key they have; matched by id, taking it in again replaces it. Inside
        the caller's transaction."""
        if not text or len(text) < 16:
            raise BadRequest(f"Key {name}: shorter than 16 characters, too easy to guess; not imported")
        if not self.role_exists(role):
            raise BadRequest(f"Key {name}: role {role} does not exist", fields=["role"])
        doc = {"_id": key_id, "name": name.strip() or "imported key", "role": role, "hash": hash_key(text),
               "hint": text[-4:], "_created": created if created is not None else int(time.time())}
        current = self.keys.get(key_id)
        if current is None:
            self.keys.insert(doc)
        else:
            self.keys.replace(doc)
        self.cache.bump_system()
        with refusals_as_412():
            self.events.notify("auth.key.save", key=_listed(doc), is_update=current is not None,
                               identity=identity or SYSTEM)
        return _listed(doc)

    async def acreate_key(self, name: Any, role: Any, identity: Identity | None = None) -> dict[str, Any]:
        """`create_key` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            return self.create_key(name, role, identity)

    def list_keys(self) -> list[dict[str, Any]]:
        return [_listed(doc) for doc in self.keys.find()]

    def assistants_publish(self, key_id: str | None) -> bool:
        """Whether an admin allowed assistants calling with this key
        (quire.assistants) to publish (`mcp_publish`)."""
        doc = self.keys.get(key_id) if key_id else None
        return bool(doc and doc.get("mcp_publish") is True)

    async def aset_assistants_publish(self, key_id: str, allowed: Any, identity: Identity) -> dict[str, Any]:
        """Allow or forbid assistants to publish with this key: the main
        site's admins only (a key's own role, however broad, is not enough)."""
        if not identity.is_admin:
            raise Forbidden("Only an admin may let assistants publish with a key")
        if not isinstance(allowed, bool):
            raise BadRequest("mcp_publish is true or false", fields=["mcp_publish"])
        async with self.store.atomic():
            doc = self.keys.get(key_id)
            if doc is None:
                raise NotFound("Key not found")
            doc = {**doc, "mcp_publish": allowed}
            if not allowed:
                doc.pop("mcp_publish")
            self.keys.replace(doc)
            self.cache.bump_system()
            with refusals_as_412():
                self.events.notify("auth.key.save", key=_listed(doc), is_update=True, identity=identity)
        return _listed(doc)

    def delete_key(self, key_id: str, identity: Identity | None = None) -> None:
        with self.store.transaction():
            doc = self.keys.get(key_id)
            if doc is None or not self.keys.delete(key_id):
                raise NotFound("Key not found")
            self.cache.bump_system()
            with refusals_as_412():
                self.events.notify("auth.key.remove", key=_listed(doc), identity=identity or SYSTEM)

    async def adelete_key(self, key_id: str, identity: Identity | None = None) -> None:
        """`delete_key` for async code: waits for the write lock off the event loop."""
        async with self.store.atomic():
            self.delete_key(key_id, identity)


def _listed(doc: dict[str, Any]) -> dict[str, Any]:
    """A key as lists show it: no hash."""
    listed = {k: doc[k] for k in ("_id", "name", "role", "hint", "_created")}
    if doc.get("mcp_publish") is True:  # assistants may publish with it (quire.assistants)
        listed["mcp_publish"] = True
    return listed
