"""The spaces of a site (docs/spaces.md): several sites in one Quire, each
served at `/<name>/api/...` with its own database (a SQLite file of its own
under `<data>/spaces/<name>/`, or a schema of its own on PostgreSQL), files
(`<data>/spaces/<name>/`, or `spaces/<name>/` under the bucket's prefix),
models, content, roles and keys. The main site keeps the list
(`system/spaces`); its admins create and remove them.

A space's settings are the main site's with three changes: its data
folder, its database and its file storage (`space_settings`)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from quire.auth.service import Identity
from quire.auth.users import UserService
from quire.cache import Cache, SystemValue
from quire.config import Settings
from quire.errors import BadRequest, Conflict, NotFound, Unavailable
from quire.jobs import Jobs
from quire.spaces import tasks
from quire.store import PostgresStore, Store

SPACES = "system/spaces"
ALIASES = "system/space_aliases"
NAME = re.compile(r"[a-z][a-z0-9-]{0,38}[a-z0-9]")
# never names of spaces: the main site's own first path segments (added at
# build from every module's routes) and names that read as something else
RESERVED = {"api", "admin", "auth", "studio", "system", "metrics", "sso", "demo", "assets", "storage", "uploads",
            "static", "spaces", "space", "graphql", "gql", "mcp", "www", "main", "default", "quire", "docs",
            "health", "login", "logout", "favicon.ico", "robots.txt", "sitemap.xml", "well-known", "null", "none",
            "undefined", "root", "public", "private", "internal", "localhost", "tasks", "aliases"}
SCHEMA_PREFIX = "quire_space_"


def check_name(name: Any, reserved: Iterable[str] = ()) -> str:
    """`name` when it may name a space, else a 400 saying why: lowercase
    ASCII letters, digits and inner hyphens, 2 to 40, starting with a
    letter (no look-alikes from other scripts, no dots or slashes), and not
    a path the main site serves."""
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise BadRequest("A space's name is 2 to 40 lowercase letters (a-z), digits and inner hyphens, "
                         "starting with a letter", fields=["name"])
    if "--" in name:
        raise BadRequest("A space's name has no double hyphen", fields=["name"])
    if name in RESERVED or name in set(reserved):
        raise BadRequest(f"'{name}' is a path the main site serves; choose another name", fields=["name"])
    return name


def space_folder(main: Settings, name: str) -> Path:
    return main.data_dir / "spaces" / name


def space_schema(name: str) -> str:
    return SCHEMA_PREFIX + name.replace("-", "_")


SEARCH_PATH = re.compile(r"-c\s*search_path=\S+")


def _with_schema(url: str, schema: str) -> str:
    """The PostgreSQL address `url` with its `search_path` set to `schema`
    (the address's other `options`, a statement timeout say, kept)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "options"]
    options = [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "options"]
    kept = " ".join(SEARCH_PATH.sub("", o).strip() for o in options).strip()
    query.append(("options", f"{kept} -c search_path={schema}".strip()))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))  # %20, not +: libpq reads no +


def space_settings(main: Settings, name: str) -> Settings:
    """The settings a space runs with: the main site's, with its own data
    folder, database and file storage."""
    sections = dict(main.sections)
    store = main.store
    if store.url:
        sections["store"] = dataclasses.replace(store, url=_with_schema(store.url, space_schema(name)))
    assets = main.assets
    if assets.storage:
        sections["assets"] = dataclasses.replace(assets, storage=assets.storage.rstrip("/") + f"/spaces/{name}")
    server = main.server
    if server.public_url:
        sections["server"] = dataclasses.replace(server, public_url=server.public_url.rstrip("/") + f"/{name}")
    return Settings(space_folder(main, name), sections, [])


class SpaceService:
    def __init__(self, store: Store, cache: Cache, settings: Settings, reserved: Iterable[str], jobs: Jobs,
                 users: UserService) -> None:
        self.store = store
        self.jobs = jobs
        self.users = users  # the main site's: a space's studio trusts them, with a role per space
        # forks compared and merge plans made (given by the server's app, quire.served)
        self.environments: tasks.Environments | None = None
        self.cache = cache
        self.settings = settings
        self.reserved = set(reserved)
        self.spaces = store.collection(SPACES)
        self.aliases = store.collection(ALIASES)
        self._served: SystemValue[dict[str, str]] = SystemValue(cache, self._load_served)
        self._made: SystemValue[dict[str, float]] = SystemValue(cache, self._load_made)
        self._labels: SystemValue[dict[str, str]] = SystemValue(cache, self._load_labels)
        # told of a space about to be emptied (quire.sites closes this worker's app of it first)
        self.closing: list[Callable[[str], None]] = []
        # told of a name whose answers changed wholesale: an alias switched or removed, a space
        # removed (the CDN purges `site:<name>`)
        self.switched: list[Callable[[str], None]] = []

    def incarnations(self) -> dict[str, float]:
        """When each space was made: a space removed and made again under
        its name is another site (quire.sites builds its app anew)."""
        return self._made.get()

    def _load_made(self) -> dict[str, float]:
        return {d["_id"]: float(d.get("created") or 0) for d in self.spaces.find()} if self.spaces.exists() else {}

    def _load_labels(self) -> dict[str, str]:
        return {d["_id"]: d.get("label", d["_id"]) for d in self.spaces.find()} if self.spaces.exists() else {}

    def _load_served(self) -> dict[str, str]:
        served = {d["_id"]: d["_id"] for d in self.spaces.find()} if self.spaces.exists() else {}
        if self.aliases.exists():
            served.update({d["_id"]: d["space"] for d in self.aliases.find()})
        return served

    def served(self) -> dict[str, str]:
        """Each name served under `/<name>/` and the space it serves: a
        space's own, and each alias's (read again only after a change
        anywhere, so a switch is seen by every worker at its next request)."""
        return self._served.get()

    def names(self) -> frozenset[str]:
        """The spaces there are."""
        return frozenset(n for n, space in self.served().items() if n == space)

    def all(self) -> list[dict[str, Any]]:
        return sorted((shown(d) for d in self.spaces.find()), key=lambda d: d["name"]) if self.spaces.exists() else []

    def get(self, name: str) -> dict[str, Any]:
        found = self.spaces.get(name) if isinstance(name, str) and self.spaces.exists() else None
        if found is None:
            raise NotFound("Space not found")
        return shown(found)

    async def create(self, body: Any, identity: Identity, origin: str | None = None) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise BadRequest("The body is an object: {\"name\": ..., \"label\": ...}")
        name = check_name(body.get("name"), self.reserved)
        label = body.get("label", name)
        if not isinstance(label, str) or not label.strip() or len(label) > 200:
            raise BadRequest("A space's label is a text of 1 to 200 characters", fields=["label"])
        doc: dict[str, Any] = {"_id": name, "label": label.strip(), "created": round(time.time(), 3),
                               "by": identity.key_id or identity.kind}
        if origin is not None:
            doc["origin"] = origin  # a fork (quire.forks): its folder and schema hold the copy
        else:
            if name in self.served():
                raise Conflict(f"There is a space or alias '{name}' already")
            # what a removal that failed half-way or a killed fork left under this name goes first:
            # a new space starts empty (never with another site's content and keys)
            self.empty(name)
            self.prepare(name)
        async with self.store.atomic():
            if self.spaces.get(name) is not None:
                raise Conflict(f"There is a space '{name}' already")
            if self.aliases.exists() and self.aliases.get(name) is not None:
                raise Conflict(f"'{name}' is an alias; choose another name")
            self.spaces.insert(doc)
            self.cache.bump_system()
        return shown(doc)

    def prepare(self, name: str) -> None:
        """Its database's room: the folder; on PostgreSQL the schema."""
        space_folder(self.settings, name).mkdir(parents=True, exist_ok=True)
        if isinstance(self.store, PostgresStore):
            self.store.create_schema(space_schema(name))

    async def remove(self, name: str) -> None:
        """Remove a space and everything in it (its database and files)."""
        async with self.store.atomic():
            if not self.spaces.exists() or self.spaces.get(name) is None:
                raise NotFound("Space not found")
            pointing = sorted(d["_id"] for d in self.aliases.find({"space": name})) if self.aliases.exists() else []
            if pointing:
                raise Conflict(f"The alias {', '.join(pointing)} serves space '{name}': point it elsewhere "
                               "or remove it first")
            self.spaces.delete(name)
            self.cache.bump_system()
        for close in self.closing:
            close(name)
        for told in self.switched:
            told(name)
        self.users.forget_space(name)
        self.empty(name)

    def empty(self, name: str) -> None:
        """Delete the database and files of space `name` (its folder; on
        PostgreSQL its schema, extensions in it kept: PostgresStore.drop_schema)."""
        if isinstance(self.store, PostgresStore):
            self.store.drop_schema(space_schema(name))
        shutil.rmtree(space_folder(self.settings, name), ignore_errors=True)


    # -- forks and merges through the API (quire.spaces.tasks) ------------------

    async def fork_later(self, body: Any, identity: Identity) -> dict[str, Any]:
        """Fork space `body["from"]` into `body["name"]` as a job: checked
        now (a 400, 404 or 409 at once), done by a runner; its task."""
        if not isinstance(body, dict):
            raise BadRequest("The body is an object: {\"name\": ..., \"from\": ...}")
        source = body.get("from")
        if not isinstance(source, str):
            raise BadRequest("Say which space to fork: {\"from\": \"<name>\"}", fields=["from"])
        name = check_name(body.get("name"), self.reserved)
        label = body.get("label", name)
        if not isinstance(label, str) or not label.strip() or len(label) > 200:
            raise BadRequest("A space's label is a text of 1 to 200 characters", fields=["label"])
        self.get(source)
        if name in self.served():
            raise Conflict(f"There is a space or alias '{name}' already")
        return await self._later(tasks.FORK_JOB, name, {"from": source, "name": name, "label": label.strip()},
                                 identity)

    async def merge_later(self, name: str, body: Any, identity: Identity) -> dict[str, Any]:
        """Merge fork `name` into its origin by the plan `body["plan"]` (as
        shown by `GET .../merge`), as a job; its task."""
        forked = self.get(name)
        if not forked.get("origin"):
            raise BadRequest(f"Space '{name}' was not forked from another")
        plan = body.get("plan") if isinstance(body, dict) else None
        take = body.get("take", "origin") if isinstance(body, dict) else "origin"
        if not isinstance(plan, str) or not re.fullmatch(r"[0-9a-f]{32}", plan):
            raise BadRequest("Name the plan to apply, as GET /api/system/spaces/{name}/merge showed it: "
                             "{\"plan\": \"<32 hex digits>\"}", fields=["plan"])
        if take not in ("origin", "fork"):
            raise BadRequest("take is \"origin\" or \"fork\"", fields=["take"])
        return await self._later(tasks.MERGE_JOB, name, {"name": name, "plan": plan, "take": take}, identity)

    async def _later(self, kind: str, space: str, asked: dict[str, Any], identity: Identity) -> dict[str, Any]:
        by = identity.key_name or identity.key_id or identity.kind
        async with self.store.atomic():
            task = tasks.new_task(self.store, kind, space, asked, by)
            self.jobs.enqueue(kind, {**asked, "task": task["_id"], "by": by}, key=task["_id"])
        self.jobs.wake(kind)
        return tasks.shown(task)

    def list_tasks(self) -> list[dict[str, Any]]:
        return tasks.listed(self.store)

    def task(self, task_id: str) -> dict[str, Any]:
        found = tasks.one(self.store, task_id) if isinstance(task_id, str) else None
        if found is None:
            raise NotFound("Task not found")
        return found

    def compare(self) -> tasks.Environments:
        if self.environments is None:
            raise Unavailable("A space's own services are reached in a server (quire serve); here, use the "
                              "command line (quire spaces diff|merge, quire keys --space)")
        return self.environments

    # -- aliases ---------------------------------------------------------------

    def list_aliases(self) -> list[dict[str, Any]]:
        found = self.aliases.find() if self.aliases.exists() else []
        return sorted((alias_shown(d) for d in found), key=lambda d: d["name"])

    async def point(self, name: str, body: Any, identity: Identity) -> dict[str, Any]:
        """Make alias `name` serve a space, or switch it to another: one
        write, seen by every worker and instance at its next request (a
        request under way finishes on the space it started on). Pointing
        it back is the rollback."""
        name = check_name(name, self.reserved)
        space = body.get("space") if isinstance(body, dict) else None
        if not isinstance(space, str) or not NAME.fullmatch(space):
            raise BadRequest("Say which space the alias serves: {\"space\": \"<name>\"}", fields=["space"])
        now = round(time.time(), 3)
        async with self.store.atomic():
            if self.spaces.exists() and self.spaces.get(name) is not None:
                raise Conflict(f"'{name}' is a space; an alias needs a name of its own")
            if not self.spaces.exists() or self.spaces.get(space) is None:
                raise BadRequest(f"There is no space '{space}'", fields=["space"])
            before = self.aliases.get(name) if self.aliases.exists() else None
            doc = {"_id": name, "space": space, "switched": now, "by": identity.key_id or identity.kind,
                   "previous": before["space"] if before and before["space"] != space else
                   (before or {}).get("previous")}
            if before is None:
                doc["created"] = now
                self.aliases.insert(doc)
            else:
                doc["created"] = before.get("created", now)
                self.aliases.replace(doc)
            self.cache.bump_system()
        for told in self.switched:
            told(name)
        return alias_shown(doc)

    async def unalias(self, name: str) -> None:
        async with self.store.atomic():
            if not self.aliases.exists() or self.aliases.get(name) is None:
                raise NotFound("Alias not found")
            self.aliases.delete(name)
            self.cache.bump_system()
        for told in self.switched:
            told(name)


    # -- people: the main site's users, with a role per space ----------------

    def places(self, user: dict[str, Any]) -> list[tuple[str, str, str]]:
        """The studio's space switcher for a main site's `user`: (label,
        address, role) of the main site and each space the user has a role
        in (every space for the main site's admins)."""
        admin = user.get("role") == "admin"
        granted = user.get("spaces") or {}
        out = [("Main site", "/", str(user.get("role", "")))]
        for name, label in sorted(self._labels.get().items()):
            role = "admin" if admin else granted.get(name)
            if role:
                out.append((label, f"/{name}/", role))
        return out

    def people(self, name: str) -> list[dict[str, Any]]:
        """The users with a role in space `name` (the main site's admins
        have admin in every space without being listed)."""
        self.get(name)
        return [{"_id": u["_id"], "user": u["user"], "name": u.get("name"), "role": u["spaces"][name],
                 "active": u.get("active", True)}
                for u in self.users.list_all() if name in (u.get("spaces") or {})]

    def give_role(self, name: str, user_id: str, body: Any, identity: Identity) -> dict[str, Any]:
        """`{"role": R}`: the user's role in space `name` (one of the space's
        roles); `{"role": null}` takes it away."""
        self.get(name)
        if not isinstance(body, dict) or "role" not in body:
            raise BadRequest("The body is an object: {\"role\": ...} (null takes the role away)", fields=["role"])
        role = body["role"]
        if role is not None:
            roles = self.compare().keys(name)["roles"]
            if not isinstance(role, str) or role not in roles:
                raise BadRequest(f"The space {name} has no such role; its roles: {', '.join(roles)}",
                                 fields=["role"])
        return self.users.set_space_role(user_id, name, role, identity)


def alias_shown(doc: dict[str, Any]) -> dict[str, Any]:
    return {"name": doc["_id"], "space": doc["space"], "previous": doc.get("previous"),
            "switched": doc.get("switched"), "api": f"/{doc['_id']}/api"}


def shown(doc: dict[str, Any]) -> dict[str, Any]:
    return {"name": doc["_id"], "label": doc.get("label", doc["_id"]), "created": doc.get("created"),
            "api": f"/{doc['_id']}/api", "origin": doc.get("origin")}
