"""Shared blocks: the site's library of layout components, offered by every
`layout` field besides the core components and the field's own (Cockpit
Pro keeps its custom layout components site-wide the same way).

A component is stored once, in `system/components`, and copied into each
layout field's `opts.components`, marked `"shared": true`, whenever a
model is saved (`layout.share`, called by `ModelService.save`). So a model's
definition stays whole: value checks, the editor, GraphQL, schema
snapshots and bundles read it alone, as they read a field's own
components. A change of the library saves every model with a layout field
again, in the same transaction and through the model's own checks; a
component that stored blocks use cannot be removed (409 naming where)."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from quire.auth.service import SYSTEM, Identity
from quire.bundleparts import BundlePart, Checked
from quire.cache import Cache
from quire.content.models import ModelService, drafts_name
from quire.content.types import layout
from quire.errors import BadRequest, Conflict, NotFound
from quire.events import Events, refusals_as_412
from quire.store import Store

LIBRARY = "system/components"
MAX_SHARED = layout.MAX_OWN  # components in the library, as many as a field may have of its own
KEYS = ("label", "group", "fields")


def parse_component(name: str, body: Any) -> dict[str, Any]:
    """A shared component from a request body (`{label, group, fields}`,
    the fields as a model's are); 400 naming what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("A component must be an object with label, group and fields")
    if body.get("name", name) != name:
        raise BadRequest("The component's name is the one in the address", fields=["name"])
    component = {"name": name, **{k: body[k] for k in KEYS if k in body}}
    extra = set(body) - {"name", *KEYS, "_created", "_modified"}
    if extra:
        raise BadRequest(f"Unknown keys: {', '.join(sorted(extra))}", fields=sorted(extra))
    problem = layout.check_options({"components": [component]})
    if problem:
        raise BadRequest(problem.replace("opts.components[0]", "the component"), fields=["fields"])
    component.setdefault("label", name)
    component.setdefault("group", "Shared")
    return component


def uses(value: Any, name: str) -> bool:
    """Whether a stored value holds a block of component `name`, at any
    depth (a JSON value shaped like a block counts too: it only keeps a
    component in the library)."""
    if isinstance(value, list):
        return any(uses(v, name) for v in value)
    if isinstance(value, dict):
        return value.get("component") == name or any(uses(v, name) for v in value.values())
    return False


class ComponentLibrary:
    """The shared components (`quire.components`)."""

    def __init__(self, store: Store, cache: Cache, models: ModelService, events: Events) -> None:
        self.store = store
        self.models = models
        self.events = events
        self.cache = cache
        self.docs = store.collection(LIBRARY)
        self._all = cache.system(self._load)
        models.shared_components = self.components  # what every model save copies in

    def _load(self) -> list[dict[str, Any]]:
        if not self.docs.exists():
            return []
        docs = [{"name": d["_id"], **{k: v for k, v in d.items() if k != "_id"}} for d in self.docs.find()]
        return sorted(docs, key=lambda d: d["name"])

    def all(self) -> list[dict[str, Any]]:
        """Every shared component, by name, as stored (with its times)."""
        return self._all.get()

    def components(self) -> list[dict[str, Any]]:
        """Every shared component as a layout field holds it."""
        return [{k: c[k] for k in ("name", *KEYS) if k in c} for c in self.all()]

    def get(self, name: str) -> dict[str, Any]:
        for component in self.all():
            if component["name"] == name:
                return component
        raise NotFound(f"Shared component {name[:64]} not found")

    def save(self, name: str, body: Any, identity: Identity | None = None) -> dict[str, Any]:
        """Create or change a shared component; every model with a layout
        field is saved again with it, in one transaction (a model whose
        field has its own component of that name refuses, and nothing
        changes)."""
        component = parse_component(name, body)
        now = int(time.time())
        with self.store.transaction():
            self.store.ensure_table(LIBRARY)
            previous = self.docs.get(name)
            if previous is None and len(self.all()) >= MAX_SHARED:
                raise BadRequest(f"The library holds at most {MAX_SHARED} components")
            created = previous["_created"] if previous else now
            self.docs.replace({"_id": name, **{k: component[k] for k in KEYS}, "_created": created, "_modified": now})
            self.cache.bump_system()
            self._save_models(identity)
            with refusals_as_412():
                self.events.notify("content.component.save", component=name, created=previous is None,
                                   identity=identity or SYSTEM)
        return self.get(name)

    def remove(self, name: str, identity: Identity | None = None) -> None:
        """Remove a shared component no stored block uses (409 naming the
        models and how many items of each use it)."""
        self.get(name)
        with self.store.transaction():
            used = self.usage(name)
            if used:
                where = ", ".join(f"{model} ({count})" for model, count in sorted(used.items()))
                raise Conflict(f"Blocks of {name} are stored in items of {where}: remove those blocks first")
            self.docs.delete(name)
            self.cache.bump_system()
            self._save_models(identity)
            with refusals_as_412():
                self.events.notify("content.component.remove", component=name, identity=identity or SYSTEM)

    def usage(self, name: str) -> dict[str, int]:
        """Per model, how many items (or drafts) hold a block of `name`:
        a scan of the layout values of every model that has one (rare: a
        removal asks it)."""
        found: dict[str, int] = {}
        for model in self.models.all():
            if not any(layout.layout_fields(model.fields)):
                continue
            count = 0
            for collection in (model.collection, drafts_name(model.name)):
                coll = self.store.collection(collection)
                if coll.exists():
                    count += sum(1 for doc in coll.find() if uses(doc, name))
            if count:
                found[model.name] = count
        return found

    def _save_models(self, identity: Identity | None) -> None:
        for model in self.models.all():
            if any(layout.layout_fields(model.fields)):
                self.models.save(replace(model), identity=identity)

    async def asave(self, name: str, body: Any, identity: Identity | None = None) -> dict[str, Any]:
        async with self.store.atomic():
            return self.save(name, body, identity)

    async def aremove(self, name: str, identity: Identity | None = None) -> None:
        async with self.store.atomic():
            self.remove(name, identity)

    # -- bundles ----------------------------------------------------------

    def bundle_part(self) -> BundlePart:
        """The library in export/import bundles, before the models (whose
        saves copy it in)."""
        return BundlePart("components", "components", self.components, _check_bundle, self._load_bundle)

    async def _load_bundle(self, components: list[dict[str, Any]], identity: Any) -> int:
        self.store.ensure_table(LIBRARY)
        now = int(time.time())
        for component in components:
            self.docs.replace({"_id": component["name"], **{k: component[k] for k in KEYS},
                               "_created": now, "_modified": now})
        if components:
            self.cache.bump_system()
        return len(components)


def _check_bundle(value: Any, checked: Checked) -> list[dict[str, Any]]:
    if not isinstance(value or [], list):
        raise BadRequest("components must be a list")
    out = []
    for entry in value or []:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise BadRequest("every component needs a name")
        out.append(parse_component(entry["name"], entry))
    return out
